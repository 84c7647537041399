//! Loading `http` blocks: location and server-name lookups, inheritance, and nginx's error
//! texts for broken configurations.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use conf::sources::MemorySources;
use logging::{ErrorLog, LogFiles};
use portico_http::kernel::conf::{location, location::MatchState};
use portico_http::{
    assembly::load::load_http, kernel::conf::HttpConf, kernel::conf::LoadEnv,
    kernel::conf::LocationKind,
};
use shared::regex::Captures;

struct Loaded {
    conf: HttpConf,
    _prefix: TempPrefix,
}

struct TempPrefix(PathBuf);

impl Drop for TempPrefix {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn prefix() -> TempPrefix {
    static COUNTER: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let number = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir =
        std::env::temp_dir().join(format!("portico-conf-load-{}-{number}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("logs")).unwrap();
    TempPrefix(dir)
}

const CONF_PATH: &str = "/test/portico.conf";

/// Loads the `http { ... }` block of `text` (a main-context configuration).
fn load(text: &str) -> Result<Loaded, String> {
    let prefix = prefix();
    let sources = MemorySources::new().with(CONF_PATH, text);
    let tree = conf::parse_file(Path::new(CONF_PATH), &sources).map_err(|e| e.to_string())?;
    let http = tree
        .directives
        .iter()
        .find(|d| d.name == "http")
        .expect("the test config has http");
    let mut log_files = LogFiles::default();
    let env = LoadEnv {
        prefix: &prefix.0,
        main_error_log: Arc::new(ErrorLog::new(Vec::new())),
        log_files: &mut log_files,
        hostname: "testhost".to_owned(),
        outer_directives: &["worker_processes", "thread_pool"],
    };
    let conf =
        load_http(http.block.as_deref().unwrap_or_default(), env).map_err(|e| e.to_string())?;
    Ok(Loaded {
        conf,
        _prefix: prefix,
    })
}

fn error(text: &str) -> String {
    match load(text) {
        Ok(_) => panic!("expected an error for {text}"),
        Err(error) => error,
    }
}

/// The name of the location `uri` selects in the first server.
fn select(conf: &HttpConf, uri: &str) -> String {
    let server = &conf.servers[0];
    let mut state = MatchState::default();
    let id = location::find(
        &conf.locations,
        &server.locations,
        server.location,
        uri.as_bytes(),
        &mut state,
    );
    let found = conf.location(id);
    match &found.kind {
        LocationKind::Server => "server".to_owned(),
        _ => found.name.clone(),
    }
}

const LOCATIONS: &str = r#"
http {
    server {
        listen 127.0.0.1:8080;
        location = / { }
        location / { }
        location ^~ /images/ { }
        location ~* \.(gif|jpg)$ { }
        location ~ casefull { }
        location /foo { }
        location = /foo { }
        location /foo/ {
            location /foo/bar { }
            location ~ \.txt$ { }
        }
        location ^~ /static/ {
            location ~ \.css$ { }
        }
        location @fallback { }
    }
}
"#;

#[test]
fn locations_follow_nginx_precedence() {
    let loaded = load(LOCATIONS).unwrap();
    let conf = &loaded.conf;
    assert_eq!(select(conf, "/"), "= /");
    assert_eq!(select(conf, "/x"), "/");
    assert_eq!(
        select(conf, "/images/t.gif"),
        "^~ /images/",
        "^~ stops the regex search"
    );
    assert_eq!(select(conf, "/t.GIF"), "~* \\.(gif|jpg)$");
    assert_eq!(
        select(conf, "/casefull/t.gif"),
        "~* \\.(gif|jpg)$",
        "the first regex wins"
    );
    assert_eq!(select(conf, "/CASEFULL/"), "/", "~ is case-sensitive");
    assert_eq!(select(conf, "/foo"), "= /foo");
    assert_eq!(select(conf, "/foobar"), "/foo");
    assert_eq!(select(conf, "/foo/bar/x"), "/foo/bar", "nested prefix");
    assert_eq!(
        select(conf, "/foo/a.txt"),
        "~ \\.txt$",
        "nested regex before outer regexes"
    );
    assert_eq!(
        select(conf, "/foo/a.gif"),
        "~* \\.(gif|jpg)$",
        "outer regex after nested prefix"
    );
    assert_eq!(
        select(conf, "/static/a.css"),
        "~ \\.css$",
        "nested regex inside ^~"
    );
    assert_eq!(select(conf, "/static/a.gif"), "^~ /static/");
    assert_eq!(
        select(conf, "/@fallback"),
        "/",
        "named locations are not searched"
    );
    assert_eq!(conf.servers[0].named_locations.len(), 1);
}

#[test]
fn regex_captures_and_named_groups() {
    let loaded = load(
        r#"http { server { listen 127.0.0.1:8080;
            location ~ ^/(?<section>[a-z]+)/(\d+)$ { return 200 "$section $2"; } } }"#,
    )
    .unwrap();
    let conf = &loaded.conf;
    let server = &conf.servers[0];
    let mut state = MatchState::default();
    let id = location::find(
        &conf.locations,
        &server.locations,
        server.location,
        b"/news/42",
        &mut state,
    );
    assert!(conf.location(id).is_regex());
    assert_eq!(state.captures.group(2), Some(&b"42"[..]));
    assert_eq!(
        state.named.first().cloned().flatten(),
        Some(b"news".to_vec())
    );
    assert_eq!(conf.named_len, 1);
}

#[test]
fn settings_inherit_and_add_header_replaces() {
    let loaded = load(
        r#"http {
            client_max_body_size 5m;
            add_header X-Http 1;
            keepalive_timeout 10s 9;
            server {
                listen 127.0.0.1:8080;
                add_header X-Server 1;
                add_header X-Server-Two 2;
                location /a { }
                location /b { add_header X-B 1; client_max_body_size 0; }
            }
        }"#,
    )
    .unwrap();
    let conf = &loaded.conf;
    let by_name = |name: &str| conf.locations.iter().find(|l| l.name == name).unwrap();
    let a = &by_name("/a").settings;
    assert_eq!(a.core.client_max_body_size, 5 * 1024 * 1024);
    let names: Vec<_> = a
        .headers
        .add_header
        .iter()
        .map(|h| String::from_utf8_lossy(&h.name).into_owned())
        .collect();
    assert_eq!(
        names,
        ["X-Server", "X-Server-Two"],
        "the server level replaced the http list"
    );
    let b = &by_name("/b").settings;
    assert_eq!(b.core.client_max_body_size, 0);
    assert_eq!(b.headers.add_header.len(), 1);
    assert_eq!(
        a.core.keepalive_timeout.header,
        Some(std::time::Duration::from_secs(9))
    );
}

