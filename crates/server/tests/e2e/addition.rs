//! `add_before_body`, `add_after_body`, `addition_types`: subrequest bodies around a
//! response, only where its status and type allow, and an addition that fails.

use crate::support::Instance;

#[test]
fn addition_wraps_the_body_in_subrequest_bodies() {
    let server = Instance::http_builder(
        "server {
            listen 127.0.0.1:8080;
            root site;
            types { text/html html; text/plain txt; image/png png; }
            add_before_body /header.html;
            add_after_body /footer.html;
            addition_types text/plain;
            location = /header.html { add_before_body \"\"; add_after_body \"\"; }
            location = /footer.html { add_before_body \"\"; add_after_body \"\"; }
            location /missing/ { add_after_body /nothing-here; }
            location /loop/ { add_before_body /loop/x; add_after_body \"\"; }
        }",
    )
    .file("site/header.html", "[H]")
    .file("site/footer.html", "[F]")
    .file("site/page.html", "BODY")
    .file("site/page.txt", "TEXT")
    .file("site/image.png", "PNG")
    .file("site/missing/page.html", "M")
    .file("site/loop/x", "X")
    .start();
    let page = server.get("/page.html");
    assert_eq!(page.body_text(), "[H]BODY[F]");
    assert_eq!(page.header("Content-Length"), None);
    assert_eq!(page.header("Accept-Ranges"), None);
    assert_eq!(server.get("/page.txt").body_text(), "[H]TEXT[F]");
    assert_eq!(
        server.get("/image.png").body_text(),
        "PNG",
        "not in addition_types"
    );
    // Only a 200 gets additions.
    let missing = server.get("/nope.html");
    assert_eq!(missing.status, 404);
    assert!(!missing.body_text().contains("[H]"));
    // A failing addition places its own error page, as nginx's subrequest does.
    let failing = server.get("/missing/page.html").body_text();
    assert!(
        failing.starts_with("[H]M") && failing.contains("404 Not Found"),
        "{failing}"
    );
    // An addition's own request gets none (a subrequest never does).
    assert_eq!(server.get("/loop/x").body_text(), "XX");
}

/// An upstream that closes before its `Content-Length`: the head that was made goes out
/// before the connection closes (as nginx flushes it), and the added part does not.
#[test]
fn an_upstream_cut_short_still_sends_the_head() {
    let (server, _upstream) = crate::support::proxy::proxy_with(
        "server {
            listen 127.0.0.1:8080;
            location / { proxy_pass http://127.0.0.1:8081; add_after_body /after; }
            location /after { return 200 \":after\"; }
        }",
        |mut conn| {
            if conn.read_request().is_some() {
                conn.write("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n");
                conn.close();
            }
        },
    );
    let mut client = crate::support::Client::connect(server.port());
    client.write("GET /empty HTTP/1.1\r\nHost: x\r\n\r\n");
    let (_, received) = client.wait_closed();
    let text = String::from_utf8_lossy(&received);
    assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
    assert!(!text.contains(":after"), "{text}");
}
