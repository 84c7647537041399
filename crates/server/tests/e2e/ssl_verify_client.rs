//! Client certificates: `ssl_verify_client`, `ssl_client_certificate`,
//! `ssl_trusted_certificate`, `ssl_verify_depth`, `ssl_crl` and the `$ssl_client_*`
//! variables. A bad certificate gets nginx's HTTP 400 page, not a TLS alert.

use std::path::Path;
use std::process::Command;

use crate::support::Instance;
use crate::support::cli::assert_http_body_fails;
use crate::support::tls::{self, Options, have_openssl};

const VARIABLES: &str = "$ssl_client_verify|$ssl_client_s_dn|$ssl_client_i_dn|\
$ssl_client_serial|$ssl_client_v_remain";

/// A CA, a client it issued, an expired one, a revoked one (with a CRL), and a stranger.
fn make(directory: &Path) {
    tls::self_signed(directory, "localhost", tls::Key::Rsa);
    tls::authority(directory, "ca");
    tls::issued(directory, "good", "ca", (-1, 30));
    tls::issued(directory, "expired", "ca", (-30, -1));
    tls::authority(directory, "stranger-ca");
    tls::issued(directory, "stranger", "stranger-ca", (-1, 30));
    tls::issued(directory, "revoked", "ca", (-1, 30));
    let revoke = Command::new("openssl")
        .current_dir(directory)
        .args([
            "ca", "-config", "ca.conf", "-keyfile", "ca.key", "-cert", "ca.crt",
        ])
        .args(["-revoke", "revoked.crt"])
        .output()
        .expect("run openssl ca -revoke");
    assert!(
        revoke.status.success(),
        "{}",
        String::from_utf8_lossy(&revoke.stderr)
    );
    let crl = Command::new("openssl")
        .current_dir(directory)
        .args([
            "ca", "-config", "ca.conf", "-keyfile", "ca.key", "-cert", "ca.crt",
        ])
        .args(["-gencrl", "-out", "ca.crl"])
        .output()
        .expect("run openssl ca -gencrl");
    assert!(
        crl.status.success(),
        "{}",
        String::from_utf8_lossy(&crl.stderr)
    );
}

fn start() -> Instance {
    let pair = "ssl_certificate localhost.crt; ssl_certificate_key localhost.key;";
    let body = format!(
        "server {{ listen 127.0.0.1:8443 ssl; {pair} ssl_verify_client on;
            ssl_client_certificate ca.crt; ssl_crl ca.crl;
            location / {{ return 200 \"{VARIABLES}\"; }} }}
         server {{ listen 127.0.0.1:8444 ssl; {pair} ssl_verify_client optional;
            ssl_trusted_certificate ca.crt;
            location / {{ return 200 \"{VARIABLES}\"; }} }}
         server {{ listen 127.0.0.1:8445 ssl; {pair} ssl_verify_client optional_no_ca;
            location / {{ return 200 \"$ssl_client_verify\"; }} }}
         server {{ listen 127.0.0.1:8446 ssl; {pair} ssl_verify_client on;
            ssl_client_certificate ca.crt; ssl_verify_depth 0;
            location / {{ return 200 \"$ssl_client_verify\"; }} }}"
    );
    tls::with_files(Instance::http_builder(&body), make).start()
}

fn with_certificate(server: &Instance, name: &str) -> Options {
    let path = |extension: &str| server.prefix().join(&format!("{name}.{extension}"));
    Options {
        certificate: Some((path("crt"), path("key"))),
        ..Options::default()
    }
}

#[test]
fn a_good_certificate_is_verified_and_described() {
    if !have_openssl() {
        return;
    }
    let server = start();
    let response = tls::get(
        server.port_of(8443),
        &with_certificate(&server, "good"),
        "/",
    );
    assert_eq!(response.status, 200);
    let body = response.body_text();
    let fields: Vec<&str> = body.split('|').collect();
    assert_eq!(
        fields[..4],
        ["SUCCESS", "O=Portico Test,CN=good", "CN=ca", "1234"]
    );
    let remaining: u32 = fields[4].parse().expect("a number of days");
    assert!((28..=30).contains(&remaining), "{remaining}");
}

#[test]
fn no_certificate_under_on_gets_the_496_page() {
    if !have_openssl() {
        return;
    }
    let server = start();
    let response = tls::get(server.port_of(8443), &Options::default(), "/");
    assert_eq!(response.status, 400);
    assert!(
        response
            .body_text()
            .contains("No required SSL certificate was sent")
    );
    server.wait_for_error_log("client sent no required SSL certificate");
}

#[test]
fn expired_revoked_and_unknown_certificates_get_the_495_page() {
    if !have_openssl() {
        return;
    }
    let server = start();
    for (name, reason) in [
        ("expired", "certificate has expired"),
        ("revoked", "certificate revoked"),
        ("stranger", "unable to get local issuer certificate"),
    ] {
        let response = tls::get(server.port_of(8443), &with_certificate(&server, name), "/");
        assert_eq!(response.status, 400, "{name}");
        assert!(
            response.body_text().contains("The SSL certificate error"),
            "{name}"
        );
        server.wait_for_error_log("client SSL certificate verify error: (");
        server.wait_for_error_log(reason);
    }
}

#[test]
fn optional_lets_clients_without_a_certificate_in() {
    if !have_openssl() {
        return;
    }
    let server = start();
    let response = tls::get(server.port_of(8444), &Options::default(), "/");
    assert_eq!(response.body_text(), "NONE||||");
    let trusted = tls::get(
        server.port_of(8444),
        &with_certificate(&server, "good"),
        "/",
    );
    assert!(
        trusted.body_text().starts_with("SUCCESS|"),
        "{}",
        trusted.body_text()
    );
}

#[test]
fn optional_no_ca_reports_the_failure_and_serves() {
    if !have_openssl() {
        return;
    }
    let server = start();
    let response = tls::get(
        server.port_of(8445),
        &with_certificate(&server, "stranger"),
        "/",
    );
    assert_eq!(response.status, 200);
    assert_eq!(
        response.body_text(),
        "FAILED:unable to get local issuer certificate"
    );
}

#[test]
fn ssl_verify_depth_0_refuses_a_certificate_issued_by_a_ca() {
    if !have_openssl() {
        return;
    }
    let server = start();
    let response = tls::get(
        server.port_of(8446),
        &with_certificate(&server, "good"),
        "/",
    );
    assert_eq!(response.status, 400);
    server.wait_for_error_log("certificate chain too long");
}

#[test]
fn verify_client_without_a_ca_fails_the_load() {
    if !have_openssl() {
        return;
    }
    let scratch = crate::support::TempPrefix::new();
    tls::self_signed(scratch.path(), "localhost", tls::Key::Rsa);
    let directory = scratch.path().display();
    assert_http_body_fails(
        &format!(
            "server {{ listen 127.0.0.1:8443 ssl; ssl_verify_client on;
                ssl_certificate {directory}/localhost.crt;
                ssl_certificate_key {directory}/localhost.key; }}"
        ),
        "no ssl_client_certificate or ssl_trusted_certificate for ssl_verify_client",
    );
}
