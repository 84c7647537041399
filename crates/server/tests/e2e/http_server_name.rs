//! Choosing the virtual server: `server_name` forms and their precedence, default servers.

use crate::support::{Instance, get_host};

const SERVERS: &str = "
server { listen 127.0.0.1:8080; server_name first; return 200 \"first\\n\"; }
server { listen 127.0.0.1:8080; server_name exact.example.com; return 200 \"exact\\n\"; }
server { listen 127.0.0.1:8080; server_name *.example.com; return 200 \"leading wildcard\\n\"; }
server { listen 127.0.0.1:8080; server_name *.deep.example.com; return 200 \"longer leading wildcard\\n\"; }
server { listen 127.0.0.1:8080; server_name .example.org; return 200 \"dot $server_name\\n\"; }
server { listen 127.0.0.1:8080; server_name www.example.*; return 200 \"trailing wildcard\\n\"; }
server {
    listen 127.0.0.1:8080;
    server_name ~^(?<user>[a-z]+)\\.users\\.example\\.net$ ~^(\\d+)\\.numbers\\.example$;
    return 200 \"regex user=$user one=$1\\n\";
}
server { listen 127.0.0.1:8080; server_name \"\"; return 200 \"empty\\n\"; }
server { listen 127.0.0.1:8080 default_server; server_name marked; return 200 \"default\\n\"; }
";

fn body_for_host(server: &Instance, host: &str) -> String {
    server.request(get_host("/", host)).body_text()
}

#[test]
fn exact_name() {
    let server = Instance::http(SERVERS);
    assert_eq!(body_for_host(&server, "exact.example.com"), "exact\n");
    assert_eq!(body_for_host(&server, "EXACT.example.com"), "exact\n");
}

#[test]
fn leading_wildcard_longest_wins() {
    let server = Instance::http(SERVERS);
    assert_eq!(
        body_for_host(&server, "a.example.com"),
        "leading wildcard\n"
    );
    assert_eq!(
        body_for_host(&server, "a.b.example.com"),
        "leading wildcard\n"
    );
    assert_eq!(
        body_for_host(&server, "a.deep.example.com"),
        "longer leading wildcard\n"
    );
}

#[test]
fn leading_wildcard_is_preferred_to_trailing() {
    let server = Instance::http(SERVERS);
    assert_eq!(
        body_for_host(&server, "www.example.com"),
        "leading wildcard\n"
    );
}

#[test]
fn dot_name_matches_the_domain_and_its_subdomains() {
    let server = Instance::http(SERVERS);
    assert_eq!(body_for_host(&server, "example.org"), "dot example.org\n");
    assert_eq!(
        body_for_host(&server, "x.y.example.org"),
        "dot example.org\n"
    );
}

#[test]
fn trailing_wildcard() {
    let server = Instance::http(SERVERS);
    assert_eq!(
        body_for_host(&server, "www.example.de"),
        "trailing wildcard\n"
    );
}

#[test]
fn regex_names_with_captures() {
    let server = Instance::http(SERVERS);
    assert_eq!(
        body_for_host(&server, "bob.users.example.net"),
        "regex user=bob one=bob\n"
    );
    assert_eq!(
        body_for_host(&server, "42.numbers.example"),
        "regex user= one=42\n"
    );
}

#[test]
fn empty_name_matches_a_request_without_host() {
    let server = Instance::http(SERVERS);
    assert_eq!(
        server.request("GET / HTTP/1.0\r\n\r\n").body_text(),
        "empty\n"
    );
}

#[test]
fn default_server_flag() {
    let server = Instance::http(SERVERS);
    assert_eq!(body_for_host(&server, "unknown.example"), "default\n");
}

#[test]
fn first_server_is_the_default_without_the_flag() {
    let server = Instance::http(
        "server { listen 127.0.0.1:8080; server_name one; return 200 \"one\\n\"; }
         server { listen 127.0.0.1:8080; server_name two; return 200 \"two\\n\"; }",
    );
    assert_eq!(body_for_host(&server, "unknown.example"), "one\n");
    assert_eq!(body_for_host(&server, "two"), "two\n");
}

#[test]
fn each_listen_address_has_its_own_default() {
    let server = Instance::http(
        "server {
             listen 127.0.0.1:8080;
             listen 127.0.0.1:8081;
             server_name a;
             return 200 \"a\\n\";
         }
         server {
             listen 127.0.0.1:8080;
             listen 127.0.0.1:8081 default_server;
             server_name b;
             return 200 \"b\\n\";
         }
         server {
             listen 127.0.0.1:8082;
             server_name c;
             return 200 \"c\\n\";
         }",
    );
    assert_eq!(
        server
            .request_to(8080, get_host("/", "unknown"))
            .body_text(),
        "a\n"
    );
    assert_eq!(
        server
            .request_to(8081, get_host("/", "unknown"))
            .body_text(),
        "b\n"
    );
    assert_eq!(
        server.request_to(8081, get_host("/", "a")).body_text(),
        "a\n"
    );
    // A name is only looked up among the servers of the address the request came to.
    assert_eq!(
        server.request_to(8082, get_host("/", "a")).body_text(),
        "c\n"
    );
}
