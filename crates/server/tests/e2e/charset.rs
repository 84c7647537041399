//! The charset module: `charset` in `Content-Type`, `charset_types`, recoding with
//! `charset_map` (one byte to one byte, and to and from UTF-8), recoded ranges (nginx-tests
//! `range.t`'s `t2.html`) and the configuration errors. Checked against nginx 1.22 with
//! `PORTICO_E2E_BINARY=/usr/sbin/nginx`.

use crate::support::cli::{assert_http_body_fails, reported, test_http_body};
use crate::support::{Instance, Response};

const CHARSETS: &str = "
charset_map B A { 58 59; }
charset_map A utf-8 { E9 C3A9; F6 C3B6; }
charset_map C D { 65 45; }
server {
    listen 127.0.0.1:8080;
    root html;
    location /named/ { charset A; }
    location /types/ { charset A; charset_types image/gif TEXT/HTML; }
    location /any/ { charset A; charset_types *; }
    location /recoded/ { charset A; source_charset B; }
    location /back/ { charset B; source_charset A; }
    location /to_utf8/ { charset utf-8; source_charset A; }
    location /from_utf8/ { charset A; source_charset utf-8; }
    location /same/ { charset a; source_charset A; }
    location /text { charset A; source_charset B; return 200 'XYZ'; }
    location /variables/ { charset $arg_c; source_charset $arg_s; }
    location /pages/ { charset D; source_charset C; }
    location /moved { charset A; return 301 /elsewhere; }
}";

fn start() -> Instance {
    let numbered: String = (0..100).map(|index| format!("X{index:03}XXXXXX")).collect();
    let mut builder = Instance::http_builder(CHARSETS);
    for directory in [
        "named",
        "types",
        "any",
        "recoded",
        "back",
        "same",
        "variables",
        "pages",
    ] {
        builder = builder
            .file(&format!("html/{directory}/t.html"), &numbered)
            .file(&format!("html/{directory}/t.gif"), "XX")
            .file(&format!("html/{directory}/t.txt"), "XX");
    }
    builder
        .file("html/to_utf8/t.html", b"h\xe9llo w\xf6rld \x80")
        .file("html/to_utf8/ascii.html", b"h\x80llo")
        .file("html/from_utf8/t.html", "héllo wörld €!".as_bytes())
        .file("html/to_utf8/big.html", big())
        .start()
}

fn get(server: &Instance, path: &str, extra: &str) -> Response {
    server.request(format!(
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n{extra}\r\n"
    ))
}

#[test]
fn charset_names_the_charset_of_listed_types() {
    let server = start();
    let html = get(&server, "/named/t.html", "");
    assert_eq!(html.header("Content-Type"), Some("text/html; charset=A"));
    assert_eq!(html.header("Accept-Ranges"), Some("bytes"));
    let gif = get(&server, "/named/t.gif", "");
    assert_eq!(gif.header("Content-Type"), Some("image/gif"));
    // Error pages are text/html too.
    let missing = get(&server, "/named/missing.html", "");
    assert_eq!(missing.status, 404);
    assert_eq!(missing.header("Content-Type"), Some("text/html; charset=A"));
    // No charset on a 301 or 302.
    let moved = get(&server, "/moved", "");
    assert_eq!(moved.status, 301);
    assert_eq!(moved.header("Content-Type"), Some("text/html"));
    let text = get(&server, "/named/t.txt", "");
    assert_eq!(text.header("Content-Type"), Some("text/plain; charset=A"));
    // charset_types replaces the default list, but text/html is always in it.
    let types = |path: &str| {
        get(&server, path, "")
            .header("Content-Type")
            .map(str::to_owned)
    };
    assert_eq!(
        types("/types/t.html").as_deref(),
        Some("text/html; charset=A")
    );
    assert_eq!(
        types("/types/t.gif").as_deref(),
        Some("image/gif; charset=A")
    );
    assert_eq!(types("/types/t.txt").as_deref(), Some("text/plain"));
    let any = get(&server, "/any/t.gif", "");
    assert_eq!(any.header("Content-Type"), Some("image/gif; charset=A"));
}

