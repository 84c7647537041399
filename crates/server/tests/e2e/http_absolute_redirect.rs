//! How a redirect to a local URI becomes absolute: the host from `Host` or, with
//! `server_name_in_redirect`, the server's first name (the server's address without
//! either), and the port of the listening socket unless `port_in_redirect off`.

use crate::support::Instance;

const REDIRECTS: &str = "server {
    listen 127.0.0.1:8080;
    server_name primary.test alias.test;
    root html;
    location /named/ { server_name_in_redirect on; }
    location /noport/ { port_in_redirect off; }
    location /both/ { server_name_in_redirect on; port_in_redirect off; }
    location = /return { server_name_in_redirect on; return 302 /target; }
}";

fn redirects() -> Instance {
    let mut builder = Instance::http_builder(REDIRECTS);
    for directory in ["dir", "named/dir", "noport/dir", "both/dir"] {
        builder = builder.file(&format!("html/{directory}/index.html"), "index\n");
    }
    builder.start()
}

/// The `Location` of the redirect `request` gets.
fn location(server: &Instance, request: &str) -> String {
    let response = server.request(request);
    assert!(
        matches!(response.status, 301 | 302),
        "{request:?}: {}",
        response.head_text()
    );
    response.header("Location").unwrap_or_default().to_owned()
}

fn get_with_host(path: &str, host: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n")
}

#[test]
fn server_name_in_redirect_picks_the_host_of_a_redirect() {
    let server = redirects();
    let port = server.port();
    // Off (the default): the name the client gave, without the port it gave.
    assert_eq!(
        location(&server, &get_with_host("/dir", "alias.test:9999")),
        format!("http://alias.test:{port}/dir/")
    );
    // Without a `Host`, the address the connection came to.
    assert_eq!(
        location(&server, "GET /dir HTTP/1.0\r\n\r\n"),
        format!("http://127.0.0.1:{port}/dir/")
    );
    // On: the server's first name, whatever the client asked for.
    assert_eq!(
        location(&server, &get_with_host("/named/dir", "alias.test")),
        format!("http://primary.test:{port}/named/dir/")
    );
    assert_eq!(
        location(&server, &get_with_host("/return", "alias.test")),
        format!("http://primary.test:{port}/target")
    );
}

#[test]
fn port_in_redirect_off_leaves_the_port_out() {
    let server = redirects();
    assert_eq!(
        location(&server, &get_with_host("/noport/dir", "alias.test:9999")),
        "http://alias.test/noport/dir/"
    );
    assert_eq!(
        location(&server, &get_with_host("/both/dir", "alias.test")),
        "http://primary.test/both/dir/"
    );
}
