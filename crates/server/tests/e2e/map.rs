//! The map module: exact keys, `default`, `hostnames` wildcards, regex keys with captures
//! and named captures, `include` in the block, values with variables, complex sources,
//! `volatile`, cycles, the variables' use by other modules, and configuration errors.
//! Every expectation here was checked against nginx as well
//! (`PORTICO_E2E_BINARY=/usr/sbin/nginx`).

use crate::support::cli::assert_http_body_fails;
use crate::support::log::messages_at;
use crate::support::{Instance, get};

const MAPS: &str = r#"
map $args $x {
    default                     0;
    foo                         bar;
    foo2                        bar;
}

map $args $y {
    hostnames;
    default                     0;
    example.com                 foo;
    example.*                   right-wildcard;
    *.example.com               left-wildcard;
    *.b.example.com             longer-wildcard;
    .dot.example.com            special-wildcard;
    ~^REGEX.EXAMPLE\.ORG$       regex-sensitive;
    ~*^www.regex.example\.org$  regex-insensitive;
    \include                    include;
    server                      $server_name;
    var                         $z;
}

map $args $z {
    default                     0;
    var                         baz;
    include                     map.conf;
}

map $uri $captured {
    ~^/cap/(?<first>[a-z]+)/(\d+)$   "first=$first n=$2";
    ~^/cap/                          "no-digits";
}

map "$arg_a:$arg_b" $pair {
    default                     none;
    1:2                         one-two;
    ":"                         empty;
}

map $arg_empty $empty_key {
    default                     not-empty;
    ""                          empty;
}

server {
    listen       127.0.0.1:8080;
    server_name  localhost;

    location / {
        return 200 "x:$x y:$y\n";
    }
    location /z {
        return 200 "z:$z\n";
    }
    location /cap/ {
        return 200 "$captured; then first=$first 1=$1\n";
    }
    location /pair {
        return 200 "$pair|$empty_key";
    }
    location ~ ^/loc/(.+)$ {
        return 200 "$from_location";
    }
}

map $uri $from_location {
    /loc/exact   "exact key, location capture $1";
    ~^/loc/(r.*) "regex key, own capture $1";
}
"#;

fn start() -> Instance {
    Instance::http_builder(MAPS)
        .file("map.conf", "foo bar;\n")
        .start()
}

fn body(server: &Instance, path: &str) -> String {
    let response = server.get(path);
    assert_eq!(response.status, 200, "{path}: {}", response.head_text());
    response.body_text()
}

#[test]
fn exact_keys_default_and_include() {
    let server = start();
    assert_eq!(body(&server, "/?1"), "x:0 y:0\n");
    assert_eq!(body(&server, "/?foo"), "x:bar y:0\n");
    assert_eq!(body(&server, "/?foo2"), "x:bar y:0\n");
    // Exact keys compare case-insensitively.
    assert_eq!(body(&server, "/?FOO"), "x:bar y:0\n");
    assert_eq!(body(&server, "/?include"), "x:0 y:include\n");
    assert_eq!(body(&server, "/z?foo"), "z:bar\n");
}

#[test]
fn hostnames_wildcards_and_their_precedence() {
    let server = start();
    let cases = [
        ("example.com", "foo"),
        ("EXAMPLE.COM", "foo"),
        // A trailing dot is dropped before the lookup.
        ("example.com.", "foo"),
        ("example.org", "right-wildcard"),
        ("foo.example.com", "left-wildcard"),
        ("foo.example.com.", "left-wildcard"),
        ("a.b.example.com", "longer-wildcard"),
        ("dot.example.com", "special-wildcard"),
        ("www.dot.example.com", "special-wildcard"),
        ("REGEX.EXAMPLE.ORG", "regex-sensitive"),
        ("regex.example.org", "0"),
        ("www.regex.example.org", "regex-insensitive"),
        ("WWW.REGEX.EXAMPLE.ORG", "regex-insensitive"),
    ];
    for (key, expected) in cases {
        assert_eq!(
            body(&server, &format!("/?{key}")),
            format!("x:0 y:{expected}\n"),
            "{key}"
        );
    }
}

#[test]
fn values_with_variables_and_maps_of_maps() {
    let server = start();
    assert_eq!(body(&server, "/?server"), "x:0 y:localhost\n");
    assert_eq!(body(&server, "/?var"), "x:0 y:baz\n");
}

#[test]
fn regex_captures_are_used_in_the_value_and_become_the_request_s() {
    let server = start();
    // The map's match sets `$1`.. and the named capture's variable for what follows.
    assert_eq!(
        body(&server, "/cap/abc/42"),
        "first=abc n=42; then first=abc 1=abc\n"
    );
    assert_eq!(body(&server, "/cap/xyz"), "no-digits; then first= 1=\n");
}

