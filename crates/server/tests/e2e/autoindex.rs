//! `autoindex`, `autoindex_format`, `autoindex_exact_size`: listings compared byte for byte
//! with what nginx 1.22 sends for the same directory (the tests pass against it with
//! `PORTICO_E2E_BINARY=/usr/sbin/nginx`).

use std::time::{Duration, SystemTime};

use crate::support::Instance;

const CONF: &str = r#"
server {
    listen 127.0.0.1:8080;
    root %%PREFIX%%/html;
    location /list/ { autoindex on; }
    location /approx/ { alias %%PREFIX%%/html/list/; autoindex on; autoindex_exact_size off; }
    location /json/ { alias %%PREFIX%%/html/list/; autoindex on; autoindex_format json; }
    location /jsonp/ { alias %%PREFIX%%/html/list/; autoindex on; autoindex_format jsonp; }
    location /xml/ { alias %%PREFIX%%/html/list/; autoindex on; autoindex_format xml; }
    location /off/ { alias %%PREFIX%%/html/list/; }
    location /missing/ { autoindex on; }
}
"#;

/// 2026-11-22 00:12:27 UTC.
const MTIME: u64 = 1_795_306_347;

fn start() -> Instance {
    let server = Instance::http_builder(CONF)
        .file("html/list/a.txt", "hello")
        .file("html/list/big.bin", vec![b'x'; 20_000])
        .file("html/list/x&y.txt", "1")
        .file("html/list/.hidden", "")
        .file("html/list/sub dir/inner.txt", "")
        .start();
    let time = SystemTime::UNIX_EPOCH + Duration::from_secs(MTIME);
    for name in ["a.txt", "big.bin", "x&y.txt", "sub dir"] {
        let path = server.prefix().join(&format!("html/list/{name}"));
        let file = std::fs::File::open(&path).expect("open to set its time");
        file.set_modified(time).expect("set the modification time");
    }
    server
}

fn line(href: &str, shown: &str, pad: usize, size: &str) -> String {
    format!(
        "<a href=\"{href}\">{shown}</a>{:pad$}22-Nov-2026 00:12 {size}\r\n",
        ""
    )
}

#[test]
fn html_listing_is_nginx_byte_for_byte() {
    let server = start();
    let response = server.get("/list/");
    assert_eq!(response.status, 200);
    assert_eq!(response.header("Content-Type"), Some("text/html"));
    let expected = [
        "<html>\r\n<head><title>Index of /list/</title></head>\r\n<body>\r\n".to_owned(),
        "<h1>Index of /list/</h1><hr><pre><a href=\"../\">../</a>\r\n".to_owned(),
        line("sub%20dir/", "sub dir/", 43, &format!("{:>19}", "-")),
        line("a.txt", "a.txt", 46, &format!("{:>19}", 5)),
        line("big.bin", "big.bin", 44, &format!("{:>19}", 20_000)),
        line("x%26y.txt", "x&amp;y.txt", 44, &format!("{:>19}", 1)),
        "</pre><hr></body>\r\n</html>\r\n".to_owned(),
    ]
    .concat();
    assert_eq!(response.body_text(), expected);
}

#[test]
fn approximate_sizes() {
    let server = start();
    let body = server.get("/approx/").body_text();
    assert!(
        body.contains(&line("sub%20dir/", "sub dir/", 43, "      -")),
        "{body}"
    );
    assert!(
        body.contains(&line("a.txt", "a.txt", 46, "      5")),
        "{body}"
    );
    assert!(
        body.contains(&line("big.bin", "big.bin", 44, "    20K")),
        "{body}"
    );
    assert!(body.contains("<title>Index of /approx/</title>"), "{body}");
}

#[test]
fn json_and_jsonp_listings() {
    let server = start();
    let date = "Sun, 22 Nov 2026 00:12:27 GMT";
    let entries = format!(
        "[\r\n{{ \"name\":\"sub dir\", \"type\":\"directory\", \"mtime\":\"{date}\" }},\r\n\
         {{ \"name\":\"a.txt\", \"type\":\"file\", \"mtime\":\"{date}\", \"size\":5 }},\r\n\
         {{ \"name\":\"big.bin\", \"type\":\"file\", \"mtime\":\"{date}\", \"size\":20000 }},\r\n\
         {{ \"name\":\"x&y.txt\", \"type\":\"file\", \"mtime\":\"{date}\", \"size\":1 }}\r\n]"
    );
    let response = server.get("/json/");
    assert_eq!(response.header("Content-Type"), Some("application/json"));
    assert_eq!(response.body_text(), entries);
    let response = server.get("/jsonp/?callback=show.it_1");
    assert_eq!(
        response.header("Content-Type"),
        Some("application/javascript")
    );
    assert_eq!(
        response.body_text(),
        format!("/* callback */\r\nshow.it_1({entries});")
    );
    // Without a callback, JSONP is JSON.
    let response = server.get("/jsonp/");
    assert_eq!(response.header("Content-Type"), Some("application/json"));
    assert_eq!(response.body_text(), entries);
}

#[test]
fn a_bad_callback_is_400() {
    let server = start();
    assert_eq!(server.get("/jsonp/?callback=alert(1)").status, 400);
    let line = server.wait_for_error_log("callback name");
    assert!(
        line.contains("[info]") && line.contains("client sent invalid callback name: \"alert(1)\""),
        "{line}"
    );
}

#[test]
fn xml_listing() {
    let server = start();
    let response = server.get("/xml/");
    assert_eq!(
        response.header("Content-Type"),
        Some("text/xml; charset=utf-8")
    );
    let time = "2026-11-22T00:12:27Z";
    let expected = format!(
        "<?xml version=\"1.0\"?>\r\n<list>\r\n\
         <directory mtime=\"{time}\">sub dir</directory>\r\n\
         <file mtime=\"{time}\" size=\"5\">a.txt</file>\r\n\
         <file mtime=\"{time}\" size=\"20000\">big.bin</file>\r\n\
         <file mtime=\"{time}\" size=\"1\">x&amp;y.txt</file>\r\n</list>\r\n"
    );
    assert_eq!(response.body_text(), expected);
}

#[test]
fn without_autoindex_or_for_other_methods_the_directory_is_forbidden() {
    let server = start();
    assert_eq!(server.get("/off/").status, 403);
    let line = server.wait_for_error_log("directory index of");
    assert!(
        line.contains("[error]") && line.contains("/html/list/\" is forbidden"),
        "{line}"
    );
    let response =
        server.request("POST /list/ HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\n\r\n");
    assert_eq!(response.status, 403);
}

#[test]
fn a_missing_directory_is_404() {
    let server = start();
    assert_eq!(server.get("/missing/").status, 404);
    let line = server.wait_for_error_log("is not found");
    assert!(
        line.contains("/html/missing/index.html\" is not found (2: No such file or directory)"),
        "{line}"
    );
}

#[test]
fn head_has_no_body() {
    let server = start();
    let mut client = server.connect();
    client.write("HEAD /list/ HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    let response = client.read_head_response();
    assert_eq!(response.status, 200);
    assert_eq!(response.header("Content-Type"), Some("text/html"));
    assert!(response.body.is_empty());
}

#[test]
fn bad_format_is_refused() {
    let failure = Instance::http_builder(
        "server { listen 127.0.0.1:8080; location / { autoindex_format yaml; } }",
    )
    .try_start()
    .expect_err("the configuration is refused");
    let text = format!("{}{}", failure.stderr, failure.error_log);
    assert!(text.contains("invalid value \"yaml\""), "{text}");
}
