//! `early_hints`: an upstream's `103 Early Hints` goes on to HTTP/1.1 clients when a
//! condition holds, before the final response; not with `early_hints 0`, not to HTTP/1.0
//! clients; an upstream that sends only the hints is a 502.

use crate::support::proxy::proxy_with;
use crate::support::upstream::MockUpstream;

const CONFIG: &str = "server {
    listen 127.0.0.1:8080;
    early_hints $http_x_hints;
    location / {
        proxy_pass http://127.0.0.1:8081;
        proxy_http_version 1.1;
    }
    location /off/ {
        proxy_pass http://127.0.0.1:8081;
        early_hints 0;
    }
}";

fn start() -> (crate::support::Instance, MockUpstream) {
    proxy_with(CONFIG, |mut conn| {
        while let Some(request) = conn.read_request() {
            conn.write("HTTP/1.1 103 \r\nLink: </style.css>; rel=preload; as=style\r\nConnection: x\r\n\r\n");
            if String::from_utf8_lossy(&request).starts_with("GET /only") {
                conn.close();
                return;
            }
            conn.write("HTTP/1.1 200 OK\r\nContent-Length: 8\r\nConnection: close\r\n\r\nSEE-THIS");
        }
    })
}

fn raw(server: &crate::support::Instance, request: &str) -> String {
    let mut client = server.connect();
    client.write(request);
    String::from_utf8_lossy(&client.read_to_end()).into_owned()
}

#[test]
fn hints_go_before_the_response_when_a_condition_holds() {
    let (server, _upstream) = start();
    let text = raw(
        &server,
        "GET / HTTP/1.1\r\nHost: a\r\nX-Hints: 1\r\nConnection: close\r\n\r\n",
    );
    let hints = "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload; as=style\r\n\r\n";
    assert!(
        text.starts_with(&format!("{hints}HTTP/1.1 200 OK\r\n")),
        "{text}"
    );
    assert!(
        !text[..text.find("200 OK").unwrap_or(0)].contains("Connection: x"),
        "{text}"
    );
    assert!(text.ends_with("SEE-THIS"), "{text}");

    // An upstream that sends only the hints: they went on, then the 502.
    let text = raw(
        &server,
        "GET /only HTTP/1.1\r\nHost: a\r\nX-Hints: yes\r\nConnection: close\r\n\r\n",
    );
    assert!(text.starts_with("HTTP/1.1 103 Early Hints\r\n"), "{text}");
    assert!(text.contains("HTTP/1.1 502 Bad Gateway"), "{text}");
}

#[test]
fn no_hints_without_a_condition_or_to_http10_clients() {
    let (server, _upstream) = start();
    for request in [
        // The condition is empty, or "0".
        "GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\nX-Hints: 0\r\nConnection: close\r\n\r\n",
        // `early_hints 0` in the location.
        "GET /off/ HTTP/1.1\r\nHost: a\r\nX-Hints: 1\r\nConnection: close\r\n\r\n",
        // An HTTP/1.0 client knows no interim answers.
        "GET / HTTP/1.0\r\nHost: a\r\nX-Hints: 1\r\n\r\n",
    ] {
        let text = raw(&server, request);
        assert!(!text.contains("103"), "{request}: {text}");
        assert!(
            text.contains(" 200 OK\r\n") && text.ends_with("SEE-THIS"),
            "{text}"
        );
    }
}