#[test]
fn a_value_chosen_by_an_exact_key_sees_the_captures_made_before() {
    let server = start();
    assert_eq!(
        body(&server, "/loc/exact"),
        "exact key, location capture exact"
    );
    assert_eq!(body(&server, "/loc/rx"), "regex key, own capture rx");
}

#[test]
fn the_source_may_be_any_text_with_variables() {
    let server = start();
    // A missing argument is an empty value, which the `""` key matches.
    assert_eq!(body(&server, "/pair?a=1&b=2"), "one-two|empty");
    assert_eq!(body(&server, "/pair?a=2&b=1"), "none|empty");
    assert_eq!(body(&server, "/pair?empty="), "empty|empty");
    assert_eq!(body(&server, "/pair?empty=x"), "empty|not-empty");
}

#[test]
fn a_value_is_kept_for_the_request_unless_volatile() {
    // nginx-tests map_volatile.t: the index redirect changes `$uri`; a cached map keeps
    // the value it had when `index` used it, a volatile one is computed again.
    let server = Instance::http_builder(
        r#"
map $uri $uri_cached {
    /1/          /1/redirect;
    /1/redirect  uncached;
}
map $uri $uri_uncached {
    volatile;
    /2/          /2/redirect;
    /2/redirect  uncached;
}
server {
    listen 127.0.0.1:8080;
    root html;
    location /1 { index $uri_cached; }
    location /1/redirect { add_header X-URI $uri_cached always; }
    location /2 { index $uri_uncached; }
    location /2/redirect { add_header X-URI $uri_uncached always; }
}
"#,
    )
    .file("html/1/redirect", "one")
    .file("html/2/redirect", "two")
    .start();
    let response = server.get("/1/");
    assert_eq!(response.header("X-URI"), Some("/1/redirect"));
    let response = server.get("/2/");
    assert_eq!(response.header("X-URI"), Some("uncached"));
}

#[test]
fn map_variables_work_in_other_modules() {
    let server = Instance::http(
        r#"
map $arg_v $mapped {
    default  other;
    one      1;
    two      2;
}
log_format mapped "mapped=$mapped";
server {
    listen 127.0.0.1:8080;
    access_log logs/mapped.log mapped;
    location /header { add_header X-Mapped $mapped; return 204; }
    location /if {
        if ($mapped = 1) { return 200 "if one"; }
        return 200 "if not one";
    }
    location /rewrite {
        rewrite ^ /target/$mapped last;
    }
    location /target/ { return 200 "target $uri"; }
    location /set {
        set $mapped "set-wins";
        return 200 "$mapped";
    }
}
"#,
    );
    let response = server.get("/header?v=two");
    assert_eq!(response.status, 204);
    assert_eq!(response.header("X-Mapped"), Some("2"));
    assert_eq!(body(&server, "/if?v=one"), "if one");
    assert_eq!(body(&server, "/if?v=two"), "if not one");
    assert_eq!(body(&server, "/rewrite?v=one"), "target /target/1");
    // `set` writes a map's variable as nginx lets it.
    assert_eq!(body(&server, "/set?v=one"), "set-wins");
    server.wait_for_line("logs/mapped.log", "mapped=2");
}

#[test]
fn a_cycle_is_logged_and_ends_in_an_empty_value() {
    let server = Instance::http(
        r#"
map $uri $cycle { default "<$cycle>"; }
server {
    listen 127.0.0.1:8080;
    location / { return 200 "[$cycle]"; }
}
"#,
    );
    // nginx's depth is 100: the innermost use is empty, the levels above it wrap it.
    let expected = format!("[{}{}]", "<".repeat(100), ">".repeat(100));
    assert_eq!(body(&server, "/"), expected);
    let log = server.error_log();
    assert!(
        messages_at("error", &log)
            .iter()
            .any(|message| message.starts_with("*1 cycle while evaluating variable \"cycle\"")),
        "{log}"
    );
}

#[test]
fn a_volatile_map_that_names_itself_twice_stays_bounded() {
    // nginx would take 2^100 steps here; Portico bounds the evaluations of one template.
    let server = Instance::http(
        r#"
map $uri $twice { volatile; default "$twice$twice"; }
server {
    listen 127.0.0.1:8080;
    location / { return 200 "[$twice]"; }
}
"#,
    );
    if std::env::var("PORTICO_E2E_BINARY").is_ok_and(|binary| !binary.is_empty()) {
        return;
    }
    assert_eq!(server.get("/").status, 200);
    let log = server.error_log();
    assert_eq!(
        messages_at("error", &log)
            .iter()
            .filter(|message| message.contains("cycle while evaluating variable \"twice\""))
            .count(),
        1,
        "{log}"
    );
}

