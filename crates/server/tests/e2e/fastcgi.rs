//! FastCGI against a real PHP-FPM (Debian's `php-fpm`), started by each test and stopped
//! by its pid: the stock parameter files and Debian's PHP snippet, request bodies, stderr,
//! kept connections, the cache, and what a down, slow or broken application gets. Each
//! test is skipped, with a message, where PHP-FPM is not installed.

use std::io::{Read, Write};
use std::net::TcpListener;

use crate::support::app_servers::TempDir;
use crate::support::php_fpm::{Listen, PhpFpm, conf_file};
use crate::support::wordpress;
use crate::support::{Client, Instance, PATIENCE, proc_net, wait_until};

/// The one script every test serves; `?do=` says what it does.
const APP: &str = r#"<?php
$do = $_GET['do'] ?? 'info';
if ($do === 'info') {
    error_log('info ran');
    header('X-App: php');
    $body = file_get_contents('php://input');
    foreach (['SCRIPT_NAME', 'PATH_INFO', 'QUERY_STRING', 'REQUEST_METHOD', 'HTTP_HOST',
              'HTTP_X_CUSTOM', 'CONTENT_LENGTH', 'CONTENT_TYPE', 'REDIRECT_STATUS'] as $name) {
        echo $name, '=', $_SERVER[$name] ?? '', "\n";
    }
    echo 'SCRIPT_FILENAME=', basename($_SERVER['SCRIPT_FILENAME'] ?? ''), "\n";
    $sum = 0;
    for ($i = 0; $i < strlen($body); $i++) {
        $sum = ($sum * 31 + ord($body[$i])) % 1000000007;
    }
    echo 'BODY=', strlen($body), ' ', $sum, "\n";
} elseif ($do === 'status') {
    http_response_code(404);
    header('X-From: php');
    echo "missing\n";
} elseif ($do === 'redirect') {
    header('Location: /elsewhere');
} elseif ($do === 'big') {
    echo str_repeat('0123456789', 30000);
} elseif ($do === 'noisy') {
    echo "start\n";
    flush();
    error_log('after the head');
    echo "end\n";
} elseif ($do === 'slow') {
    sleep(5);
    echo "late\n";
}
"#;

/// A front controller as WordPress's `index.php` is one: every permalink comes to it.
const INDEX: &str = r#"<?php
if (isset($_FILES['upload'])) {
    $file = $_FILES['upload'];
    $data = file_get_contents($file['tmp_name']);
    $sum = 0;
    for ($i = 0; $i < strlen($data); $i++) {
        $sum = ($sum * 31 + ord($data[$i])) % 1000000007;
    }
    echo 'UPLOAD=', $file['name'], ' ', $file['size'], ' ', $sum, "\n";
}
echo 'INDEX REQUEST_URI=', $_SERVER['REQUEST_URI'], ' QUERY_STRING=', $_SERVER['QUERY_STRING'], "\n";
"#;

/// A PHP-FPM pool serving [`APP`] as `app.php` and [`INDEX`] as `index.php` from its own
/// directory, listening on `port` (TCP on 127.0.0.1) or on a unix socket there; `None`,
/// said on stderr, where it is not installed.
fn start_php_fpm(port: Option<u16>) -> Option<PhpFpm> {
    let program = PhpFpm::find()?;
    let dir = TempDir::new("e2e-php-fpm");
    dir.write("app.php", APP);
    dir.write("index.php", INDEX);
    dir.write("style.css", "body { color: black; }\n");
    let listen = port.map_or(Listen::UnixSocket, Listen::Port);
    Some(PhpFpm::start(&program, dir, listen, &[]))
}

