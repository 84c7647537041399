//! Loading configurations: `include` with globs, variables in values, `-g`, and configs
//! that fail to load.

use crate::support::{Client, Instance};

#[test]
fn include_glob_is_relative_to_the_config_directory() {
    // The config lives in conf/, so `include sites/*.conf` means conf/sites/*.conf, not
    // PREFIX/sites/*.conf (which holds a decoy that would break the config).
    let server = Instance::builder(
        "worker_processes 1;\nevents {\n}\nhttp {\n    include sites/*.conf;\n}\n",
    )
    .conf_file("conf/main.conf")
    .file(
        "conf/sites/a.conf",
        "server { listen 127.0.0.1:8080; location / { return 200 \"site a\\n\"; } }\n",
    )
    .file(
        "conf/sites/b.conf",
        "server { listen 127.0.0.1:8081; location / { return 200 \"site b\\n\"; } }\n",
    )
    .file("conf/sites/c.txt", "not a directive\n")
    .file("sites/decoy.conf", "bogus;\n")
    .start();
    assert_eq!(server.get("/").body_text(), "site a\n");
    assert_eq!(
        server
            .request_to(8081, crate::support::get("/"))
            .body_text(),
        "site b\n"
    );
}

#[test]
fn include_glob_files_are_read_in_name_order() {
    // The first server on an address is its default: it answers an unknown Host only if
    // "10-first" is read before "20-second", whatever order the directory lists them in.
    let server = Instance::http_builder("include servers.d/*.conf;")
        .file(
            "servers.d/20-second.conf",
            "server { listen 127.0.0.1:8080; server_name second; return 200 \"second\\n\"; }\n",
        )
        .file(
            "servers.d/10-first.conf",
            "server { listen 127.0.0.1:8080; server_name first; return 200 \"first\\n\"; }\n",
        )
        .start();
    assert_eq!(
        server
            .request(crate::support::get_host("/", "unknown"))
            .body_text(),
        "first\n"
    );
    assert_eq!(
        server
            .request(crate::support::get_host("/", "second"))
            .body_text(),
        "second\n"
    );
}

#[test]
fn variables_in_add_header() {
    let server = Instance::http(
        "server {
            listen 127.0.0.1:8080;
            location / {
                add_header X-Request \"$request_method $uri?$args\";
                add_header X-Braces \"${uri}x\";
                return 200 ok;
            }
        }",
    );
    let response = server.get("/path/to?a=1");
    assert_eq!(response.header("X-Request"), Some("GET /path/to?a=1"));
    assert_eq!(response.header("X-Braces"), Some("/path/tox"));
}

#[test]
fn command_line_directives() {
    let server =
        Instance::http_builder("server { listen 127.0.0.1:8080; location / { return 200 ok; } }")
            .args(&["-g", "error_log logs/from-g.error.log notice;"])
            .start();
    assert_eq!(server.get("/").status, 200);
    // The log named by -g gets the startup notices.
    server.wait_for_line("logs/from-g.error.log", "[notice]");
}

#[test]
fn failing_config_never_starts() {
    // `bogus` is on line 7 of the file.
    let mut builder = Instance::builder(
        "worker_processes 1;
events {
}
http {
    server {
        listen 127.0.0.1:8080;
        bogus on;
    }
}
",
    );
    let port = builder.port(8080);
    let failure = builder
        .try_start()
        .expect_err("a broken config must not start");
    assert_eq!(failure.status.and_then(|status| status.code()), Some(1));
    let conf = failure.prefix.join("portico.conf").display().to_string();
    let message = format!("unknown directive \"bogus\" in {conf}:7");
    assert!(
        failure
            .stderr
            .contains(&format!("portico: [emerg] {message}\n")),
        "stderr:\n{}",
        failure.stderr
    );
    assert!(
        crate::support::log::messages_at("emerg", &failure.error_log).contains(&message.as_str()),
        "error log:\n{}",
        failure.error_log
    );
    assert!(
        Client::try_connect(port).is_err(),
        "nothing listens on the port"
    );
    assert!(!failure.prefix.join("logs/portico.pid").exists());
}
