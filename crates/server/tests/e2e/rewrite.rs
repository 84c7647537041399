//! The rewrite module: `rewrite` with each flag and its argument handling, captures, `set`,
//! `break`, `if` blocks and their settings, server-level scripts, `rewrite_log`,
//! `uninitialized_variable_warn`, the rewrite-cycle limit, and configuration errors.
//! Every expectation here was checked against nginx as well
//! (`PORTICO_E2E_BINARY=/usr/sbin/nginx`).

use crate::support::cli::{assert_http_body_fails, test_http_body};
use crate::support::log::messages_at;
use crate::support::{Instance, get, get_host};

const REWRITES: &str = r#"
server {
    listen 127.0.0.1:8080;
    server_name localhost;

    location /last/ {
        rewrite ^/last/(.*)$ /target/$1 last;
        return 500;
    }
    location /target/ { return 200 "target uri=$uri args=$args"; }

    location /args/replace { rewrite ^ /target/r?new=1 last; }
    location /args/drop { rewrite ^ /target/d? last; }
    location /args/new-only { rewrite ^ /target/n?new=1? last; }

    location /chain/ {
        rewrite ^/chain/a$ /chain/b;
        rewrite ^/chain/b$ /target/from-chain;
    }
    location /chain-return/ {
        rewrite ^ /target/never;
        return 403;
    }

    location /break/ {
        rewrite ^/break/(.*)$ /broken/$1 break;
        return 200 "break uri=$uri";
    }
    location /broken/ { return 500; }

    location /redirect/ {
        rewrite ^/redirect/(.*)$ /to/$1 redirect;
    }
    location /permanent/ {
        rewrite ^/permanent/(.*)$ /to/$1 permanent;
    }
    location /url/ {
        rewrite ^/url/(.*)$ http://example.com/$1;
    }
    location /url-query/ {
        rewrite ^/url-query/(.*)$ http://example.com/$1?x=1;
    }
    location /url-no-args/ {
        rewrite ^/url-no-args/(.*)$ http://example.com/$1? permanent;
    }

    location /named/ {
        rewrite "^/named/(?<first>[a-z]+)/(?<second>[0-9]+)$" /target/$second-$first last;
    }

    location /escape/ {
        rewrite ^/escape/(.*)$ /target/x?q=$1 last;
    }

    location /loop/ {
        rewrite ^ /loop/again last;
    }

    location ~ ^/loc/(?<word>\w+)$ {
        rewrite ^ /target/$word-$1 last;
    }

    location /zero/ {
        rewrite ^ $arg_empty last;
    }
}
"#;

fn body_of(server: &Instance, path: &str) -> String {
    let response = server.get(path);
    assert_eq!(response.status, 200, "{path}: {}", response.head_text());
    response.body_text()
}

#[test]
fn last_searches_the_location_again_and_keeps_arguments() {
    let server = Instance::http(REWRITES);
    assert_eq!(body_of(&server, "/last/x"), "target uri=/target/x args=");
    assert_eq!(
        body_of(&server, "/last/x?a=1&b=2"),
        "target uri=/target/x args=a=1&b=2"
    );
}

#[test]
fn arguments_in_the_replacement_come_first_and_a_last_question_mark_drops_the_old_ones() {
    let server = Instance::http(REWRITES);
    assert_eq!(
        body_of(&server, "/args/replace?old=2"),
        "target uri=/target/r args=new=1&old=2"
    );
    assert_eq!(
        body_of(&server, "/args/drop?old=2"),
        "target uri=/target/d args="
    );
    assert_eq!(
        body_of(&server, "/args/new-only?old=2"),
        "target uri=/target/n args=new=1"
    );
}

#[test]
fn without_a_flag_the_script_goes_on_and_the_last_uri_is_searched() {
    let server = Instance::http(REWRITES);
    // The second rewrite sees the first one's URI; the location of the final URI is
    // searched once the script ends.
    assert_eq!(
        body_of(&server, "/chain/a"),
        "target uri=/target/from-chain args="
    );
    // The script goes on after a rewrite without a flag, so a `return` after it wins.
    assert_eq!(server.get("/chain-return/x").status, 403);
}

#[test]
fn break_stays_in_the_location() {
    let server = Instance::http(REWRITES);
    // `break` stops the script, so neither the `return` after it nor the location of the
    // new URI runs: the request goes to the content phase of /break/, the static handler.
    let response = server.get("/break/file");
    assert_eq!(response.status, 404);
}

