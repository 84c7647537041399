//! Variables in `proxy_ssl_certificate` / `proxy_ssl_certificate_key` and in uwsgi's
//! `uwsgi_ssl_certificate` / `uwsgi_ssl_certificate_key`: each request presents the pair its
//! variables name, loaded when it opens a connection; a kept connection serves only requests
//! naming the same files; an empty name sends no certificate; a pair that does not load
//! ends its request with 500. The upstream is Portico itself, on a TLS port of the same
//! instance, reporting the client certificate it saw.

use crate::support::Instance;
use crate::support::cli::{assert_http_body_fails, test_http_body};
use crate::support::tls::{self, have_openssl};

fn start(locations: &str) -> Instance {
    let body = format!(
        "upstream kept {{ server 127.0.0.1:8443; keepalive 4; }}
         server {{ listen 127.0.0.1:8443 ssl; server_name backend.test;
            ssl_certificate backend.test.crt; ssl_certificate_key backend.test.key;
            ssl_verify_client optional_no_ca;
            add_header X-Name $ssl_client_s_dn always;
            location / {{ return 200 \"$ssl_client_s_dn|$connection\"; }} }}
         server {{ listen 127.0.0.1:8080; {locations} }}"
    );
    tls::with_files(Instance::http_builder(&body), |directory| {
        tls::authority(directory, "ca");
        for name in ["backend.test", "one", "two", "secret"] {
            tls::issued(directory, name, "ca", (-1, 30));
        }
        encrypt_key(directory, "secret", "right");
    })
    .file("passwords", "wrong\nright\n")
    .start()
}

/// Replaces `NAME.key` with the same key encrypted with `password`.
fn encrypt_key(directory: &std::path::Path, name: &str, password: &str) {
    let (key, encrypted) = (format!("{name}.key"), format!("{name}.enc"));
    let status = std::process::Command::new("openssl")
        .current_dir(directory)
        .args(["pkcs8", "-topk8", "-in", &key, "-out", &encrypted])
        .args(["-passout", &format!("pass:{password}")])
        .status()
        .expect("run openssl pkcs8");
    assert!(status.success());
    std::fs::rename(directory.join(encrypted), directory.join(key)).expect("replace the key");
}

/// The client certificate's subject the upstream saw, and its connection number.
fn seen(server: &Instance, path: &str) -> (String, String) {
    let response = server.get(path);
    assert_eq!(response.status, 200, "{path}: {}", response.body_text());
    let body = response.body_text();
    let (subject, connection) = body.split_once('|').expect("subject|connection");
    (subject.to_owned(), connection.to_owned())
}

const BY_ARGUMENT: &str = "proxy_ssl_certificate $arg_cert.crt;
    proxy_ssl_certificate_key $arg_cert.key;";

#[test]
fn each_request_presents_the_pair_its_variables_name() {
    if !have_openssl() {
        return;
    }
    let server = start(&format!(
        "location / {{ proxy_pass https://127.0.0.1:8443; {BY_ARGUMENT} }}
         location /none {{ proxy_pass https://127.0.0.1:8443;
            proxy_ssl_certificate $arg_cert; proxy_ssl_certificate_key $arg_cert; }}"
    ));
    assert_eq!(seen(&server, "/?cert=one").0, "O=Portico Test,CN=one");
    assert_eq!(seen(&server, "/?cert=two").0, "O=Portico Test,CN=two");
    assert_eq!(
        seen(&server, "/none").0,
        "",
        "an empty name sends no certificate"
    );
}

#[test]
fn a_kept_connection_serves_only_requests_naming_its_files() {
    if !have_openssl() {
        return;
    }
    let server = start(&format!(
        "location / {{ proxy_pass https://kept; proxy_http_version 1.1;
            proxy_set_header Connection \"\"; {BY_ARGUMENT} }}"
    ));
    let first_one = seen(&server, "/?cert=one");
    let two = seen(&server, "/?cert=two");
    let second_one = seen(&server, "/?cert=one");
    assert_eq!(two.0, "O=Portico Test,CN=two", "two got one's connection");
    assert_ne!(first_one.1, two.1);
    assert_eq!(second_one.0, "O=Portico Test,CN=one");
    assert_eq!(
        first_one.1, second_one.1,
        "one's connection was kept for one"
    );
}

#[test]
fn a_pair_that_does_not_load_ends_the_request_with_500() {
    if !have_openssl() {
        return;
    }
    let server = start(&format!(
        "location / {{ proxy_pass https://127.0.0.1:8443; {BY_ARGUMENT} }}"
    ));
    assert_eq!(server.get("/?cert=missing").status, 500);
    let prefix = server.prefix().path().display().to_string();
    let line = server.wait_for_error_log(&format!(
        "cannot load certificate \"{prefix}/missing.crt\": BIO_new_file() failed"
    ));
    assert!(line.contains("[error]"), "{line}");
    assert!(
        line.contains(" while connecting to upstream, client: 127.0.0.1"),
        "{line}"
    );
    // Without the password, the encrypted key does not load either.
    assert_eq!(server.get("/?cert=secret").status, 500);
    server.wait_for_error_log("secret.key\": PEM_read_bio_PrivateKey() failed");
    assert_eq!(seen(&server, "/?cert=one").0, "O=Portico Test,CN=one");
}

#[test]
fn proxy_ssl_password_file_opens_an_encrypted_key_named_by_variables() {
    if !have_openssl() {
        return;
    }
    let server = start(&format!(
        "location / {{ proxy_pass https://127.0.0.1:8443; {BY_ARGUMENT}
            proxy_ssl_password_file %%PREFIX%%/passwords; }}"
    ));
    assert_eq!(seen(&server, "/?cert=secret").0, "O=Portico Test,CN=secret");
}

/// The upstream, an HTTP server, answers uwsgi's packet with a 400 that carries the
/// subject it saw (`add_header ... always`), as in nginx-tests' uwsgi_ssl_certificate.t.
#[test]
fn uwsgi_ssl_certificate_takes_variables_too() {
    if !have_openssl() {
        return;
    }
    let server = start(
        "uwsgi_ssl_session_reuse off;
         location /fixed { uwsgi_pass suwsgi://127.0.0.1:8443;
            uwsgi_ssl_certificate secret.crt; uwsgi_ssl_certificate_key secret.key;
            uwsgi_ssl_password_file %%PREFIX%%/passwords; }
         location /named { uwsgi_pass suwsgi://127.0.0.1:8443;
            uwsgi_ssl_certificate $arg_cert.crt; uwsgi_ssl_certificate_key $arg_cert.key; }
         location /none { uwsgi_pass suwsgi://127.0.0.1:8443;
            uwsgi_ssl_certificate $arg_cert; uwsgi_ssl_certificate_key $arg_cert; }",
    );
    let subject = |path: &str| {
        let response = server.get(path);
        assert_eq!(response.status, 400, "{path}");
        response.header("X-Name").unwrap_or_default().to_owned()
    };
    assert_eq!(subject("/fixed"), "O=Portico Test,CN=secret");
    assert_eq!(subject("/named?cert=two"), "O=Portico Test,CN=two");
    assert_eq!(subject("/none"), "");
}

#[test]
fn a_certificate_named_by_variables_needs_a_key() {
    assert_http_body_fails(
        "server { listen 127.0.0.1:8080; location / { proxy_pass https://127.0.0.1:1;
            proxy_ssl_certificate $arg_cert.crt; } }",
        "no \"proxy_ssl_certificate_key\" is defined for certificate \"$arg_cert.crt\"",
    );
}

