//! `X-Accel-Redirect` from the upstream, and `proxy_ignore_headers` turning it off.

use crate::support::proxy::proxy_with;

#[test]
fn x_accel_redirect_redirects_internally() {
    let (server, _upstream) = proxy_with(
        "server {
            listen 127.0.0.1:8080;
            location /p { proxy_pass http://127.0.0.1:8081; }
            location /target { return 200 \"target $request_method $upstream_http_x_accel_redirect\"; }
        }",
        |mut conn| {
            if conn.read_request().is_some() {
                conn.write("HTTP/1.1 200 OK\r\nX-Accel-Redirect: /target\r\nX-Other: gone\r\nContent-Length: 0\
                    \r\n\r\n");
            }
        },
    );
    let response = server
        .request("POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    assert_eq!(response.body_text(), "target GET /target");
    assert!(!response.has_header("X-Other"));
}

#[test]
fn proxy_ignore_headers_passes_x_accel_redirect_on() {
    let (server, _upstream) = proxy_with(
        "server {
            listen 127.0.0.1:8080;
            location / { proxy_pass http://127.0.0.1:8081; proxy_ignore_headers X-Accel-Redirect; }
            location /target { return 200 redirected; }
        }",
        |mut conn| {
            if conn.read_request().is_some() {
                conn.write("HTTP/1.1 200 OK\r\nX-Accel-Redirect: /target\r\nContent-Length: 5\r\n\r\nfirst");
            }
        },
    );
    let response = server.get("/");
    assert_eq!(response.body_text(), "first");
    // The field itself stays hidden, as nginx hides it.
    assert!(!response.has_header("X-Accel-Redirect"));
}
