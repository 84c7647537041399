//! TLS to upstreams: `proxy_pass https://`, `proxy_ssl_server_name`, `proxy_ssl_name`,
//! `proxy_ssl_verify`, `proxy_ssl_trusted_certificate`, `proxy_ssl_verify_depth`,
//! `proxy_ssl_certificate`, `proxy_ssl_certificate_key`, `proxy_ssl_password_file`,
//! `proxy_ssl_protocols`, `proxy_ssl_ciphers`, `proxy_ssl_session_reuse`,
//! `proxy_ssl_conf_command`, and keep-alive over TLS. The upstream is Portico itself,
//! on a TLS port of the same instance, reporting what it saw.

use crate::support::Instance;
use crate::support::tls::{self, have_openssl};

fn start(locations: &str) -> Instance {
    let body = format!(
        "upstream kept {{ server 127.0.0.1:8443; keepalive 4; }}
         server {{ listen 127.0.0.1:8443 ssl; server_name backend.test;
            ssl_certificate backend.test.crt; ssl_certificate_key backend.test.key;
            ssl_verify_client optional_no_ca;
            location / {{ return 200 \"$ssl_server_name|$ssl_protocol|$ssl_cipher|\
$ssl_session_reused|$ssl_client_s_dn|$connection\"; }} }}
         server {{ listen 127.0.0.1:8080; {locations} }}"
    );
    tls::with_files(Instance::http_builder(&body), |directory| {
        tls::authority(directory, "ca");
        tls::issued(directory, "backend.test", "ca", (-1, 30));
        tls::issued(directory, "proxy", "ca", (-1, 30));
        tls::authority(directory, "other-ca");
    })
    .file("passwords", "unused\n")
    .start()
}

fn fields(server: &Instance, path: &str) -> (u16, Vec<String>) {
    let response = server.get(path);
    let body = response.body_text();
    (
        response.status,
        body.split('|').map(str::to_owned).collect(),
    )
}

#[test]
fn proxy_pass_https_reaches_a_tls_upstream() {
    if !have_openssl() {
        return;
    }
    let server = start("location / { proxy_pass https://127.0.0.1:8443; }");
    let (status, seen) = fields(&server, "/");
    assert_eq!(status, 200);
    // No SNI by default (proxy_ssl_server_name off).
    assert_eq!(seen[0], "");
    assert_eq!(seen[1], "TLSv1.3");
}

#[test]
fn proxy_ssl_server_name_and_name_send_sni() {
    if !have_openssl() {
        return;
    }
    let server = start(
        "location / { proxy_pass https://127.0.0.1:8443; proxy_ssl_server_name on;
            proxy_ssl_name backend.test; proxy_set_header Host backend.test; }",
    );
    let (_, seen) = fields(&server, "/");
    assert_eq!(seen[0], "backend.test");
}

#[test]
fn proxy_ssl_verify_checks_the_chain_and_the_name() {
    if !have_openssl() {
        return;
    }
    let server = start(
        "proxy_ssl_verify on; proxy_ssl_verify_depth 2;
         location /good { proxy_pass https://127.0.0.1:8443/; proxy_ssl_name backend.test;
            proxy_ssl_trusted_certificate ca.crt; }
         location /badname { proxy_pass https://127.0.0.1:8443/; proxy_ssl_name other.test;
            proxy_ssl_trusted_certificate ca.crt; }
         location /badca { proxy_pass https://127.0.0.1:8443/; proxy_ssl_name backend.test;
            proxy_ssl_trusted_certificate other-ca.crt; }",
    );
    assert_eq!(server.get("/good").status, 200);
    assert_eq!(server.get("/badname").status, 502);
    assert_eq!(server.get("/badca").status, 502);
    assert!(
        server
            .error_log()
            .contains(" while SSL handshaking to upstream"),
        "{}",
        server.error_log()
    );
}

/// `proxy_ssl_verify_depth` counts as OpenSSL does: a server certificate issued by an
/// intermediate needs depth 2 (nginx's default of 1 refuses it).
#[test]
fn proxy_ssl_verify_depth_limits_the_chain() {
    if !have_openssl() {
        return;
    }
    let server = tls::with_files(
        Instance::http_builder(
            "server { listen 127.0.0.1:8443 ssl;
                ssl_certificate chain.crt; ssl_certificate_key deep.test.key;
                location / { return 200 deep; } }
             server { listen 127.0.0.1:8080;
                proxy_ssl_verify on; proxy_ssl_trusted_certificate ca.crt;
                proxy_ssl_name deep.test;
                location /one { proxy_pass https://127.0.0.1:8443/; }
                location /two { proxy_pass https://127.0.0.1:8443/; proxy_ssl_verify_depth 2; } }",
        ),
        |directory| {
            tls::authority(directory, "ca");
            tls::intermediate(directory, "mid", "ca");
            tls::issued(directory, "deep.test", "mid", (-1, 30));
            let chain = [
                std::fs::read(directory.join("deep.test.crt")).expect("leaf"),
                std::fs::read(directory.join("mid.crt")).expect("intermediate"),
            ]
            .concat();
            std::fs::write(directory.join("chain.crt"), chain).expect("write the chain");
        },
    )
    .start();
    assert_eq!(server.get("/one").status, 502);
    let two = server.get("/two");
    assert_eq!((two.status, two.body_text().as_str()), (200, "deep"));
}

#[test]
fn proxy_ssl_certificate_presents_a_client_certificate() {
    if !have_openssl() {
        return;
    }
    let server = start(
        "location / { proxy_pass https://127.0.0.1:8443;
            proxy_ssl_certificate proxy.crt; proxy_ssl_certificate_key proxy.key;
            proxy_ssl_password_file %%PREFIX%%/passwords; }",
    );
    let (_, seen) = fields(&server, "/");
    assert_eq!(seen[4], "O=Portico Test,CN=proxy");
}

#[test]
fn an_empty_proxy_ssl_certificate_takes_back_an_inherited_one() {
    if !have_openssl() {
        return;
    }
    let server = start(
        "proxy_ssl_certificate proxy.crt; proxy_ssl_certificate_key proxy.key;
         location /inherit { proxy_pass https://127.0.0.1:8443/; }
         location /cancel { proxy_pass https://127.0.0.1:8443/;
            proxy_ssl_certificate \"\"; proxy_ssl_certificate_key \"\"; }",
    );
    let (_, inherited) = fields(&server, "/inherit");
    assert_eq!(inherited[4], "O=Portico Test,CN=proxy");
    let (_, cancelled) = fields(&server, "/cancel");
    assert_eq!(cancelled[4], "", "no client certificate");
}

#[test]
fn proxy_ssl_protocols_and_ciphers_choose_the_upstream_suite() {
    if !have_openssl() {
        return;
    }
    let server = start(
        "location / { proxy_pass https://127.0.0.1:8443;
            proxy_ssl_protocols TLSv1.2; proxy_ssl_ciphers ECDHE-RSA-CHACHA20-POLY1305;
            proxy_ssl_conf_command Options PrioritizeChaCha; }",
    );
    let (_, seen) = fields(&server, "/");
    assert_eq!(seen[1..3], ["TLSv1.2", "ECDHE-RSA-CHACHA20-POLY1305"]);
}

#[test]
fn proxy_ssl_session_reuse_resumes_upstream_sessions() {
    if !have_openssl() {
        return;
    }
    let server = start(
        "location /reuse { proxy_pass https://127.0.0.1:8443; }
         location /fresh { proxy_pass https://127.0.0.1:8443; proxy_ssl_session_reuse off; }",
    );
    let _ = fields(&server, "/reuse");
    let (_, seen) = fields(&server, "/reuse");
    assert_eq!(seen[3], "r");
    let _ = fields(&server, "/fresh");
    let (_, seen) = fields(&server, "/fresh");
    assert_eq!(seen[3], ".");
}

#[test]
fn upstream_keepalive_works_over_tls() {
    if !have_openssl() {
        return;
    }
    let server = start(
        "location / { proxy_pass https://kept; proxy_http_version 1.1;
            proxy_set_header Connection \"\"; }",
    );
    let (_, first) = fields(&server, "/");
    let (_, second) = fields(&server, "/");
    assert_eq!(
        first[5], second[5],
        "the second request reused the connection"
    );
}

#[test]
fn a_kept_tls_connection_serves_only_its_own_server_name() {
    if !have_openssl() {
        return;
    }
    let server = start(
        "proxy_http_version 1.1; proxy_ssl_server_name on;
         location /a { proxy_pass https://kept; proxy_ssl_name a.test;
            proxy_set_header Connection \"\"; proxy_set_header Host a.test; }
         location /b { proxy_pass https://kept; proxy_ssl_name b.test;
            proxy_set_header Connection \"\"; proxy_set_header Host b.test; }",
    );
    let (_, first_a) = fields(&server, "/a");
    let (_, first_b) = fields(&server, "/b");
    let (_, second_a) = fields(&server, "/a");
    assert_eq!(first_a[0], "a.test");
    assert_eq!(first_b[0], "b.test", "the b location got a's connection");
    assert_eq!(second_a[0], "a.test");
    assert_eq!(first_a[5], second_a[5], "a's connection was kept for a");
}

#[test]
fn a_bad_proxy_ssl_certificate_fails_the_load() {
    let (_, output) = crate::support::cli::test_http_body(
        "server { listen 127.0.0.1:8080; location / { proxy_pass https://127.0.0.1:1;
            proxy_ssl_certificate /nonexistent.crt; proxy_ssl_certificate_key /nonexistent.key; } }",
    );
    output.assert_code(1);
    assert!(
        output
            .stderr
            .contains("cannot load certificate \"/nonexistent.crt\""),
        "{}",
        output.stderr
    );
}
