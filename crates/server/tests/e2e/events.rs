//! The `events` block: `use` names the connection processing method.

use crate::support::Instance;
use crate::support::cli::assert_fails;

#[test]
fn use_takes_epoll_and_refuses_other_methods() {
    let server = Instance::start(
        "worker_processes 1;
         events { use epoll; worker_connections 64; }
         http { server { listen 127.0.0.1:8080; location / { return 200 ok; } } }",
    );
    assert_eq!(server.get("/").body_text(), "ok");
    assert_fails(
        "events {\n    use kqueue;\n}\nhttp {\n}\n",
        "invalid event type \"kqueue\" in {conf}:2",
    );
}
