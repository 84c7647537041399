//! `sticky cookie|route|learn` in an `upstream` block, with `route=` and `drain` on its
//! servers: a bound client keeps its server among three, moves when that server is gone,
//! and unbound clients are spread by the balancer as before.

use crate::support::Instance;
use crate::support::client::Response;
use crate::support::proxy::{NAMED, group_with};
use crate::support::upstream::MockUpstream;

/// A request for `/` with a `Cookie` field.
fn with_cookie(server: &Instance, cookie: &str) -> Response {
    server.request(format!(
        "GET / HTTP/1.1\r\nHost: localhost\r\nCookie: {cookie}\r\nConnection: close\r\n\r\n"
    ))
}

/// The value of the `srv` cookie an answer sets, and the answer's other attributes.
fn srv_cookie(response: &Response) -> (String, String) {
    let field = response
        .header_all("set-cookie")
        .into_iter()
        .find(|field| field.starts_with("srv="))
        .unwrap_or_else(|| panic!("no srv cookie in {}", response.head_text()));
    let (pair, attributes) = field.split_once(';').unwrap_or((field, ""));
    (
        pair["srv=".len()..].to_owned(),
        attributes.trim().to_owned(),
    )
}

#[test]
fn sticky_cookie_binds_a_client_to_one_of_three_servers_and_moves_it_when_it_goes() {
    let (server, mut upstreams) = group_with(
        "upstream backend {
             server 127.0.0.1:8081; server 127.0.0.1:8082; server 127.0.0.1:8083;
             sticky cookie srv expires=1h path=/ httponly samesite=lax;
         }",
    );
    // New clients are spread round robin, and each answer names its server.
    let mut cookies = std::collections::HashMap::new();
    for _ in 0..3 {
        let response = server.get("/");
        assert_eq!(response.status, 200);
        let (value, attributes) = srv_cookie(&response);
        assert_eq!(value.len(), 32, "an MD5 in hex: {value}");
        assert!(value.bytes().all(|byte| byte.is_ascii_hexdigit()));
        assert!(attributes.contains("max-age=3600"), "{attributes}");
        assert!(attributes.contains("expires="), "{attributes}");
        assert!(attributes.contains("path=/"), "{attributes}");
        assert!(attributes.contains("httponly"), "{attributes}");
        assert!(attributes.contains("samesite=lax"), "{attributes}");
        cookies.insert(response.body_text(), value);
    }
    assert_eq!(
        cookies.len(),
        3,
        "three servers, three cookies: {cookies:?}"
    );
    // A cookie keeps its server, whatever the round robin would have done.
    for (name, value) in &cookies {
        for _ in 0..5 {
            let response = with_cookie(&server, &format!("other=1; srv={value}"));
            assert_eq!(&response.body_text(), name);
            assert_eq!(&srv_cookie(&response).0, value, "the cookie is set again");
        }
    }
    // A cookie that names no server is the balancer's, and gets the right cookie.
    let response = with_cookie(&server, "srv=0123456789abcdef0123456789abcdef");
    assert_eq!(srv_cookie(&response).0, cookies[&response.body_text()]);
    // The bound server goes away: its clients move, and learn their new server.
    let gone = upstreams.remove(1);
    drop(gone);
    for _ in 0..4 {
        let response = with_cookie(&server, &format!("srv={}", cookies["two"]));
        assert_eq!(response.status, 200);
        let body = response.body_text();
        assert!(body == "one" || body == "three", "{body}");
        assert_eq!(srv_cookie(&response).0, cookies[&body]);
    }
    // Clients of the others stay where they were.
    assert_eq!(
        with_cookie(&server, &format!("srv={}", cookies["three"])).body_text(),
        "three"
    );
    assert!(!server.get("/").head_text().is_empty());
    drop(upstreams);
}

