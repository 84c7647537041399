//! `uwsgi_pass` to a real uWSGI (Debian's `uwsgi` with its Python 3 plugin, skipped with a
//! message where it is not installed) and `scgi_pass` to an SCGI application in the test,
//! each with the stock parameter file.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::Command;

use portico_cgi::scgi;

use crate::support::app_servers::{Server, TempDir, find_program};
use crate::support::{Client, Instance};

const WSGI_APP: &str = r#"
def application(environ, start_response):
    length = int(environ.get('CONTENT_LENGTH') or 0)
    body = environ['wsgi.input'].read(length)
    text = 'method=%s uri=%s path=%s query=%s x=%s len=%d\n' % (
        environ['REQUEST_METHOD'], environ['REQUEST_URI'], environ['PATH_INFO'],
        environ['QUERY_STRING'], environ.get('HTTP_X_CUSTOM'), len(body))
    start_response('201 Created', [('Content-Type', 'text/plain'), ('X-App', 'wsgi')])
    return [text.encode(), body]
"#;

const PLUGINS: &str = "/usr/lib/uwsgi/plugins";

/// uWSGI serving [`WSGI_APP`] on a unix socket, or `None` (said on stderr).
#[allow(clippy::print_stderr, reason = "a skipped test says so")]
fn start_uwsgi() -> Option<(Server, TempDir)> {
    let Some(program) = find_program(|name| name == "uwsgi") else {
        eprintln!("skipped: uwsgi not found (Debian: apt-get install uwsgi uwsgi-plugin-python3)");
        return None;
    };
    let plugin = std::fs::read_dir(PLUGINS).is_ok_and(|entries| {
        entries.flatten().any(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            name.starts_with("python3") && name.ends_with("_plugin.so")
        })
    });
    if !plugin {
        eprintln!(
            "skipped: no python3 plugin in {PLUGINS} (Debian: apt-get install uwsgi-plugin-python3)"
        );
        return None;
    }
    let dir = TempDir::new("e2e-uwsgi");
    let socket = dir.join("uwsgi.sock");
    let app = dir.write("app.py", WSGI_APP);
    let mut command = Command::new(program);
    // One process, no master: the pid the test holds is the whole server.
    command
        .args(["--plugin", "python3", "--processes", "1", "--need-app"])
        .arg("--socket")
        .arg(&socket)
        .args(["--chmod-socket=666", "--wsgi-file"])
        .arg(&app);
    let server = Server::start("uwsgi", command, &socket, dir.join("uwsgi.log"), "INT");
    Some((server, dir))
}

fn conf_file(name: &str) -> String {
    format!("{}/../../conf/{name}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn a_wsgi_app_through_uwsgi_params() {
    let Some((_uwsgi, dir)) = start_uwsgi() else {
        return;
    };
    let config = format!(
        "server {{
            listen 127.0.0.1:8080;
            location /py/ {{
                include {params};
                uwsgi_modifier1 0;
                uwsgi_modifier2 0;
                uwsgi_pass unix:{socket};
            }}
            location /py/set/ {{
                include {params};
                uwsgi_param HTTP_X_CUSTOM from-config;
                uwsgi_pass unix:{socket};
            }}
        }}",
        params = conf_file("uwsgi_params"),
        socket = dir.join("uwsgi.sock").display(),
    );
    let server = Instance::http(&config);
    let get = Client::connect(server.port()).request(
        "GET /py/path?x=1 HTTP/1.1\r\nHost: localhost\r\nX-Custom: yes\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(get.status, 201, "{}", get.body_text());
    assert_eq!(get.header("X-App"), Some("wsgi"));
    assert_eq!(
        get.body_text(),
        "method=GET uri=/py/path?x=1 path=/py/path query=x=1 x=yes len=0\n"
    );

    // A param names the field the client sent: the param's value goes instead.
    let set = Client::connect(server.port()).request(
        "GET /py/set/x HTTP/1.1\r\nHost: localhost\r\nX-Custom: yes\r\nConnection: close\r\n\r\n",
    );
    assert!(
        set.body_text().contains(" x=from-config "),
        "{}",
        set.body_text()
    );

    let body = "posted ".repeat(20_000);
    let post = Client::connect(server.port()).request(format!(
        "POST /py/in HTTP/1.1\r\nHost: localhost\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    ));
    assert_eq!(post.status, 201);
    assert_eq!(
        post.body_text(),
        format!(
            "method=POST uri=/py/in path=/py/in query= x=None len={}\n{body}",
            body.len()
        )
    );
}

#[test]
fn an_scgi_app_gets_its_netstring_and_answers_with_a_cgi_head() {
    let mut builder = Instance::http_builder("");
    let app_port = builder.port(8081);
    let listener = TcpListener::bind(("127.0.0.1", app_port)).expect("bind the SCGI app");
    let app = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().expect("accept");
        let mut received = Vec::new();
        let mut buf = [0u8; 4096];
        // The netstring, then CONTENT_LENGTH bytes of body.
        let (headers, body_start) = loop {
            let read = stream.read(&mut buf).expect("read the request");
            assert!(read > 0, "closed before the netstring ended");
            received.extend_from_slice(&buf[..read]);
            if let Some(request) = scgi::Request::parse(&received).expect("a netstring") {
                let headers: Vec<(String, String)> = request
                    .headers()
                    .map(|(name, value)| {
                        (
                            String::from_utf8_lossy(name).into_owned(),
                            String::from_utf8_lossy(value).into_owned(),
                        )
                    })
                    .collect();
                break (headers, request.byte_len());
            }
        };
        let length: usize = headers[0].1.parse().expect("a length");
        while received.len() < body_start + length {
            let read = stream.read(&mut buf).expect("read the body");
            assert!(read > 0, "closed before the body ended");
            received.extend_from_slice(&buf[..read]);
        }
        let mut text = String::new();
        for (name, value) in &headers {
            text.push_str(&format!("{name}={value}\n"));
        }
        text.push_str(&format!(
            "BODY={}\n",
            String::from_utf8_lossy(&received[body_start..])
        ));
        let answer = format!(
            "Status: 202 Accepted\r\nContent-Type: text/plain\r\nX-Scgi: yes\r\n\r\n{text}"
        );
        stream.write_all(answer.as_bytes()).expect("answer");
    });
    let config = format!(
        "server {{
            listen 127.0.0.1:8080;
            location / {{
                include {params};
                scgi_param X_FROM_CONFIG yes;
                scgi_pass 127.0.0.1:8081;
            }}
        }}",
        params = conf_file("scgi_params"),
    );
    let server = builder.config(&config).start();
    let response = Client::connect(server.port()).request(
        "POST /form?a=b HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello",
    );
    app.join().expect("the SCGI app");
    assert_eq!(response.status, 202, "{}", response.body_text());
    assert_eq!(response.header("X-Scgi"), Some("yes"));
    let text = response.body_text();
    assert!(text.starts_with("CONTENT_LENGTH=5\n"), "{text}");
    for line in [
        "SCGI=1\n",
        "REQUEST_METHOD=POST\n",
        "REQUEST_URI=/form?a=b\n",
        "QUERY_STRING=a=b\n",
        "HTTP_HOST=localhost\n",
        "BODY=hello\n",
        "X_FROM_CONFIG=yes\n",
    ] {
        assert!(text.contains(line), "{line:?} in {text}");
    }
}
