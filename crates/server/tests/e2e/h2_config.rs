//! HTTP/2's directives as the configuration reads them (nginx's `ngx_http_v2_module`):
//! `listen ... http2`, `http2`, the `http2_*` settings with nginx's errors, and the
//! obsolete ones accepted with nginx's warnings. Serving HTTP/2 is tested in `h2.rs`.

use crate::support::cli::{assert_http_body_fails, reported, test_http_body};

#[test]
fn http2_directives_are_accepted_with_nginx_defaults_and_contexts() {
    let (_, output) = test_http_body(concat!(
        "http2 on;\n",
        "http2_recv_buffer_size 512k;\n",
        "http2_max_concurrent_streams 64;\n",
        "http2_body_preread_size 128k;\n",
        "http2_chunk_size 16k;\n",
        "server {\n",
        "    listen 127.0.0.1:8080;\n",
        "    http2 off;\n",
        "    http2_max_concurrent_streams 10;\n",
        "    http2_body_preread_size 0;\n",
        "    location / { http2_chunk_size 100m; return 200; }\n",
        "}\n",
    ));
    output.assert_code(0);
}

#[test]
fn listen_http2_and_obsolete_directives_warn_as_nginx() {
    let (conf, output) = test_http_body(concat!(
        "http2_idle_timeout 3m;\n",
        "http2_max_requests 1000;\n",
        "http2_max_field_size 4k;\n",
        "http2_max_header_size 16k;\n",
        "http2_recv_timeout 30s;\n",
        "http2_max_concurrent_pushes 10;\n",
        "server {\n",
        "    listen 127.0.0.1:8080 http2;\n",
        "    location / { http2_push /style.css; http2_push_preload on; }\n",
        "}\n",
    ));
    output.assert_code(0);
    let warned = |message: &str, line: u32| {
        let message = format!("{message} in {conf}:{line}");
        assert!(
            reported(&output.stderr, "warn", &message),
            "want [warn] {message:?} in:\n{}",
            output.stderr
        );
    };
    let instead = |old: &str, new: &str| {
        format!("the \"{old}\" directive is obsolete, use the \"{new}\" directive instead")
    };
    warned(&instead("http2_idle_timeout", "keepalive_timeout"), 4);
    warned(&instead("http2_max_requests", "keepalive_requests"), 5);
    warned(
        &instead("http2_max_field_size", "large_client_header_buffers"),
        6,
    );
    warned(
        &instead("http2_max_header_size", "large_client_header_buffers"),
        7,
    );
    warned(&instead("http2_recv_timeout", "client_header_timeout"), 8);
    warned(
        "the \"http2_max_concurrent_pushes\" directive is obsolete, ignored",
        9,
    );
    warned(
        "the \"listen ... http2\" directive is deprecated, use the \"http2\" directive instead",
        11,
    );
    warned("the \"http2_push\" directive is obsolete, ignored", 12);
    warned(
        "the \"http2_push_preload\" directive is obsolete, ignored",
        12,
    );
}

#[test]
fn bad_http2_values_fail_with_nginx_errors() {
    assert_http_body_fails(
        "http2 maybe;",
        "invalid value \"maybe\" in \"http2\" directive, it must be \"on\" or \"off\" in {conf}:4",
    );
    assert_http_body_fails(
        "http2_chunk_size 0;",
        "the http2 chunk size cannot be zero in {conf}:4",
    );
    assert_http_body_fails(
        "http2_chunk_size x;",
        "\"http2_chunk_size\" directive invalid value in {conf}:4",
    );
    assert_http_body_fails(
        "http2_body_preread_size 2048m;",
        "\"http2_body_preread_size\" directive value is too large in {conf}:4",
    );
    assert_http_body_fails(
        "http2_recv_buffer_size 32;",
        "\"http2_recv_buffer_size\" directive value is too small in {conf}:4",
    );
    assert_http_body_fails(
        "http2_max_concurrent_streams many;",
        "\"http2_max_concurrent_streams\" directive invalid number in {conf}:4",
    );
    assert_http_body_fails(
        "server { http2_recv_buffer_size 1m; }",
        "\"http2_recv_buffer_size\" directive is not allowed here in {conf}:4",
    );
    assert_http_body_fails(
        "server { location / { http2 on; } }",
        "\"http2\" directive is not allowed here in {conf}:4",
    );
    assert_http_body_fails(
        "http2 on;\nhttp2 off;",
        "\"http2\" directive is duplicate in {conf}:5",
    );
}
