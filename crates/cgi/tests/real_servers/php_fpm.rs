//! Requests encoded by the crate to Debian's PHP-FPM on a unix socket, answers decoded by
//! it: stdout, stderr, the status from PHP's `Status:` line, END_REQUEST, a body and params
//! over several records, and a second request on a kept connection.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::Command;

use portico_cgi::fastcgi::{
    EndRequest, KeepConn, ProtocolStatus, RequestEncoder, ResponseEvent, ResponseReader,
    stderr_message,
};
use portico_cgi::head::{CgiHead, Redirect};

use crate::support::{Server, TempDir, connect, find_program, running_as_root};

const SCRIPT: &str = r#"<?php
$mode = $_SERVER['QUERY_STRING'];
if ($mode === 'status') {
    header('Status: 404 Nothing Here');
    header('X-Portico: yes');
    error_log('portico to stderr.');
    echo 'no page at ', $_SERVER['REQUEST_URI'], "\n";
} elseif ($mode === 'echo') {
    header('Content-Type: application/octet-stream');
    $body = file_get_contents('php://input');
    echo strlen($_SERVER['HTTP_X_A']), ' ', strlen($_SERVER['HTTP_X_B']), ' ', strlen($body), "\n";
    echo $body;
} elseif ($mode === 'redirect') {
    header('Location: /elsewhere');
}
"#;

/// The largest head the tests accept, as `fastcgi_buffer_size` would be.
const BUFFER_SIZE: usize = 4096;

/// PHP-FPM started on a socket in a temp dir, with the test script beside it.
struct PhpFpm {
    // Dropped first: the server stops before its directory goes.
    _server: Server,
    socket: PathBuf,
    script: PathBuf,
    _dir: TempDir,
}

/// PHP-FPM started for one test, or `None` (said on stderr) where it is not installed.
#[allow(clippy::print_stderr, reason = "a skipped test says so")]
fn start_php_fpm() -> Option<PhpFpm> {
    let program = find_program(|name| {
        name.strip_prefix("php-fpm")
            .is_some_and(|version| version.chars().all(|c| c.is_ascii_digit() || c == '.'))
    });
    let Some(program) = program else {
        eprintln!("skipped: php-fpm not found (Debian: apt-get install php-fpm)");
        return None;
    };
    let dir = TempDir::new("php-fpm");
    let socket = dir.join("php.sock");
    let script = dir.write("index.php", SCRIPT);
    // As root, PHP-FPM wants to be told so, and a pool user.
    let user = if running_as_root() {
        "user = root\ngroup = root\n"
    } else {
        ""
    };
    let config = format!(
        "[global]\npid = {pid}\nerror_log = {log}\ndaemonize = no\n\n\
         [portico]\nlisten = {socket}\npm = static\npm.max_children = 1\nclear_env = yes\n{user}",
        pid = dir.join("php-fpm.pid").display(),
        log = dir.join("php-fpm-error.log").display(),
        socket = socket.display(),
    );
    let config = dir.write("php-fpm.conf", &config);
    let mut command = Command::new(&program);
    // -n: no php.ini, so that the system's settings (error_log among them) do not apply.
    command
        .arg("-n")
        .arg("--nodaemonize")
        .arg("--fpm-config")
        .arg(&config);
    if running_as_root() {
        command.arg("--allow-to-run-as-root");
    }
    let server = Server::start("php-fpm", command, &socket, dir.join("php-fpm.out"), "QUIT");
    Some(PhpFpm {
        _server: server,
        socket,
        script,
        _dir: dir,
    })
}

/// A whole answer as the reader gave it.
#[derive(Debug)]
struct Answer {
    head: CgiHead,
    body: Vec<u8>,
    stderr: Vec<Vec<u8>>,
    end: EndRequest,
}

/// Reads one answer in pieces of at most 1000 bytes (so that records split between
/// reads); returns it and any bytes read after its end.
fn read_answer(stream: &mut UnixStream) -> (Answer, Vec<u8>) {
    let mut reader = ResponseReader::new(1, BUFFER_SIZE);
    let (mut head, mut body, mut stderr) = (None, Vec::new(), Vec::new());
    let mut buf = [0u8; 1000];
    loop {
        let read = stream.read(&mut buf).expect("read from php-fpm");
        assert!(
            read > 0,
            "php-fpm closed before END_REQUEST: {:?}",
            reader.finish()
        );
        let mut at = 0;
        while at < read {
            let (used, event) = reader.read(&buf[at..read]).expect("a valid answer");
            at += used;
            match event {
                None => break,
                Some(ResponseEvent::Head {
                    head: read_head,
                    body: start,
                }) => {
                    head = Some(read_head);
                    body.extend_from_slice(start);
                }
                Some(ResponseEvent::Body(piece)) => body.extend_from_slice(piece),
                Some(ResponseEvent::Stderr(piece)) => stderr.push(piece.to_vec()),
                Some(ResponseEvent::End(end)) => {
                    let answer = Answer {
                        head: head.expect("a head before the end"),
                        body,
                        stderr,
                        end,
                    };
                    return (answer, buf[at..read].to_vec());
                }
            }
        }
    }
}

