//! `resolver` and `resolver_timeout`: names in a `proxy_pass` built from variables, asked
//! of a scripted name server and cached; and the settings refused at load.

use crate::support::Instance;
use crate::support::cli::{assert_http_body_fails, test_http_body};
use crate::support::dns::dns_server;
use crate::support::proxy::OK;
use crate::support::upstream::MockUpstream;

#[test]
fn resolver_finds_names_from_variables_and_caches_them() {
    let mut builder = Instance::http_builder(
        "log_format up '$upstream_addr';
         server {
             listen 127.0.0.1:8080;
             access_log logs/up.log up;
             location / {
                 resolver 127.0.0.1:8082 ipv6=off;
                 proxy_pass http://$arg_host:%%PORT_8081%%;
             }
             location /none { proxy_pass http://$arg_host:%%PORT_8081%%; }
         }",
    );
    let port = builder.port(8081);
    let dns = builder.port(8082);
    let questions = dns_server(dns);
    let _upstream = MockUpstream::answering(port, OK);
    let server = builder.start();
    assert_eq!(server.get("/?host=backend.test").body_text(), "hello");
    assert_eq!(server.get("/?host=backend.test").body_text(), "hello");
    // One question: the second request used the cached answer (TTL 60 s).
    assert_eq!(questions.load(std::sync::atomic::Ordering::Acquire), 1);
    server.wait_for_line("logs/up.log", &format!("127.0.0.1:{port}"));
    assert_eq!(server.get("/none?host=backend.test").status, 502);
    server.wait_for_error_log("no resolver defined to resolve backend.test");
}

#[test]
fn resolver_and_zone_settings_load_and_bad_ones_are_refused() {
    let (_, output) = test_http_body(
        "upstream u { zone backends 64k; server 127.0.0.1:1; }
         server { listen 127.0.0.1:8080;
                  location / { resolver 127.0.0.1:53 valid=30s ipv6=off; resolver_timeout 5s;
                               proxy_pass http://$host; } }",
    );
    output.assert_code(0);
    assert_http_body_fails(
        "server { listen 127.0.0.1:8080; resolver no-such-host.invalid; }",
        "host not found in resolver \"no-such-host.invalid\" in {conf}:4",
    );
    // `ipv4=` is current nginx's (1.23.1); nginx 1.22 takes it for a host name.
    assert_http_body_fails(
        "server { listen 127.0.0.1:8080; resolver 127.0.0.1 ipv4=off ipv6=off; }",
        "\"ipv4\" and \"ipv6\" cannot both be \"off\" in {conf}:4",
    );
}

/// Debian's dnsmasq as the name server: a name with one address, a name with 150 (more
/// than a UDP answer holds, so asked again over TCP), and a name it does not have; the
/// first name server listed is down and passed over. The resolver's `status_zone`
/// counts it all for the API and the Prometheus endpoint.
#[test]
fn resolver_asks_dnsmasq_over_udp_and_tcp_past_a_dead_server() {
    let Some(program) = crate::support::dnsmasq::Dnsmasq::find() else {
        return;
    };
    let mut builder = Instance::http_builder(
        "log_format up '$upstream_addr $upstream_status';
         server {
             listen 127.0.0.1:8080;
             access_log logs/up.log up;
             location / {
                 resolver 127.0.0.1:8083 127.0.0.1:8082 ipv6=off status_zone=dns;
                 resolver_timeout 5s;
                 proxy_pass http://$arg_host.portico.test:%%PORT_8081%%;
             }
             location /api/ { api; }
             location = /metrics { portico_metrics; }
         }",
    );
    let port = builder.port(8081);
    let _dead = builder.port(8083);
    let mut hosts = String::from("127.0.0.1 one.portico.test\n");
    for n in 1..=150 {
        hosts.push_str(&format!("127.1.0.{n} many.portico.test\n"));
    }
    let _dnsmasq = crate::support::dnsmasq::Dnsmasq::start(&program, builder.port(8082), &hosts);
    let _upstream = MockUpstream::answering(port, OK);
    let server = builder.start();
    for _ in 0..2 {
        assert_eq!(server.get("/?host=one").body_text(), "hello");
    }
    assert_eq!(server.get("/?host=missing").status, 502);
    server.wait_for_error_log("missing.portico.test could not be resolved (3: Host not found)");
    // Nothing listens on 127.1.0.N: the request tries every address the answer gave
    // before it fails, so `$upstream_addr` lists all 150.
    assert_eq!(server.get("/?host=many").status, 502);
    let line = server.wait_for_line("logs/up.log", "127.1.0.");
    let mut tried: Vec<&str> = line
        .split(", ")
        .filter_map(|part| part.split(' ').next())
        .filter(|address| address.starts_with("127.1.0."))
        .collect();
    tried.sort_unstable();
    tried.dedup();
    assert_eq!(tried.len(), 150, "{line}");
    // Four lookups (dnsmasq gives its hosts a TTL of 0, so nothing is cached); three
    // answers, one of them over TCP after a truncated one (counted once), and an NXDOMAIN.
    assert_eq!(
        server.get("/api/9/resolvers/dns").body_text(),
        "{\"requests\":{\"name\":4,\"srv\":0,\"addr\":0},\"responses\":{\"noerror\":3,\
         \"formerr\":0,\"servfail\":0,\"nxdomain\":1,\"notimp\":0,\"refused\":0,\
         \"timedout\":0,\"unknown\":0}}"
    );
    assert!(
        server
            .get("/api/9/resolvers")
            .body_text()
            .starts_with("{\"dns\":{"),
        "every zone by name"
    );
    assert_eq!(server.get("/api/9/resolvers/other").status, 404);
    let metrics = server.get("/metrics").body_text();
    assert!(
        metrics.contains("portico_resolver_responses_total{zone=\"dns\",code=\"nxdomain\"} 1"),
        "{metrics}"
    );
}
