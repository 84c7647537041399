//! HTTPS: `listen ... ssl`, `ssl_certificate`, `ssl_protocols`, `ssl_ciphers`,
//! `ssl_prefer_server_ciphers`, `ssl_ecdh_curve`, `ssl_buffer_size`,
//! `ssl_handshake_timeout`, the `$ssl_*` variables, plain HTTP on an HTTPS port, and the
//! directives accepted for nginx's configs.

use std::sync::Arc;
use std::time::Duration;

use crate::support::cli::{assert_http_body_fails, test_http_body};
use crate::support::tls::{self, Options, have_openssl};
use crate::support::upstream::MockUpstream;
use crate::support::{Client, get};

const CERTIFICATE: &str = "ssl_certificate localhost.crt; ssl_certificate_key localhost.key;";

#[test]
fn https_serves_and_sets_the_tls_variables() {
    if !have_openssl() {
        return;
    }
    let server = tls::start(&format!(
        "server {{ listen 127.0.0.1:8443 ssl; server_name localhost; {CERTIFICATE}
            location / {{ return 200 \"$scheme|$https|$ssl_protocol|$ssl_cipher|\
$ssl_server_name|$ssl_alpn_protocol|$ssl_session_reused|$ssl_curve\"; }} }}"
    ));
    let options = Options {
        alpn: vec![b"http/1.1".to_vec()],
        ..Options::sni("localhost")
    };
    let response = tls::get(server.port_of(8443), &options, "/");
    assert_eq!(response.status, 200);
    assert_eq!(
        response.body_text(),
        "https|on|TLSv1.3|TLS_AES_256_GCM_SHA384|localhost|http/1.1|.|X25519"
    );
}

#[test]
fn plain_connections_have_no_tls_variables() {
    let server = crate::support::Instance::http(
        "server { listen 127.0.0.1:8080; location / { return 200 \"$scheme|$https|$ssl_protocol\"; } }",
    );
    assert_eq!(server.get("/").body_text(), "http||");
}

#[test]
fn plain_http_on_an_https_port_gets_nginx_400() {
    if !have_openssl() {
        return;
    }
    let server = tls::start(&format!(
        "server {{ listen 127.0.0.1:8443 ssl; {CERTIFICATE} location / {{ return 200 ok; }} }}"
    ));
    let response = Client::connect(server.port_of(8443)).request(get("/"));
    assert_eq!(response.status, 400);
    assert!(
        response
            .body_text()
            .contains("<center>The plain HTTP request was sent to HTTPS port</center>"),
        "{}",
        response.body_text()
    );
    server.wait_for_error_log("client sent plain HTTP request to HTTPS port");
}

#[test]
fn listen_ssl_without_a_certificate_fails() {
    // The line is the `server` block's, as nginx reports it.
    assert_http_body_fails(
        "server {\n    listen 127.0.0.1:8443 ssl;\n}",
        "no \"ssl_certificate\" is defined for the \"listen ... ssl\" directive in {conf}:4",
    );
}

#[test]
fn old_protocols_and_openssl_only_settings_load_with_warnings() {
    if !have_openssl() {
        return;
    }
    let scratch = crate::support::TempPrefix::new();
    tls::self_signed(scratch.path(), "localhost", tls::Key::Rsa);
    let directory = scratch.path().display();
    let (_, output) = test_http_body(&format!(
        "ssl_protocols TLSv1 TLSv1.1 TLSv1.2;
        ssl_ciphers 'ECDHE-RSA-AES128-GCM-SHA256:AES128-SHA';
        ssl_dhparam dh.pem;
        ssl_conf_command Options KTLS;
        ssl_stapling on; ssl_stapling_verify on;
        ssl_stapling_responder http://127.0.0.1:1/;
        server {{ listen 127.0.0.1:8443 ssl;
            ssl_certificate {directory}/localhost.crt;
            ssl_certificate_key {directory}/localhost.key; }}"
    ));
    output.assert_code(0);
    for message in [
        "the \"TLSv1\" protocol is not supported by Portico, ignored",
        "the \"TLSv1.1\" protocol is not supported by Portico, ignored",
        "cipher \"AES128-SHA\" is not supported by Portico's TLS, ignored",
        "\"ssl_dhparam\" is ignored: Portico's TLS has no DHE cipher suites",
        "\"ssl_conf_command Options KTLS\" has no effect in Portico",
        "\"ssl_stapling\" ignored, issuer certificate not found for certificate",
    ] {
        assert!(
            output
                .stderr
                .lines()
                .any(|line| line.contains("[warn]") && line.contains(message)),
            "want [warn] {message:?} in:\n{}",
            output.stderr
        );
    }
}

#[test]
fn bad_protocol_and_cipher_lists_fail() {
    assert_http_body_fails(
        "ssl_protocols TLSv1.4;",
        "invalid value \"TLSv1.4\" in {conf}:4",
    );
    assert_http_body_fails(
        "ssl_ciphers RC4-MD5;",
        "SSL_CTX_set_cipher_list(\"RC4-MD5\") failed (SSL: error:0A0000B9:SSL routines::no cipher \
         match) in {conf}:4",
    );
}

#[test]
fn ssl_protocols_and_ssl_ciphers_choose_what_is_negotiated() {
    if !have_openssl() {
        return;
    }
    let server = tls::start(&format!(
        "server {{ listen 127.0.0.1:8443 ssl; {CERTIFICATE}
            ssl_protocols TLSv1.2; ssl_ciphers ECDHE-RSA-AES128-GCM-SHA256;
            location / {{ return 200 \"$ssl_protocol $ssl_cipher\"; }} }}
         server {{ listen 127.0.0.1:8444 ssl; {CERTIFICATE}
            ssl_protocols TLSv1.3;
            location / {{ return 200 \"$ssl_protocol\"; }} }}"
    ));
    let response = tls::get(server.port_of(8443), &Options::default(), "/");
    assert_eq!(response.body_text(), "TLSv1.2 ECDHE-RSA-AES128-GCM-SHA256");
    let tls12 = Options {
        tls12_only: true,
        ..Options::default()
    };
    let refused = tls::connect(server.port_of(8444), &tls12);
    assert!(
        refused.is_err(),
        "a TLS 1.2 client was served by a TLS 1.3 server"
    );
    server.wait_for_error_log("SSL_do_handshake() failed");
}

#[test]
fn ssl_prefer_server_ciphers_uses_the_server_order() {
    if !have_openssl() {
        return;
    }
    let ciphers = "ECDHE-RSA-CHACHA20-POLY1305:ECDHE-RSA-AES128-GCM-SHA256";
    let server = tls::start(&format!(
        "ssl_protocols TLSv1.2; ssl_ciphers {ciphers};
         server {{ listen 127.0.0.1:8443 ssl; {CERTIFICATE} ssl_prefer_server_ciphers on;
            location / {{ return 200 \"$ssl_cipher\"; }} }}
         server {{ listen 127.0.0.1:8444 ssl; {CERTIFICATE} ssl_prefer_server_ciphers off;
            location / {{ return 200 \"$ssl_cipher\"; }} }}"
    ));
    // rustls clients put AES-GCM before ChaCha20.
    let server_order = tls::get(server.port_of(8443), &Options::default(), "/");
    assert_eq!(server_order.body_text(), "ECDHE-RSA-CHACHA20-POLY1305");
    let client_order = tls::get(server.port_of(8444), &Options::default(), "/");
    assert_eq!(client_order.body_text(), "ECDHE-RSA-AES128-GCM-SHA256");
}

#[test]
fn ssl_ecdh_curve_limits_the_key_exchange_groups() {
    if !have_openssl() {
        return;
    }
    let server = tls::start(&format!(
        "server {{ listen 127.0.0.1:8443 ssl; {CERTIFICATE} ssl_ecdh_curve prime256v1:secp384r1;
            location / {{ return 200 \"$ssl_curve\"; }} }}"
    ));
    let response = tls::get(server.port_of(8443), &Options::default(), "/");
    assert_eq!(response.body_text(), "prime256v1");
}

#[test]
fn bad_ecdh_curve_fails_and_openssl_only_curves_are_skipped() {
    assert_http_body_fails(
        "ssl_ecdh_curve X25519:nosuchcurve;",
        "unknown curve \"nosuchcurve\" in \"ssl_ecdh_curve X25519:nosuchcurve\" in {conf}:4",
    );
    let (conf, output) = test_http_body("ssl_ecdh_curve secp521r1;");
    output.assert_code(0);
    for message in [
        format!("curve \"secp521r1\" is not supported by Portico's TLS, ignored in {conf}:4"),
        format!(
            "no curve of \"secp521r1\" is supported by Portico's TLS, its default curves are \
             used in {conf}:4"
        ),
    ] {
        assert!(
            crate::support::cli::reported(&output.stderr, "warn", &message),
            "{}",
            output.stderr
        );
    }
}

#[test]
fn large_files_and_small_records_arrive_whole_with_sendfile_on() {
    if !have_openssl() {
        return;
    }
    let data: Vec<u8> = (0..3 * 1024 * 1024u32)
        .map(|i| (i * 7 % 251) as u8)
        .collect();
    let server = tls::with_files(
        crate::support::Instance::http_builder(&format!(
            "sendfile on; ssl_buffer_size 4k;
             server {{ listen 127.0.0.1:8443 ssl; {CERTIFICATE} root %%PREFIX%%/html; }}"
        )),
        |directory| tls::self_signed(directory, "localhost", tls::Key::Rsa),
    )
    .file("html/big.bin", &data)
    .start();
    let response = tls::get(server.port_of(8443), &Options::default(), "/big.bin");
    assert_eq!(response.status, 200);
    assert_eq!(response.body.len(), data.len());
    assert!(response.body == data, "the body differs from the file");
}

#[test]
fn keepalive_requests_share_one_tls_connection() {
    if !have_openssl() {
        return;
    }
    let server = tls::start(&format!(
        "server {{ listen 127.0.0.1:8443 ssl; {CERTIFICATE}
            location / {{ return 200 \"$connection:$connection_requests\"; }} }}"
    ));
    let mut client = tls::connect(server.port_of(8443), &Options::default()).expect("handshake");
    let first = client.request(crate::support::get_keepalive("/"));
    let second = client.request(crate::support::get_keepalive("/"));
    let (first, second) = (first.body_text(), second.body_text());
    assert!(first.ends_with(":1"), "{first}");
    assert_eq!(second, first.replace(":1", ":2"));
}

#[test]
fn ssl_handshake_timeout_closes_a_silent_client() {
    if !have_openssl() {
        return;
    }
    let server = tls::start(&format!(
        "server {{ listen 127.0.0.1:8443 ssl; {CERTIFICATE} ssl_handshake_timeout 300ms; }}"
    ));
    let mut client = Client::connect(server.port_of(8443)).with_timeout(Duration::from_secs(5));
    // Half a ClientHello record header, then nothing.
    client.write([0x16, 0x03, 0x01]);
    let started = std::time::Instant::now();
    let (_, bytes) = client.wait_closed();
    assert!(bytes.is_empty());
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "closed after {:?}",
        started.elapsed()
    );
    server.wait_for_error_log("client timed out (110: Connection timed out) while SSL handshaking");
}

#[test]
fn garbage_after_a_tls_record_header_fails_the_handshake_and_the_server_lives() {
    if !have_openssl() {
        return;
    }
    let server = tls::start(&format!(
        "server {{ listen 127.0.0.1:8443 ssl; {CERTIFICATE} location / {{ return 200 ok; }} }}"
    ));
    let mut client = Client::connect(server.port_of(8443));
    let mut flood = vec![0x16, 0x03, 0x01, 0x40, 0x00];
    flood.extend(std::iter::repeat_n(0xAB, 0x4000));
    let _ = client.try_write(&flood);
    let (_, reply) = client.wait_closed();
    // A fatal alert record, or nothing; never an HTTP answer.
    assert!(reply.is_empty() || reply[0] == 0x15, "{reply:?}");
    server.wait_for_error_log("SSL_do_handshake() failed");
    let response = tls::get(server.port_of(8443), &Options::default(), "/");
    assert_eq!(response.body_text(), "ok");
}

/// What `openssl s_client -status` prints about the server's OCSP response.
fn stapled_status(port: u16) -> String {
    let output = std::process::Command::new("openssl")
        .args([
            "s_client",
            "-connect",
            &format!("127.0.0.1:{port}"),
            "-status",
        ])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run openssl s_client");
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    // From the OCSP part to the certificate chain.
    let start = text.find("OCSP").unwrap_or(0);
    let end = text
        .find("Certificate chain")
        .unwrap_or(text.len())
        .max(start);
    text[start..end].to_owned()
}

/// `ssl_stapling on` with `ssl_stapling_file`: the file's response goes to clients that ask
/// for one; without `ssl_stapling on` the file is not used.
#[test]
fn ssl_stapling_file_staples_its_response() {
    if !have_openssl() {
        return;
    }
    let server = tls::with_files(
        crate::support::Instance::http_builder(
            "server { listen 127.0.0.1:8443 ssl;
                ssl_certificate leaf.crt; ssl_certificate_key leaf.key;
                ssl_stapling on; ssl_stapling_file leaf.ocsp.der;
                location / { return 200 ok; } }
             server { listen 127.0.0.1:8444 ssl;
                ssl_certificate leaf.crt; ssl_certificate_key leaf.key;
                ssl_stapling_file leaf.ocsp.der;
                location / { return 200 ok; } }",
        ),
        |directory| {
            tls::authority(directory, "ca");
            tls::issued(directory, "leaf", "ca", (-1, 1));
            tls::ocsp_response(directory, "leaf", "ca");
        },
    )
    .start();
    let stapled = stapled_status(server.port_of(8443));
    assert!(
        stapled.contains("OCSP Response Status: successful"),
        "{stapled}"
    );
    assert!(stapled.contains("Cert Status: good"), "{stapled}");
    let off = stapled_status(server.port_of(8444));
    assert!(off.contains("OCSP response: no response sent"), "{off}");
}

/// `ssl_stapling on` without a file: the response is fetched from the certificate's
/// responder (its AIA) or `ssl_stapling_responder`, and stapled once it is good; with
/// `ssl_stapling_verify on` only when its signer is the issuer.
#[test]
fn ssl_stapling_fetches_responses_from_the_responder() {
    if !have_openssl() {
        return;
    }
    let mut builder = crate::support::Instance::http_builder(
        "ssl_certificate leaf.crt; ssl_certificate_key leaf.key;
         ssl_stapling on; ssl_trusted_certificate ca.crt;
         server { listen 127.0.0.1:8443 ssl; location / { return 200 ok; } }
         server { listen 127.0.0.1:8444 ssl; ssl_stapling_verify on;
            ssl_stapling_responder http://127.0.0.1:%%PORT_8082%%/ocsp;
            location / { return 200 ok; } }
         server { listen 127.0.0.1:8445 ssl;
            ssl_stapling_responder http://127.0.0.1:%%PORT_8082%%/ocsp;
            location / { return 200 ok; } }
         server { listen 127.0.0.1:8446 ssl; ssl_stapling_verify on;
            location / { return 200 ok; } }",
    );
    let (good_port, foreign_port) = (builder.port(8081), builder.port(8082));
    let responses = Arc::new(std::sync::Mutex::new((Vec::new(), Vec::new())));
    let made = Arc::clone(&responses);
    let builder = tls::with_files(builder, move |directory| {
        tls::authority(directory, "ca");
        tls::authority(directory, "other");
        tls::issued_with(
            directory,
            "leaf",
            "ca",
            (-1, 1),
            &format!(
                "subjectAltName=DNS:leaf\nbasicConstraints=CA:FALSE\n\
                 authorityInfoAccess=OCSP;URI:http://127.0.0.1:{good_port}/\n"
            ),
        );
        tls::ocsp_response(directory, "leaf", "ca");
        tls::ocsp_response_signed(directory, "leaf", "ca", "other", "foreign.der");
        let read = |name: &str| std::fs::read(directory.join(name)).expect("a response");
        *made.lock().expect("lock") = (read("leaf.ocsp.der"), read("foreign.der"));
    });
    let (good, foreign) = responses.lock().expect("lock").clone();
    let responder = |body: Vec<u8>| {
        move |mut conn: crate::support::upstream::UpstreamConn| {
            if conn.read_request().is_some() {
                conn.write(format!(
                    "HTTP/1.0 200 OK\r\nContent-Type: application/ocsp-response\r\n\
                     Content-Length: {}\r\n\r\n",
                    body.len()
                ));
                conn.write(&body);
            }
        }
    };
    let good_responder = MockUpstream::start(good_port, responder(good));
    let _foreign_responder = MockUpstream::start(foreign_port, responder(foreign));
    let server = builder.start();
    let status_of = |port: u16| {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let status = stapled_status(server.port_of(port));
            if status.contains("Cert Status: good") || std::time::Instant::now() > deadline {
                return status;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    };
    // The certificate's own responder; verified, as its signer is the issuer.
    for port in [8443, 8446] {
        let stapled = status_of(port);
        assert!(stapled.contains("Cert Status: good"), "{port}: {stapled}");
    }
    // Signed by another CA: stapled without ssl_stapling_verify, refused with it.
    assert!(status_of(8445).contains("Cert Status: good"));
    server.wait_for_error_log("OCSP response signer verification failed");
    let refused = stapled_status(server.port_of(8444));
    assert!(
        refused.contains("OCSP response: no response sent"),
        "{refused}"
    );
    // The request went as nginx sends it: a GET with the request in the path.
    let asked = good_responder.requests();
    assert!(
        asked.iter().any(|request| request.starts_with("GET /M")),
        "{asked:?}"
    );
}

/// A stapling file that is missing, or is not a DER OCSP response, fails the load in
/// nginx's words.
#[test]
fn a_bad_ssl_stapling_file_fails_the_load() {
    if !have_openssl() {
        return;
    }
    let scratch = crate::support::TempPrefix::new();
    tls::self_signed(scratch.path(), "localhost", tls::Key::Rsa);
    std::fs::write(scratch.path().join("not-der.txt"), "not an OCSP response\n").expect("write");
    let directory = scratch.path().display();
    for (file, message) in [
        ("missing.der", "BIO_new_file(\""),
        ("not-der.txt", "d2i_OCSP_RESPONSE_bio(\""),
    ] {
        let (_, output) = test_http_body(&format!(
            "server {{ listen 127.0.0.1:8443 ssl;
                ssl_certificate {directory}/localhost.crt;
                ssl_certificate_key {directory}/localhost.key;
                ssl_stapling on; ssl_stapling_file {directory}/{file}; }}"
        ));
        output.assert_code(1);
        assert!(
            output.stderr.contains("[emerg]") && output.stderr.contains(message),
            "{file}: {}",
            output.stderr
        );
    }
}