#[test]
fn redirect_and_permanent_flags() {
    let server = Instance::http(REWRITES);
    let port = server.port();
    let response = server.request(get_host("/redirect/a?q=1", "localhost"));
    assert_eq!(response.status, 302);
    assert_eq!(
        response.header("Location"),
        Some(format!("http://localhost:{port}/to/a?q=1").as_str())
    );
    let response = server.request(get_host("/permanent/b", "localhost"));
    assert_eq!(response.status, 301);
    assert_eq!(
        response.header("Location"),
        Some(format!("http://localhost:{port}/to/b").as_str())
    );
    assert!(response.body_text().contains("301 Moved Permanently"));
}

#[test]
fn url_replacements_redirect_and_append_arguments() {
    let server = Instance::http(REWRITES);
    let response = server.get("/url/p?a=1");
    assert_eq!(response.status, 302);
    assert_eq!(
        response.header("Location"),
        Some("http://example.com/p?a=1")
    );
    let response = server.get("/url-query/p?a=1");
    assert_eq!(
        response.header("Location"),
        Some("http://example.com/p?x=1&a=1")
    );
    let response = server.get("/url-no-args/p?a=1");
    assert_eq!(response.status, 301);
    assert_eq!(response.header("Location"), Some("http://example.com/p"));
}

#[test]
fn named_and_numbered_captures() {
    let server = Instance::http(REWRITES);
    assert_eq!(
        body_of(&server, "/named/abc/42"),
        "target uri=/target/42-abc args="
    );
    // A regex location's named capture is a variable; the rewrite's own match replaces
    // the numbered captures (`^` has no group 1).
    assert_eq!(
        body_of(&server, "/loc/word"),
        "target uri=/target/word- args="
    );
}

#[test]
fn captures_in_arguments_are_escaped_when_the_request_path_was() {
    let server = Instance::http(REWRITES);
    // `$1` is decoded from the URI; in arguments nginx escapes it again when the request's
    // path had escapes, so `&` and the space cannot split or end the argument.
    assert_eq!(
        body_of(&server, "/escape/a%26b%20c"),
        "target uri=/target/x args=q=a%26b%20c"
    );
    // A path written without escapes gets its capture copied as it is.
    assert_eq!(
        body_of(&server, "/escape/a&b"),
        "target uri=/target/x args=q=a&b"
    );
}

#[test]
fn a_rewrite_cycle_ends_with_500_and_nginx_log_line() {
    let server = Instance::http(REWRITES);
    let response = server.get("/loop/x");
    assert_eq!(response.status, 500);
    let log = server.wait_for_error_log("rewrite or internal redirection cycle");
    assert!(
        messages_at("error", &log)
            .iter()
            .any(|message| message.starts_with(
                "*1 rewrite or internal redirection cycle while processing \"/loop/again\""
            )),
        "{log}"
    );
}

#[test]
fn an_empty_rewritten_uri_is_an_error() {
    let server = Instance::http(REWRITES);
    assert_eq!(server.get("/zero/").status, 500);
    server.wait_for_error_log("the rewritten URI has a zero length");
}

const SCRIPTS: &str = r#"
server {
    listen 127.0.0.1:8080;
    server_name localhost;

    set $from_server "server-level";
    if ($http_x_server_return) {
        return 418;
    }
    rewrite ^/server-rewrite$ /target;

    location /target { return 200 "target $from_server"; }

    location /set {
        set $a "one";
        set $b "$a-two";
        set $a "three";
        return 200 "$a $b";
    }
    location /set-args {
        set $args "x=1";
        return 200 "$args|$arg_x|$is_args";
    }
    location /break {
        set $a before;
        break;
        set $a after;
        return 200 never;
    }
    location /if-block {
        set $v outside;
        if ($arg_go) {
            set $v inside;
            add_header X-If yes;
        }
        return 200 $v;
    }
    location /if-last {
        if ($arg_a) { add_header X-Block a; }
        if ($arg_b) { add_header X-Block b; }
        return 200 block;
    }
    location /if-capture {
        if ($arg_name ~ ^(?<head>.)(.*)$) {
            return 200 "$head:$2";
        }
        return 200 none;
    }
    location /if-equal {
        if ($arg_v = "") { return 200 empty; }
        if ($arg_v != "x") { return 200 not-x; }
        return 200 is-x;
    }
    location /uninitialized {
        return 200 "[$never_set]";
    }
    location /unset-later {
        set $never_set value;
    }
    location /quiet {
        uninitialized_variable_warn off;
        return 200 "[$never_set]";
    }
}
"#;

