//! SNI: the ClientHello's name chooses the virtual server (exact, wildcard and regex
//! `server_name`s) and its certificate; `ssl_reject_handshake`.

use crate::support::Instance;
use crate::support::tls::{self, Key, Options, have_openssl};

fn two_servers(extra: &str) -> Instance {
    tls::with_files(
        Instance::http_builder(&format!(
            "{extra}
             server {{ listen 127.0.0.1:8443 ssl; server_name default.test;
                ssl_certificate default.test.crt; ssl_certificate_key default.test.key;
                location / {{ return 200 \"default $ssl_server_name\"; }} }}
             server {{ listen 127.0.0.1:8443 ssl; server_name ~^(?<sub>[a-z]+)\\.regex\\.test$;
                ssl_certificate regex.test.crt; ssl_certificate_key regex.test.key;
                location / {{ return 200 \"regex $ssl_server_name $sub\"; }} }}"
        )),
        |directory| {
            tls::self_signed(directory, "default.test", Key::Rsa);
            tls::self_signed(directory, "regex.test", Key::Ecdsa);
        },
    )
    .start()
}

#[test]
fn sni_picks_the_server_and_its_certificate() {
    if !have_openssl() {
        return;
    }
    let server = two_servers("");
    let port = server.port_of(8443);
    let client = tls::connect(port, &Options::sni("www.regex.test")).expect("handshake");
    assert_eq!(tls::peer_common_name(&client), "regex.test");
    let response = tls::get(port, &Options::sni("www.regex.test"), "/");
    assert_eq!(response.body_text(), "regex www.regex.test www");
    let client = tls::connect(port, &Options::sni("other.test")).expect("handshake");
    assert_eq!(tls::peer_common_name(&client), "default.test");
}

#[test]
fn without_sni_the_default_server_answers() {
    if !have_openssl() {
        return;
    }
    let server = two_servers("");
    let client = tls::connect(server.port_of(8443), &Options::default()).expect("handshake");
    assert_eq!(tls::peer_common_name(&client), "default.test");
}

#[test]
fn ssl_reject_handshake_refuses_unknown_names_with_an_alert() {
    if !have_openssl() {
        return;
    }
    let server = tls::with_files(
        Instance::http_builder(
            "server { listen 127.0.0.1:8443 ssl default_server; ssl_reject_handshake on; }
             server { listen 127.0.0.1:8443 ssl; server_name known.test;
                ssl_certificate known.test.crt; ssl_certificate_key known.test.key;
                location / { return 200 known; } }",
        ),
        |directory| tls::self_signed(directory, "known.test", Key::Rsa),
    )
    .start();
    let port = server.port_of(8443);
    let refused = tls::connect(port, &Options::sni("unknown.test")).expect_err("a refusal");
    assert!(
        refused.to_string().contains("UnrecognisedName") || refused.to_string().contains("alert"),
        "{refused}"
    );
    assert!(
        tls::connect(port, &Options::default()).is_err(),
        "no SNI is refused too"
    );
    assert_eq!(
        tls::get(port, &Options::sni("known.test"), "/").body_text(),
        "known"
    );
    server.wait_for_error_log("unrecognized name) while SSL handshaking");
}