#[test]
fn server_names_per_address_and_defaults() {
    let loaded = load(
        r#"http {
            server { listen 127.0.0.1:8080; server_name a.test; }
            server { listen 127.0.0.1:8080 default_server; listen 127.0.0.1:8081; server_name b.test; }
            server { listen 127.0.0.1:8081; server_name ~^(?<sub>\w+)\.c\.test$; }
        }"#,
    )
    .unwrap();
    let conf = &loaded.conf;
    assert_eq!(conf.sockets.len(), 2);
    let first = &conf.sockets[0].addresses[0];
    assert_eq!(
        first.default_server.0, 1,
        "default_server wins over the first server"
    );
    let second = &conf.sockets[1].addresses[0];
    assert_eq!(
        second.default_server.0, 1,
        "the first server on the address is its default"
    );
    let mut captures = Captures::default();
    let found = second.names.find(
        b"x.c.test",
        |index| &conf.server_regexes[index],
        &mut captures,
    );
    assert_eq!(found.map(|(server, _)| server.0), Some(2));
    let not_there = first.names.find(
        b"x.c.test",
        |index| &conf.server_regexes[index],
        &mut captures,
    );
    assert!(not_there.is_none(), "names are per address");
}

#[test]
fn specific_addresses_share_a_wildcard_socket() {
    let loaded = load(
        r#"http {
            server { listen 8080; server_name any; }
            server { listen 127.0.0.1:8080; server_name local; }
        }"#,
    )
    .unwrap();
    let sockets = &loaded.conf.sockets;
    assert_eq!(sockets.len(), 1, "one socket on *:8080");
    assert_eq!(sockets[0].addresses.len(), 2);
    assert_eq!(
        sockets[0].addresses[0].ip,
        Some("127.0.0.1".parse().unwrap())
    );
    assert_eq!(sockets[0].addresses[1].ip, None, "the wildcard comes last");
}

