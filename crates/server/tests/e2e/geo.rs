//! `geo`: networks and ranges, `default`, `delete`, `include`, a variable as the address,
//! `proxy` and `proxy_recursive`, and the errors of a broken block.

use crate::support::Instance;
use crate::support::cli::{assert_http_body_fails, reported, test_http_body};

const CONF: &str = "
geo $geo {
    default        other;
    127.0.0.0/8    loopback;
    127.0.0.1/32   this;
    192.0.2.0/24   test;
    delete         127.0.0.1/32;
}
geo $arg_ip $ranges {
    ranges;
    default                  none;
    include                  ranges.conf;
    10.0.0.0-10.0.0.255      ten;
    10.0.0.1-10.0.0.1        one;
}
geo $forwarded {
    proxy            127.0.0.0/8;
    192.0.2.0/24     test;
    10.0.0.0/8       ten;
}
geo $recursive {
    proxy_recursive;
    proxy            127.0.0.1;
    proxy            10.0.0.0/8;
    192.0.2.0/24     test;
    10.0.0.0/8       ten;
}
server {
    listen 127.0.0.1:8080;
    location / { return 200 \"$geo|$ranges|$forwarded|$recursive\"; }
}";

fn start() -> Instance {
    Instance::http_builder(CONF)
        .file("ranges.conf", "192.0.2.0-192.0.2.127 low;\n")
        .start()
}

fn fetch(server: &Instance, path: &str, forwarded: Option<&str>) -> String {
    let header = forwarded.map_or(String::new(), |value| {
        format!("X-Forwarded-For: {value}\r\n")
    });
    server
        .request(format!("GET {path} HTTP/1.0\r\n{header}\r\n"))
        .body_text()
}

#[test]
fn values_by_network_range_and_forwarded_address() {
    let server = start();
    assert_eq!(fetch(&server, "/", None), "loopback|none||");
    assert_eq!(fetch(&server, "/?ip=10.0.0.1", None), "loopback|one||");
    assert_eq!(fetch(&server, "/?ip=10.0.0.2", None), "loopback|ten||");
    assert_eq!(fetch(&server, "/?ip=192.0.2.5", None), "loopback|low||");
    assert_eq!(fetch(&server, "/?ip=192.0.2.200", None), "loopback|none||");
    assert_eq!(fetch(&server, "/?ip=nonsense", None), "loopback|none||");
    assert_eq!(
        fetch(&server, "/", Some("10.1.1.1, 192.0.2.9")),
        "loopback|none|test|test"
    );
    assert_eq!(
        fetch(&server, "/", Some("192.0.2.9, 10.1.1.1")),
        "loopback|none|ten|test"
    );
}

#[test]
fn broken_blocks_fail_the_load_and_doubtful_lines_warn() {
    assert_http_body_fails(
        "geo $g {\n192.0.2.0/33 x;\n}",
        "invalid network \"192.0.2.0/33\" in {conf}:5",
    );
    assert_http_body_fails(
        "geo $g {\nranges;\n10.0.0.9-10.0.0.1 x;\n}",
        "invalid range \"10.0.0.9-10.0.0.1\" in {conf}:6",
    );
    assert_http_body_fails(
        "geo $g {\n10.0.0.0/8 x;\nranges;\n}",
        "the \"ranges\" directive must be the first directive inside \"geo\" block in {conf}:6",
    );
    assert_http_body_fails(
        "geo $g {\n10.0.0.0/8 x y;\n}",
        "invalid number of the geo parameters in {conf}:5",
    );
    let (conf, output) = test_http_body("geo $g {\n10.0.0.1/8 x;\n10.0.0.0/8 y;\n}");
    output.assert_code(0);
    for message in [
        format!("low address bits of 10.0.0.1/8 are meaningless in {conf}:5"),
        format!("duplicate network \"10.0.0.0/8\", value: \"y\", old value: \"x\" in {conf}:6"),
    ] {
        assert!(
            reported(&output.stderr, "warn", &message),
            "{}",
            output.stderr
        );
    }
}

#[test]
fn a_volatile_geo_is_looked_up_again_at_every_use() {
    // The index redirect changes `$args`: a geo keeps the value `index` used, a volatile
    // one finds the new address.
    let server = Instance::http_builder(
        r#"
geo $arg_ip $uri_cached {
    192.0.2.1    /1/redirect;
    192.0.2.2    uncached;
}
geo $arg_ip $uri_uncached {
    volatile;
    192.0.2.1    /2/redirect;
    192.0.2.2    uncached;
}
server {
    listen 127.0.0.1:8080;
    root html;
    location /1 { index $uri_cached; }
    location /1/redirect { set $args ip=192.0.2.2; add_header X-URI $uri_cached always; }
    location /2 { index $uri_uncached; }
    location /2/redirect { set $args ip=192.0.2.2; add_header X-URI $uri_uncached always; }
}
"#,
    )
    .file("html/1/redirect", "one")
    .file("html/2/redirect", "two")
    .start();
    let response = server.get("/1/?ip=192.0.2.1");
    assert_eq!(response.header("X-URI"), Some("/1/redirect"));
    let response = server.get("/2/?ip=192.0.2.1");
    assert_eq!(response.header("X-URI"), Some("uncached"));
}