#[test]
fn sticky_cookie_works_with_hash_least_conn_and_random() {
    for method in ["hash $arg_k consistent;", "least_conn;", "random two;"] {
        let (server, _upstreams) = group_with(&format!(
            "upstream backend {{
                 {method}
                 server 127.0.0.1:8081; server 127.0.0.1:8082; server 127.0.0.1:8083;
                 sticky cookie srv;
             }}"
        ));
        let first = server.get("/?k=a");
        let (value, attributes) = srv_cookie(&first);
        assert_eq!(attributes, "", "no attribute unless configured ({method})");
        for key in ["b", "c", "d", "e", "f", "g"] {
            let response = server.request(format!(
                "GET /?k={key} HTTP/1.1\r\nHost: x\r\nCookie: srv={value}\r\n\
                 Connection: close\r\n\r\n"
            ));
            assert_eq!(response.body_text(), first.body_text(), "{method} k={key}");
        }
    }
}

#[test]
fn sticky_route_follows_the_first_variable_with_a_value_and_drain_keeps_only_bound_clients() {
    let (server, _upstreams) = group_with(
        "upstream backend {
             server 127.0.0.1:8081 route=a;
             server 127.0.0.1:8082 route=b drain;
             server 127.0.0.1:8083 route=c;
             sticky route $arg_route $cookie_route;
         }",
    );
    for _ in 0..4 {
        assert_eq!(server.get("/?route=a").body_text(), "one");
        // The draining server still takes the clients bound to it...
        assert_eq!(server.get("/?route=b").body_text(), "two");
        assert_eq!(with_cookie(&server, "route=c").body_text(), "three");
        // ...the argument comes before the cookie...
        let response = server.request(
            "GET /?route=a HTTP/1.1\r\nHost: x\r\nCookie: route=c\r\nConnection: close\r\n\r\n",
        );
        assert_eq!(response.body_text(), "one");
    }
    // ...and no other: unbound and unknown routes go round robin over the others.
    let mut seen = Vec::new();
    for path in ["/", "/?route=zzz", "/", "/?route=", "/", "/"] {
        seen.push(server.get(path).body_text());
    }
    assert!(!seen.contains(&"two".to_owned()), "{seen:?}");
    assert!(seen.contains(&"one".to_owned()) && seen.contains(&"three".to_owned()));
    // Routes are not cookies: nothing is set.
    assert!(!server.get("/?route=a").has_header("set-cookie"));
}

/// Three servers that start a session in an `X-Session` field named after themselves.
fn session_servers(builder: &mut crate::support::instance::Builder) -> Vec<MockUpstream> {
    NAMED
        .iter()
        .map(|(nominal, _)| {
            let name = match nominal {
                8081 => "one",
                8082 => "two",
                _ => "three",
            };
            MockUpstream::start(builder.port(*nominal), move |mut conn| {
                while conn.read_request().is_some() {
                    conn.write(format!(
                        "HTTP/1.1 200 OK\r\nX-Session: sid-{name}\r\nContent-Length: {}\r\n\r\n{name}",
                        name.len()
                    ));
                }
            })
        })
        .collect()
}

/// A request without a session; the session its answer starts, once the connection has
/// closed (without `header`, a session is bound when the answer has ended).
fn start_session(server: &Instance) -> Option<String> {
    let mut client = server.connect();
    let response = client.request(crate::support::client::get("/"));
    client.wait_closed();
    response.header("x-session").map(str::to_owned)
}

fn with_session(server: &Instance, session: &str) -> String {
    server
        .request(format!(
            "GET / HTTP/1.1\r\nHost: x\r\nX-Session: {session}\r\nConnection: close\r\n\r\n"
        ))
        .body_text()
}