#[test]
fn conflicting_names_warn() {
    let loaded = load(
        r#"http {
            server { listen 127.0.0.1:8080; server_name same; }
            server { listen 127.0.0.1:8080; server_name same; }
        }"#,
    )
    .unwrap();
    let warnings: Vec<String> = loaded.conf.warnings.iter().map(|w| w.to_string()).collect();
    assert_eq!(
        warnings,
        ["conflicting server name \"same\" on 127.0.0.1:8080, ignored"]
    );
}

#[test]
fn types_blocks_at_one_level_merge_and_warn_on_redefinition() {
    let loaded = load(
        r#"http {
            types { text/html html; image/png png; }
            types { text/plain html; }
            server { listen 127.0.0.1:8080; }
        }"#,
    )
    .unwrap();
    let conf = &loaded.conf;
    let types = &conf.location(conf.servers[0].location).settings.core.types;
    assert_eq!(
        types.get(b"png").map(|t| &t[..]),
        Some(&b"image/png"[..]),
        "the first block stays"
    );
    assert_eq!(
        types.get(b"html").map(|t| &t[..]),
        Some(&b"text/plain"[..]),
        "the later block wins"
    );
    let warnings: Vec<String> = conf.warnings.iter().map(|w| w.to_string()).collect();
    assert_eq!(
        warnings,
        [
            "duplicate extension \"html\", content type: \"text/plain\", \
          previous content type: \"text/html\" in /test/portico.conf:3"
        ]
    );
}

#[test]
fn broken_configurations_fail_with_nginx_texts() {
    let cases: &[(&str, &str)] = &[
        (
            "http { server { location /a { } location /a { } } }",
            "duplicate location \"/a\" in /test/portico.conf:1",
        ),
        (
            "http { server { location % /a { } } }",
            "invalid location modifier \"%\" in /test/portico.conf:1",
        ),
        (
            "http { server { location /a { location /b { } } } }",
            "location \"/b\" is outside location \"/a\" in /test/portico.conf:1",
        ),
        (
            "http { server { location = /a { location /a/b { } } } }",
            "location \"/a/b\" cannot be inside the exact location \"= /a\" in /test/portico.conf:1",
        ),
        (
            "http { server { location /a { location @n { } } } }",
            "named location \"@n\" can be on the server level only in /test/portico.conf:1",
        ),
        (
            "http { server { return 200 $nope; } }",
            "unknown \"nope\" variable",
        ),
        (
            "http { server { location ~ ^(a { } } }",
            "pcre2_compile() failed: missing closing parenthesis in \"^(a\" in /test/portico.conf:1",
        ),
        (
            "http { root /a; root /b; }",
            "\"root\" directive is duplicate in /test/portico.conf:1",
        ),
        (
            "http { server { location /a { root /a; alias /b; } } }",
            "\"alias\" directive is duplicate, \"root\" directive was specified earlier in /test/portico.conf:1",
        ),
        (
            "http { server { listen 127.0.0.1:70000; } }",
            "invalid port in \"127.0.0.1:70000\" of the \"listen\" directive in /test/portico.conf:1",
        ),
        (
            "http { server { listen 127.0.0.1:8080; listen 127.0.0.1:8080; } }",
            "a duplicate listen 127.0.0.1:8080 in /test/portico.conf:1",
        ),
        (
            "http { server { listen 127.0.0.1:8080 default_server; } \
             server { listen 127.0.0.1:8080 default_server; } }",
            "a duplicate default server for 127.0.0.1:8080 in /test/portico.conf:1",
        ),
        (
            "http { server { listen 127.0.0.1:8080 backlog=5; } server { listen 127.0.0.1:8080 backlog=6; } }",
            "duplicate listen options for 127.0.0.1:8080 in /test/portico.conf:1",
        ),
        (
            "http { keepalive_timeout abc; }",
            "\"keepalive_timeout\" directive invalid value in /test/portico.conf:1",
        ),
        (
            "http { keepalive_requests -1; }",
            "\"keepalive_requests\" directive invalid number in /test/portico.conf:1",
        ),
        (
            "http { server_tokens maybe; }",
            "invalid value \"maybe\" in /test/portico.conf:1",
        ),
        (
            "http { merge_slashes yes; }",
            "invalid value \"yes\" in \"merge_slashes\" directive, \
             it must be \"on\" or \"off\" in /test/portico.conf:1",
        ),
        (
            "http { access_log logs/a.log nosuchformat; }",
            "unknown log format \"nosuchformat\" in /test/portico.conf:1",
        ),
        (
            "http { return 200; }",
            "\"return\" directive is not allowed here in /test/portico.conf:1",
        ),
        (
            "http { thread_pool a threads=1; }",
            "\"thread_pool\" directive is not allowed here in /test/portico.conf:1",
        ),
        (
            "http { server { return abc; } }",
            "invalid return code \"abc\" in /test/portico.conf:1",
        ),
        (
            "http { server { server_name w*.example.com; } }",
            "invalid server name or wildcard \"w*.example.com\" in /test/portico.conf:1",
        ),
        (
            "http { server { add_header X; } }",
            "invalid number of arguments in \"add_header\" directive in /test/portico.conf:1",
        ),
        (
            "http { log_format a '$status'; log_format a '$status'; }",
            "duplicate \"log_format\" name \"a\" in /test/portico.conf:1",
        ),
    ];
    for (text, expected) in cases {
        assert_eq!(&error(text), expected, "for {text}");
    }
}

