//! `auth_basic` and `auth_basic_user_file`: the 401 challenge with the realm, users and
//! passwords in the htpasswd formats, `off`, and `satisfy any` with an address rule.

use crate::support::Instance;

const USERS: &str = concat!(
    "# users\n",
    "plain:{PLAIN}one\n",
    "apr:$apr1$abcdefgh$h9FWgUz3n9YxylKLlR5SQ/\n",
    "md5:$1$xyz$Qia9Wq6FxQkYcwNWMk/RM0\n",
);

fn with_credentials(path: &str, user_password: &str) -> String {
    let encoded = base64(user_password.as_bytes());
    format!(
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nAuthorization: Basic {encoded}\r\n\r\n"
    )
}

fn base64(input: &[u8]) -> String {
    const TABLE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in input.chunks(3) {
        let bytes = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let value = (u32::from(bytes[0]) << 16) | (u32::from(bytes[1]) << 8) | u32::from(bytes[2]);
        for index in 0..4 {
            if index <= chunk.len() {
                out.push(TABLE[((value >> (18 - 6 * index)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[test]
fn auth_basic_challenges_and_checks_passwords() {
    let mut server = Instance::http_builder(
        "server {
            listen 127.0.0.1:8080;
            auth_basic \"Team \\\"A\\\"\";
            auth_basic_user_file htpasswd;
            root site;
            add_header X-User $remote_user;
            location /open/ { auth_basic off; }
            location /nofile/ { auth_basic_user_file missing; }
        }",
    )
    .file("htpasswd", USERS)
    .file("site/index.html", "hello")
    .file("site/open/index.html", "open")
    .file("site/nofile/index.html", "nofile")
    .start();
    server.expect_log("password mismatch");
    server.expect_log("was not found in");
    server.expect_log("failed (2: No such file or directory)");
    let challenge = server.get("/");
    assert_eq!(challenge.status, 401);
    assert_eq!(
        challenge.header("WWW-Authenticate"),
        Some("Basic realm=\"Team \"A\"\"")
    );
    for user in ["plain:one", "apr:secret", "md5:secret"] {
        let response = server.request(with_credentials("/", user));
        assert_eq!(response.status, 200, "{user}");
        assert_eq!(response.body, b"hello");
        assert_eq!(response.header("X-User"), user.split(':').next());
    }
    assert_eq!(
        server.request(with_credentials("/", "plain:two")).status,
        401
    );
    assert_eq!(
        server.request(with_credentials("/", "nobody:one")).status,
        401
    );
    assert_eq!(server.get("/open/").body, b"open");
    assert_eq!(
        server
            .request(with_credentials("/nofile/", "plain:one"))
            .status,
        403
    );
}

#[test]
fn satisfy_any_lets_an_allowed_address_in_without_a_password() {
    let server = Instance::http_builder(
        "server {
            listen 127.0.0.1:8080;
            auth_basic realm;
            auth_basic_user_file htpasswd;
            root site;
            location /any/ { satisfy any; allow 127.0.0.1; deny all; }
            location /all/ { allow 127.0.0.1; deny all; }
            location /denied/ { satisfy any; deny all; }
        }",
    )
    .file("htpasswd", USERS)
    .file("site/any/index.html", "in")
    .file("site/all/index.html", "in")
    .file("site/denied/index.html", "in")
    .start();
    assert_eq!(server.get("/any/").status, 200);
    assert_eq!(
        server.get("/all/").status,
        401,
        "satisfy all: the password too"
    );
    assert_eq!(
        server.get("/denied/").status,
        401,
        "the password may still let in"
    );
    assert_eq!(
        server
            .request(with_credentials("/denied/", "plain:one"))
            .status,
        200
    );
}

/// `auth_delay`: a 401 waits the delay before it is answered; an accepted request does not.
#[test]
fn auth_delay_holds_back_only_refusals() {
    let mut server = Instance::http_builder(
        "server {
            listen 127.0.0.1:8080;
            auth_delay 400ms;
            auth_basic closed;
            auth_basic_user_file htpasswd;
            root site;
        }",
    )
    .file("htpasswd", USERS)
    .file("site/index.html", "hello")
    .start();
    server.expect_log("password mismatch");
    let started = std::time::Instant::now();
    assert_eq!(
        server.request(with_credentials("/", "plain:two")).status,
        401
    );
    assert!(started.elapsed() >= std::time::Duration::from_millis(400));
    let started = std::time::Instant::now();
    assert_eq!(
        server.request(with_credentials("/", "plain:one")).status,
        200
    );
    assert!(started.elapsed() < std::time::Duration::from_millis(400));
}
