//! HTTP/3 over QUIC (`listen ... quic`), with the `h3` crate on `quinn` as the client: the
//! handshake chooses the server by SNI, a stream's head runs the phases as any request,
//! responses come back as HEADERS and DATA under QUIC's flow control, request bodies reach
//! an upstream, the same port serves TLS over TCP, and the directives of nginx's
//! `ngx_http_v3_module` load with nginx's contexts and errors.

use crate::support::Instance;
use crate::support::cli::{assert_http_body_fails, test_http_body};
use crate::support::h3::{exchange, get, post, try_exchange, try_exchanges};
use crate::support::proxy::OK;
use crate::support::tls::{Key, self_signed, with_files};
use crate::support::upstream::{MockUpstream, UpstreamConn};

const CONFIG: &str = r#"
worker_processes 2;
quic_bpf on;
events {}
http {
    http3_max_concurrent_streams 64;
    server {
        listen 127.0.0.1:8080 quic reuseport;
        listen 127.0.0.1:8080 ssl;
        server_name localhost;
        ssl_certificate localhost.crt;
        ssl_certificate_key localhost.key;
        http3 on;
        http3_hq off;
        http3_stream_buffer_size 64k;
        quic_retry on;
        quic_gso on;
        quic_host_key quic.key;
        quic_active_connection_id_limit 4;
        root html;
        access_log logs/access.log;
        location = /vars {
            return 200 "$server_protocol $http3 $scheme $https $ssl_server_name $ssl_protocol [$request]";
        }
        location = /proxy {
            client_max_body_size 10m;
            proxy_pass http://127.0.0.1:8081/echo;
        }
        location = /tls { return 200 "$ssl_cipher $ssl_alpn_protocol $ssl_session_reused"; }
        location = /generation { return 200 "one"; }
        location ~ ^/[0-9]+$ { return 200 "page $uri $http3"; }
    }
}
"#;

fn big() -> Vec<u8> {
    (0..1_000_000u32).map(|index| (index % 251) as u8).collect()
}

fn start() -> (Instance, MockUpstream) {
    let mut builder = with_files(Instance::builder(CONFIG), |directory| {
        self_signed(directory, "localhost", Key::Ecdsa);
    })
    .file("html/index.html", "hello h3\n")
    .file("html/big.bin", big())
    .file("quic.key", [7u8; 32]);
    let upstream = MockUpstream::answering(builder.port(8081), OK);
    (builder.start(), upstream)
}

fn start_with(upstream: impl Fn(UpstreamConn) + Send + Sync + 'static) -> (Instance, MockUpstream) {
    let mut builder = with_files(Instance::builder(CONFIG), |directory| {
        self_signed(directory, "localhost", Key::Ecdsa);
    })
    .file("quic.key", [7u8; 32]);
    let upstream = MockUpstream::start(builder.port(8081), upstream);
    (builder.start(), upstream)
}

fn certificate(server: &Instance) -> Vec<u8> {
    server.read("localhost.crt").into_bytes()
}

#[test]
fn requests_over_quic_run_the_phases() {
    let (server, _upstream) = start();
    let answers = exchange(
        server.port(),
        &certificate(&server),
        vec![
            get("/vars"),
            get("/index.html"),
            get("/missing"),
            get("/big.bin"),
            get("/tls"),
        ],
    );
    assert_eq!(answers[0].status, 200);
    assert_eq!(
        String::from_utf8_lossy(&answers[0].body),
        "HTTP/3.0 h3 https on localhost TLSv1.3 [GET /vars HTTP/3.0]"
    );
    assert_eq!(answers[0].headers["server"], "portico/0.1.0");
    assert_eq!(answers[1].status, 200);
    assert_eq!(answers[1].body, b"hello h3\n");
    assert_eq!(answers[1].headers["content-length"], "9");
    assert_eq!(answers[1].headers["content-type"], "text/html");
    assert_eq!(answers[2].status, 404);
    assert!(String::from_utf8_lossy(&answers[2].body).contains("404 Not Found"));
    assert_eq!(answers[3].status, 200);
    assert!(answers[3].body == big(), "the file arrived intact");
    // The client (rustls) puts AES-256-GCM first among its suites; the server takes the
    // client's order.
    assert_eq!(
        String::from_utf8_lossy(&answers[4].body),
        "TLS_AES_256_GCM_SHA384 h3 ."
    );
    let line = server.wait_for_line("logs/access.log", "/vars");
    assert!(line.contains("\"GET /vars HTTP/3.0\" 200 "), "{line}");
    // TLS over TCP on the same port is unchanged.
    let options = crate::support::tls::Options::sni("localhost");
    let response = crate::support::tls::get(server.port(), &options, "/vars");
    assert_eq!(
        response.body_text(),
        "HTTP/1.1  https on localhost TLSv1.3 [GET /vars HTTP/1.1]"
    );
}

/// A second connection from the same client resumes the session of the first, and
/// `$ssl_session_reused` says so.
#[test]
fn a_second_connection_resumes_the_session() {
    let (server, _upstream) = start();
    let rounds = try_exchanges(
        server.port(),
        &certificate(&server),
        vec![vec![get("/tls")], vec![get("/tls")]],
        std::time::Duration::from_secs(10),
    )
    .expect("two connections");
    let bodies: Vec<String> = rounds
        .iter()
        .map(|answers| String::from_utf8_lossy(&answers[0].body).into_owned())
        .collect();
    assert_eq!(
        bodies,
        ["TLS_AES_256_GCM_SHA384 h3 .", "TLS_AES_256_GCM_SHA384 h3 r"]
    );
}