#[test]
fn relative_paths_hang_off_the_prefix() {
    let loaded = load("http { server { listen 127.0.0.1:8080; root site/; } }").unwrap();
    let conf = &loaded.conf;
    let root = match &conf
        .location(conf.servers[0].location)
        .settings
        .core
        .document_root
    {
        portico_http::kernel::core::DocumentRoot::Root(template) => {
            template.as_literal().unwrap().to_vec()
        }
        portico_http::kernel::core::DocumentRoot::Alias(..) => panic!("root expected"),
    };
    let expected = Path::new(&loaded._prefix.0).join("site");
    assert_eq!(
        String::from_utf8(root).unwrap(),
        expected.to_string_lossy(),
        "prefix joined, trailing slash dropped"
    );
}

const SCRIPTS: &str = r#"
http {
    server {
        listen 127.0.0.1:8080;
        set $s server;
        if ($arg_a) { return 403; }
        location /x {
            root /srv/outer;
            set $a 1;
            if ($arg_b) {
                root /srv/inner;
                set $a 2;
                rewrite ^ /y last;
            }
            return 200 $a;
            limit_except GET { deny all; }
        }
    }
}
"#;

#[test]
fn if_blocks_are_inline_ops_with_a_pseudo_location() {
    use portico_http::kernel::core::DocumentRoot;
    use portico_http::modules::rewrite::Op;
    let loaded = load(SCRIPTS).unwrap();
    let conf = &loaded.conf;
    let server = &conf.servers[0];
    let server_ops = &conf.location(server.location).settings.script.ops;
    // set, if (jumping past its one op), return
    assert_eq!(server_ops.len(), 3);
    match &server_ops[1] {
        Op::If(condition) => {
            assert_eq!(condition.end, 3);
            assert!(
                condition.block.is_none(),
                "a server-level if changes no settings"
            );
        }
        other => panic!("not an if: {other:?}"),
    }
    let mut state = MatchState::default();
    let id = location::find(
        &conf.locations,
        &server.locations,
        server.location,
        b"/x",
        &mut state,
    );
    let location = conf.location(id);
    let ops = &location.settings.script.ops;
    // set, if, set, rewrite, return
    assert_eq!(ops.len(), 5);
    let Op::If(condition) = &ops[1] else {
        panic!("not an if: {:?}", ops[1]);
    };
    assert_eq!(condition.end, 4);
    let block = conf.location(location.if_blocks[condition.block.unwrap() as usize]);
    assert!(matches!(block.kind, LocationKind::Block { .. }));
    assert_eq!(block.name, "/x");
    assert!(block.settings.script.is_empty());
    let root = |settings: &portico_http::kernel::conf::LocationSettings| match &settings
        .core
        .document_root
    {
        DocumentRoot::Root(template) => template.as_literal().unwrap().to_vec(),
        DocumentRoot::Alias(..) => panic!("alias"),
    };
    assert_eq!(root(&block.settings), b"/srv/inner");
    assert_eq!(root(&location.settings), b"/srv/outer");
    let (methods, limited) = location.limit_except.unwrap();
    assert!(methods.contains(http1::Method::Head));
    assert!(!methods.contains(http1::Method::Post));
    let limited = conf.location(limited);
    assert_eq!(root(&limited.settings), b"/srv/outer", "the block inherits");
    assert!(limited.settings.script.is_empty());
}