/// Debian's `snippets/fastcgi-php.conf`, written out, around `fastcgi_pass PASS`.
fn php_location(pass: &str, extra: &str) -> String {
    format!(
        r"location ~ [^/]\.php(/|$) {{
            fastcgi_split_path_info ^(.+?\.php)(/.*)$;
            try_files $fastcgi_script_name =404;
            set $path_info $fastcgi_path_info;
            fastcgi_param PATH_INFO $path_info;
            fastcgi_index index.php;
            include {conf};
            fastcgi_pass {pass};
            {extra}
        }}",
        conf = conf_file("fastcgi.conf"),
    )
}

fn get(port: u16, path: &str) -> crate::support::Response {
    Client::connect(port).request(format!(
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nX-Custom: yes\r\nConnection: close\r\n\r\n"
    ))
}

#[test]
fn php_through_debians_snippet_and_the_stock_params() {
    let Some(php) = start_php_fpm(None) else {
        return;
    };
    let config = format!(
        "server {{ listen 127.0.0.1:8080; root {root}; {location} }}",
        root = php.root(),
        location = php_location(&format!("unix:{}", php.socket()), ""),
    );
    let server = Instance::http(&config);
    let port = server.port();

    let info = get(port, "/app.php/extra/path?do=info");
    assert_eq!(info.status, 200, "{}", info.body_text());
    assert_eq!(info.header("X-App"), Some("php"));
    let body = info.body_text();
    for line in [
        "SCRIPT_NAME=/app.php\n",
        "PATH_INFO=/extra/path\n",
        "QUERY_STRING=do=info\n",
        "REQUEST_METHOD=GET\n",
        "HTTP_HOST=localhost\n",
        "HTTP_X_CUSTOM=yes\n",
        "REDIRECT_STATUS=200\n",
        "SCRIPT_FILENAME=app.php\n",
    ] {
        assert!(body.contains(line), "{line:?} in {body}");
    }
    let line = server.wait_for_error_log("FastCGI sent in stderr");
    let logged = concat!(
        r#"FastCGI sent in stderr: "PHP message: info ran" "#,
        "while reading response header from upstream"
    );
    assert!(
        line.contains("[error]")
            && line.contains(logged)
            && line.contains(&format!(r#"upstream: "fastcgi://unix:{}""#, php.socket())),
        "{line}"
    );

    // A script that is not there is never passed (`try_files $fastcgi_script_name`).
    assert_eq!(get(port, "/missing.php").status, 404);

    let status = get(port, "/app.php?do=status");
    assert_eq!(
        (status.status, status.body_text().as_str()),
        (404, "missing\n")
    );
    assert_eq!(status.header("X-From"), Some("php"));
    assert_eq!(status.header("Status"), None);

    let redirect = get(port, "/app.php?do=redirect");
    assert_eq!(redirect.status, 302);
    assert_eq!(
        redirect.header("Location"),
        Some(format!("http://localhost:{port}/elsewhere").as_str())
    );

    // A body over many STDOUT records.
    let big = get(port, "/app.php?do=big");
    assert_eq!(big.status, 200);
    assert_eq!(big.body_text(), "0123456789".repeat(30000));

    // Stderr after the head is logged while the body is read.
    let noisy = get(port, "/app.php?do=noisy");
    assert_eq!(noisy.body_text(), "start\nend\n");
    let line = server.wait_for_error_log("after the head");
    assert!(
        line.contains(
            r#"FastCGI sent in stderr: "PHP message: after the head" while reading upstream"#
        ),
        "{line}"
    );
}

/// Debian's `snippets/fastcgi-php.conf`, as Debian ships it (its comments left out).
const DEBIAN_SNIPPET: &str = "fastcgi_split_path_info ^(.+?\\.php)(/.*)$;
try_files $fastcgi_script_name =404;
set $path_info $fastcgi_path_info;
fastcgi_param PATH_INFO $path_info;
fastcgi_index index.php;
include fastcgi.conf;
";

#[test]
fn debians_default_site_and_wordpresss_documented_config() {
    let Some(php) = start_php_fpm(None) else {
        return;
    };
    let fastcgi_conf =
        std::fs::read_to_string(conf_file("fastcgi.conf")).expect("conf/fastcgi.conf");
    // Debian's sites-available/default with its PHP block uncommented; WordPress's
    // documented server (an upstream named php, permalinks to index.php, long expiry for
    // static files, errors intercepted) on the second port.
    let config = format!(
        "worker_processes 1;
events {{}}
http {{
    include mime.types;
    upstream php {{ server unix:{socket}; }}
    server {{
        listen 127.0.0.1:8080 default_server;
        root {root};
        index index.html index.htm index.nginx-debian.html index.php;
        server_name _;
        location / {{ try_files $uri $uri/ =404; }}
        location ~ \\.php$ {{
            include snippets/fastcgi-php.conf;
            fastcgi_pass unix:{socket};
        }}
        location ~ /\\.ht {{ deny all; }}
    }}
    {wordpress}
}}
",
        root = php.root(),
        socket = php.socket(),
        wordpress = wordpress::documented_server(8081, &php.root()),
    );
    let server = Instance::builder(&config)
        .file("fastcgi.conf", &fastcgi_conf)
        .file(
            "fastcgi_params",
            std::fs::read_to_string(conf_file("fastcgi_params")).expect("conf/fastcgi_params"),
        )
        .file("snippets/fastcgi-php.conf", DEBIAN_SNIPPET)
        .file(
            "mime.types",
            std::fs::read_to_string(conf_file("mime.types")).expect("conf/mime.types"),
        )
        .start();
    let status = crate::support::cli::run(&server.cli_args(&["-t"]));
    status.assert_code(0);

    // Debian's site: the directory index is index.php, run by PHP-FPM.
    let front = get(server.port(), "/");
    assert_eq!(front.status, 200, "{}", front.body_text());
    assert!(
        front.body_text().contains("INDEX REQUEST_URI=/ "),
        "{}",
        front.body_text()
    );
    assert_eq!(get(server.port(), "/nothing.php").status, 404);

    // WordPress: a permalink, a static file, an upload.
    let wordpress = server.port_of(8081);
    let permalink = get(wordpress, "/2026/11/hello-world/?replytocom=5");
    assert_eq!(permalink.status, 200);
    assert!(
        permalink.body_text().contains(
            "INDEX REQUEST_URI=/2026/11/hello-world/?replytocom=5 QUERY_STRING=replytocom=5"
        ),
        "{}",
        permalink.body_text()
    );
    let css = get(wordpress, "/style.css");
    assert_eq!(css.status, 200);
    assert_eq!(css.header("Cache-Control"), Some("max-age=315360000"));
    let file: Vec<u8> = (0..200_000u32).map(|index| (index % 256) as u8).collect();
    let boundary = "portico-e2e-boundary";
    let mut body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"upload\"; filename=\"photo.jpg\"\r\n\
         Content-Type: image/jpeg\r\n\r\n"
    )
    .into_bytes();
    body.extend_from_slice(&file);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    let upload = |path: &str| {
        let mut request = format!(
            "POST {path} HTTP/1.1\r\nHost: wordpress.test\r\n\
             Content-Type: multipart/form-data; boundary={boundary}\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        )
        .into_bytes();
        request.extend_from_slice(&body);
        Client::connect(wordpress).request(request)
    };
    // A script that is not there: `location / { try_files }` does not apply to `\.php$`,
    // so PHP-FPM answers 404. Its page is passed: `fastcgi_intercept_errors` takes only the
    // statuses that have an `error_page`.
    let missing = upload("/wp-admin/async-upload.php");
    assert_eq!(
        (missing.status, missing.body_text().as_str()),
        (404, "File not found.\n")
    );
    let uploaded = upload("/index.php");
    assert_eq!(uploaded.status, 200, "{}", uploaded.body_text());
    let expected = format!("UPLOAD=photo.jpg {} {}\n", file.len(), checksum(&file));
    assert!(
        uploaded.body_text().contains(&expected),
        "{expected:?} in {}",
        uploaded.body_text()
    );
}

#[test]
fn request_bodies_in_memory_in_a_file_and_unbuffered() {
    let Some(php) = start_php_fpm(None) else {
        return;
    };
    let pass = format!("unix:{}", php.socket());
    let config = format!(
        "server {{
            listen 127.0.0.1:8080;
            root {root};
            client_body_buffer_size 16k;
            client_max_body_size 10m;
            {buffered}
            location ^~ /unbuffered/ {{
                rewrite ^/unbuffered(/.*)$ $1 break;
                include {params};
                fastcgi_param SCRIPT_FILENAME $document_root$uri;
                fastcgi_request_buffering off;
                fastcgi_pass {pass};
            }}
        }}",
        root = php.root(),
        buffered = php_location(&pass, ""),
        params = conf_file("fastcgi_params"),
    );
    let server = Instance::http(&config);
    let port = server.port();
    let post = |path: &str, body: &[u8], chunked: bool| {
        let mut request =
            format!("POST {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n");
        if chunked {
            request.push_str("Transfer-Encoding: chunked\r\n\r\n");
            let mut bytes = request.into_bytes();
            for piece in body.chunks(10_000) {
                bytes.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
                bytes.extend_from_slice(piece);
                bytes.extend_from_slice(b"\r\n");
            }
            bytes.extend_from_slice(b"0\r\n\r\n");
            return Client::connect(port).request(bytes);
        }
        request.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
        let mut bytes = request.into_bytes();
        bytes.extend_from_slice(body);
        Client::connect(port).request(bytes)
    };
    let small = b"name=value".to_vec();
    // Over client_body_buffer_size: the body is kept in a temporary file, and sent from it
    // in STDIN records.
    let large: Vec<u8> = (0..300_000u32).map(|index| (index % 251) as u8).collect();
    for (path, body, chunked) in [
        ("/app.php?do=info", &small, false),
        ("/app.php?do=info", &large, false),
        // A chunked body read whole: `$content_length` is its length then.
        ("/app.php?do=info", &large, true),
        // Passed on as it arrives, in STDIN records. (PHP reads no body without a
        // CONTENT_LENGTH, so a chunked one cannot go unbuffered to it, with nginx either.)
        ("/unbuffered/app.php?do=info", &large, false),
        ("/unbuffered/app.php?do=info", &small, false),
    ] {
        let response = post(path, body, chunked);
        assert_eq!(response.status, 200, "{path}: {}", response.body_text());
        let expected = format!("BODY={} {}\n", body.len(), checksum(body));
        assert!(
            response.body_text().contains(&expected),
            "{path} chunked={chunked}: {expected:?} in {}",
            response.body_text()
        );
        assert!(response.body_text().contains("REQUEST_METHOD=POST\n"));
    }
}

