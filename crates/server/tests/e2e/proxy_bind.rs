//! `proxy_bind`: the local address of upstream connections.

use crate::support::proxy::{OK, proxy_with};

#[test]
fn proxy_bind_sets_the_local_address() {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(None));
    let record = std::sync::Arc::clone(&seen);
    let (server, _upstream) = proxy_with(
        "server {
            listen 127.0.0.1:8080;
            location / { proxy_pass http://127.0.0.1:8081; proxy_bind 127.0.0.2; }
        }",
        move |mut conn| {
            *record.lock().unwrap() = conn.peer().map(|address| address.ip());
            if conn.read_request().is_some() {
                conn.write(OK);
            }
        },
    );
    assert_eq!(server.get("/").status, 200);
    let ip = *seen.lock().unwrap();
    assert_eq!(ip, Some("127.0.0.2".parse().unwrap()));
}
