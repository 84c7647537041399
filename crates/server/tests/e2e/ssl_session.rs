//! Session resumption: `ssl_session_cache`, `ssl_session_timeout`, `ssl_session_tickets`
//! and `ssl_session_ticket_key` (nginx's 48 and 80-byte key files), `$ssl_session_id`.

use std::time::Duration;

use crate::support::Instance;
use crate::support::cli::assert_http_body_fails;
use crate::support::tls::{self, Key, Options, have_openssl, session_store};

fn resumes(port: u16, tls12: bool) -> (bool, String, String) {
    let options = Options {
        sessions: Some(session_store()),
        tls12_only: tls12,
        ..Options::default()
    };
    let mut first = tls::connect(port, &options).expect("handshake");
    let first_id = first.request(crate::support::get("/")).body_text();
    let mut second = tls::connect(port, &options).expect("handshake");
    let second_id = second.request(crate::support::get("/")).body_text();
    (tls::resumed(&second), first_id, second_id)
}

fn start(body: &str) -> Instance {
    tls::with_files(Instance::http_builder(body), |directory| {
        tls::self_signed(directory, "localhost", Key::Rsa);
    })
    .file("48.key", [7u8; 48])
    .file("80.key", [9u8; 80])
    .file("47.key", [1u8; 47])
    .start()
}

const PAIR: &str = "ssl_certificate localhost.crt; ssl_certificate_key localhost.key;
    location / { return 200 \"$ssl_session_reused $ssl_session_id\"; }";

#[test]
fn tickets_resume_sessions_and_keep_the_session_id() {
    if !have_openssl() {
        return;
    }
    let server = start(&format!("server {{ listen 127.0.0.1:8443 ssl; {PAIR} }}"));
    for tls12 in [false, true] {
        let (resumed, first, second) = resumes(server.port_of(8443), tls12);
        assert!(resumed, "TLS 1.2 only: {tls12}");
        assert!(first.starts_with(". ") && first.len() == 66, "{first}");
        assert!(second.starts_with("r ") && second.len() == 66, "{second}");
        if !tls12 {
            // A TLS 1.3 ticket carries the id of the session it resumes.
            assert_eq!(second, first.replacen('.', "r", 1));
        }
    }
}

#[test]
fn a_shared_cache_resumes_without_tickets() {
    if !have_openssl() {
        return;
    }
    let server = start(&format!(
        "server {{ listen 127.0.0.1:8443 ssl; ssl_session_tickets off;
            ssl_session_cache shared:SSL:1m; {PAIR} }}
         server {{ listen 127.0.0.1:8444 ssl; ssl_session_tickets off;
            ssl_session_cache off; {PAIR} }}"
    ));
    for tls12 in [false, true] {
        assert!(
            resumes(server.port_of(8443), tls12).0,
            "cached, TLS 1.2 only: {tls12}"
        );
        assert!(
            !resumes(server.port_of(8444), tls12).0,
            "no cache, TLS 1.2 only: {tls12}"
        );
    }
}

#[test]
fn ssl_session_timeout_ends_resumption() {
    if !have_openssl() {
        return;
    }
    let server = start(&format!(
        "server {{ listen 127.0.0.1:8443 ssl; ssl_session_timeout 1s; {PAIR} }}"
    ));
    let options = Options {
        sessions: Some(session_store()),
        ..Options::default()
    };
    let mut first = tls::connect(server.port_of(8443), &options).expect("handshake");
    first.request(crate::support::get("/"));
    std::thread::sleep(Duration::from_millis(2100));
    let late = tls::connect(server.port_of(8443), &options).expect("handshake");
    assert!(!tls::resumed(&late));
}