#[test]
fn sticky_learn_binds_the_sessions_the_servers_start_and_forgets_unknown_ones() {
    for header in ["", "header"] {
        let mut builder = Instance::http_builder(&format!(
            "upstream backend {{
                 server 127.0.0.1:8081; server 127.0.0.1:8082; server 127.0.0.1:8083;
                 sticky learn create=$upstream_http_x_session lookup=$http_x_session
                              zone=sessions:1m timeout=1h {header};
             }}
             server {{
                 listen 127.0.0.1:8080;
                 location / {{ proxy_pass http://backend; }}
             }}"
        ));
        let _upstreams = session_servers(&mut builder);
        let server = builder.start();
        // Each server starts a session on its first answer.
        let mut started = Vec::new();
        for _ in 0..3 {
            started.push(start_session(&server));
        }
        started.sort();
        assert_eq!(
            started,
            [
                Some("sid-one".to_owned()),
                Some("sid-three".to_owned()),
                Some("sid-two".to_owned())
            ]
        );
        // A client that sends its session back keeps its server.
        for name in ["one", "two", "three"] {
            for _ in 0..5 {
                assert_eq!(
                    with_session(&server, &format!("sid-{name}")),
                    name,
                    "{header}"
                );
            }
        }
        // A session no server started is the balancer's.
        let spread: std::collections::HashSet<String> = (0..6)
            .map(|_| with_session(&server, "sid-nobody"))
            .collect();
        assert!(spread.len() > 1, "{spread:?}");
    }
}

#[test]
fn sticky_learn_sessions_survive_a_reload() {
    let config = "upstream backend {
             server 127.0.0.1:8081; server 127.0.0.1:8082; server 127.0.0.1:8083;
             sticky learn create=$upstream_http_x_session lookup=$http_x_session
                          zone=sessions:1m;
         }
         server {
             listen 127.0.0.1:8080;
             location / { proxy_pass http://backend; }
             location /new { return 200 new; }
         }";
    let mut builder = Instance::http_builder(config);
    let _upstreams = session_servers(&mut builder);
    let mut server = builder.start();
    // Bind a session to the second server the round robin picks.
    start_session(&server);
    assert_eq!(start_session(&server).as_deref(), Some("sid-two"));
    let reloaded = config.replace("return 200 new", "return 200 reloaded");
    server.reload(&reloaded, |server| {
        server.get("/new").body_text() == "reloaded"
    });
    for _ in 0..4 {
        assert_eq!(with_session(&server, "sid-two"), "two");
    }
}

#[test]
fn bad_sticky_directives_are_refused_with_nginx_messages() {
    for (directive, message) in [
        ("sticky foo;", "invalid parameter \"foo\""),
        (
            "sticky cookie;",
            "invalid number of arguments in \"sticky\"",
        ),
        (
            "sticky cookie srv samesite=odd;",
            "invalid parameter \"samesite=odd\"",
        ),
        (
            "sticky cookie srv expires=soon;",
            "invalid parameter \"expires=soon\"",
        ),
        ("sticky route;", "invalid number of arguments in \"sticky\""),
        (
            "sticky learn lookup=$cookie_a zone=z:1m;",
            "\"sticky learn\" requires \"create\"",
        ),
        (
            "sticky learn create=$a lookup=$b zone=z;",
            "invalid parameter \"zone=z\"",
        ),
        (
            "sticky learn create=a lookup=$b zone=z:1m;",
            "invalid parameter \"create=a\"",
        ),
        (
            "sticky route $a; sticky route $b;",
            "\"sticky\" directive is duplicate",
        ),
    ] {
        let failure = Instance::http_builder(&format!(
            "upstream backend {{ server 127.0.0.1:8081; {directive} }}
             server {{ listen 127.0.0.1:8080; location / {{ proxy_pass http://backend; }} }}"
        ))
        .try_start()
        .expect_err("the configuration is refused");
        let text = format!("{}{}", failure.stderr, failure.error_log);
        assert!(text.contains(message), "{directive}: {text}");
    }
    let failure = Instance::http_builder(
        "upstream backend { server 127.0.0.1:8081 route=; }
         server { listen 127.0.0.1:8080; location / { proxy_pass http://backend; } }",
    )
    .try_start()
    .expect_err("an empty route is refused");
    assert!(
        format!("{}{}", failure.stderr, failure.error_log).contains("invalid route"),
        "{}",
        failure.stderr
    );
}
