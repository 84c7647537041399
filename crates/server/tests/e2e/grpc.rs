//! `grpc_pass` to a real gRPC server (Python's `grpcio`, found through
//! `PORTICO_GRPC_PYTHON` or a `python3` that imports it; skipped with a message without
//! one): unary calls, streams both ways, errors with trailers, deadlines and a 16 MiB
//! message from a gRPC client over h2c; the trailers reach HTTP/2 and HTTP/1.1 clients;
//! `grpcs://` with ALPN `h2`; a server that is not there is 502.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::support::app_servers::{Server, TempDir};
use crate::support::ports::free_port;
use crate::support::{Instance, h2, tls};

/// The gRPC server: one service, `test.Svc`, with raw bytes as messages.
const SERVER: &str = r#"
import sys, time, grpc
from concurrent import futures

def unary(request, context):
    if request == b"fail":
        context.set_trailing_metadata((("x-detail", "bad"),))
        context.abort(grpc.StatusCode.INVALID_ARGUMENT, "told to fail")
    if request == b"slow":
        time.sleep(3)
    if request == b"big":
        return b"x" * (16 * 1024 * 1024)
    if request == b"peer":
        return context.peer().encode()
    if request == b"meta":
        return dict(context.invocation_metadata()).get("x-id", "none").encode()
    context.set_trailing_metadata((("x-trailer", "t1"),))
    return b"echo:" + request

def server_stream(request, context):
    for i in range(int(request)):
        yield b"msg%d" % i

def client_stream(iterator, context):
    return b"+".join(iterator)

def bidi(iterator, context):
    for item in iterator:
        yield b"re:" + item

handlers = {
    "Unary": grpc.unary_unary_rpc_method_handler(unary),
    "ServerStream": grpc.unary_stream_rpc_method_handler(server_stream),
    "ClientStream": grpc.stream_unary_rpc_method_handler(client_stream),
    "Bidi": grpc.stream_stream_rpc_method_handler(bidi),
}
limits = [("grpc.max_send_message_length", 64 << 20),
          ("grpc.max_receive_message_length", 64 << 20)]
server = grpc.server(futures.ThreadPoolExecutor(max_workers=8), options=limits)
server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("test.Svc", handlers),))
address = sys.argv[1]
if len(sys.argv) > 3:
    key = open(sys.argv[2], "rb").read()
    cert = open(sys.argv[3], "rb").read()
    server.add_secure_port(address, grpc.ssl_server_credentials([(key, cert)]))
else:
    server.add_insecure_port(address)
server.start()
print("ready", flush=True)
server.wait_for_termination()
"#;

/// The gRPC client: every kind of call through Portico, one result line each.
const CLIENT: &str = r#"
import queue, sys, grpc
channel = grpc.insecure_channel(sys.argv[1],
    options=[("grpc.max_receive_message_length", 64 << 20)])
unary = channel.unary_unary("/test.Svc/Unary")
answer, call = unary.with_call(b"hi", timeout=10)
print("unary", answer.decode(), dict(call.trailing_metadata()).get("x-trailer"))
print("server_stream", [m.decode() for m in channel.unary_stream("/test.Svc/ServerStream")(b"5", timeout=10)])
print("client_stream", channel.stream_unary("/test.Svc/ClientStream")(iter([b"a", b"b", b"c"]), timeout=10).decode())
print("bidi", [m.decode() for m in channel.stream_stream("/test.Svc/Bidi")(iter([b"1", b"2", b"3"]), timeout=10)])
# Ping-pong: each message is sent only once the answer to the one before has come.
turns = queue.Queue()
turns.put(b"p0")
def pings():
    while (ping := turns.get()) is not None:
        yield ping
answers = []
for answer in channel.stream_stream("/test.Svc/Bidi")(pings(), timeout=10):
    answers.append(answer.decode())
    turns.put(b"p%d" % len(answers) if len(answers) < 3 else None)
print("pingpong", answers)
# A client that cancels a bidirectional call mid-way (its stream reset while Portico still
# relays its body): the next call on the same channel is answered.
stalled = queue.Queue()
def one_then_wait():
    yield b"c0"
    stalled.get()
call = channel.stream_stream("/test.Svc/Bidi")(one_then_wait(), timeout=10)
first = next(call).decode()
call.cancel()
stalled.put(None)
print("cancelled", first, unary(b"after", timeout=5).decode())
try:
    unary(b"fail", timeout=10)
except grpc.RpcError as error:
    print("fail", error.code().name, error.details(), dict(error.trailing_metadata()).get("x-detail"))
try:
    unary(b"slow", timeout=1)
except grpc.RpcError as error:
    print("deadline", error.code().name)
print("big", len(unary(b"big", timeout=30)))
"#;

