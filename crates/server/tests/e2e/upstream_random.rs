//! `random` in an `upstream` block.

use crate::support::proxy::{connections, group_with};

#[test]
fn random_spreads_requests_and_skips_a_down_server() {
    let (server, upstreams) = group_with(
        "upstream backend {
             random;
             server 127.0.0.1:8081; server 127.0.0.1:8082; server 127.0.0.1:8083 down;
         }",
    );
    for _ in 0..30 {
        let body = server.get("/").body_text();
        assert!(body == "one" || body == "two", "{body}");
    }
    let counts = connections(&upstreams);
    // Both live servers are drawn (all 30 on one has a chance of 2^-29); never the down one.
    assert!(counts[0] > 0 && counts[1] > 0, "{counts:?}");
    assert_eq!(counts[0] + counts[1], 30, "{counts:?}");
    assert_eq!(counts[2], 0, "{counts:?}");
}