/// Request bodies reach the upstream whole: 100,000 bytes, and 3,000,000 bytes, more than
/// a stream's inbox holds (64 KiB) before its stream is no longer read, so that reading
/// stops and starts again as the body reader takes the bytes.
#[test]
fn a_request_body_reaches_the_upstream() {
    let (server, upstream) = start();
    let body: Vec<u8> = (0..100_000u32)
        .map(|index| b'a' + (index % 26) as u8)
        .collect();
    let large: Vec<u8> = (0..3_000_000u32)
        .map(|index| b'a' + (index % 23) as u8)
        .collect();
    let answers = exchange(
        server.port(),
        &certificate(&server),
        vec![
            post("/proxy", body.clone()),
            get("/proxy"),
            post("/proxy", large.clone()),
        ],
    );
    assert_eq!(answers[0].status, 200);
    assert_eq!(answers[0].body, b"hello");
    assert_eq!(answers[1].body, b"hello");
    assert_eq!(answers[2].status, 200);
    let requests = upstream.requests();
    assert_eq!(requests.len(), 3, "{}", requests.len());
    let third = &requests[2];
    let third_end = third.find("\r\n\r\n").expect("a head") + 4;
    assert!(
        third.as_bytes()[third_end..] == large[..],
        "the large body arrived intact"
    );
    let first = &requests[0];
    assert!(first.starts_with("POST /echo HTTP/1.0\r\n"), "{first}");
    let head_end = first.find("\r\n\r\n").expect("a head") + 4;
    assert_eq!(&first.as_bytes()[head_end..], &body[..]);
    assert!(
        first
            .to_ascii_lowercase()
            .contains("content-length: 100000"),
        "{first}"
    );
    assert!(requests[1].starts_with("GET /echo HTTP/1.0\r\n"));
}

#[test]
fn http3_directives_load_with_nginx_contexts_and_errors() {
    let (_, output) = test_http_body(concat!(
        "http3 off;\n",
        "http3_hq on;\n",
        "quic_retry on;\n",
        "quic_gso off;\n",
        "http3_max_concurrent_streams 10;\n",
        "http3_stream_buffer_size 16k;\n",
        "quic_active_connection_id_limit 8;\n",
        "server { listen 127.0.0.1:8080; http3 on; }\n",
    ));
    output.assert_code(0);
    assert_http_body_fails(
        "server { listen 127.0.0.1:8080 quic ssl; }",
        "\"ssl\" parameter is incompatible with \"quic\" in {conf}:4",
    );
    assert_http_body_fails(
        "server { listen 127.0.0.1:8080 quic; }",
        "no \"ssl_certificate\" is defined for the \"listen ... quic\" directive in {conf}:4",
    );
    assert_http_body_fails(
        "server { location / { http3 on; } }",
        "\"http3\" directive is not allowed here in {conf}:4",
    );
}

/// A reload while a request is in flight: the old workers' endpoints send GOAWAY and
/// serve the request to its end, and the new workers take the `reuseport` sockets.
#[test]
fn a_reload_finishes_requests_in_flight_and_new_workers_serve() {
    let (mut server, upstream) = start_with(|mut conn| {
        while conn.read_request().is_some() {
            std::thread::sleep(std::time::Duration::from_millis(800));
            conn.write(OK);
        }
    });
    let port = server.port();
    let pem = certificate(&server);
    let in_flight = {
        let pem = pem.clone();
        std::thread::spawn(move || exchange(port, &pem, vec![get("/proxy")]))
    };
    crate::support::wait::wait_until(
        "the upstream to get the request",
        std::time::Duration::from_secs(10),
        || upstream.connections() > 0,
    );
    let two = CONFIG.replace("return 200 \"one\"", "return 200 \"two\"");
    // While old and new workers read the same `reuseport` sockets, a new connection may
    // be turned away by an old endpoint or lose packets to it: the wait tries again.
    server.reload(&two, |_| {
        let limit = std::time::Duration::from_secs(3);
        try_exchange(port, &pem, vec![get("/generation")], limit)
            .is_ok_and(|answers| answers[0].body == b"two")
    });
    let answers = in_flight.join().expect("the client thread");
    assert_eq!(answers[0].status, 200);
    assert_eq!(answers[0].body, b"hello");
}

fn aioquic_python() -> Option<String> {
    let candidate =
        std::env::var("PORTICO_AIOQUIC_PYTHON").unwrap_or_else(|_| "python3".to_string());
    let imports = std::process::Command::new(&candidate)
        .args(["-c", "import aioquic"])
        .stderr(std::process::Stdio::null())
        .status();
    imports
        .is_ok_and(|status| status.success())
        .then_some(candidate)
}

/// aioquic's client (and its ls-qpack encoder, which uses the dynamic table Portico
/// allows) fetches twenty pages on one connection, nineteen of them at once.
#[test]
fn aioquic_fetches_pages_on_one_connection() {
    let Some(python) = aioquic_python() else {
        eprintln!("skipped: no Python with aioquic (set PORTICO_AIOQUIC_PYTHON)");
        return;
    };
    let (server, _upstream) = start();
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../quic/tests/aioquic_client.py"
    );
    let output = std::process::Command::new(python)
        .args([script, &server.port().to_string(), "20"])
        .output()
        .expect("the client runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 20, "{stdout}");
    for (index, line) in lines.iter().enumerate() {
        assert_eq!(*line, format!("200 page /{index} h3"));
    }
}
