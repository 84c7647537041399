//! `ssi` and its commands: includes by subrequest (files, proxied, nested, captured with
//! `set=`, replaced by a `stub=` block), `echo`, `set`, `if`, `config`; the head nginx
//! sends for a parsed page; and bad input: malformed commands, an include loop, a
//! failing subrequest, a command split across two reads from an upstream.

use std::time::Duration;

use crate::support::Instance;
use crate::support::upstream::MockUpstream;

const SSI: &str = "
server {
    listen 127.0.0.1:8080;
    root site;
    ssi on;
    ssi_types text/plain;
    ssi_value_length 64;
    ssi_min_file_chunk 1k;
    ssi_last_modified off;
    location /up/ { proxy_pass http://127.0.0.1:8081/; }
    location /down/ { proxy_pass http://127.0.0.1:8082/; }
    location /quiet/ { ssi_silent_errors on; }
    location /kept/ { ssi_last_modified on; }
    location = /args { ssi off; subrequest_output_buffer_size 8; return 200 \"[$arg_a]\"; }
    location = /sub-method { ssi off; return 200 $request_method; }
}";

fn start() -> (Instance, MockUpstream) {
    let mut builder = Instance::http_builder(SSI);
    let upstream = MockUpstream::start(builder.port(8081), |mut conn| {
        while let Some(request) = conn.read_request() {
            if request.starts_with(b"GET /split") {
                // An SSI document whose command arrives in two reads.
                let body = "one <!--#echo var=\"arg_x\" --> two";
                conn.write(format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\n\r\n",
                    body.len()
                ));
                conn.write_slowly(body.as_bytes(), 9, Duration::from_millis(50));
                continue;
            }
            conn.write(
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 8\r\n\r\nUPSTREAM",
            );
        }
    });
    let server = builder
        .file("site/inc.html", "INC")
        .file("site/dir/rel.html", "REL")
        .file(
            "site/page.html",
            "A<!--#include virtual=\"/inc.html\" -->B<!--#include virtual=\"/up/x\" -->C",
        )
        .file("site/dir/page.html", "[<!--#include file=\"rel.html\" -->]")
        .file(
            "site/nested.html",
            "(<!--#include virtual=\"/page.html\" -->)",
        )
        .file(
            "site/echo.html",
            concat!(
                "<!--#set var=\"v\" value=\"<$arg_a>\" -->",
                "<!--#echo var=\"v\" -->|<!--#echo var=\"v\" encoding=\"none\" -->|",
                "<!--#echo var=\"v\" encoding=\"url\" -->|<!--#echo var=\"nothing\" -->|",
                "<!--#echo var=\"nothing\" default=\"dflt\" -->"
            ),
        )
        .file(
            "site/if.html",
            concat!(
                "<!--#if expr=\"$arg_a = one\" -->1<!--#elif expr=\"$arg_a = /^t.o$/\" -->2",
                "<!--#else -->3<!--#endif -->"
            ),
        )
        .file(
            "site/capture.html",
            "<!--#include virtual=\"/args?a=$arg_a\" set=\"got\" -->got <!--#echo var=\"got\" -->",
        )
        .file(
            "site/stub.html",
            concat!(
                "<!--#block name=\"one\" -->STUB<!--#endblock -->",
                "<!--#include virtual=\"/missing\" stub=\"one\" -->|",
                "<!--#include virtual=\"/inc.html\" stub=\"one\" -->"
            ),
        )
        .file(
            "site/time.html",
            "<!--#config timefmt=\"%Y\" --><!--#echo var=\"date_gmt\" -->",
        )
        .file(
            "site/method.html",
            "<!--#include virtual=\"/sub-method\" -->",
        )
        .file("site/plain.txt", "T<!--#echo var=\"uri\" -->")
        .file("site/kept/page.html", "K<!--#echo var=\"uri\" -->")
        .start();
    (server, upstream)
}

#[test]
fn ssi_includes_files_upstreams_and_nested_pages_in_order() {
    let (server, _upstream) = start();
    let page = server.get("/page.html");
    assert_eq!(page.status, 200);
    assert_eq!(page.body_text(), "AINCBUPSTREAMC");
    assert_eq!(page.header("Content-Length"), None);
    assert_eq!(page.header("Last-Modified"), None);
    assert_eq!(page.header("Accept-Ranges"), None);
    assert_eq!(server.get("/dir/page.html").body_text(), "[REL]");
    assert_eq!(server.get("/nested.html").body_text(), "(AINCBUPSTREAMC)");
    assert_eq!(server.get("/plain.txt").body_text(), "T/plain.txt");
    let kept = server.get("/kept/page.html");
    assert_eq!(kept.body_text(), "K/kept/page.html");
    assert!(
        kept.header("Last-Modified").is_some(),
        "ssi_last_modified on"
    );
    // A subrequest is a GET; a HEAD of a parsed page gets its head only.
    assert_eq!(server.get("/method.html").body_text(), "GET");
    let head = server.request("HEAD /method.html HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert_eq!(head.status, 200);
    assert!(head.body.is_empty());
}

#[test]
fn ssi_echo_set_if_config_block_and_capture() {
    let (server, _upstream) = start();
    assert_eq!(
        server.get("/echo.html?a=x%20y").body_text(),
        "&lt;x%20y&gt;|<x%20y>|%3Cx%2520y%3E|(none)|dflt"
    );
    assert_eq!(server.get("/if.html?a=one").body_text(), "1");
    assert_eq!(server.get("/if.html?a=two").body_text(), "2");
    assert_eq!(server.get("/if.html?a=six").body_text(), "3");
    assert_eq!(server.get("/capture.html?a=42").body_text(), "got [42]");
    // More than `subrequest_output_buffer_size` (8 here) fails the page, as nginx fails
    // it: nothing was sent, and the connection closes without a response.
    let mut client = crate::support::Client::connect(server.port());
    client.write("GET /capture.html?a=123456789 HTTP/1.1\r\nHost: x\r\n\r\n");
    client.expect_closed_without_response();
    crate::support::wait_until("the log line", crate::support::PATIENCE, || {
        server.error_log().contains("too big subrequest response")
    });
    assert_eq!(server.get("/stub.html").body_text(), "STUB|INC");
    let year = server.get("/time.html").body_text();
    assert!(year.len() == 4 && year.starts_with("20"), "{year}");
}

#[test]
fn ssi_parses_a_command_split_across_reads() {
    let (server, _upstream) = start();
    let page = server.get("/up/split?x=mid");
    assert_eq!(page.body_text(), "one mid two");
}

#[test]
fn ssi_bad_input_gets_nginx_s_error_text_and_a_log_line() {
    let builder = Instance::http_builder(SSI);
    let server = builder
        .file(
            "site/bad.html",
            "a<!--#echo var=x -->b<!--#nope -->c<!--#echo -->d",
        )
        .file("site/loop.html", "L<!--#include virtual=\"/loop.html\" -->")
        .file("site/down.html", "<<!--#include virtual=\"/down/x\" -->>")
        .file("site/quiet/bad.html", "q<!--#nope -->q")
        .file(
            "site/errmsg.html",
            "<!--#config errmsg=\"[oops]\" --><!--#include -->",
        )
        .file(
            "site/unsafe.html",
            "<!--#include virtual=\"/a/../../etc/passwd\" -->",
        )
        .start();
    let error = "[an error occurred while processing the directive]";
    assert_eq!(
        server.get("/bad.html").body_text(),
        format!("a{error}b{error}c{error}d")
    );
    let log = server.error_log();
    assert!(
        log.contains("[error]") && log.contains("unexpected \"x\" symbol"),
        "{log}"
    );
    assert!(log.contains("invalid SSI command: \"nope\""), "{log}");
    assert!(
        log.contains("no \"var\" parameter in \"echo\" SSI command"),
        "{log}"
    );
    assert_eq!(server.get("/quiet/bad.html").body_text(), "qq");
    assert_eq!(server.get("/errmsg.html").body_text(), "[oops]");
    assert_eq!(server.get("/unsafe.html").body_text(), error);
    // An include loop stops at nginx's nesting limit with an error, not a crash.
    let looped = server.get("/loop.html");
    assert_eq!(looped.status, 200);
    let body = looped.body_text();
    assert_eq!(body.matches('L').count(), 51, "{body}");
    assert!(body.ends_with(error));
    server.wait_for_error_log("subrequests cycle while processing \"/loop.html\"");
    // A dead upstream: the subrequest's error page is included, the page goes on.
    let down = server.get("/down.html").body_text();
    assert!(down.starts_with('<') && down.contains("502 Bad Gateway") && down.ends_with('>'));
    assert_eq!(
        server.get("/bad.html").status,
        200,
        "the server keeps serving"
    );
}

#[test]
fn ssi_includes_in_a_row_run_together_and_keep_their_order() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    let mut builder = Instance::http_builder(SSI);
    let arrived = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&arrived);
    // Each answer waits until both requests have arrived: the page completes only if
    // the two subrequests run at the same time.
    let _upstream = MockUpstream::start(builder.port(8081), move |mut conn| {
        while let Some(request) = conn.read_request() {
            seen.fetch_add(1, Ordering::AcqRel);
            crate::support::wait_until("both subrequests", crate::support::PATIENCE, || {
                seen.load(Ordering::Acquire) >= 2
            });
            let name = if request.starts_with(b"GET /first") {
                "ONE"
            } else {
                "TWO"
            };
            conn.write(format!(
                "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n{name}"
            ));
        }
    });
    let server = builder
        .file(
            "site/pair.html",
            "<!--#include virtual=\"/up/first\" -->+<!--#include virtual=\"/up/second\" -->",
        )
        .start();
    assert_eq!(server.get("/pair.html").body_text(), "ONE+TWO");
    assert_eq!(arrived.load(Ordering::Acquire), 2);
}
