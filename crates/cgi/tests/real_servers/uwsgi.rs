//! A request packet encoded by the crate to Debian's uWSGI with its Python plugin, serving a
//! WSGI app on a unix socket; the answer (an HTTP status line, header lines, the body until
//! uWSGI closes) read by the crate's head parser.

use std::process::Command;

use portico_cgi::uwsgi::{Modifiers, encode_request};

use crate::support::{Server, TempDir, exchange_until_close, find_program, read_answer_head};

const APP: &str = r#"
def application(environ, start_response):
    length = int(environ.get('CONTENT_LENGTH') or 0)
    body = environ['wsgi.input'].read(length)
    text = 'method=%s uri=%s path=%s query=%s x=%s len=%d\n' % (
        environ['REQUEST_METHOD'], environ['REQUEST_URI'], environ['PATH_INFO'],
        environ['QUERY_STRING'], environ.get('HTTP_X_PORTICO'), len(body))
    start_response('201 Created', [('Content-Type', 'text/plain'), ('X-App', 'wsgi')])
    return [text.encode(), body]
"#;

const PLUGINS: &str = "/usr/lib/uwsgi/plugins";

fn python_plugin_installed() -> bool {
    std::fs::read_dir(PLUGINS).is_ok_and(|entries| {
        entries.flatten().any(|entry| {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            name.starts_with("python3") && name.ends_with("_plugin.so")
        })
    })
}

#[test]
fn uwsgi_serves_a_wsgi_app_through_the_packet() {
    let Some(program) = find_program(|name| name == "uwsgi") else {
        eprintln!("skipped: uwsgi not found (Debian: apt-get install uwsgi uwsgi-plugin-python3)");
        return;
    };
    if !python_plugin_installed() {
        eprintln!(
            "skipped: no python3 plugin in {PLUGINS} (Debian: apt-get install uwsgi-plugin-python3)"
        );
        return;
    }
    let dir = TempDir::new("uwsgi");
    let socket = dir.join("uwsgi.sock");
    let app = dir.write("app.py", APP);
    let mut command = Command::new(program);
    // One process, no master: the pid this test holds is the whole server.
    command
        .args([
            "--plugin",
            "python3",
            "--processes",
            "1",
            "--need-app",
            "--socket",
        ])
        .arg(&socket)
        .arg("--wsgi-file")
        .arg(&app)
        .arg("--pidfile")
        .arg(dir.join("uwsgi.pid"));
    let server = Server::start("uwsgi", command, &socket, dir.join("uwsgi.log"), "INT");

    let body = b"posted body bytes".repeat(1000);
    let content_length = body.len().to_string();
    let vars = [
        ("REQUEST_METHOD", "POST"),
        ("REQUEST_URI", "/app/path?x=1"),
        ("PATH_INFO", "/app/path"),
        ("QUERY_STRING", "x=1"),
        ("SERVER_PROTOCOL", "HTTP/1.1"),
        ("SERVER_NAME", "localhost"),
        ("SERVER_PORT", "80"),
        ("CONTENT_LENGTH", &content_length),
        ("HTTP_HOST", "localhost"),
        ("HTTP_X_PORTICO", "yes"),
    ];
    let mut request = Vec::new();
    encode_request(&mut request, Modifiers::default(), vars).expect("vars fit");
    request.extend_from_slice(&body);
    let answer = exchange_until_close(&socket, &request);

    let head = read_answer_head(&answer);
    assert_eq!(head.status, 201, "{}", server.log_text());
    assert_eq!(head.status_line.as_deref(), Some(&b"201 Created"[..]));
    assert!(
        head.has_field("Content-Type", "text/plain"),
        "{:?}",
        head.fields
    );
    assert!(head.has_field("X-App", "wsgi"), "{:?}", head.fields);
    let received = head.body;
    let expected_line = format!(
        "method=POST uri=/app/path?x=1 path=/app/path query=x=1 x=yes len={}\n",
        body.len()
    );
    let (line, echoed) = received.split_at(expected_line.len().min(received.len()));
    assert_eq!(String::from_utf8_lossy(line), expected_line);
    assert!(echoed == body.as_slice(), "the body came back whole");
}