#[test]
fn ticket_key_files_let_servers_share_tickets_and_rotate() {
    if !have_openssl() {
        return;
    }
    // 8443 and 8444 share the current key; 8445 has a new current key and still takes
    // tickets made with the old one; 8446 knows only a different key.
    let server = start(&format!(
        "server {{ listen 127.0.0.1:8443 ssl; ssl_session_ticket_key 48.key; {PAIR} }}
         server {{ listen 127.0.0.1:8444 ssl; ssl_session_ticket_key 48.key; {PAIR} }}
         server {{ listen 127.0.0.1:8445 ssl; ssl_session_ticket_key 80.key;
            ssl_session_ticket_key 48.key; {PAIR} }}
         server {{ listen 127.0.0.1:8446 ssl; ssl_session_ticket_key 80.key; {PAIR} }}"
    ));
    let options = Options {
        sessions: Some(session_store()),
        tls12_only: true,
        ..Options::default()
    };
    let mut first = tls::connect(server.port_of(8443), &options).expect("handshake");
    first.request(crate::support::get("/"));
    let shared = tls::connect(server.port_of(8444), &options).expect("handshake");
    assert!(tls::resumed(&shared), "the same key file opens the ticket");
    let rotated = tls::connect(server.port_of(8445), &options).expect("handshake");
    assert!(
        tls::resumed(&rotated),
        "an older key still opens the ticket"
    );
    let fresh = Options {
        sessions: Some(session_store()),
        tls12_only: true,
        ..Options::default()
    };
    let mut other = tls::connect(server.port_of(8446), &fresh).expect("handshake");
    other.request(crate::support::get("/"));
    let back = tls::connect(server.port_of(8443), &fresh).expect("handshake");
    assert!(
        !tls::resumed(&back),
        "a ticket made with another key is refused"
    );
}

#[test]
fn a_ticket_key_file_of_the_wrong_size_fails() {
    if !have_openssl() {
        return;
    }
    let scratch = crate::support::TempPrefix::new();
    tls::self_signed(scratch.path(), "localhost", Key::Rsa);
    scratch.write("47.key", [1u8; 47]);
    let directory = scratch.path().display();
    let (_, output) = crate::support::cli::test_http_body(&format!(
        "server {{ listen 127.0.0.1:8443 ssl; ssl_session_ticket_key {directory}/47.key;
            ssl_certificate {directory}/localhost.crt;
            ssl_certificate_key {directory}/localhost.key; }}"
    ));
    output.assert_code(1);
    assert!(
        output
            .stderr
            .contains(&format!("\"{directory}/47.key\" must be 48 or 80 bytes")),
        "{}",
        output.stderr
    );
}

#[test]
fn a_bad_session_cache_fails() {
    assert_http_body_fails(
        "ssl_session_cache shared:SSL;",
        "invalid session cache \"shared:SSL\" in {conf}:4",
    );
}

#[test]
fn early_data_is_accepted() {
    if !have_openssl() {
        return;
    }
    let server = start(&format!(
        "server {{ listen 127.0.0.1:8443 ssl; ssl_early_data on; {PAIR} }}"
    ));
    let response = tls::get(server.port_of(8443), &Options::default(), "/");
    assert!(
        response.body_text().starts_with(". "),
        "{}",
        response.body_text()
    );
}

#[test]
fn a_session_resumes_only_on_servers_with_the_same_certificates() {
    if !have_openssl() {
        return;
    }
    // One cache and one set of ticket keys for all three servers, as nginx's session id
    // context still keeps the third apart.
    let server = tls::with_files(
        Instance::http_builder(
            "ssl_session_cache shared:SSL:1m;
             server { listen 127.0.0.1:8443 ssl;
                ssl_certificate localhost.crt; ssl_certificate_key localhost.key;
                location / { return 200 $ssl_session_reused; } }
             server { listen 127.0.0.1:8444 ssl;
                ssl_certificate localhost.crt; ssl_certificate_key localhost.key;
                location / { return 200 $ssl_session_reused; } }
             server { listen 127.0.0.1:8445 ssl;
                ssl_certificate other.crt; ssl_certificate_key other.key;
                location / { return 200 $ssl_session_reused; } }",
        ),
        |directory| {
            tls::self_signed(directory, "localhost", Key::Rsa);
            tls::self_signed(directory, "other", Key::Rsa);
        },
    )
    .start();
    for tls12 in [false, true] {
        let options = Options {
            sessions: Some(session_store()),
            tls12_only: tls12,
            ..Options::default()
        };
        let reused = |nominal: u16| {
            let mut client = tls::connect(server.port_of(nominal), &options).expect("handshake");
            client.request(crate::support::get("/")).body_text()
        };
        assert_eq!(reused(8443), ".", "TLS 1.2 only: {tls12}");
        assert_eq!(reused(8444), "r", "same certificate, TLS 1.2 only: {tls12}");
        assert_eq!(
            reused(8445),
            ".",
            "another certificate, TLS 1.2 only: {tls12}"
        );
    }
}

