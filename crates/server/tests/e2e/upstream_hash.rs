//! `hash` and `ip_hash` in an `upstream` block: one key, or one client address, always
//! goes to the server nginx would pick.

use crate::support::proxy::{connections, group_with};

#[test]
fn ip_hash_sends_one_client_address_to_one_server() {
    let (server, upstreams) = group_with(
        "upstream backend {
             ip_hash;
             server 127.0.0.1:8081; server 127.0.0.1:8082; server 127.0.0.1:8083;
         }",
    );
    // nginx's hash of 127.0.0.x over three equal servers picks the third.
    for _ in 0..6 {
        assert_eq!(server.get("/").body_text(), "three");
    }
    assert_eq!(connections(&upstreams), [0, 0, 6]);
}

#[test]
fn hash_sends_one_key_to_one_server_as_nginx_does() {
    let (server, upstreams) = group_with(
        "upstream backend {
             hash $arg_k;
             server 127.0.0.1:8081; server 127.0.0.1:8082; server 127.0.0.1:8083;
         }",
    );
    // The servers nginx picks: CRC32 of the key, bits 16 to 30, modulo the total weight.
    for (key, expected) in [("b", "one"), ("h", "two"), ("a", "three"), ("g", "one")] {
        for _ in 0..3 {
            assert_eq!(
                server.get(&format!("/?k={key}")).body_text(),
                expected,
                "k={key}"
            );
        }
    }
    assert_eq!(connections(&upstreams), [6, 3, 3]);
}
