//! `sub_filter` and its companions: strings replaced in files, `return` texts and proxied
//! bodies, several at once, once or everywhere, a match split across two reads, with
//! variables; types, the head, and a configuration that is refused.

use std::time::Duration;

use crate::support::Instance;
use crate::support::cli::assert_http_body_fails;
use crate::support::upstream::MockUpstream;

const SUB: &str = "
server {
    listen 127.0.0.1:8080;
    root site;
    types { text/html html; text/plain txt; }
    sub_filter one 1;
    sub_filter two 2;
    sub_filter three 3;
    location /many/ { sub_filter_once off; }
    location /kept/ { sub_filter_last_modified on; }
    location /text/ { sub_filter_types text/plain; }
    location = /var.html { sub_filter $arg_from $arg_to; return 200 \"<p>$arg_body</p>\"; }
    location /up/ { proxy_pass http://127.0.0.1:8081/; }
}";

#[test]
fn sub_filter_replaces_strings_in_any_body() {
    let mut builder = Instance::http_builder(SUB);
    let _upstream = MockUpstream::start(builder.port(8081), |mut conn| {
        while conn.read_request().is_some() {
            let body = b"<b>xx TWO-ONE-THREE xx</b>";
            conn.write(format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\n\r\n",
                body.len()
            ));
            // The strings arrive cut in two.
            conn.write_slowly(body, 7, Duration::from_millis(30));
        }
    });
    let server = builder
        .file("site/page.html", "one two three one")
        .file("site/many/page.html", "One two THREE one")
        .file("site/kept/page.html", "one")
        .file("site/page.txt", "one")
        .file("site/text/page.txt", "one")
        .start();
    let page = server.get("/page.html");
    assert_eq!(page.body_text(), "1 2 3 one");
    assert_eq!(page.header("Content-Length"), None);
    assert_eq!(page.header("Last-Modified"), None);
    assert_eq!(page.header("ETag"), None);
    assert_eq!(server.get("/many/page.html").body_text(), "1 2 3 1");
    let kept = server.get("/kept/page.html");
    assert!(kept.header("Last-Modified").is_some());
    assert!(
        kept.header("ETag")
            .is_some_and(|etag| etag.starts_with("W/"))
    );
    assert_eq!(
        server.get("/page.txt").body_text(),
        "one",
        "not in sub_filter_types"
    );
    assert_eq!(server.get("/text/page.txt").body_text(), "1");
    assert_eq!(
        server
            .get("/var.html?from=cat&to=dog&body=a%20cat")
            .body_text(),
        "<p>a%20dog</p>"
    );
    assert_eq!(server.get("/up/x").body_text(), "<b>xx 2-1-3 xx</b>");
}

#[test]
fn sub_filter_refuses_an_empty_string() {
    assert_http_body_fails(
        "server { listen 127.0.0.1:8080; sub_filter \"\" x; }",
        "empty search pattern in {conf}:4",
    );
}
