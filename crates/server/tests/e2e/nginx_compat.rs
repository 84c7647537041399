//! What real nginx configs carry that Portico takes as nginx does: enum and bitmask
//! values in any case, `ssl on` with nginx 1.22's warning, `env` for the workers,
//! `timer_resolution` and `pcre_jit`.

use crate::support::Instance;
use crate::support::cli::{assert_fails, assert_http_body_fails, reported, test_http_body};
use crate::support::tls::{self, Options, have_openssl};

#[test]
fn enum_and_bitmask_values_ignore_case() {
    let (_, output) = test_http_body(concat!(
        "server_tokens Off;\n",
        "gzip_proxied ANY No-Cache;\n",
        "lingering_close ALWAYS;\n",
        "keepalive_disable MSIE6;\n",
        "satisfy Any;\n",
        "if_modified_since Before;\n",
        "client_body_in_file_only Clean;\n",
        "gzip_static Always;\n",
        "limit_req_log_level Warn;\n",
        "ssl_protocols tlsv1.2 TLSv1.3;\n",
        "ssl_verify_client Optional;\n",
        "server { location / { proxy_next_upstream ERROR Timeout; proxy_cache_use_stale Updating;\n",
        "proxy_cache_methods get head; autoindex_format JSON; } }\n",
    ));
    output.assert_code(0);
    // A value that is not one of the words still fails, named as written.
    assert_http_body_fails(
        "server_tokens Maybe;",
        "invalid value \"Maybe\" in {conf}:4",
    );
    assert_http_body_fails(
        "server { location / { proxy_next_upstream ERROR Sometimes; } }",
        "invalid value \"Sometimes\" in {conf}:4",
    );
}

#[test]
fn ssl_on_makes_the_servers_listens_tls_with_nginx_warning() {
    if !have_openssl() {
        return;
    }
    let server = tls::start(
        "server { listen 127.0.0.1:8443; ssl on; ssl_certificate localhost.crt;
            ssl_certificate_key localhost.key; location / { return 200 \"$https\"; } }",
    );
    let response = tls::get(server.port_of(8443), &Options::sni("localhost"), "/");
    assert_eq!(response.status, 200);
    assert_eq!(response.body_text(), "on");
    let log = server.error_log();
    assert!(
        log.lines().any(|line| line.contains("[warn] ")
            && line.contains(
                ": the \"ssl\" directive is deprecated, use the \"listen ... ssl\" \
                 directive instead in "
            )),
        "{log}"
    );
}

#[test]
fn ssl_on_without_a_certificate_fails_naming_the_directive() {
    assert_http_body_fails(
        "server {\nlisten 127.0.0.1:8443;\nssl on;\n}",
        "no \"ssl_certificate\" is defined for the \"ssl\" directive in {conf}:6",
    );
    // `ssl off` at the server undoes the `http` level's `ssl on`.
    let (conf, output) = test_http_body("ssl on;\nserver { listen 127.0.0.1:8080; ssl off; }");
    output.assert_code(0);
    assert!(
        reported(
            &output.stderr,
            "warn",
            &format!(
                "the \"ssl\" directive is deprecated, use the \"listen ... ssl\" directive \
                 instead in {conf}:4"
            )
        ),
        "{}",
        output.stderr
    );
}

#[test]
fn env_sets_the_time_zone_of_the_workers() {
    let server = Instance::start(
        "env TZ=EST5;\nenv PORTICO_UNUSED;\ntimer_resolution 100ms;\npcre_jit on;\n\
         events {}\nhttp { server { listen 127.0.0.1:8080;\n\
         location / { return 200 \"$time_local\"; } } }",
    );
    let body = server.get("/").body_text();
    assert!(body.ends_with(" -0500"), "{body}");
}

#[test]
fn timer_resolution_and_pcre_jit_are_checked() {
    assert_fails(
        "timer_resolution soon;\nevents {}\n",
        "\"timer_resolution\" directive invalid value in {conf}:1",
    );
    assert_fails(
        "pcre_jit maybe;\nevents {}\n",
        "invalid value \"maybe\" in \"pcre_jit\" directive, it must be \"on\" or \"off\" in {conf}:1",
    );
}
