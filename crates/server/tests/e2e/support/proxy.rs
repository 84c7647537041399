//! Shared pieces of the proxy tests: a proxy in front of one scripted upstream, the answer
//! most upstreams give, and a group of three upstreams that answer with their own name.

use crate::support::Instance;
use crate::support::upstream::{MockUpstream, UpstreamConn};

/// The answer of an upstream that has nothing special to say.
pub const OK: &str = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";

/// A proxy whose config names the mock upstream as port 8081.
pub fn proxy_with(
    config: &str,
    script: impl Fn(UpstreamConn) + Send + Sync + 'static,
) -> (Instance, MockUpstream) {
    let mut builder = Instance::http_builder(config);
    let port = builder.port(8081);
    let upstream = MockUpstream::start(port, script);
    (builder.start(), upstream)
}

/// The config most proxy tests share: the upstream at nominal port 8081, a location with a
/// URI part and one that sets request fields.
pub const SIMPLE: &str = "server {
    listen 127.0.0.1:8080;
    location / { proxy_pass http://127.0.0.1:8081; proxy_read_timeout 1s; }
    location /part/ { proxy_pass http://127.0.0.1:8081/other/; }
    location /set/ {
        proxy_pass http://127.0.0.1:8081;
        proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
        proxy_set_header User-Agent \"\";
        proxy_set_header X-Proxy-Host $proxy_host;
    }
}";

/// Three servers answering with their own name, nominal ports 8081 to 8083.
pub const NAMED: [(u16, &str); 3] = [
    (8081, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\none"),
    (8082, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\ntwo"),
    (8083, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nthree"),
];

/// A proxy to the group `upstream_block` defines (as `backend`) over the three servers of
/// [`NAMED`].
pub fn group_with(upstream_block: &str) -> (Instance, Vec<MockUpstream>) {
    let mut builder = Instance::http_builder(&format!(
        "{upstream_block}
         server {{
             listen 127.0.0.1:8080;
             location / {{ proxy_pass http://backend; }}
         }}"
    ));
    let upstreams = NAMED
        .iter()
        .map(|(nominal, answer)| MockUpstream::answering(builder.port(*nominal), answer))
        .collect();
    (builder.start(), upstreams)
}

/// Connections each upstream accepted, in the order of [`NAMED`].
pub fn connections(upstreams: &[MockUpstream]) -> Vec<usize> {
    upstreams.iter().map(MockUpstream::connections).collect()
}