#[test]
fn kept_connections_carry_many_requests() {
    let mut builder = Instance::http_builder("");
    let fpm_port = builder.port(8081);
    let Some(php) = start_php_fpm(Some(fpm_port)) else {
        return;
    };
    let config = format!(
        "upstream php {{ server 127.0.0.1:8081; keepalive 4; }}
         server {{
            listen 127.0.0.1:8080;
            root {root};
            {kept}
            location ^~ /closed/ {{
                rewrite ^/closed(/.*)$ $1 break;
                include {params};
                fastcgi_param SCRIPT_FILENAME $document_root$uri;
                fastcgi_pass 127.0.0.1:8081;
            }}
        }}",
        root = php.root(),
        kept = php_location("php", "fastcgi_keep_conn on;"),
        params = conf_file("fastcgi_params"),
    );
    let server = builder.config(&config).start();
    let established = || {
        proc_net::rows()
            .iter()
            .filter(|row| row.local_port == fpm_port && row.state == "01")
            .count()
    };
    let mut client = Client::connect(server.port());
    for round in 0..20 {
        let response = client
            .request("GET /app.php?do=info HTTP/1.1\r\nHost: localhost\r\nX-Custom: yes\r\n\r\n");
        assert_eq!(response.status, 200, "round {round}");
        assert!(response.body_text().contains("HTTP_X_CUSTOM=yes\n"));
        // One connection to PHP-FPM, kept between the requests.
        assert_eq!(established(), 1, "round {round}");
    }
    // Without fastcgi_keep_conn, PHP-FPM closes each connection after its answer.
    for round in 0..5 {
        let response =
            client.request("GET /closed/app.php?do=big HTTP/1.1\r\nHost: localhost\r\n\r\n");
        assert_eq!(response.body_text().len(), 300_000, "round {round}");
    }
    // The kept connection stays, the closed ones go.
    wait_until("one connection to php-fpm", PATIENCE, || established() == 1);
    drop(php);
}