#[test]
fn one_byte_maps_recode_files_and_ranges() {
    let server = start();
    let whole = get(&server, "/recoded/t.html", "");
    assert_eq!(whole.header("Content-Type"), Some("text/html; charset=A"));
    assert_eq!(whole.header("Content-Length"), Some("1000"));
    assert!(whole.body_text().starts_with("Y000YYYYYYY001"));
    assert!(!whole.body_text().contains('X'));
    // range.t: a range of a recoded file.
    let range = get(&server, "/recoded/t.html", "Range: bytes=990-1990\r\n");
    assert_eq!(range.status, 206);
    assert_eq!(range.header("Content-Length"), Some("10"));
    assert_eq!(range.header("Content-Range"), Some("bytes 990-999/1000"));
    assert_eq!(range.body_text(), "Y099YYYYYY");
    // The part heads name the charset.
    let parts = get(&server, "/recoded/t.html", "Range: bytes=0-3,990-\r\n");
    assert_eq!(parts.status, 206);
    let body = parts.body_text();
    let first =
        "\r\nContent-Type: text/html; charset=A\r\nContent-Range: bytes 0-3/1000\r\n\r\nY000\r\n--";
    assert!(body.contains(first), "{body}");
    assert!(
        body.contains("bytes 990-999/1000\r\n\r\nY099YYYYYY\r\n--"),
        "{body}"
    );
    // The other way round the map, and memory bodies.
    assert!(
        get(&server, "/back/t.html", "")
            .body_text()
            .starts_with("X000")
    );
    assert_eq!(get(&server, "/text", "").body_text(), "YYZ");
    // The same charset (names compare without case, and keep the spelling of their first
    // mention): named, not recoded.
    let same = get(&server, "/same/t.html", "");
    assert_eq!(same.header("Content-Type"), Some("text/html; charset=A"));
    assert!(same.body_text().starts_with("X000"));
}

#[test]
fn utf8_recoding_drops_the_length_and_ranges() {
    let server = start();
    let to = get(&server, "/to_utf8/t.html", "Range: bytes=0-3\r\n");
    assert_eq!(to.status, 200);
    assert_eq!(to.header("Content-Type"), Some("text/html; charset=utf-8"));
    assert!(to.is_chunked());
    assert!(!to.has_header("Content-Length") && !to.has_header("Accept-Ranges"));
    assert_eq!(to.body, "héllo wörld ?".as_bytes());
    // A buffer whose every byte maps to one byte goes out as it is, as nginx sends it.
    let ascii = get(&server, "/to_utf8/ascii.html", "");
    assert_eq!(ascii.body, b"h\x80llo");
    let http10 = server.request("GET /to_utf8/t.html HTTP/1.0\r\n\r\n");
    assert!(!http10.has_header("Content-Length") && !http10.keeps_alive());
    assert_eq!(http10.body, "héllo wörld ?".as_bytes());
    let from = get(&server, "/from_utf8/t.html", "");
    assert_eq!(from.header("Content-Type"), Some("text/html; charset=A"));
    assert_eq!(from.body, b"h\xe9llo w\xf6rld &#8364;!");
}

#[test]
fn charset_map_errors() {
    let cases = [
        (
            "charset_map A a { }",
            "\"charset_map\" between the same charsets \"A\" and \"a\" in {conf}:4",
        ),
        (
            "charset_map A B { } charset_map B a { }",
            "duplicate \"charset_map\" between \"B\" and \"a\" in {conf}:4",
        ),
        (
            "charset_map A B { 100 1; }",
            "invalid value \"100\" in {conf}:4",
        ),
        (
            "charset_map A B { 10 1 2; }",
            "invalid parameters number in {conf}:4",
        ),
        (
            "charset_map A B { 10; }",
            "invalid parameters number in {conf}:4",
        ),
        (
            "charset_map A utf-8 { 80 41; }",
            "invalid value \"41\" in {conf}:4",
        ),
        (
            "server { location / { charset A; source_charset B; } }",
            "no \"charset_map\" between the charsets \"B\" and \"A\"",
        ),
        (
            "max_ranges x;",
            "\"max_ranges\" directive invalid number in {conf}:4",
        ),
        (
            "max_ranges -1;",
            "\"max_ranges\" directive invalid number in {conf}:4",
        ),
        (
            "server { charset A; charset B; }",
            "\"charset\" directive is duplicate in {conf}:4",
        ),
        (
            "override_charset maybe;",
            "invalid value \"maybe\" in \"override_charset\" directive, it must be \"on\" or \"off\" in {conf}:4",
        ),
    ];
    for (body, message) in cases {
        assert_http_body_fails(body, message);
    }
    // text/html is always listed: naming it again is a warning.
    let (conf, output) = test_http_body("charset_types text/plain TEXT/HTML;");
    output.assert_code(0);
    let message = format!("duplicate MIME type \"text/html\" in {conf}:4");
    assert!(
        reported(&output.stderr, "warn", &message),
        "want [warn] {message:?} in:\n{}",
        output.stderr
    );
}