/// One connection with `openssl s_client` (TLS 1.3, a request, read to the close), saving
/// its session to `session` or resuming from it: the NewSessionTicket messages it
/// received, and whether it resumed.
fn tickets_of(port: u16, session: &std::path::Path, resume: bool) -> (usize, bool) {
    use std::io::Write;
    let mut child = std::process::Command::new("openssl")
        .args(["s_client", "-connect", &format!("127.0.0.1:{port}")])
        .args(["-tls1_3", "-msg", "-ign_eof"])
        .arg(if resume { "-sess_in" } else { "-sess_out" })
        .arg(session)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("run openssl s_client");
    child
        .stdin
        .take()
        .expect("a stdin pipe")
        .write_all(b"GET / HTTP/1.0\r\nHost: localhost\r\n\r\n")
        .expect("write the request");
    let output = child.wait_with_output().expect("openssl s_client ends");
    let text = String::from_utf8_lossy(&output.stdout);
    let tickets = text
        .lines()
        .filter(|line| line.starts_with("<<<") && line.contains("NewSessionTicket"))
        .count();
    (
        tickets,
        text.lines().any(|line| line.starts_with("Reused,")),
    )
}

#[test]
fn a_resumed_tls13_handshake_gets_one_ticket_as_with_openssl() {
    if !have_openssl() {
        return;
    }
    let server = start(&format!(
        "server {{ listen 127.0.0.1:8443 ssl; {PAIR} }}
         server {{ listen 127.0.0.1:8444 ssl; ssl_session_ticket_key 48.key; {PAIR} }}"
    ));
    for nominal in [8443, 8444] {
        let session = server.prefix().join(&format!("session-{nominal}.pem"));
        let port = server.port_of(nominal);
        assert_eq!(
            tickets_of(port, &session, false),
            (2, false),
            "full, {nominal}"
        );
        assert_eq!(
            tickets_of(port, &session, true),
            (1, true),
            "resumed, {nominal}"
        );
        assert_eq!(
            tickets_of(port, &session, true),
            (1, true),
            "again, {nominal}"
        );
    }
    // A ticket the server cannot open is a full handshake, with two.
    let session = server.prefix().join("session-8443.pem");
    assert_eq!(tickets_of(server.port_of(8444), &session, true), (2, false));
}

#[test]
fn ssl_conf_command_sets_the_pair_and_the_ticket_option() {
    if !have_openssl() {
        return;
    }
    let server = tls::with_files(
        Instance::http_builder(&format!(
            "server {{ listen 127.0.0.1:8443 ssl;
                ssl_session_tickets off; ssl_session_cache off;
                ssl_conf_command Options SessionTicket;
                ssl_conf_command Certificate override.crt;
                ssl_conf_command PrivateKey override.key;
                {PAIR} }}
             server {{ listen 127.0.0.1:8444 ssl;
                ssl_session_cache off;
                ssl_conf_command Options -SessionTicket;
                {PAIR} }}"
        )),
        |directory| {
            tls::self_signed(directory, "localhost", Key::Rsa);
            tls::self_signed(directory, "override", Key::Rsa);
        },
    )
    .start();
    let client = tls::connect(server.port_of(8443), &Options::default()).expect("handshake");
    assert_eq!(tls::peer_common_name(&client), "override");
    let client = tls::connect(server.port_of(8444), &Options::default()).expect("handshake");
    assert_eq!(tls::peer_common_name(&client), "localhost");
    for tls12 in [false, true] {
        assert!(
            resumes(server.port_of(8443), tls12).0,
            "Options SessionTicket over ssl_session_tickets off, TLS 1.2 only: {tls12}"
        );
        assert!(
            !resumes(server.port_of(8444), tls12).0,
            "Options -SessionTicket, TLS 1.2 only: {tls12}"
        );
    }
}