#[test]
fn a_down_slow_or_broken_application_gets_nginxs_answers() {
    let Some(php) = start_php_fpm(None) else {
        return;
    };
    let mut builder = Instance::http_builder("");
    let garbage_port = builder.port(8082);
    let garbage = TcpListener::bind(("127.0.0.1", garbage_port)).expect("bind the garbage peer");
    let answering = std::thread::spawn(move || {
        for stream in garbage.incoming().take(1) {
            let mut stream = stream.expect("accept");
            let mut request = [0u8; 4096];
            let _ = stream.read(&mut request);
            // An HTTP answer where FastCGI records belong: version byte 'H' (72).
            let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
        }
    });
    let config = format!(
        "server {{
            listen 127.0.0.1:8080;
            root {root};
            location ^~ /down/ {{ include {params}; fastcgi_pass unix:{root}/none.sock; }}
            location ^~ /caught/ {{
                rewrite ^/caught(/.*)$ $1 break;
                include {params};
                fastcgi_param SCRIPT_FILENAME $document_root$uri;
                fastcgi_catch_stderr \"info ran\";
                fastcgi_pass unix:{socket};
            }}
            location ^~ /garbage/ {{ include {params}; fastcgi_pass 127.0.0.1:8082; }}
            location ^~ /slow/ {{
                rewrite ^/slow(/.*)$ $1 break;
                include {params};
                fastcgi_param SCRIPT_FILENAME $document_root$uri;
                fastcgi_read_timeout 1s;
                fastcgi_pass unix:{socket};
            }}
            {php}
        }}",
        root = php.root(),
        socket = php.socket(),
        params = conf_file("fastcgi_params"),
        php = php_location(&format!("unix:{}", php.socket()), ""),
    );
    let server = builder.config(&config).start();
    let port = server.port();

    assert_eq!(get(port, "/down/x.php").status, 502);
    let line = server.wait_for_error_log("while connecting to upstream");
    assert!(line.contains("(2: No such file or directory)"), "{line}");

    assert_eq!(get(port, "/garbage/x.php").status, 502);
    let line = server.wait_for_error_log("FastCGI protocol version");
    assert!(
        line.contains(concat!(
            "upstream sent unsupported FastCGI protocol version: 72 ",
            "while reading response header from upstream"
        )),
        "{line}"
    );
    answering.join().expect("the garbage peer");

    assert_eq!(get(port, "/slow/app.php?do=slow").status, 504);
    let line = server.wait_for_error_log("timed out");
    assert!(
        line.contains(concat!(
            "upstream timed out (110: Connection timed out) ",
            "while reading response header from upstream"
        )),
        "{line}"
    );

    // Stderr holding a `fastcgi_catch_stderr` string before the head: an invalid head.
    assert_eq!(get(port, "/caught/app.php?do=info").status, 502);
    server.wait_for_error_log("FastCGI sent in stderr: \"PHP message: info ran\"");

    // The worker goes on serving.
    assert_eq!(get(port, "/app.php?do=status").status, 404);
}