#[test]
fn charset_names_from_variables() {
    let server = start();
    let with = |query: &str| get(&server, &format!("/variables/t.gif?{query}"), "");
    let recoded = get(&server, "/variables/t.html?c=a&s=b", "");
    assert_eq!(recoded.header("Content-Type"), Some("text/html; charset=a"));
    assert!(recoded.body_text().starts_with("Y000"));
    let named = get(&server, "/variables/t.html?c=zz&s=zzz", "");
    assert_eq!(named.header("Content-Type"), Some("text/html; charset=zz"));
    assert!(named.body_text().starts_with("X000"));
    let unknown = get(&server, "/variables/t.html?c=zzz&s=zz", "");
    assert_eq!(unknown.header("Content-Type"), Some("text/html"));
    let line =
        server.wait_for_error_log("no \"charset_map\" between the charsets \"zz\" and \"zzz\"");
    assert!(
        line.contains("[error]") && line.contains("while sending response to client"),
        "{line}"
    );
    // Types not listed are not looked at, so the variables do not matter.
    assert_eq!(with("").header("Content-Type"), Some("image/gif"));
    // A variable that is not found ends the request without a response.
    let mut client = server.connect();
    client.write("GET /variables/t.html?c=A HTTP/1.1\r\nHost: localhost\r\n\r\n");
    assert!(client.read_to_end().is_empty());
}

/// 100000 bytes of `a` with an unmapped byte in the first 32 KiB, an unmapped and a mapped
/// one in the second and a mapped one in the third.
fn big() -> Vec<u8> {
    let mut data = vec![b'a'; 100_000];
    data[100] = 0x80;
    data[33_000] = 0x80;
    data[33_001] = 0xe9;
    data[70_000] = 0xf6;
    data
}

#[test]
fn utf8_recoding_goes_by_nginx_buffers() {
    let server = start();
    let response = get(&server, "/to_utf8/big.html", "");
    let data = big();
    // The first buffer maps byte for byte and goes out unchanged; the others are recoded.
    let recode = |range: std::ops::Range<usize>| -> Vec<u8> {
        data[range]
            .iter()
            .flat_map(|&byte| match byte {
                0x80 => vec![b'?'],
                0xe9 => "é".as_bytes().to_vec(),
                0xf6 => "ö".as_bytes().to_vec(),
                other => vec![other],
            })
            .collect()
    };
    let buffers = [
        data[..32_768].to_vec(),
        recode(32_768..65_536),
        recode(65_536..98_304),
        recode(98_304..100_000),
    ];
    assert_eq!(response.body, buffers.concat());
    // One chunk per buffer, as nginx sends them.
    let mut chunked = Vec::new();
    for buffer in &buffers {
        chunked.extend_from_slice(format!("{:x}\r\n", buffer.len()).as_bytes());
        chunked.extend_from_slice(buffer);
        chunked.extend_from_slice(b"\r\n");
    }
    chunked.extend_from_slice(b"0\r\n\r\n");
    assert!(response.raw.ends_with(&chunked));
}

#[test]
fn status_pages_are_recoded_too() {
    let server = start();
    // The map turns `e` into `E`: nginx recodes its status pages like any text/html.
    let missing = get(&server, "/pages/missing.html", "");
    assert_eq!(missing.status, 404);
    assert_eq!(missing.header("Content-Type"), Some("text/html; charset=D"));
    assert!(
        missing.body_text().contains("<cEntEr>"),
        "{}",
        missing.body_text()
    );
    let unsatisfiable = get(&server, "/pages/t.html", "Range: bytes=5000-\r\n");
    assert_eq!(unsatisfiable.status, 416);
    assert_eq!(
        unsatisfiable.header("Content-Type"),
        Some("text/html; charset=D")
    );
    let page = unsatisfiable.body_text();
    assert!(
        page.contains("416 REquEstEd RangE Not SatisfiablE"),
        "{page}"
    );
    // A gif is not recoded, but its 416 page is.
    let gif = get(&server, "/pages/t.gif", "Range: bytes=5000-\r\n");
    assert_eq!(gif.header("Content-Type"), Some("text/html; charset=D"));
    assert!(gif.body_text().contains("REquEstEd"));
}
