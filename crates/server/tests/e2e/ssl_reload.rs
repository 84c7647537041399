//! Reload and TLS: new certificates are served after HUP; a certificate that fails to load
//! fails the reload with nginx's message and the running configuration keeps serving.

use crate::support::Instance;
use crate::support::tls::{self, Key, Options, have_openssl};

const CONFIG: &str = "server { listen 127.0.0.1:8443 ssl;
    ssl_certificate %%PREFIX%%/current.crt; ssl_certificate_key %%PREFIX%%/current.key;
    location / { return 200 ok; } }";

#[test]
fn reload_serves_the_new_certificate_and_survives_a_bad_one() {
    if !have_openssl() {
        return;
    }
    let mut server = tls::with_files(Instance::http_builder(CONFIG), |directory| {
        tls::self_signed(directory, "first", Key::Rsa);
        tls::self_signed(directory, "second", Key::Ecdsa);
        for extension in ["crt", "key"] {
            std::fs::copy(
                directory.join(format!("first.{extension}")),
                directory.join(format!("current.{extension}")),
            )
            .expect("copy the first pair");
        }
    })
    .start();
    let port = server.port_of(8443);
    let name = || {
        let client = tls::connect(port, &Options::default()).expect("handshake");
        tls::peer_common_name(&client)
    };
    assert_eq!(name(), "first");
    for extension in ["crt", "key"] {
        let second = server.read(&format!("second.{extension}"));
        server
            .prefix()
            .write(&format!("current.{extension}"), second);
    }
    server.reload(CONFIG, |_| name() == "second");
    // A key that does not match: the reload fails and "second" is still served.
    let first_key = server.read("first.key");
    server.prefix().write("current.key", first_key);
    let line = server.reload_expect_failure(CONFIG);
    assert!(line.contains("key values mismatch"), "{line}");
    assert_eq!(name(), "second");
    assert_eq!(tls::get(port, &Options::default(), "/").body_text(), "ok");
}