#[test]
fn fastcgi_cache_hits_and_shares_zones_with_the_proxy() {
    let Some(php) = start_php_fpm(None) else {
        return;
    };
    let config = format!(
        "fastcgi_cache_path %%PREFIX%%/cache keys_zone=php:1m;
         server {{
            listen 127.0.0.1:8080;
            root {root};
            add_header X-Cache $upstream_cache_status;
            {php}
        }}",
        root = php.root(),
        php = php_location(
            &format!("unix:{}", php.socket()),
            "fastcgi_cache php; fastcgi_cache_key $request_uri; fastcgi_cache_valid 200 1m;"
        ),
    );
    let server = Instance::http(&config);
    let port = server.port();
    let first = get(port, "/app.php?do=big");
    assert_eq!((first.status, first.header("X-Cache")), (200, Some("MISS")));
    wait_until("a HIT", PATIENCE, || {
        get(port, "/app.php?do=big").header("X-Cache") == Some("HIT")
    });
    let hit = get(port, "/app.php?do=big");
    assert_eq!(hit.header("X-Cache"), Some("HIT"));
    assert_eq!(hit.body_text(), "0123456789".repeat(30000));
}

#[test]
fn a_gateway_without_a_cache_key_or_with_a_bad_split_is_refused() {
    for (config, message) in [
        (
            "fastcgi_cache_path %%PREFIX%%/c keys_zone=z:1m;
             server { listen 127.0.0.1:8080; location / { fastcgi_cache z; fastcgi_pass 127.0.0.1:9; } }",
            "no \"fastcgi_cache_key\" for \"fastcgi_cache\"",
        ),
        (
            "server { listen 127.0.0.1:8080; location / { fastcgi_split_path_info ^(.+)$; } }",
            "pattern \"^(.+)$\" must have 2 captures",
        ),
        (
            "server { listen 127.0.0.1:8080; location / { fastcgi_param A b c; } }",
            "invalid parameter \"c\"",
        ),
        (
            "server { listen 127.0.0.1:8080; location / { uwsgi_modifier1 256; } }",
            "value must be between 0 and 255",
        ),
    ] {
        let failure = Instance::http_builder(config)
            .expect_log("[emerg]")
            .try_start()
            .expect_err("refused");
        assert!(failure.stderr.contains(message), "{message}: {}", failure.stderr);
    }
}

