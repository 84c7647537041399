//! `proxy_redirect`: `default`, `off`, prefix and regex rules over `Location` and
//! `Refresh`.

use crate::support::Instance;
use crate::support::upstream::MockUpstream;

#[test]
fn proxy_redirect_default_rewrites_location() {
    let mut builder = Instance::http_builder(
        "server {
            listen 127.0.0.1:8080;
            location /app/ { proxy_pass http://127.0.0.1:8081/inner/; }
        }",
    );
    let port = builder.port(8081);
    let answer: &'static str = Box::leak(
        format!("HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:{port}/inner/next\r\nContent-Length: 0\r\n\r\n")
            .into_boxed_str(),
    );
    let _upstream = MockUpstream::answering(port, answer);
    let server = builder.start();
    let response = server.get("/app/x");
    assert_eq!(response.status, 302);
    let location = response.header("Location").unwrap_or_default();
    assert!(location.ends_with("/app/next"), "{location}");
    assert!(!location.contains("inner"), "{location}");
}

#[test]
fn proxy_redirect_off_prefix_and_regex_rules() {
    let mut builder = Instance::http_builder(
        "server {
            listen 127.0.0.1:8080;
            absolute_redirect off;
            location /off/ { proxy_pass http://127.0.0.1:8081/inner/; proxy_redirect off; }
            location /one/ {
                proxy_pass http://127.0.0.1:8081;
                proxy_redirect http://upstream/one/ /two/;
            }
            location /regex/ {
                proxy_pass http://127.0.0.1:8081;
                proxy_redirect ~^http://[^/]+(/.*)$ $1;
            }
        }",
    );
    let port = builder.port(8081);
    let _upstream = MockUpstream::start(port, move |mut conn| {
        while let Some(request) = conn.read_request() {
            let text = String::from_utf8_lossy(&request).into_owned();
            let path = text.split(' ').nth(1).unwrap_or_default().to_owned();
            conn.write(redirect_answer(&path, port));
        }
    });
    let server = builder.start();
    let location = |path: &str| {
        let response = server.get(path);
        assert_eq!(response.status, 302, "{path}");
        response.header("Location").unwrap_or_default().to_owned()
    };
    // `off`: what `default` would have rewritten to `/off/next` is passed as it came.
    assert_eq!(
        location("/off/next"),
        format!("http://127.0.0.1:{port}/inner/next")
    );
    // A prefix rule replaces the prefix of `Location` and of `Refresh`'s URL.
    let response = server.get("/one/x");
    assert_eq!(response.header("Location"), Some("/two/x?y=1"));
    assert_eq!(response.header("Refresh"), Some("3; url=/two/r"));
    // An explicit rule replaces `default`: the upstream's own URL is no longer rewritten.
    assert_eq!(
        location("/one/other"),
        format!("http://127.0.0.1:{port}/one/other")
    );
    // A regex rule replaces the whole value with its replacement, captures filled in.
    assert_eq!(location("/regex/x"), "/path/q?z");
    assert_eq!(location("/regex/none"), "/relative/kept");
}

/// The upstream's redirect for each request the `proxy_redirect` test sends, by the path
/// the upstream received.
pub(crate) fn redirect_answer(path: &str, port: u16) -> String {
    let fields = match path {
        "/inner/next" => format!("Location: http://127.0.0.1:{port}/inner/next\r\n"),
        "/one/x" => {
            "Location: http://upstream/one/x?y=1\r\nRefresh: 3; url=http://upstream/one/r\r\n"
                .to_owned()
        }
        "/one/other" => format!("Location: http://127.0.0.1:{port}/one/other\r\n"),
        "/regex/x" => "Location: http://elsewhere:99/path/q?z\r\n".to_owned(),
        _ => "Location: /relative/kept\r\n".to_owned(),
    };
    format!("HTTP/1.1 302 Found\r\n{fields}Content-Length: 0\r\n\r\n")
}
