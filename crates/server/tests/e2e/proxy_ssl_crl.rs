//! `proxy_ssl_crl`: with `proxy_ssl_verify on`, the upstream's chain is checked against
//! revocation lists: a certificate its CA revoked fails the handshake (502, `certificate
//! revoked`), and so does one whose issuer has no list in the file (`unable to get
//! certificate CRL`); an unrevoked one passes, a CA certificate serving as the server's
//! own too, as OpenSSL accepts it.

use std::path::Path;
use std::process::Command;

use crate::support::Instance;
use crate::support::tls::{self, have_openssl};

/// A CA with two server certificates, one of them revoked, the CA's list (`ca.crl`), and
/// another CA's list (`other.crl`).
fn make(directory: &Path) {
    tls::authority(directory, "ca");
    tls::issued(directory, "good", "ca", (-1, 30));
    tls::issued(directory, "revoked", "ca", (-1, 30));
    // A CA certificate as a server's own, without alternative names (OpenSSL accepts it).
    tls::intermediate(directory, "inter", "ca");
    tls::authority(directory, "other");
    tls::issued(directory, "unused", "other", (-1, 30));
    // One `openssl ca` database (`ca.conf`) serves both authorities.
    let ca = |issuer: &str, arguments: &[&str]| {
        let key = format!("{issuer}.key");
        let certificate = format!("{issuer}.crt");
        let output = Command::new("openssl")
            .current_dir(directory)
            .args([
                "ca",
                "-config",
                "ca.conf",
                "-keyfile",
                &key,
                "-cert",
                &certificate,
            ])
            .args(arguments)
            .output()
            .expect("run openssl ca");
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    };
    ca("ca", &["-revoke", "revoked.crt"]);
    ca("ca", &["-gencrl", "-out", "ca.crl"]);
    ca("other", &["-gencrl", "-out", "other.crl"]);
}

fn start() -> Instance {
    let body = "
        server {
            listen 127.0.0.1:8443 ssl;
            ssl_certificate good.crt; ssl_certificate_key good.key;
            location / { return 200 \"good\"; }
        }
        server {
            listen 127.0.0.1:8444 ssl;
            ssl_certificate revoked.crt; ssl_certificate_key revoked.key;
            location / { return 200 \"revoked\"; }
        }
        server {
            listen 127.0.0.1:8445 ssl;
            ssl_certificate inter.crt; ssl_certificate_key inter.key;
            location / { return 200 \"inter\"; }
        }
        server {
            listen 127.0.0.1:8080;
            proxy_ssl_verify on;
            proxy_ssl_trusted_certificate ca.crt;
            proxy_ssl_session_reuse off;
            location /good {
                proxy_pass https://127.0.0.1:8443/;
                proxy_ssl_name good;
                proxy_ssl_crl ca.crl;
            }
            location /revoked {
                proxy_pass https://127.0.0.1:8444/;
                proxy_ssl_name revoked;
                proxy_ssl_crl ca.crl;
            }
            location /revoked-unchecked {
                proxy_pass https://127.0.0.1:8444/;
                proxy_ssl_name revoked;
            }
            location /ca-as-server {
                proxy_pass https://127.0.0.1:8445/;
                proxy_ssl_name inter;
                proxy_ssl_crl ca.crl;
            }
            location /unlisted {
                proxy_pass https://127.0.0.1:8443/;
                proxy_ssl_name good;
                proxy_ssl_crl other.crl;
            }
        }";
    tls::with_files(Instance::http_builder(body), make).start()
}

#[test]
fn revoked_and_unlisted_upstream_certificates_fail_the_handshake() {
    if !have_openssl() {
        eprintln!("skipped: no openssl command");
        return;
    }
    let server = start();
    let get = |path: &str| {
        server.request(format!(
            "GET {path} HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"
        ))
    };
    let response = get("/good");
    assert_eq!(response.status, 200);
    assert_eq!(response.body_text(), "good");
    // Without a list the revoked certificate is only a certificate.
    let response = get("/revoked-unchecked");
    assert_eq!(response.status, 200);
    assert_eq!(response.body_text(), "revoked");
    let response = get("/ca-as-server");
    assert_eq!(response.status, 200);
    assert_eq!(response.body_text(), "inter");
    assert_eq!(get("/revoked").status, 502);
    server.wait_for_error_log("certificate revoked");
    assert_eq!(get("/unlisted").status, 502);
    server.wait_for_error_log("unable to get certificate CRL");
}

/// `grpc_ssl_crl` and `uwsgi_ssl_crl` read their lists at load as `proxy_ssl_crl` does:
/// a missing file or one without a list fails the configuration.
#[test]
fn the_gateways_lists_are_read_at_load() {
    if !have_openssl() {
        eprintln!("skipped: no openssl command");
        return;
    }
    let files = crate::support::TempPrefix::new();
    tls::authority(files.path(), "ca");
    let trusted = files.join("ca.crt").display().to_string();
    let missing = "/nonexistent/portico-missing.crl";
    let configs = [
        format!(
            "server {{ listen 127.0.0.1:8080; location / {{
                grpc_pass grpcs://127.0.0.1:9; grpc_ssl_verify on;
                grpc_ssl_trusted_certificate {trusted}; grpc_ssl_crl {missing}; }} }}"
        ),
        format!(
            "server {{ listen 127.0.0.1:8080; location / {{
                uwsgi_pass suwsgi://127.0.0.1:9; uwsgi_ssl_verify on;
                uwsgi_ssl_trusted_certificate {trusted}; uwsgi_ssl_crl {missing}; }} }}"
        ),
    ];
    for config in configs {
        crate::support::cli::assert_http_body_fails(
            &config,
            &format!(
                "cannot load CRL \"{missing}\": BIO_new_file() failed (SSL: \
                 error:80000002:system library::No such file or directory:calling \
                 fopen({missing}, r))"
            ),
        );
    }
}