#[test]
fn header_and_sending_directives_fail_with_nginx_texts() {
    let at = " in /test/portico.conf:1";
    let cases: &[(&str, &str)] = &[
        ("expires foo;", "\"expires\" directive invalid value"),
        ("expires '';", "\"expires\" directive invalid value"),
        ("expires 1ms;", "\"expires\" directive invalid value"),
        ("expires @-1h;", "\"expires\" directive invalid value"),
        (
            "expires @25h;",
            "\"expires\" directive daily time value must be less than 24 hours",
        ),
        (
            "expires modified @1h;",
            "\"expires\" directive daily time cannot be used with \"modified\" parameter",
        ),
        (
            "expires modified epoch;",
            "\"expires\" directive invalid value",
        ),
        (
            "expires modified off;",
            "\"expires\" directive invalid value",
        ),
        ("expires foo 1h;", "\"expires\" directive invalid value"),
        (
            "expires 1h; expires 2h;",
            "\"expires\" directive is duplicate",
        ),
        (
            "expires 1h 2h 3h;",
            "invalid number of arguments in \"expires\" directive",
        ),
        (
            "add_trailer X;",
            "invalid number of arguments in \"add_trailer\" directive",
        ),
        ("add_trailer X y z;", "invalid parameter \"z\""),
        (
            "etag maybe;",
            "invalid value \"maybe\" in \"etag\" directive, it must be \"on\" or \"off\"",
        ),
        ("if_modified_since foo;", "invalid value \"foo\""),
        ("limit_rate foo;", "\"limit_rate\" directive invalid value"),
        ("limit_rate '';", "\"limit_rate\" directive invalid value"),
        (
            "limit_rate 1k; limit_rate 2k;",
            "\"limit_rate\" directive is duplicate",
        ),
        (
            "limit_rate_after -1;",
            "\"limit_rate_after\" directive invalid value",
        ),
    ];
    for (directives, expected) in cases {
        let text = format!("http {{ server {{ location / {{ {directives} }} }} }}");
        assert_eq!(error(&text), format!("{expected}{at}"), "for {directives}");
    }
    for fine in [
        "expires @24h;",
        "expires -0;",
        "expires +1h;",
        "expires $arg_e;",
        "expires modified $arg_e;",
        "limit_rate $arg_l; limit_rate_after 1m;",
        "add_trailer X y always;",
        "etag off; if_modified_since before;",
    ] {
        let text = format!("http {{ server {{ location / {{ {fine} }} }} }}");
        assert!(load(&text).is_ok(), "{fine}: {:?}", load(&text).err());
    }
}

#[test]
fn expires_trailers_and_rates_inherit() {
    use portico_http::kernel::core::{IfModifiedSince, SizeValue};
    use portico_http::modules::headers::{Expires, ExpiresValue};
    let loaded = load(
        r#"http {
            expires 1h;
            add_trailer X-Http 1;
            limit_rate 4k;
            server {
                listen 127.0.0.1:8080;
                if_modified_since before;
                location /a { }
                location /b { expires off; add_trailer X-B 1; add_trailer X-C 2; etag off; }
                location /c { expires modified $arg_e; limit_rate_after 1k; }
            }
        }"#,
    )
    .unwrap();
    let conf = &loaded.conf;
    let by_name = |name: &str| {
        &conf
            .locations
            .iter()
            .find(|l| l.name == name)
            .unwrap()
            .settings
    };
    let (a, b, c) = (by_name("/a"), by_name("/b"), by_name("/c"));
    assert!(matches!(
        a.headers.expires,
        Expires::Fixed(ExpiresValue::Access(3600))
    ));
    assert!(matches!(
        b.headers.expires,
        Expires::Fixed(ExpiresValue::Off)
    ));
    assert!(matches!(
        c.headers.expires,
        Expires::Variable { modified: true, .. }
    ));
    assert_eq!(a.headers.add_trailer.len(), 1);
    assert_eq!(
        b.headers.add_trailer.len(),
        2,
        "a level's own list replaces"
    );
    assert!(a.core.etag && !b.core.etag);
    assert_eq!(a.core.if_modified_since, IfModifiedSince::Before);
    assert!(matches!(a.core.limit_rate, SizeValue::Fixed(4096)));
    assert!(matches!(c.core.limit_rate_after, SizeValue::Fixed(1024)));
    assert!(matches!(a.core.limit_rate_after, SizeValue::Fixed(0)));
}

