//! Loading `stream` blocks: what they become, and nginx's words for what is refused.

use std::path::Path;
use std::sync::Arc;

use conf::MemorySources;
use logging::{ErrorLog, LogFiles};

use super::{Content, StreamConf, load_stream};

fn load(text: &str) -> Result<StreamConf, String> {
    let sources =
        MemorySources::new().with("/conf/portico.conf", format!("stream {{\n{text}\n}}\n"));
    let tree = conf::parse_file(Path::new("/conf/portico.conf"), &sources)
        .map_err(|error| error.to_string())?;
    let block = tree.directives[0].block.clone().unwrap_or_default();
    let mut log_files = LogFiles::default();
    let env = super::LoadEnv {
        prefix: Path::new("/tmp"),
        main_error_log: Arc::new(ErrorLog::new(Vec::new())),
        log_files: &mut log_files,
    };
    load_stream(&block, env).map_err(|error| error.to_string())
}

fn error(text: &str) -> String {
    match load(text) {
        Ok(_) => panic!("loaded: {text}"),
        Err(error) => error,
    }
}

#[test]
fn servers_sockets_and_settings_are_resolved_with_defaults_and_inheritance() {
    let conf = load(
        "proxy_timeout 5s;\n\
         upstream u { server 127.0.0.1:1 weight=2; server 127.0.0.1:2 backup; }\n\
         server { listen 127.0.0.1:9000; listen 127.0.0.1:9000 udp; proxy_pass u; }\n\
         server { listen 127.0.0.1:9001; proxy_timeout 1s; return ok; }",
    )
    .expect("loads");
    assert_eq!(
        conf.sockets.len(),
        3,
        "tcp and udp on one port are two sockets"
    );
    assert_eq!(conf.servers.len(), 2);
    let first = &conf.servers[0].settings;
    assert_eq!(first.proxy_timeout, std::time::Duration::from_secs(5));
    assert_eq!(
        first.proxy_connect_timeout,
        std::time::Duration::from_secs(60)
    );
    assert!(first.tcp_nodelay);
    assert_eq!(
        conf.servers[1].settings.proxy_timeout,
        std::time::Duration::from_secs(1)
    );
    let Content::Proxy(id) = conf.servers[0].content else {
        panic!("proxy_pass u");
    };
    let group = &conf.groups[id.0 as usize];
    assert_eq!(group.members().primary.len(), 1);
    assert_eq!(group.members().backup.len(), 1);
    assert_eq!(group.members().primary[0].weight, 2);
    assert!(matches!(conf.servers[1].content, Content::Return(_)));
}

#[test]
fn unknown_and_misplaced_directives_are_refused_as_nginx_words_them() {
    assert_eq!(
        error("server { listen 127.0.0.1:9000; frobnicate; return x; }"),
        "unknown directive \"frobnicate\" in /conf/portico.conf:2"
    );
    assert_eq!(
        error("listen 127.0.0.1:9000;"),
        "\"listen\" directive is not allowed here in /conf/portico.conf:2"
    );
    assert_eq!(
        error("server { listen 127.0.0.1:9000; proxy_timeout; return x; }"),
        "invalid number of arguments in \"proxy_timeout\" directive in /conf/portico.conf:2"
    );
    // A server without a handler loads (nginx 1.25.5 and later); its sessions end with 500.
    let conf = load("server { listen 127.0.0.1:9000; }").expect("loads");
    assert!(matches!(conf.servers[0].content, Content::None));
    assert_eq!(
        error("server { return x; }"),
        "no \"listen\" is defined for server in /conf/portico.conf:2"
    );
}

#[test]
fn upstreams_limits_and_variables_are_checked_at_load() {
    assert!(
        error("server { listen 127.0.0.1:9000; proxy_pass backend; }")
            .starts_with("no port in upstream \"backend\""),
    );
    assert!(
        error("upstream u { server 127.0.0.1; } server { listen 127.0.0.1:9000; proxy_pass u; }")
            .starts_with("no port in upstream \"127.0.0.1\""),
    );
    assert!(
        error("server { listen 127.0.0.1:9000; limit_conn nope 1; return x; }")
            .starts_with("zero size shared memory zone \"nope\""),
    );
    assert!(
        error("server { listen 127.0.0.1:9000; return $nope; }")
            .starts_with("unknown \"nope\" variable"),
    );
    // A variable declared by a block below the server that uses it.
    load(
        "server { listen 127.0.0.1:9000; return $m; }\n\
         map $remote_addr $m { default x; }",
    )
    .expect("a map declared after its use");
    assert!(
        error("server { listen 127.0.0.1:9000 ssl; return x; }")
            .starts_with("no \"ssl_certificate\" is defined for the \"listen ... ssl\" directive"),
    );
}

#[test]
fn resolve_servers_use_their_blocks_resolver_or_the_stream_levels() {
    let conf = load(
        "upstream own { zone own 64k; server a.test:1 resolve;\n\
                        resolver 127.0.0.2:5353; resolver_timeout 7s; }\n\
         upstream inherited { zone inherited 64k; server b.test:1 resolve; }\n\
         upstream fixed { server 127.0.0.1:1; }\n\
         resolver 127.0.0.3:5353;\n\
         resolver_timeout 2s;",
    )
    .expect("loads");
    let resolver_of = |name: &str| {
        let group = conf.group_named(name.as_bytes()).expect("the group");
        group
            .resolver
            .as_ref()
            .map(|(resolver, timeout)| (resolver.servers[0].to_string(), timeout.as_secs()))
    };
    assert_eq!(resolver_of("own"), Some(("127.0.0.2:5353".to_owned(), 7)));
    assert_eq!(
        resolver_of("inherited"),
        Some(("127.0.0.3:5353".to_owned(), 2))
    );
    assert_eq!(resolver_of("fixed"), None);
    // Not resolved at load: the groups start without the names' addresses.
    let inherited = conf.group_named(b"inherited").expect("the group");
    assert_eq!(inherited.peer_count(), 0);
    assert_eq!(inherited.resolvables().count(), 1);
}

#[test]
fn upstream_resolve_and_least_time_lines_are_refused_as_nginx_refuses_them() {
    assert!(
        error("upstream u { zone u 64k; server a.test:1 resolve; }")
            .contains("no resolver defined to resolve names at run time in upstream \"u\"")
    );
    assert!(
        error("upstream u { server a.test:1 resolve; resolver 127.0.0.1; }")
            .contains("to be in shared memory")
    );
    assert!(
        error("upstream u { server 127.0.0.1:1; resolver 127.0.0.1; resolver 127.0.0.2; }")
            .contains("\"resolver\" directive is duplicate")
    );
    assert!(
        error("upstream u { least_time first_byte later; server 127.0.0.1:1; }")
            .contains("invalid parameter \"later\"")
    );
}

#[test]
fn a_second_balancing_method_replaces_the_first_with_a_warning() {
    let conf = load("upstream u { least_conn; least_time connect inflight; server 127.0.0.1:1; }")
        .expect("loads");
    assert!(matches!(
        conf.group_named(b"u").expect("the group").balancer,
        upstream::Balancer::LeastTime {
            measure: upstream::server_line::TimeMeasure::Connect,
            inflight: true
        }
    ));
    assert_eq!(conf.warnings.len(), 1);
    assert!(
        conf.warnings[0]
            .to_string()
            .contains("load balancing method redefined"),
        "{}",
        conf.warnings[0]
    );
}