/// The script's checksum of a body.
fn checksum(bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .fold(0, |sum, &byte| (sum * 31 + u64::from(byte)) % 1_000_000_007)
}

/// A hand-made FastCGI application on the config's port 8081: it takes one connection,
/// reads the request, and `answer`s on it (on its own thread, joined by the test).
fn fastcgi_peer<T: Send + 'static>(
    builder: &mut crate::support::Builder,
    answer: impl FnOnce(&mut std::net::TcpStream) -> T + Send + 'static,
) -> std::thread::JoinHandle<T> {
    let port = builder.port(8081);
    let listener = TcpListener::bind(("127.0.0.1", port)).expect("bind the FastCGI peer");
    std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().expect("accept");
        let mut request = [0u8; 4096];
        let _ = stream.read(&mut request);
        answer(&mut stream)
    })
}

/// One FastCGI record of request 1.
fn record(kind: u8, content: &[u8]) -> Vec<u8> {
    let len = u16::try_from(content.len()).expect("a short record");
    let mut out = vec![1, kind, 0, 1];
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&[0, 0]);
    out.extend_from_slice(content);
    out
}

#[test]
fn stderr_before_a_cut_body_is_logged() {
    let mut builder = Instance::http_builder("");
    let peer = fastcgi_peer(&mut builder, |stream| {
        // STDOUT with the head and part of a 100-byte body, STDERR, then the close: no
        // END_REQUEST.
        let mut answer = record(6, b"Content-Length: 100\r\n\r\npart of it");
        answer.extend(record(7, b"dying now\n"));
        stream.write_all(&answer).expect("answer");
    });
    let server = builder
        .config("server { listen 127.0.0.1:8080; location / { fastcgi_pass 127.0.0.1:8081; } }")
        .start();
    let mut client = Client::connect(server.port());
    client.write("GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    let received = String::from_utf8_lossy(&client.read_to_end()).into_owned();
    peer.join().expect("the FastCGI peer");
    // The head and what came of the body, then the close, short of its length.
    assert!(received.starts_with("HTTP/1.1 200 OK\r\n"), "{received}");
    assert!(received.contains("Content-Length: 100\r\n"), "{received}");
    assert!(received.ends_with("\r\n\r\npart of it"), "{received}");
    let line = server.wait_for_error_log("dying now");
    assert!(
        line.contains(r#"FastCGI sent in stderr: "dying now" while reading upstream"#),
        "{line}"
    );
    server.wait_for_error_log("upstream prematurely closed");
}

/// An application that writes to stderr without end before its head: every piece is
/// logged as it comes, `fastcgi_read_timeout` counts from the last read (not from the
/// request), the worker serves other clients meanwhile, and the answer that finally comes
/// is passed on.
#[test]
fn an_endless_stderr_stream_is_logged_and_the_worker_serves_others() {
    let mut builder = Instance::http_builder("");
    let peer = fastcgi_peer(&mut builder, |stream| {
        // 1.5 s of stderr, a record every millisecond, longer than the read timeout.
        let started = std::time::Instant::now();
        let mut pieces = 0;
        while started.elapsed() < std::time::Duration::from_millis(1500) {
            let line = format!("warning {pieces}: {}\n", "x".repeat(900));
            stream
                .write_all(&record(7, line.as_bytes()))
                .expect("stderr");
            pieces += 1;
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let mut answer = record(6, b"Content-Type: text/plain\r\n\r\nfinally");
        answer.extend(record(6, b""));
        answer.extend(record(3, &[0, 0, 0, 0, 0, 0, 0, 0]));
        stream.write_all(&answer).expect("answer");
        pieces
    });
    let server = builder
        .config(
            "server { listen 127.0.0.1:8080;
                 location / { fastcgi_pass 127.0.0.1:8081; fastcgi_read_timeout 1s; }
                 location = /other { return 200 'other'; } }",
        )
        .start();
    let mut client = Client::connect(server.port());
    client.write("GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    server.wait_for_error_log("FastCGI sent in stderr");
    // While the stream goes on, another client is answered.
    let mut other = Client::connect(server.port());
    other.write("GET /other HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    let answer = String::from_utf8_lossy(&other.read_to_end()).into_owned();
    assert!(answer.ends_with("\r\n\r\nother"), "{answer}");
    assert!(
        !peer.is_finished(),
        "the other client waited for the stream's end"
    );
    let received = String::from_utf8_lossy(&client.read_to_end()).into_owned();
    let pieces = peer.join().expect("the FastCGI peer");
    assert!(pieces > 200, "{pieces} stderr records");
    assert!(received.starts_with("HTTP/1.1 200 OK\r\n"), "{received}");
    // No length from the application: chunked to an HTTP/1.1 client.
    assert!(
        received.ends_with("\r\n\r\n7\r\nfinally\r\n0\r\n\r\n"),
        "{received}"
    );
    let log = server.error_log();
    let logged = log.matches("FastCGI sent in stderr: \"warning ").count();
    assert!(logged >= pieces / 2, "{logged} of {pieces} pieces logged");
    assert!(log.contains("\" while reading response header from upstream, client: "));
    assert!(!log.contains("timed out"), "an upstream timeout was logged");
}

/// What the FastCGI peer of [`an_http2_body_ends_at_end_stream_not_at_its_length`] saw.
#[derive(Debug, PartialEq)]
enum Stdin {
    Data(Vec<u8>),
    End,
}

/// `fastcgi_request_buffering off` over HTTP/2 with `content-length`: the body goes on as
/// it arrives, and its end (the empty STDIN record) only once the stream ends, as nginx
/// does; a stream that sends more than its `content-length` gets 400 with nothing more
/// passed on.
#[test]
fn an_http2_body_ends_at_end_stream_not_at_its_length() {
    let config = "server {
        listen 127.0.0.1:8080 http2;
        location / { fastcgi_pass 127.0.0.1:8081; fastcgi_request_buffering off; }
    }";
    for more_than_declared in [false, true] {
        let mut builder = Instance::http_builder(config);
        let port = builder.port(8081);
        let listener = TcpListener::bind(("127.0.0.1", port)).expect("bind the FastCGI peer");
        let (seen, mut heard) = tokio::sync::mpsc::unbounded_channel();
        let peer = std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().expect("accept");
            stream
                .set_read_timeout(Some(std::time::Duration::from_secs(10)))
                .expect("a read timeout");
            let mut buffer = Vec::new();
            let mut chunk = [0u8; 4096];
            loop {
                // Whole records only: version, type, id, length, padding, reserved.
                while buffer.len() >= 8 {
                    let len = usize::from(u16::from_be_bytes([buffer[4], buffer[5]]));
                    let end = 8 + len + usize::from(buffer[6]);
                    if buffer.len() < end {
                        break;
                    }
                    let received: Vec<u8> = buffer.drain(..end).collect();
                    if received[1] == 5 {
                        if len == 0 {
                            let _ = seen.send(Stdin::End);
                            let mut answer = record(6, b"Status: 200\r\n\r\nok");
                            answer.extend(record(3, &[0; 8]));
                            let _ = stream.write_all(&answer);
                            return;
                        }
                        let _ = seen.send(Stdin::Data(received[8..8 + len].to_vec()));
                    }
                }
                match stream.read(&mut chunk) {
                    Ok(0) | Err(_) => return,
                    Ok(count) => buffer.extend_from_slice(&chunk[..count]),
                }
            }
        });
        let server = builder.start();
        let status = crate::support::h2::runtime().block_on(async {
            let tcp = tokio::net::TcpStream::connect(("127.0.0.1", server.port()))
                .await
                .expect("the server listens");
            let (client, connection) = h2::client::handshake(tcp).await.expect("h2 handshake");
            let driver = tokio::spawn(async move {
                let _ = connection.await;
            });
            let request = http_types::Request::post(format!("http://127.0.0.1:{}/", server.port()))
                .header("content-length", "10")
                .body(())
                .expect("a request");
            let mut client = client.ready().await.expect("the connection is ready");
            let (response, mut send) = client.send_request(request, false).expect("sent");
            send.send_data(bytes::Bytes::from_static(b"0123456789"), false)
                .expect("the body");
            let wait = std::time::Duration::from_secs(5);
            let first = tokio::time::timeout(wait, heard.recv()).await;
            assert_eq!(first, Ok(Some(Stdin::Data(b"0123456789".to_vec()))));
            // All that `content-length` promised is there; the end waits for END_STREAM.
            let a_while = std::time::Duration::from_millis(300);
            let early = tokio::time::timeout(a_while, heard.recv()).await;
            assert!(early.is_err(), "the body ended early: {early:?}");
            if more_than_declared {
                send.send_data(bytes::Bytes::from_static(b"many"), true)
                    .expect("more");
            } else {
                send.send_data(bytes::Bytes::new(), true).expect("the end");
            }
            let response = tokio::time::timeout(std::time::Duration::from_secs(10), response)
                .await
                .expect("an answer in time")
                .expect("a response");
            driver.abort();
            response.status().as_u16()
        });
        if more_than_declared {
            assert_eq!(status, 400);
            assert!(heard.try_recv().is_err(), "nothing more passed on");
            server.wait_for_error_log("client intended to send body data larger than declared");
        } else {
            assert_eq!(status, 200);
            assert_eq!(heard.try_recv(), Ok(Stdin::End));
        }
        drop(server);
        let _ = peer.join();
    }
}
