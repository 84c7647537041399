//! The split_clients module: buckets chosen by nginx's MurmurHash2 of a text with
//! variables, `*`, uncovered ranges, use by `index`, and configuration errors.
//! Every expectation here was checked against nginx as well
//! (`PORTICO_E2E_BINARY=/usr/sbin/nginx`).

use crate::support::Instance;
use crate::support::cli::assert_http_body_fails;

#[test]
fn keys_land_in_the_same_buckets_as_in_nginx() {
    let server = Instance::http(
        r#"
split_clients "$arg_k" $bucket {
    10%    a;
    20.5%  b;
    30%    c;
    *      d;
}
server {
    listen 127.0.0.1:8080;
    location / { return 200 "$bucket"; }
}
"#,
    );
    let buckets: String = (0..20)
        .map(|key| server.get(&format!("/?k={key}")).body_text())
        .collect();
    assert_eq!(buckets, "bbbcbccdacabdbdadcdc");
}

#[test]
fn small_shares_of_a_source_with_text_around_a_variable() {
    // nginx's documented example: "${remote_addr}AAA", with an argument in place of the
    // address. Of the keys 0..400 only these fall in the 0.5% and 2% shares.
    let server = Instance::http(
        r#"
split_clients "${arg_k}AAA" $variant {
    0.5%  .one;
    2.0%  .two;
    *     "";
}
server {
    listen 127.0.0.1:8080;
    location / { return 200 "$variant"; }
}
"#,
    );
    let chosen: Vec<String> = (0..400)
        .filter_map(|key| {
            let body = server.get(&format!("/?k={key}")).body_text();
            (!body.is_empty()).then(|| format!("{key}{body}"))
        })
        .collect();
    assert_eq!(
        chosen,
        [
            "13.one", "17.one", "19.two", "27.two", "154.two", "271.two", "352.one", "397.two"
        ]
    );
}

#[test]
fn an_uncovered_hash_gets_an_empty_value() {
    // "a" hashes to 57% of the range, "1" to 29%.
    let server = Instance::http(
        r#"
split_clients "$arg_k" $half { 50% low; }
server {
    listen 127.0.0.1:8080;
    location / { return 200 "[$half]"; }
}
"#,
    );
    assert_eq!(server.get("/?k=a").body_text(), "[]");
    assert_eq!(server.get("/?k=1").body_text(), "[low]");
}

#[test]
fn the_variable_chooses_an_index_file() {
    // nginx-tests split_clients.t, keyed by the argument instead of the connection.
    let server = Instance::http_builder(
        r#"
split_clients "$arg_k" $variant {
    51.2%  ".one";
    10%    ".two";
    *      ".three";
}
server {
    listen 127.0.0.1:8080;
    root html;
    location / { index index${variant}.html; }
}
"#,
    )
    .file("html/index.one.html", "first")
    .file("html/index.two.html", "second")
    .file("html/index.three.html", "third")
    .start();
    let bodies: Vec<String> = (1..=20)
        .map(|key| server.get(&format!("/?k={key}")).body_text())
        .collect();
    let count = |name: &str| bodies.iter().filter(|body| *body == name).count();
    assert_eq!(
        (count("first"), count("second"), count("third")),
        (12, 2, 6)
    );
}

#[test]
fn configuration_errors_read_like_nginx() {
    let cases = [
        (
            "split_clients $a $b { 50% a; 60% b; }",
            "percent total is greater than 100%",
        ),
        (
            "split_clients $a $b { * a; 1% b; }",
            "percent total is greater than 100%",
        ),
        (
            "split_clients $a $b { 0% a; }",
            "invalid percent value \"0%\"",
        ),
        (
            "split_clients $a $b { 1.234% a; }",
            "invalid percent value \"1.234%\"",
        ),
        (
            "split_clients $a $b { 5 a; }",
            "invalid percent value \"5\"",
        ),
        (
            "split_clients $a b { 5% a; }",
            "invalid variable name \"b\"",
        ),
        (
            "split_clients $a $uri { 5% a; }",
            "the duplicate \"uri\" variable",
        ),
    ];
    for (body, message) in cases {
        assert_http_body_fails(body, &format!("{message} in {{conf}}:4"));
    }
}
