//! `proxy_buffering`, `proxy_buffers` and `proxy_max_temp_file_size`: how far the proxy
//! reads ahead of a client that does not read.

use std::time::Duration;

use crate::support::Instance;
use crate::support::upstream::MockUpstream;

/// With `proxy_buffering on` the proxy reads the upstream's answer ahead of a client that
/// does not read, so the upstream is done (and its connection free) long before the
/// client takes the body; with `off` the upstream waits for the client.
#[test]
fn proxy_buffering_reads_ahead_of_a_slow_client() {
    const BODY: usize = 48 << 20;
    // Memory alone (no temporary file), a temporary file beyond small buffers, and no
    // buffering at all.
    for (buffering, buffers, temp, expect_done_early) in [
        ("on", "2048 32k", "0", true),
        ("on", "4 32k", "1024m", true),
        ("on", "4 32k", "0", false),
        ("off", "2048 32k", "0", false),
    ] {
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = std::sync::Arc::clone(&done);
        let mut builder = Instance::http_builder(&format!(
            "server {{
                listen 127.0.0.1:8080;
                location / {{
                    proxy_pass http://127.0.0.1:8081;
                    proxy_buffering {buffering};
                    proxy_buffers {buffers};
                    proxy_max_temp_file_size {temp};
                }}
            }}"
        ));
        let port = builder.port(8081);
        let _upstream = MockUpstream::start(port, move |mut conn| {
            if conn.read_request().is_some() {
                conn.write(format!("HTTP/1.1 200 OK\r\nContent-Length: {BODY}\r\n\r\n"));
                conn.write(vec![b'x'; BODY]);
                flag.store(true, std::sync::atomic::Ordering::Release);
                let _ = conn.wait_closed(Duration::from_secs(10));
            }
        });
        let server = builder.start();
        let mut client = server.connect();
        client.write("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        // The client reads nothing for a while.
        std::thread::sleep(Duration::from_millis(1500));
        assert_eq!(
            done.load(std::sync::atomic::Ordering::Acquire),
            expect_done_early,
            "proxy_buffering {buffering}"
        );
        let (_, received) = client.wait_closed();
        assert!(
            received.len() > BODY,
            "the whole body arrives ({} bytes)",
            received.len()
        );
    }
}