/// The cache directives' errors, in nginx's words.
#[test]
fn cache_directive_errors() {
    let cases = [
        (
            "http { proxy_cache_path /c levels=1:3 keys_zone=z:1m; }",
            "invalid \"levels\" \"levels=1:3\" in /test/portico.conf:1",
        ),
        (
            "http { proxy_cache_path /c keys_zone=z:1m use_temp_path=yes; }",
            "invalid use_temp_path value \"use_temp_path=yes\", it must be \"on\" or \"off\" in /test/portico.conf:1",
        ),
        (
            "http { proxy_cache_path /c keys_zone=z; }",
            "invalid keys zone size \"keys_zone=z\" in /test/portico.conf:1",
        ),
        (
            "http { proxy_cache_path /c keys_zone=z:4k; }",
            "keys zone \"keys_zone=z:4k\" is too small in /test/portico.conf:1",
        ),
        (
            "http { proxy_cache_path /c levels=1; }",
            "\"proxy_cache_path\" must have \"keys_zone\" parameter in /test/portico.conf:1",
        ),
        (
            "http { proxy_cache_path /c keys_zone=z:1m inactive=x; }",
            "invalid inactive value \"inactive=x\" in /test/portico.conf:1",
        ),
        (
            "http { proxy_cache_path /c keys_zone=z:1m max_size=1t; }",
            "invalid max_size value \"max_size=1t\" in /test/portico.conf:1",
        ),
        (
            "http { proxy_cache_path /c keys_zone=z:1m bogus=1; }",
            "invalid parameter \"bogus=1\" in /test/portico.conf:1",
        ),
        (
            "http { proxy_cache_path /c keys_zone=z:1m; proxy_cache_path /d keys_zone=z:1m; }",
            "duplicate zone \"z\" in /test/portico.conf:1",
        ),
        (
            "http { proxy_cache_path /c keys_zone=a:1m;\nproxy_cache_path /c/ keys_zone=b:1m; }",
            "the same path name \"/c\" used in /test/portico.conf:1 and in /test/portico.conf:2",
        ),
        (
            "http { proxy_cache_path /c levels=1 keys_zone=a:1m;\nproxy_cache_path /c keys_zone=b:1m; }",
            "the same path name \"/c\" in /test/portico.conf:1 has the different levels than in /test/portico.conf:2",
        ),
        (
            "http { server { location / { proxy_cache nope; } } }",
            "\"proxy_cache\" zone \"nope\" is unknown in /test/portico.conf:1",
        ),
        (
            "http { proxy_cache_path /c keys_zone=z:1m; server { location / { proxy_cache z; proxy_cache z; } } }",
            "\"proxy_cache\" directive is duplicate in /test/portico.conf:1",
        ),
        (
            "http { proxy_cache_path /c keys_zone=z:1m; server { location / { proxy_store on; proxy_cache z; } } }",
            "\"proxy_cache\" directive is incompatible with \"proxy_store\" in /test/portico.conf:1",
        ),
        (
            "http { server { location / { proxy_cache_valid 99 1m; } } }",
            "invalid status \"99\" in /test/portico.conf:1",
        ),
        (
            "http { server { location / { proxy_cache_valid 200 never; } } }",
            "invalid time value \"never\" in /test/portico.conf:1",
        ),
        (
            "http { server { location / { proxy_cache_use_stale error sometimes; } } }",
            "invalid value \"sometimes\" in /test/portico.conf:1",
        ),
        (
            "http { server { location / { proxy_cache_methods GET PUT; } } }",
            "invalid value \"PUT\" in /test/portico.conf:1",
        ),
        (
            "http { server { location / { proxy_store_access user:rwx; } } }",
            "invalid value \"user:rwx\" in /test/portico.conf:1",
        ),
        (
            "http { server { location / { proxy_cache_min_uses x; } } }",
            "\"proxy_cache_min_uses\" directive invalid number in /test/portico.conf:1",
        ),
    ];
    for (text, expected) in cases {
        assert_eq!(error(text), expected, "for {text}");
    }
}

