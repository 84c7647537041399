//! `try_files`: candidates with variables, `$uri/` for directories, the fallback as an
//! internal redirect (with its own arguments), a named location or a status, `alias`, and
//! the configuration errors. Every test also passes against nginx 1.22
//! (`PORTICO_E2E_BINARY=/usr/sbin/nginx`).

use crate::support::{Instance, get_host};

const CONF: &str = r#"
server {
    listen 127.0.0.1:8080;
    server_name localhost;
    root %%PREFIX%%/html;

    location / {
        try_files $uri $uri/ /fallback?from=$uri;
    }
    location /noargs/ {
        try_files $uri /fallback;
    }
    location = /fallback {
        internal;
        return 200 "fallback uri=$uri args=$args\n";
    }
    location /named/ {
        try_files $uri @back;
    }
    location @back {
        return 200 "named uri=$uri\n";
    }
    location /code/ {
        try_files /nothing.html =410;
    }
    location /dirs/ {
        try_files /found.html/ /directory/ =404;
    }
    location /uri/ {
        add_header X-URI $uri;
        try_files /nothing.html /found.html =404;
    }
    location /al/ {
        alias %%PREFIX%%/html/directory/;
        try_files $uri =404;
    }
    location ~ ^/re/(.+)$ {
        alias %%PREFIX%%/html/directory;
        try_files /$1 =404;
    }
    location /outer/ {
        try_files /nothing.html =403;
        location /outer/inner/ { }
    }
    location /tried/ {
        error_page 410 /fallback;
        try_files /nothing =410;
    }
}
"#;

fn start() -> Instance {
    Instance::http_builder(CONF)
        .file("html/found.html", "FOUND\n")
        .file("html/directory/inside.html", "INSIDE\n")
        .file("html/outer/inner/page.html", "INNER\n")
        .start()
}

#[test]
fn the_first_existing_file_is_served() {
    let server = start();
    let response = server.get("/found.html");
    assert_eq!(response.status, 200);
    assert_eq!(response.body_text(), "FOUND\n");
    assert_eq!(response.header("Content-Type"), Some("text/html"));
}

#[test]
fn the_fallback_is_an_internal_redirect_with_its_own_arguments() {
    let server = start();
    let response = server.get("/missing?a=b");
    assert_eq!(response.status, 200);
    assert_eq!(
        response.body_text(),
        "fallback uri=/fallback args=from=/missing\n"
    );
    // Without `?` in the fallback, the request's arguments are dropped, as nginx does.
    let response = server.get("/noargs/missing?a=b");
    assert_eq!(response.body_text(), "fallback uri=/fallback args=\n");
}

#[test]
fn a_directory_candidate_ends_in_a_redirect_with_the_slash() {
    let server = start();
    let response = server.request(get_host("/directory", "localhost"));
    assert_eq!(response.status, 301);
    assert_eq!(
        response.header("Location"),
        Some(format!("http://localhost:{}/directory/", server.port()).as_str())
    );
}

#[test]
fn a_trailing_slash_tests_for_a_directory_only() {
    let server = start();
    // `/found.html/` does not match the file; `/directory/` matches the directory, whose
    // URI (without the slash) the static handler then redirects.
    let response = server.get("/dirs/x");
    assert_eq!(response.status, 301);
    assert!(
        response
            .header("Location")
            .is_some_and(|value| value.ends_with("/directory/")),
        "{:?}",
        response.header("Location")
    );
}

#[test]
fn named_location_and_status_fallbacks() {
    let server = start();
    let response = server.get("/named/missing");
    assert_eq!(response.status, 200);
    assert_eq!(response.body_text(), "named uri=/named/missing\n");
    assert_eq!(server.get("/code/x").status, 410);
    // A status goes through error_page.
    let response = server.get("/tried/x");
    assert_eq!(response.status, 410);
    assert_eq!(response.body_text(), "fallback uri=/fallback args=\n");
}

#[test]
fn the_matched_file_becomes_the_uri() {
    let server = start();
    let response = server.get("/uri/whatever");
    assert_eq!(response.status, 200);
    assert_eq!(response.body_text(), "FOUND\n");
    assert_eq!(response.header("X-URI"), Some("/found.html"));
}

#[test]
fn alias_in_prefix_and_regex_locations() {
    let server = start();
    assert_eq!(server.get("/al/inside.html").body_text(), "INSIDE\n");
    assert_eq!(server.get("/al/missing.html").status, 404);
    assert_eq!(server.get("/re/inside.html").body_text(), "INSIDE\n");
    assert_eq!(server.get("/re/missing.html").status, 404);
}

#[test]
fn try_files_is_not_inherited() {
    let server = start();
    assert_eq!(server.get("/outer/x").status, 403);
    let response = server.get("/outer/inner/page.html");
    assert_eq!(response.status, 200);
    assert_eq!(response.body_text(), "INNER\n");
}

#[test]
fn missing_candidates_are_not_logged() {
    let server = start();
    assert_eq!(server.get("/code/x").status, 410);
    // A later request's line (the static handler's 404) shows the log is written.
    assert_eq!(server.get("/outer/inner/missing.html").status, 404);
    server.wait_for_error_log("missing.html");
    let log = server.error_log();
    assert!(!log.contains("nothing.html"), "{log}");
}

#[test]
fn configuration_errors() {
    let cases = [
        (
            "server { listen 127.0.0.1:8080; location / { try_files $uri =1000; } }",
            "invalid code \"=1000\"",
        ),
        (
            "server { listen 127.0.0.1:8080; location / { try_files $uri =4x; } }",
            "invalid code \"=4x\"",
        ),
        (
            "server { listen 127.0.0.1:8080; location / { try_files =404; } }",
            "invalid number of arguments in \"try_files\" directive",
        ),
        (
            "try_files $uri =404; server { listen 127.0.0.1:8080; }",
            "\"try_files\" directive is not allowed here",
        ),
        (
            "server { listen 127.0.0.1:8080; location / { try_files a =404; try_files b =404; } }",
            "\"try_files\" directive is duplicate",
        ),
    ];
    for (config, expected) in cases {
        let failure = Instance::http_builder(config)
            .try_start()
            .expect_err("the configuration is refused");
        let text = format!("{}{}", failure.stderr, failure.error_log);
        assert!(text.contains(expected), "{config}: {text}");
    }
}

#[test]
fn codes_that_are_not_responses() {
    let server = Instance::http(
        "server { listen 127.0.0.1:8080; root %%PREFIX%%/html;
            location /ok/ { try_files /nope =200; }
            location /created/ { try_files /nope =201; }
            location /zero/ { try_files /nope =0; } }",
    );
    // nginx sends nothing for a code below 300 other than 201 and 204.
    let mut client = server.connect();
    client.write(crate::support::get("/ok/x"));
    client.expect_closed_without_response();
    assert_eq!(server.get("/created/x").status, 201);
    // `=0` is a URI, not a code: an internal redirect to "=0", a file that does not exist.
    assert_eq!(server.get("/zero/x").status, 404);
    let line = server.wait_for_error_log("failed");
    assert!(
        line.contains("/html=0\" failed (2: No such file or directory)"),
        "{line}"
    );
}