/// A Python that imports `grpc`, or `None` (said on stderr).
#[allow(clippy::print_stderr, reason = "a skipped test says so")]
fn grpc_python() -> Option<PathBuf> {
    let candidates = std::env::var_os("PORTICO_GRPC_PYTHON")
        .map(PathBuf::from)
        .into_iter()
        .chain([PathBuf::from("python3")]);
    for python in candidates {
        let imports = Command::new(&python)
            .args(["-c", "import grpc"])
            .output()
            .is_ok_and(|output| output.status.success());
        if imports {
            return Some(python);
        }
    }
    eprintln!(
        "skipped: no Python with grpcio (pip install grpcio in a venv, and set \
         PORTICO_GRPC_PYTHON to its python)"
    );
    None
}

/// The gRPC server on `address`, with TLS when `tls` names a key and certificate.
fn start_server(
    python: &PathBuf,
    dir: &TempDir,
    address: &str,
    tls: Option<(&str, &str)>,
) -> Server {
    let script = dir.write("server.py", SERVER);
    let mut command = Command::new(python);
    command.arg(&script).arg(address);
    if let Some((key, certificate)) = tls {
        command.arg(dir.join(key)).arg(dir.join(certificate));
    }
    let log = dir.join("server.log");
    let server = Server::spawn("grpc server", command, log.clone(), "TERM");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !std::fs::read_to_string(&log)
        .unwrap_or_default()
        .contains("ready")
    {
        assert!(
            Instant::now() < deadline,
            "the gRPC server did not start:\n{}",
            server.log_text()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // Portico's workers run as `nobody` when the tests run as root.
    if let Some(path) = address.strip_prefix("unix:") {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o666))
            .expect("the socket's mode changes");
    }
    server
}

/// Runs the client against `port` and returns its output.
fn run_client(python: &PathBuf, dir: &TempDir, port: u16) -> String {
    let script = dir.write("client.py", CLIENT);
    let output = Command::new(python)
        .arg(&script)
        .arg(format!("127.0.0.1:{port}"))
        .output()
        .expect("the client runs");
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "the client failed:\n{text}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    text
}

/// What the client prints when every call went as the server answers it.
const EXPECTED: &str = "unary echo:hi t1
server_stream ['msg0', 'msg1', 'msg2', 'msg3', 'msg4']
client_stream a+b+c
bidi ['re:1', 're:2', 're:3']
pingpong ['re:p0', 're:p1', 're:p2']
cancelled re:c0 echo:after
fail INVALID_ARGUMENT told to fail bad
deadline DEADLINE_EXCEEDED
big 16777216
";

#[test]
fn calls_of_every_kind_over_h2c() {
    let Some(python) = grpc_python() else {
        return;
    };
    let dir = TempDir::new("e2e-grpc");
    let socket = dir.join("grpc.sock");
    let _server = start_server(&python, &dir, &format!("unix:{}", socket.display()), None);
    let server = Instance::http(&format!(
        "upstream backend {{
            server unix:{socket};
        }}
        server {{
            listen 127.0.0.1:8080;
            http2 on;
            location / {{
                grpc_pass grpc://backend;
            }}
        }}",
        socket = socket.display(),
    ));
    assert_eq!(run_client(&python, &dir, server.port()), EXPECTED);
}

/// A gRPC message: the five-byte prefix (not compressed, length) and the bytes.
fn message(bytes: &[u8]) -> Vec<u8> {
    let mut framed = vec![0];
    framed.extend_from_slice(&u32::try_from(bytes.len()).expect("small").to_be_bytes());
    framed.extend_from_slice(bytes);
    framed
}

