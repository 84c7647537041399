//! `portico_status_page`: the live page is one self-contained HTML file; its location also
//! serves the exposition it polls (`?metrics`). Where Chromium is installed, the page is
//! rendered headless twice under load and its figures must have moved, and two screenshots
//! of it under load must differ.

use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::support::{Instance, get};

const CONF: &str = "
server {
    listen 127.0.0.1:8080;
    location = /status { portico_status_page; }
    location / { return 200 'hello'; }
}";

#[test]
fn the_page_is_self_contained_and_reads_its_own_location() {
    let server = Instance::http(CONF);
    let page = server.get("/status");
    assert_eq!(page.status, 200);
    assert_eq!(
        page.header("Content-Type"),
        Some("text/html; charset=utf-8")
    );
    let html = page.body_text();
    assert!(html.starts_with("<!DOCTYPE html>"), "{html}");
    for external in ["src=", "href=", "http://", "https://", "@import"] {
        assert!(
            !html.contains(external),
            "the page loads something: {external}"
        );
    }
    assert!(html.contains("fetch(location.pathname + \"?metrics\""));
    let metrics = server.get("/status?metrics");
    assert_eq!(metrics.status, 200);
    assert!(
        metrics
            .body_text()
            .contains("\nportico_http_requests_total ")
    );
    let post = server.request("POST /status HTTP/1.0\r\nContent-Length: 0\r\n\r\n");
    assert_eq!(post.status, 405);
}

/// Chromium's rendering of `url` after `milliseconds` of the page's own time.
fn rendered(chromium: &str, url: &str, milliseconds: u32) -> String {
    let output = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            &format!("--virtual-time-budget={milliseconds}"),
            "--dump-dom",
            url,
        ])
        .output()
        .expect("chromium runs");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A PNG screenshot of `url` after `milliseconds` of the page's own time.
fn screenshot(chromium: &str, url: &str, milliseconds: u32, path: &std::path::Path) -> Vec<u8> {
    let status = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--window-size=1280,1000",
            &format!("--virtual-time-budget={milliseconds}"),
            &format!("--screenshot={}", path.display()),
            url,
        ])
        .output()
        .expect("chromium runs")
        .status;
    assert!(status.success(), "chromium: {status}");
    std::fs::read(path).expect("the screenshot")
}

/// The text of the element with `id` in a dumped DOM.
fn text_of(dom: &str, id: &str) -> String {
    let start = dom
        .find(&format!("id=\"{id}\">"))
        .unwrap_or_else(|| panic!("no #{id} in {dom}"));
    let rest = &dom[start..];
    let open = rest.find('>').expect("a tag ends") + 1;
    let close = rest[open..].find('<').expect("the text ends");
    rest[open..open + close].to_owned()
}

#[test]
#[allow(clippy::print_stderr, reason = "a skipped test says so")]
fn headless_chromium_sees_the_figures_move() {
    let Some(chromium) = ["chromium", "chromium-browser"]
        .into_iter()
        .find(|name| Command::new(name).arg("--version").output().is_ok())
    else {
        eprintln!("skipped: chromium is missing (Debian package chromium)");
        return;
    };
    let server = Instance::http(CONF);
    let port = server.port();
    let loading = Arc::new(AtomicBool::new(true));
    let load = std::thread::spawn({
        let loading = Arc::clone(&loading);
        move || {
            // One connection per request: a keep-alive one would reach keepalive_requests.
            while loading.load(Ordering::Relaxed) {
                let response = crate::support::Client::connect(port).request(get("/"));
                assert_eq!(response.status, 200);
                std::thread::sleep(Duration::from_millis(2));
            }
        }
    });
    let url = format!("http://127.0.0.1:{port}/status");
    let first = rendered(chromium, &url, 3000);
    let second = rendered(chromium, &url, 3000);
    let shots: Vec<Vec<u8>> = ["first.png", "second.png"]
        .into_iter()
        .map(|name| screenshot(chromium, &url, 3000, &server.prefix().join(name)))
        .collect();
    loading.store(false, Ordering::Relaxed);
    load.join().expect("the load thread ends");
    for dom in [&first, &second] {
        assert_eq!(text_of(dom, "error"), "", "{dom}");
        assert!(text_of(dom, "build").starts_with("portico "), "{dom}");
        let rps: f64 = text_of(dom, "rps").parse().expect("requests per second");
        assert!(rps > 0.0, "{dom}");
    }
    // The page's own request for the metrics is open while they are rendered.
    assert!(text_of(&first, "active").parse::<u64>().expect("a count") >= 1);
    assert_ne!(text_of(&first, "updated"), "");
    assert_ne!(first, second, "nothing changed between two renderings");
    for shot in &shots {
        assert!(shot.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
        assert!(shot.len() > 10_000, "an empty page: {} bytes", shot.len());
    }
    assert_ne!(shots[0], shots[1], "the two screenshots are the same");
}
