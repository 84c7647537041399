//! `least_time` in an `upstream` block: requests go to the server that answers faster,
//! measured to the head or to the last byte.

use std::time::Duration;

use crate::support::Instance;
use crate::support::upstream::MockUpstream;

/// Two servers: `slow` waits 300 ms before its head (`head`) or before its body.
fn two_servers(builder: &mut crate::support::instance::Builder, head: bool) -> Vec<MockUpstream> {
    [(8081, "slow"), (8082, "fast")]
        .into_iter()
        .map(|(nominal, name)| {
            MockUpstream::start(builder.port(nominal), move |mut conn| {
                while conn.read_request().is_some() {
                    let pause = if name == "slow" {
                        Duration::from_millis(300)
                    } else {
                        Duration::ZERO
                    };
                    if head {
                        std::thread::sleep(pause);
                    }
                    conn.write("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n");
                    if !head {
                        std::thread::sleep(pause);
                    }
                    conn.write(&name[..4]);
                }
            })
        })
        .collect()
}

#[test]
fn least_time_sends_requests_to_the_faster_server() {
    for (method, head) in [
        ("least_time header;", true),
        ("least_time last_byte inflight;", false),
    ] {
        let mut builder = Instance::http_builder(&format!(
            "upstream backend {{
                 {method}
                 server 127.0.0.1:8081; server 127.0.0.1:8082;
             }}
             server {{
                 listen 127.0.0.1:8080;
                 location / {{ proxy_pass http://backend; }}
             }}"
        ));
        let _servers = two_servers(&mut builder, head);
        let server = builder.start();
        // Neither is measured: the first two requests go one to each.
        let mut first: Vec<String> = (0..2).map(|_| server.get("/").body_text()).collect();
        first.sort();
        assert_eq!(first, ["fast", "slow"], "{method}");
        // Then the faster one has them all (the slow one's 300 ms fades over 3 s).
        for _ in 0..8 {
            assert_eq!(server.get("/").body_text(), "fast", "{method}");
        }
    }
}

#[test]
fn bad_least_time_is_refused() {
    for (directive, message) in [
        (
            "least_time;",
            "invalid number of arguments in \"least_time\"",
        ),
        ("least_time first_byte;", "invalid parameter \"first_byte\""),
        ("least_time header later;", "invalid parameter \"later\""),
    ] {
        let failure = Instance::http_builder(&format!(
            "upstream backend {{ {directive} server 127.0.0.1:8081; }}
             server {{ listen 127.0.0.1:8080; location / {{ proxy_pass http://backend; }} }}"
        ))
        .try_start()
        .expect_err("the configuration is refused");
        let text = format!("{}{}", failure.stderr, failure.error_log);
        assert!(text.contains(message), "{directive}: {text}");
    }
}