#[test]
fn hash_size_directives_are_accepted() {
    let server = Instance::http(
        r#"
map_hash_max_size 4096;
map_hash_bucket_size 128;
map $arg_a $a { 1 one; }
server {
    listen 127.0.0.1:8080;
    location / { return 200 "$a"; }
}
"#,
    );
    assert_eq!(server.request(get("/?a=1")).body_text(), "one");
}

#[test]
fn configuration_errors_read_like_nginx() {
    let cases = [
        ("map $a $b { foo; }", "invalid number of the map parameters"),
        (
            "map $a $b { a b c; }",
            "invalid number of the map parameters",
        ),
        (
            "map $a $b { default 1; default 2; }",
            "duplicate default map parameter",
        ),
        ("map $a $b { a 1; A 2; }", "conflicting parameter \"a\""),
        (
            "map $a $b { hostnames; .a.com 1; a.com 2; }",
            "conflicting parameter \"a.com\"",
        ),
        (
            "map $a $b { hostnames; a.com 2; .a.com 1; }",
            "conflicting parameter \".a.com\"",
        ),
        (
            "map $a $b { hostnames; *.a.com 2; .a.com 1; }",
            "conflicting parameter \".a.com\"",
        ),
        (
            "map $a $b { hostnames; a.*.com 2; }",
            "invalid hostname or wildcard \"a.*.com\"",
        ),
        (
            "map $a $b { hostnames; a..com 2; }",
            "invalid hostname or wildcard \"a..com\"",
        ),
        ("map $a $uri { a 1; }", "the duplicate \"uri\" variable"),
        ("map $a b { a 1; }", "invalid variable name \"b\""),
        ("map $a $ { a 1; }", "invalid variable name \"$\""),
        (
            "map $a $b { ~(a 1; }",
            "pcre2_compile() failed: missing closing parenthesis in \"(a\"",
        ),
        ("map $a $b { foo { } }", "unexpected \"{\""),
        (
            "map_hash_max_size 1; map_hash_max_size 2;",
            "\"map_hash_max_size\" directive is duplicate",
        ),
        (
            "map_hash_bucket_size x;",
            "\"map_hash_bucket_size\" directive invalid number",
        ),
    ];
    for (body, message) in cases {
        assert_http_body_fails(body, &format!("{message} in {{conf}}:4"));
    }
    assert_http_body_fails(
        "server { map $a $b { } }",
        "\"map\" directive is not allowed here in {conf}:4",
    );
    assert_http_body_fails(
        "map $a $b $c { }",
        "invalid number of arguments in \"map\" directive in {conf}:4",
    );
    // Names are checked once the whole configuration is read, without a place.
    assert_http_body_fails("map $nothing $b { }", "unknown \"nothing\" variable");
}

#[test]
fn a_map_may_follow_its_users_and_a_later_block_for_the_same_name_wins() {
    let server = Instance::http(
        r#"
server {
    listen 127.0.0.1:8080;
    location / { return 200 "$late"; }
}
map $arg_a $late { default first; }
map $arg_a $late { default second; 1 one; }
"#,
    );
    assert_eq!(body(&server, "/"), "second");
    assert_eq!(body(&server, "/?a=1"), "one");
}

#[test]
fn hostnames_applies_to_the_keys_after_it() {
    let server = Instance::http(
        r#"
map $arg_h $kind {
    *.before.example   exact-star;
    hostnames;
    *.after.example    wildcard;
}
server {
    listen 127.0.0.1:8080;
    location / { return 200 "[$kind]"; }
}
"#,
    );
    assert_eq!(body(&server, "/?h=*.before.example"), "[exact-star]");
    assert_eq!(body(&server, "/?h=a.before.example"), "[]");
    assert_eq!(body(&server, "/?h=a.after.example"), "[wildcard]");
}

#[test]
fn a_cycle_in_the_server_s_script_is_logged_too() {
    let server = Instance::http(
        r#"
map $uri $loop { default "$loop"; }
server {
    listen 127.0.0.1:8080;
    set $copy $loop;
    location / { return 200 "[$copy]"; }
}
"#,
    );
    assert_eq!(body(&server, "/"), "[]");
    let log = server.error_log();
    assert!(
        messages_at("error", &log)
            .iter()
            .any(|message| message.starts_with("*1 cycle while evaluating variable \"loop\"")),
        "{log}"
    );
}