#[test]
fn trailers_reach_http2_and_http1_clients() {
    let Some(python) = grpc_python() else {
        return;
    };
    let dir = TempDir::new("e2e-grpc-trailers");
    let socket = dir.join("grpc.sock");
    let _server = start_server(&python, &dir, &format!("unix:{}", socket.display()), None);
    let server = Instance::http(&format!(
        "log_format trailer '$request_uri $status [$sent_trailer_grpc_status]';
        server {{
            listen 127.0.0.1:8080;
            http2 on;
            location / {{
                grpc_pass unix:{socket};
                grpc_hide_header x-detail;
                access_log logs/trailer.log trailer;
            }}
        }}",
        socket = socket.display(),
    ));
    // HTTP/2: HEADERS, DATA, then the trailers in a HEADERS frame that ends the stream.
    let body = bytes::Bytes::from(message(b"h2"));
    let request = http_types::Request::builder()
        .method(http_types::Method::POST)
        .uri("http://localhost/test.Svc/Unary")
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(())
        .expect("a valid request");
    let answers = h2::exchange(server.port(), vec![(request, Some(body))]);
    let answer = &answers[0];
    assert_eq!(answer.status, 200);
    assert_eq!(answer.body, message(b"echo:h2"));
    let trailers = answer.trailers.as_ref().expect("trailers");
    assert_eq!(
        trailers.get("grpc-status").map(|v| v.as_bytes()),
        Some(&b"0"[..])
    );
    assert_eq!(
        trailers.get("x-trailer").map(|v| v.as_bytes()),
        Some(&b"t1"[..])
    );

    // HTTP/1.1: a chunked body whose last chunk carries the trailers; a hidden one stays
    // back.
    let mut request = b"POST /test.Svc/Unary HTTP/1.1\r\nHost: localhost\r\n\
        Content-Type: application/grpc\r\nTE: trailers\r\nContent-Length: 9\r\n\r\n"
        .to_vec();
    request.extend_from_slice(&message(b"fail"));
    let response = server.request(&request);
    assert_eq!(response.status, 200);
    assert_eq!(response.header("Transfer-Encoding"), Some("chunked"));
    // A trailers-only answer: the status is in the head.
    assert_eq!(response.header("grpc-status"), Some("3"));
    assert!(
        response.header("x-detail").is_none(),
        "{:?}",
        response.headers
    );

    let mut request = b"POST /test.Svc/Unary HTTP/1.1\r\nHost: localhost\r\n\
        Content-Type: application/grpc\r\nTE: trailers\r\nContent-Length: 7\r\n\r\n"
        .to_vec();
    request.extend_from_slice(&message(b"hi"));
    let response = server.request(&request);
    assert_eq!(response.status, 200);
    assert_eq!(response.body, message(b"echo:hi"));
    let trailer = |name: &str| {
        response
            .trailers
            .iter()
            .find(|(field, _)| field.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.clone())
    };
    assert_eq!(trailer("grpc-status").as_deref(), Some("0"));
    assert_eq!(trailer("x-trailer").as_deref(), Some("t1"));
    // The access log has the trailer's value once the body has ended.
    server.wait_for_line("logs/trailer.log", "/test.Svc/Unary 200 [0]");
}

/// A unary call from an HTTP/1.1 client to `prefix` + the method; the answer's message.
fn unary_over_http1(server: &Instance, prefix: &str, payload: &[u8]) -> Vec<u8> {
    let framed = message(payload);
    let mut request = format!(
        "POST {prefix}/test.Svc/Unary HTTP/1.1\r\nHost: localhost\r\n\
         Content-Type: application/grpc\r\nTE: trailers\r\nContent-Length: {}\r\n\r\n",
        framed.len()
    )
    .into_bytes();
    request.extend_from_slice(&framed);
    let response = server.request(&request);
    assert_eq!(response.status, 200, "{:?}", response.headers);
    response.body.get(5..).unwrap_or_default().to_vec()
}

#[test]
fn kept_connections_carry_the_next_calls() {
    let Some(python) = grpc_python() else {
        return;
    };
    let dir = TempDir::new("e2e-grpc-keepalive");
    let port = free_port();
    let _server = start_server(&python, &dir, &format!("127.0.0.1:{port}"), None);
    let server = Instance::http(&format!(
        "upstream kept {{
            server 127.0.0.1:{port};
            keepalive 2;
        }}
        upstream fresh {{
            server 127.0.0.1:{port};
        }}
        server {{
            listen 127.0.0.1:8080;
            location / {{
                grpc_pass kept;
            }}
            location /fresh/ {{
                rewrite ^/fresh(/.*)$ $1 break;
                grpc_pass fresh;
            }}
        }}"
    ));
    // The server names the client's address and port: one connection for every call.
    let peers: Vec<Vec<u8>> = (0..3)
        .map(|_| unary_over_http1(&server, "", b"peer"))
        .collect();
    assert!(peers[0].starts_with(b"ipv4:127.0.0.1:"), "{:?}", peers[0]);
    assert_eq!(peers[0], peers[1]);
    assert_eq!(peers[1], peers[2]);
    // The calls between them still get their own answers.
    assert_eq!(unary_over_http1(&server, "", b"again"), b"echo:again");
    assert_eq!(unary_over_http1(&server, "", b"peer"), peers[0]);
    // Without `keepalive`, each call has a connection of its own.
    let first = unary_over_http1(&server, "/fresh", b"peer");
    let second = unary_over_http1(&server, "/fresh", b"peer");
    assert_ne!(first, second);
    assert_ne!(first, peers[0]);
}