fn cgi_params<'a>(php: &'a PhpFpm, method: &'a str, query: &'a str) -> Vec<(&'a str, String)> {
    vec![
        ("SCRIPT_FILENAME", php.script.display().to_string()),
        ("SCRIPT_NAME", "/index.php".to_owned()),
        ("REQUEST_METHOD", method.to_owned()),
        ("REQUEST_URI", format!("/index.php?{query}")),
        ("QUERY_STRING", query.to_owned()),
        ("SERVER_PROTOCOL", "HTTP/1.1".to_owned()),
        ("GATEWAY_INTERFACE", "CGI/1.1".to_owned()),
    ]
}

fn request(encoder: &RequestEncoder, params: &[(&str, String)], body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    encoder.begin(&mut out);
    encoder
        .params(&mut out, params.iter().map(|(name, value)| (name, value)))
        .expect("params fit");
    encoder.stdin(&mut out, body);
    encoder.stdin_end(&mut out);
    out
}

#[test]
fn php_fpm_status_headers_stdout_stderr_and_end_request() {
    let Some(php) = start_php_fpm() else {
        return;
    };
    let encoder = RequestEncoder::new(1, KeepConn::Close);
    let mut stream = connect(&php.socket);
    stream
        .write_all(&request(&encoder, &cgi_params(&php, "GET", "status"), b""))
        .expect("send");
    let (answer, after) = read_answer(&mut stream);
    assert!(after.is_empty());

    assert_eq!(answer.head.status(), 404);
    assert_eq!(answer.head.status_line(), Some(&b"404 Nothing Here"[..]));
    assert_eq!(answer.head.field(b"x-portico"), Some(&b"yes"[..]));
    assert_eq!(
        answer.head.field(b"content-type"),
        Some(&b"text/html; charset=UTF-8"[..])
    );
    assert_eq!(answer.body, b"no page at /index.php?status\n");
    let messages: Vec<&[u8]> = answer
        .stderr
        .iter()
        .map(|piece| stderr_message(piece))
        .collect();
    assert_eq!(
        messages,
        [&b"PHP message: portico to stderr"[..]],
        "{:?}",
        answer.stderr
    );
    assert_eq!(answer.end.protocol_status, ProtocolStatus::RequestComplete);
    assert_eq!(answer.end.app_status, 0);
    // Without FCGI_KEEP_CONN, PHP-FPM closes the connection after END_REQUEST.
    let mut rest = Vec::new();
    stream.read_to_end(&mut rest).expect("read to the close");
    assert!(rest.is_empty());
}

#[test]
fn php_fpm_body_and_params_over_several_records_then_a_kept_connection() {
    let Some(php) = start_php_fpm() else {
        return;
    };
    let encoder = RequestEncoder::new(1, KeepConn::Keep);
    // 70 000 bytes of params need two PARAMS records; 100 000 bytes of body four STDIN ones.
    let mut params = cgi_params(&php, "POST", "echo");
    params.push(("HTTP_X_A", "a".repeat(40_000)));
    params.push(("HTTP_X_B", "b".repeat(30_000)));
    let body: Vec<u8> = (0..100_000u32).map(|index| (index % 253) as u8).collect();
    params.push(("CONTENT_LENGTH", body.len().to_string()));
    let mut stream = connect(&php.socket);
    stream
        .write_all(&request(&encoder, &params, &body))
        .expect("send");
    let (answer, after) = read_answer(&mut stream);
    assert!(after.is_empty());
    assert_eq!(answer.head.status(), 200);
    assert_eq!(answer.head.status_line(), Some(&b"200 OK"[..]));
    let (first_line, echoed) = answer.body.split_at(
        answer
            .body
            .iter()
            .position(|&b| b == b'\n')
            .expect("a line")
            + 1,
    );
    assert_eq!(first_line, b"40000 30000 100000\n");
    assert!(echoed == body, "the body came back whole");
    assert!(answer.stderr.is_empty());

    // The same connection takes the next request.
    let redirect = cgi_params(&php, "GET", "redirect");
    stream
        .write_all(&request(&encoder, &redirect, b""))
        .expect("send again");
    let (answer, _) = read_answer(&mut stream);
    assert_eq!(answer.head.status(), 302);
    assert_eq!(answer.head.redirect(), Some(Redirect::Local));
    assert_eq!(answer.head.field(b"location"), Some(&b"/elsewhere"[..]));
    assert_eq!(answer.end.protocol_status, ProtocolStatus::RequestComplete);
}