/// Literal zones resolve to their index; a variable zone waits for the request; the
/// defaults are nginx's.
#[test]
fn cache_settings_resolve() {
    use portico_http::modules::proxy::cache::settings::{CacheUse, CacheZoneId};
    let loaded = load(
        "http {
            proxy_cache_path /c levels=1:2 keys_zone=one:1m inactive=1h max_size=1g use_temp_path=off;
            proxy_cache_path /d keys_zone=two:16k manager_sleep=5 manager_files=2;
            proxy_cache_path /e keys_zone=three:16k manager_files=0 loader_files=0 purger_files=0;
            proxy_cache_valid 10m;
            server {
                location /a { proxy_cache two; proxy_cache_valid 404 1m; }
                location /b { proxy_cache $arg_c; }
                location /c { }
            }
        }",
    )
    .unwrap();
    let conf = &loaded.conf;
    let one = &conf.cache_paths[0];
    assert_eq!(
        (one.name.as_str(), one.levels.as_slice()),
        ("one", &[1u8, 2][..])
    );
    assert_eq!(one.inactive, std::time::Duration::from_secs(3600));
    assert_eq!(one.max_size, Some(1 << 30));
    assert!(!one.use_temp_path);
    let two = &conf.cache_paths[1];
    assert_eq!(two.manager_sleep, std::time::Duration::from_secs(5));
    assert_eq!((two.manager_files, two.keys_zone_size), (2, 16 * 1024));
    let three = &conf.cache_paths[2];
    assert_eq!(
        (three.manager_files, three.loader_files, three.purger_files),
        (0, 0, 0),
        "0 is accepted, as nginx accepts it"
    );
    let settings = |uri: &str| {
        let name = select(conf, uri);
        let location = conf.locations.iter().find(|l| l.name == name).unwrap();
        location.settings.proxy_cache.clone()
    };
    let a = settings("/a");
    assert!(matches!(a.cache, CacheUse::Zone(CacheZoneId(1))));
    assert_eq!(
        a.valid.len(),
        1,
        "a level with proxy_cache_valid replaces the parent's"
    );
    assert!(matches!(settings("/b").cache, CacheUse::Variable(_)));
    let c = settings("/c");
    assert!(matches!(c.cache, CacheUse::Off));
    assert_eq!(c.valid.len(), 3, "a time alone covers 200, 301 and 302");
    assert_eq!((c.min_uses, c.lock, c.convert_head), (1, false, true));
    assert_eq!(c.lock_timeout, std::time::Duration::from_secs(5));
}

#[test]
fn conf_commands_are_warned_about_under_their_own_names() {
    let loaded = load(
        r#"http {
            server {
                listen 127.0.0.1:8080;
                ssl_conf_command Options KTLS;
                location / {
                    proxy_ssl_conf_command Options PrioritizeChaCha;
                    proxy_pass https://127.0.0.1:8443;
                }
                location /u {
                    uwsgi_ssl_conf_command Protocol TLSv1.3;
                    uwsgi_pass suwsgi://127.0.0.1:8444;
                }
            }
        }"#,
    )
    .unwrap();
    let warnings: Vec<String> = loaded.conf.warnings.iter().map(|w| w.to_string()).collect();
    assert_eq!(
        warnings,
        [
            "\"ssl_conf_command Options KTLS\" has no effect in Portico \
             in /test/portico.conf:4",
            "\"proxy_ssl_conf_command Options PrioritizeChaCha\" has no effect in Portico \
             in /test/portico.conf:6",
            "\"uwsgi_ssl_conf_command Protocol TLSv1.3\" has no effect in Portico \
             in /test/portico.conf:10",
        ]
    );
}