/// A unary call from an HTTP/1.1 client, and its status.
fn unary_status(server: &Instance, prefix: &str, payload: &[u8]) -> u16 {
    let framed = message(payload);
    let mut request = format!(
        "POST {prefix}/test.Svc/Unary HTTP/1.1\r\nHost: localhost\r\n\
         Content-Type: application/grpc\r\nTE: trailers\r\nContent-Length: {}\r\n\r\n",
        framed.len()
    )
    .into_bytes();
    request.extend_from_slice(&framed);
    server.request(&request).status
}

#[test]
fn the_directives_shape_requests_tries_and_timeouts() {
    let Some(python) = grpc_python() else {
        return;
    };
    let dir = TempDir::new("e2e-grpc-directives");
    let socket = dir.join("grpc.sock");
    let _server = start_server(&python, &dir, &format!("unix:{}", socket.display()), None);
    let dead = free_port();
    let mut server = Instance::http(&format!(
        "upstream dead_then_live {{
            server 127.0.0.1:{dead};
            server unix:{socket};
        }}
        server {{
            listen 127.0.0.1:8080;
            location / {{
                grpc_pass dead_then_live;
                grpc_set_header X-Id $http_x_request_tag;
                grpc_next_upstream error timeout;
                grpc_next_upstream_tries 2;
                grpc_next_upstream_timeout 10s;
                grpc_connect_timeout 5s;
                grpc_send_timeout 5s;
                grpc_read_timeout 5s;
                grpc_buffer_size 8k;
                grpc_bind off;
                grpc_socket_keepalive on;
                grpc_pass_header Server;
                grpc_ignore_headers X-Accel-Redirect;
                grpc_intercept_errors off;
            }}
            location /slow/ {{
                rewrite ^/slow(/.*)$ $1 break;
                grpc_pass unix:{socket};
                grpc_read_timeout 1s;
            }}
        }}",
        socket = socket.display(),
    ));
    server.expect_log("connect() failed");
    server.expect_log("upstream timed out");
    // The dead server is tried first (round robin from the first), then the live one.
    // (gRPC servers want `te: trailers`, which goes upstream when the client sends it.)
    for _ in 0..2 {
        let framed = message(b"meta");
        let mut request = format!(
            "POST /test.Svc/Unary HTTP/1.1\r\nHost: localhost\r\nX-Request-Tag: seven\r\n\
             Content-Type: application/grpc\r\nTE: trailers\r\nContent-Length: {}\r\n\r\n",
            framed.len()
        )
        .into_bytes();
        request.extend_from_slice(&framed);
        let response = server.request(&request);
        assert_eq!(response.status, 200);
        assert_eq!(response.body.get(5..), Some(&b"seven"[..]));
    }
    // A server silent past `grpc_read_timeout` is 504.
    assert_eq!(unary_status(&server, "/slow", b"slow"), 504);
    assert!(server.error_log().contains("upstream timed out"));
}

#[test]
fn grpcs_with_alpn_h2() {
    let Some(python) = grpc_python() else {
        return;
    };
    if !tls::have_openssl() {
        return;
    }
    let dir = TempDir::new("e2e-grpcs");
    // A certificate for `localhost` issued by a CA of the test's, which Portico trusts.
    tls::authority(&dir.join(""), "ca");
    tls::issued(&dir.join(""), "localhost", "ca", (-1, 1));
    let port = free_port();
    let _server = start_server(
        &python,
        &dir,
        &format!("127.0.0.1:{port}"),
        Some(("localhost.key", "localhost.crt")),
    );
    let trusted = dir.join("ca.crt").display().to_string();
    let server = Instance::http(&format!(
        "server {{
            listen 127.0.0.1:8080;
            http2 on;
            location / {{
                grpc_pass grpcs://127.0.0.1:{port};
                grpc_ssl_name localhost;
                grpc_ssl_server_name on;
                grpc_ssl_verify on;
                grpc_ssl_verify_depth 1;
                grpc_ssl_trusted_certificate {trusted};
                grpc_ssl_protocols TLSv1.2 TLSv1.3;
                grpc_ssl_ciphers HIGH;
                grpc_ssl_session_reuse on;
            }}
        }}"
    ));
    assert_eq!(run_client(&python, &dir, server.port()), EXPECTED);
}

#[test]
fn a_server_that_is_not_there_is_502() {
    let port = free_port();
    let mut server = Instance::http(&format!(
        "server {{
            listen 127.0.0.1:8080;
            location / {{
                grpc_pass 127.0.0.1:{port};
            }}
        }}"
    ));
    server.expect_log("connect() failed");
    let mut request = b"POST /test.Svc/Unary HTTP/1.1\r\nHost: localhost\r\n\
        Content-Type: application/grpc\r\nContent-Length: 7\r\n\r\n"
        .to_vec();
    request.extend_from_slice(&message(b"hi"));
    assert_eq!(server.request(&request).status, 502);
}
