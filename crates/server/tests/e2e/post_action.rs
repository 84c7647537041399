//! `post_action`: once the response is out, the request goes on to another URI, whose
//! answer the client never sees.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::support::upstream::MockUpstream;
use crate::support::{Instance, PATIENCE, wait_until};

#[test]
fn post_action_runs_after_the_response_unseen() {
    let mut builder = Instance::http_builder(
        "server {
            listen 127.0.0.1:8080;
            root site;
            location / { post_action /notify; }
            location /quiet/ { post_action off; }
            location /notify { proxy_pass http://127.0.0.1:8081; }
        }",
    );
    let asked = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&asked);
    let _upstream = MockUpstream::start(builder.port(8081), move |mut conn| {
        while let Some(request) = conn.read_request() {
            assert!(request.starts_with(b"GET /notify "), "{request:?}");
            seen.fetch_add(1, Ordering::AcqRel);
            conn.write("HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nHIDDEN");
        }
    });
    let server = builder
        .file("site/index.html", "SEE-THIS")
        .file("site/quiet/index.html", "QUIET")
        .start();
    let response = server.get("/");
    assert_eq!(response.body, b"SEE-THIS");
    wait_until("the post action's request", PATIENCE, || {
        asked.load(Ordering::Acquire) == 1
    });
    assert_eq!(server.get("/quiet/").body, b"QUIET");
    assert_eq!(server.get("/").body, b"SEE-THIS");
    wait_until("the second post action", PATIENCE, || {
        asked.load(Ordering::Acquire) == 2
    });
}
