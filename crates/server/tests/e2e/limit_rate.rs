//! `limit_rate` and `limit_rate_after`: transfers take the time the rate says (generous
//! bounds, measured on whole transfers), `$limit_rate`, values from variables (the parts
//! of nginx-tests `limit_rate.t` that need no proxy).

use std::time::{Duration, Instant};

use crate::support::{Instance, get};

const LIMITED: &str = "
log_format rate '$uri $limit_rate $body_bytes_sent';
access_log logs/rate.log rate;
server {
    listen 127.0.0.1:8080;
    root html;
    location /slow/ { limit_rate 4k; }
    location /sendfile/ { limit_rate 4k; sendfile on; aio threads; }
    location /after/ { limit_rate 1k; limit_rate_after 10k; }
    location /var/ { limit_rate $arg_l; limit_rate_after $arg_a; }
    location /unlimited/ { limit_rate 4k; location /unlimited/inner/ { limit_rate 0; } }
    location /text { limit_rate 1500; return 200 '%%TEXT%%'; }
}";

const FILE_BYTES: usize = 12 * 1024;
/// Within nginx's limit on one parameter's length.
const TEXT_BYTES: usize = 4000;

fn start() -> Instance {
    let text = "t".repeat(TEXT_BYTES);
    let data = "X".repeat(FILE_BYTES);
    Instance::http_builder(&LIMITED.replace("%%TEXT%%", &text))
        .file("html/slow/data", &data)
        .file("html/sendfile/data", &data)
        .file("html/after/data", &data)
        .file("html/var/data", &data)
        .file("html/unlimited/inner/data", &data)
        .start()
}

/// Fetches `path` and returns the body length and how long the whole transfer took.
fn timed(server: &Instance, path: &str) -> (usize, Duration) {
    let started = Instant::now();
    let mut client = server.connect().with_timeout(Duration::from_secs(30));
    let response = client.request(get(path));
    assert_eq!(response.status, 200, "{path}");
    (response.body.len(), started.elapsed())
}

#[test]
fn a_file_goes_at_the_rate() {
    let server = start();
    let (len, elapsed) = timed(&server, "/slow/data");
    assert_eq!(len, FILE_BYTES);
    // 12 KiB and the head at 4 KiB/s: the first second's share at once, the rest in two
    // more seconds or so.
    assert!(elapsed >= Duration::from_secs(2), "{elapsed:?}");
    let line = server.wait_for_line("logs/rate.log", "/slow/data");
    assert_eq!(line, format!("/slow/data 4096 {FILE_BYTES}"));
}

#[test]
fn sendfile_goes_at_the_rate_too() {
    let server = start();
    let (len, elapsed) = timed(&server, "/sendfile/data");
    assert_eq!(len, FILE_BYTES);
    assert!(elapsed >= Duration::from_secs(2), "{elapsed:?}");
    let line = server.wait_for_line("logs/rate.log", "/sendfile/data");
    assert_eq!(line, format!("/sendfile/data 4096 {FILE_BYTES}"));
}

#[test]
fn bytes_after_limit_rate_after_are_limited() {
    let server = start();
    let (len, elapsed) = timed(&server, "/after/data");
    assert_eq!(len, FILE_BYTES);
    // 10 KiB free, then about 2 KiB more at 1 KiB/s; without `limit_rate_after` the
    // transfer would take twelve seconds.
    assert!(elapsed >= Duration::from_millis(1500), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(8), "{elapsed:?}");
}

#[test]
fn text_bodies_are_limited_too() {
    let server = start();
    let (len, elapsed) = timed(&server, "/text");
    assert_eq!(len, TEXT_BYTES);
    // About 4 KiB at 1500 bytes a second: two seconds after the first share.
    assert!(elapsed >= Duration::from_millis(1500), "{elapsed:?}");
}

#[test]
fn values_from_variables() {
    let server = start();
    let (len, elapsed) = timed(&server, "/var/data?l=4k&a=256");
    assert_eq!(len, FILE_BYTES);
    assert!(elapsed >= Duration::from_secs(2), "{elapsed:?}");
    // Everything within limit_rate_after: no wait.
    timed(&server, "/var/data?l=4k&a=40k");
    let line = server.wait_for_line("logs/rate.log", "/var/data 4096");
    assert!(line.ends_with(&FILE_BYTES.to_string()), "{line}");
    // A value that is not a size is logged and means no limit.
    timed(&server, "/var/data?l=fast");
    let error = server.wait_for_error_log("invalid size");
    assert!(
        error.contains("[error]")
            && error.contains("invalid size \"fast\" while sending response to client"),
        "{error}"
    );
    server.wait_for_line("logs/rate.log", "/var/data 0 ");
}

#[test]
fn limit_rate_0_turns_it_off() {
    let server = start();
    let (len, _) = timed(&server, "/unlimited/inner/data");
    assert_eq!(len, FILE_BYTES);
    let line = server.wait_for_line("logs/rate.log", "/unlimited/inner/data");
    assert_eq!(line, format!("/unlimited/inner/data 0 {FILE_BYTES}"));
}
