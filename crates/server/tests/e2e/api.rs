//! `api`: the read-only NGINX Plus API, version 9. Paths and field names as NGINX Plus
//! writes them, figures that move as requests are made, `{}` for sections Portico has no
//! data for, 404 for other paths and 405 for writes.

use crate::support::cli::assert_http_body_fails;
use crate::support::{Instance, PATIENCE, poll};

const CONF: &str = "
upstream backend {
    server 127.0.0.1:8081;
    server 127.0.0.1:8082 backup;
}
server {
    listen 127.0.0.1:8080;
    location /api { api write=on; }
    location /proxied { proxy_pass http://backend; }
}
server {
    listen 127.0.0.1:8081;
    return 200 'upstream';
}";

fn json(server: &Instance, path: &str) -> String {
    let response = server.get(path);
    assert_eq!(response.status, 200, "{path}");
    assert_eq!(response.header("Content-Type"), Some("application/json"));
    response.body_text()
}

/// The number after `"name":` in `text`.
fn field(text: &str, name: &str) -> u64 {
    let key = format!("\"{name}\":");
    let start = text
        .find(&key)
        .unwrap_or_else(|| panic!("no {name} in {text}"))
        + key.len();
    let digits: String = text[start..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().expect("a number")
}

#[test]
fn the_root_lists_versions_and_sections() {
    let server = Instance::http(CONF);
    assert_eq!(json(&server, "/api/"), "[1,2,3,4,5,6,7,8,9]");
    let sections = json(&server, "/api/9");
    for section in ["nginx", "connections", "http", "ssl", "workers"] {
        assert!(sections.contains(&format!("\"{section}\"")), "{sections}");
    }
    let nginx = json(&server, "/api/9/nginx");
    assert!(nginx.starts_with("{\"version\":\"1."), "{nginx}");
    assert!(nginx.contains("\"address\":\"127.0.0.1\","), "{nginx}");
    assert_eq!(field(&nginx, "generation"), 1);
    assert_eq!(u64::from(server.pid()), field(&nginx, "pid"));
    for empty in [
        "/api/9/http/server_zones",
        "/api/9/http/caches",
        "/api/9/ssl",
    ] {
        assert_eq!(json(&server, empty), "{}", "{empty}");
    }
    assert_eq!(server.get("/api/9/nothing").status, 404);
    assert_eq!(server.get("/api/7/nginx").status, 404);
}

#[test]
fn figures_move_as_requests_are_made() {
    let server = Instance::http(CONF);
    let before = json(&server, "/api/9/http/requests");
    assert_eq!(server.get("/proxied").body_text(), "upstream");
    let after = json(&server, "/api/9/http/requests");
    // The proxied request, its upstream request to this server, and this one.
    assert_eq!(field(&after, "total") - field(&before, "total"), 3);
    assert_eq!(field(&after, "current"), 1);
    let connections = json(&server, "/api/9/connections");
    assert!(field(&connections, "accepted") >= 4, "{connections}");
    assert_eq!(field(&connections, "dropped"), 0);
    assert_eq!(field(&connections, "active"), 1);
    let workers = json(&server, "/api/9/workers");
    assert!(workers.starts_with("[{\"id\":0,"), "{workers}");
    let upstreams = json(&server, "/api/9/http/upstreams");
    assert!(
        upstreams.starts_with("{\"backend\":{\"peers\":[{\"id\":0,"),
        "{upstreams}"
    );
    assert!(
        upstreams.contains("\"state\":\"up\",\"active\":0,\"requests\":1,"),
        "{upstreams}"
    );
    assert!(upstreams.contains("\"backup\":true"), "{upstreams}");
    assert!(
        upstreams.contains("\"responses\":{\"1xx\":0,\"2xx\":1,"),
        "{upstreams}"
    );
    // An idle connection is NGINX Plus's `idle`.
    let _idle = server.connect();
    let seen = poll(PATIENCE, || {
        let connections = json(&server, "/api/9/connections");
        (field(&connections, "idle") == 1).then_some(())
    });
    assert!(seen.is_some());
}

#[test]
fn writes_are_refused() {
    let server = Instance::http(CONF);
    for method in ["POST", "PATCH", "DELETE"] {
        let response = server.request(format!(
            "{method} /api/9/http/upstreams HTTP/1.0\r\nContent-Length: 0\r\n\r\n"
        ));
        assert_eq!(response.status, 405, "{method}");
    }
}

#[test]
fn a_bad_parameter_is_refused() {
    assert_http_body_fails(
        "server { location /api { api write=maybe; } }",
        "invalid parameter \"write=maybe\" in {conf}:4",
    );
}

#[test]
fn idle_keepalive_connections_are_shown() {
    let server = Instance::http(
        "upstream kept {
            server 127.0.0.1:8081;
            keepalive 4;
        }
        server {
            listen 127.0.0.1:8080;
            location /api { api; }
            location = /metrics { portico_metrics; }
            location /kept { proxy_pass http://kept; proxy_http_version 1.1; proxy_set_header Connection ''; }
        }
        server {
            listen 127.0.0.1:8081;
            return 200 'upstream';
        }",
    );
    assert_eq!(server.get("/kept").body_text(), "upstream");
    let upstreams = json(&server, "/api/9/http/upstreams");
    assert!(upstreams.contains("\"keepalive\":1,"), "{upstreams}");
    let metrics = server.get("/metrics").body_text();
    assert!(
        metrics.contains("\nportico_upstream_keepalive_connections{upstream=\"kept\"} 1\n"),
        "{metrics}"
    );
}