#[test]
fn an_unknown_variable_in_a_certificate_name_fails_the_load() {
    let (_, output) = test_http_body(
        "server { listen 127.0.0.1:8080; location / { proxy_pass https://127.0.0.1:1;
            proxy_ssl_certificate $nonexistent.crt; proxy_ssl_certificate_key k.key; } }",
    );
    output.assert_code(1);
    assert!(
        output.stderr.contains("unknown \"nonexistent\" variable"),
        "{}",
        output.stderr
    );
}

/// Puts `from`'s certificate and key in place of `to`'s, each by a rename (as a
/// certificate renewal does).
fn replace_pair(server: &Instance, to: &str, from: &str) {
    for extension in ["crt", "key"] {
        let source = server.prefix().join(&format!("{from}.{extension}"));
        let temporary = server.prefix().join(&format!("{to}.{extension}.new"));
        std::fs::copy(source, &temporary).expect("copy the pair");
        let target = server.prefix().join(&format!("{to}.{extension}"));
        std::fs::rename(temporary, target).expect("replace the pair");
    }
}

/// `proxy_ssl_certificate_cache`: a pair loaded once is presented again while the cache
/// holds it, even after its files change; without the cache the files are read per
/// request; a pair whose key needed a password is never kept.
#[test]
fn proxy_ssl_certificate_cache_keeps_loaded_pairs() {
    if !have_openssl() {
        return;
    }
    let server = start(&format!(
        "proxy_ssl_certificate_cache max=4 valid=60s;
         location / {{ proxy_pass https://127.0.0.1:8443; {BY_ARGUMENT} }}
         location /enc/ {{ proxy_pass https://127.0.0.1:8443; {BY_ARGUMENT}
            proxy_ssl_password_file passwords; }}
         location /nocache/ {{ proxy_pass https://127.0.0.1:8443; {BY_ARGUMENT}
            proxy_ssl_certificate_cache off; }}"
    ));
    assert_eq!(seen(&server, "/?cert=one").0, "O=Portico Test,CN=one");
    assert_eq!(
        seen(&server, "/nocache/?cert=two").0,
        "O=Portico Test,CN=two"
    );
    assert_eq!(
        seen(&server, "/enc/?cert=secret").0,
        "O=Portico Test,CN=secret"
    );
    replace_pair(&server, "one", "backend.test");
    replace_pair(&server, "two", "backend.test");
    replace_pair(&server, "secret", "backend.test");
    // Cached: the old pair, though its files changed.
    assert_eq!(seen(&server, "/?cert=one").0, "O=Portico Test,CN=one");
    // Not cached: the files as they are now.
    assert_eq!(
        seen(&server, "/nocache/?cert=two").0,
        "O=Portico Test,CN=backend.test"
    );
    assert_eq!(
        seen(&server, "/enc/?cert=secret").0,
        "O=Portico Test,CN=backend.test"
    );
    // A pair that is gone and was never cached ends its request with 500.
    std::fs::remove_file(server.prefix().join("two.crt")).expect("remove");
    assert_eq!(server.get("/?cert=two").status, 500);
}

#[test]
fn bad_certificate_cache_settings_are_refused() {
    assert_http_body_fails(
        "server { listen 127.0.0.1:8080; proxy_ssl_certificate_cache valid=1s; }",
        "\"proxy_ssl_certificate_cache\" must have the \"max\" parameter in {conf}:4",
    );
    assert_http_body_fails(
        "server { listen 127.0.0.1:8080; grpc_ssl_certificate_cache max=1 size=2; }",
        "invalid \"grpc_ssl_certificate_cache\" parameter \"size=2\" in {conf}:4",
    );
    let (_, output) = test_http_body(
        "server { listen 127.0.0.1:8080; uwsgi_ssl_certificate_cache max=10 inactive=5s; }",
    );
    output.assert_code(0);
}

/// The same cache for `stream` servers: a pair named by variables and loaded once is
/// presented again after its files change; with the cache off the files are read again.
#[test]
fn stream_proxy_ssl_certificate_cache_keeps_loaded_pairs() {
    if !have_openssl() {
        return;
    }
    let server = tls::with_files(
        Instance::builder(
            "events {}
             http {
                 server { listen 127.0.0.1:8443 ssl; server_name backend.test;
                     ssl_certificate backend.test.crt; ssl_certificate_key backend.test.key;
                     ssl_verify_client optional_no_ca;
                     location / { return 200 \"$ssl_client_s_dn\"; } }
             }
             stream {
                 map $protocol $cert { default one; }
                 proxy_ssl on;
                 proxy_ssl_certificate $cert.crt;
                 proxy_ssl_certificate_key $cert.key;
                 server { listen 127.0.0.1:8081; proxy_pass 127.0.0.1:8443;
                     proxy_ssl_certificate_cache max=4; }
                 server { listen 127.0.0.1:8082; proxy_pass 127.0.0.1:8443; }
             }",
        ),
        |directory| {
            tls::authority(directory, "ca");
            for name in ["backend.test", "one"] {
                tls::issued(directory, name, "ca", (-1, 30));
            }
        },
    )
    .start();
    let subject = |port: u16| {
        let response = server.request_to(port, "GET / HTTP/1.0\r\nHost: backend.test\r\n\r\n");
        assert_eq!(response.status, 200, "{}", response.body_text());
        response.body_text()
    };
    assert_eq!(subject(8081), "O=Portico Test,CN=one");
    assert_eq!(subject(8082), "O=Portico Test,CN=one");
    replace_pair(&server, "one", "backend.test");
    assert_eq!(subject(8081), "O=Portico Test,CN=one", "cached");
    assert_eq!(
        subject(8082),
        "O=Portico Test,CN=backend.test",
        "read again"
    );
}