#[test]
fn server_level_script_runs_before_the_location_search() {
    let server = Instance::http(SCRIPTS);
    assert_eq!(body_of(&server, "/server-rewrite"), "target server-level");
    let response = server.request(
        "GET /target HTTP/1.1\r\nHost: localhost\r\nX-Server-Return: 1\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(response.status, 418);
}

#[test]
fn set_evaluates_in_order() {
    let server = Instance::http(SCRIPTS);
    assert_eq!(body_of(&server, "/set"), "three one-two");
    assert_eq!(body_of(&server, "/set-args?old=1"), "x=1|1|?");
}

#[test]
fn break_stops_the_script() {
    let server = Instance::http(SCRIPTS);
    // After `break` the static handler serves /break: a missing file.
    assert_eq!(server.get("/break").status, 404);
}

#[test]
fn an_if_block_runs_its_directives_and_switches_settings() {
    let server = Instance::http(SCRIPTS);
    let response = server.get("/if-block?go=1");
    assert_eq!(response.body_text(), "inside");
    assert_eq!(response.header("X-If"), Some("yes"));
    let response = server.get("/if-block");
    assert_eq!(response.body_text(), "outside");
    assert!(!response.has_header("X-If"));
    // The last `if` that is true decides the settings.
    let response = server.get("/if-last?a=1&b=1");
    assert_eq!(response.header_all("X-Block"), vec!["b"]);
    let response = server.get("/if-last?a=1");
    assert_eq!(response.header_all("X-Block"), vec!["a"]);
}

/// nginx's content handler is the last one a matched level set: after an `if` whose own
/// `proxy_pass` made the proxy the handler, a later matched `if` with no handler and no
/// `proxy_pass` leaves the proxy without an upstream (500, nginx since 1.3.10); a later `if`
/// that sets its own handler, or none matching, is served normally.
#[test]
fn a_proxy_handler_left_without_proxy_pass_by_a_later_if_gives_500() {
    let server = Instance::http(
        "server {
            listen 127.0.0.1:8080;
            location /crash {
                set $true 1;
                if ($true) { proxy_pass http://127.0.0.1:8081; }
                if ($arg_second) { }
            }
            location /again {
                set $true 1;
                if ($true) { proxy_pass http://127.0.0.1:8081; }
                if ($arg_second) { proxy_pass http://127.0.0.1:8082; }
            }
        }
        server { listen 127.0.0.1:8081; return 200 \"uri:$uri\"; }
        server { listen 127.0.0.1:8082; return 200 \"second:$uri\"; }",
    );
    assert_eq!(server.get("/crash?second=1").status, 500);
    assert_eq!(body_of(&server, "/crash"), "uri:/crash");
    assert_eq!(body_of(&server, "/again?second=1"), "second:/again");
}

#[test]
fn if_regex_captures_and_comparisons() {
    let server = Instance::http(SCRIPTS);
    assert_eq!(body_of(&server, "/if-capture?name=abc"), "a:bc");
    assert_eq!(body_of(&server, "/if-capture"), "none");
    assert_eq!(body_of(&server, "/if-equal"), "empty");
    assert_eq!(body_of(&server, "/if-equal?v=y"), "not-x");
    assert_eq!(body_of(&server, "/if-equal?v=x"), "is-x");
}

#[test]
fn reading_a_set_variable_before_it_is_set_warns() {
    let server = Instance::http(SCRIPTS);
    assert_eq!(body_of(&server, "/uninitialized"), "[]");
    let log = server.wait_for_error_log("using uninitialized");
    assert!(
        messages_at("warn", &log)
            .iter()
            .any(|message| message.starts_with("*1 using uninitialized \"never_set\" variable")),
        "{log}"
    );
    assert_eq!(body_of(&server, "/quiet"), "[]");
    let log = server.error_log();
    assert_eq!(log.matches("using uninitialized").count(), 1, "{log}");
}

#[test]
fn rewrite_log_writes_matches_and_results_at_notice() {
    let server = Instance::http(
        r#"
server {
    listen 127.0.0.1:8080;
    rewrite_log on;
    error_log logs/rewrite.log notice;
    location /a {
        rewrite ^/nomatch /x;
        rewrite ^/a(.*)$ /b$1?k=v;
    }
    location /b { return 200 ok; }
}
"#,
    );
    assert_eq!(server.get("/a1").status, 200);
    server.wait_for_line("logs/rewrite.log", "rewritten data");
    let log = server.read("logs/rewrite.log");
    let notices = messages_at("notice", &log);
    for expected in [
        "\"^/nomatch\" does not match \"/a1\"",
        "\"^/a(.*)$\" matches \"/a1\"",
        "rewritten data: \"/b1\", args: \"k=v\"",
    ] {
        assert!(
            notices.iter().any(|message| message.contains(expected)),
            "{expected} in {log}"
        );
    }
}

#[test]
fn if_file_tests_ask_the_file_system() {
    let server = Instance::http_builder(
        r#"
server {
    listen 127.0.0.1:8080;
    location /f { if (-f %%PREFIX%%/html/$arg_p) { return 200 file; } return 200 no; }
    location /d { if (-d %%PREFIX%%/html/$arg_p) { return 200 dir; } return 200 no; }
    location /e { if (!-e %%PREFIX%%/html/$arg_p) { return 200 missing; } return 200 exists; }
}
"#,
    )
    .file("html/page.txt", "x")
    .file("html/sub/inner.txt", "y")
    .start();
    assert_eq!(body_of(&server, "/f?p=page.txt"), "file");
    assert_eq!(body_of(&server, "/f?p=sub"), "no");
    assert_eq!(body_of(&server, "/d?p=sub"), "dir");
    assert_eq!(body_of(&server, "/e?p=nothing"), "missing");
    assert_eq!(body_of(&server, "/e?p=page.txt/below"), "missing");
    assert_eq!(body_of(&server, "/e?p=sub"), "exists");
}

#[test]
fn invalid_regex_fails_the_load_with_pcre_text() {
    let (conf, output) =
        test_http_body("server {\n listen 127.0.0.1:8080;\n location / { rewrite ^(foo /x; }\n}");
    output.assert_code(1);
    assert!(
        output.stderr.contains(&format!(
            "pcre2_compile() failed: missing closing parenthesis in \"^(foo\" in {conf}:6"
        )),
        "{}",
        output.stderr
    );
}

#[test]
fn configuration_errors_read_like_nginx() {
    for (body, message) in [
        (
            "server { location / { rewrite ^ /x bogus; } }",
            "invalid parameter \"bogus\" in {conf}:4",
        ),
        (
            "server { location / { set $uri x; } }",
            "the duplicate \"uri\" variable in {conf}:4",
        ),
        (
            "server { location / { set uri x; } }",
            "invalid variable name \"uri\" in {conf}:4",
        ),
        (
            "server { location / { if ($a { } } }",
            "invalid condition \"$a\" in {conf}:4",
        ),
        (
            "server { location / { if ($uri < 1) { } } }",
            "unexpected \"<\" in condition in {conf}:4",
        ),
        (
            "server { location / { if (-q /x) { } } }",
            "invalid condition \"-q\" in {conf}:4",
        ),
        (
            "server { location / { if ($uri) { listen 80; } } }",
            "\"listen\" directive is not allowed here in {conf}:4",
        ),
        (
            "server { location / { if ($uri) { if ($uri) { } } } }",
            "\"if\" directive is not allowed here in {conf}:4",
        ),
        (
            "server { location / { rewrite ^ \"\"; } }",
            "empty replacement in {conf}:4",
        ),
        (
            "server { location / { return 200 $undefined_thing; } }",
            "unknown \"undefined_thing\" variable",
        ),
        (
            "server { location / { rewrite_log on; rewrite_log off; } }",
            "\"rewrite_log\" directive is duplicate in {conf}:4",
        ),
    ] {
        assert_http_body_fails(body, message);
    }
}

#[test]
fn if_with_spaces_inside_the_parentheses() {
    let server = Instance::http(
        "server { listen 127.0.0.1:8080;
            location / { if ( $arg_c ) { return 204; } return 200 no; } }",
    );
    assert_eq!(server.get("/?c=1").status, 204);
    assert_eq!(server.request(get("/")).status, 200);
}
