//! `userid` and its directives, `$uid_got`, `$uid_set`, `$uid_reset`: the cookie, its
//! attributes and mark, the service word, requests that bring a cookie, and resets.

use crate::support::Instance;
use crate::support::cli::assert_http_body_fails;

const CONF: &str = "
map $arg_reset $uid_reset { default 0; yes 1; log log; }
server {
    listen 127.0.0.1:8080;
    userid on;
    add_header X-Got $uid_got;
    add_header X-Set $uid_set;
    error_log logs/reset.log notice;
    location / { return 200 ok; }
    location /attributes {
        userid_name visitor;
        userid_domain example.org;
        userid_path /attributes;
        userid_expires max;
        userid_flags secure httponly samesite=lax;
        userid_p3p 'CP=\"CUR ADM\"';
        userid_mark 9;
        return 200 ok;
    }
    location /service { userid_service 65534; return 200 ok; }
    location /v1 { userid v1; return 200 ok; }
    location /log { userid log; return 200 ok; }
}";

fn cookie_of(set_cookie: &str) -> &str {
    let pair = set_cookie.split(';').next().unwrap_or_default();
    pair.split_once('=').map_or("", |(_, value)| value)
}

#[test]
fn a_cookie_is_set_once_and_read_back() {
    let server = Instance::http(CONF);
    let first = server.get("/");
    let set_cookie = first.header("Set-Cookie").expect("a cookie").to_owned();
    assert!(
        set_cookie.starts_with("uid=") && set_cookie.ends_with("==; path=/"),
        "{set_cookie}"
    );
    let set = first.header("X-Set").expect("$uid_set").to_owned();
    // The service word is the server's address, as nginx on little-endian machines shows it.
    assert!(set.starts_with("uid=0100007F") && set.len() == 36, "{set}");
    assert_eq!(first.header("X-Got"), None);
    let again = server.request(format!(
        "GET / HTTP/1.0\r\nCookie: other=1; uid={}\r\n\r\n",
        cookie_of(&set_cookie)
    ));
    assert_eq!(again.header("Set-Cookie"), None);
    assert_eq!(again.header("X-Got"), Some(set.as_str()));
    assert_eq!(again.header("X-Set"), None);
    // `$uid_reset` set: a new identifier, and with `log` a line about it.
    let reset = server.request(format!(
        "GET /?reset=log HTTP/1.0\r\nCookie: uid={}\r\n\r\n",
        cookie_of(&set_cookie)
    ));
    let new = reset.header("X-Set").expect("a new identifier");
    assert_ne!(new, set);
    server.wait_for_line(
        "logs/reset.log",
        &format!("userid cookie \"{set}\" was reset"),
    );
}

#[test]
fn the_cookie_attributes_mark_and_service() {
    let server = Instance::http(CONF);
    let response = server.get("/attributes");
    let cookie = response.header("Set-Cookie").expect("a cookie");
    let value = cookie_of(cookie);
    assert!(value.len() == 24 && value.ends_with("9="), "{cookie}");
    assert_eq!(
        &cookie[cookie.find(';').expect("attributes")..],
        "; expires=Thu, 31-Dec-37 23:55:55 GMT; domain=example.org; path=/attributes; \
         secure; httponly; samesite=lax"
    );
    assert_eq!(response.header("P3P"), Some("CP=\"CUR ADM\""));
    // A cookie without the location's mark is sent again, with the same identifier.
    let unmarked = format!("{}==", &value[..22]);
    let again = server.request(format!(
        "GET /attributes HTTP/1.0\r\nCookie: visitor={unmarked}\r\n\r\n"
    ));
    assert_eq!(
        cookie_of(again.header("Set-Cookie").expect("marked again")),
        value
    );
    let service = server.get("/service");
    assert!(
        service
            .header("X-Set")
            .expect("$uid_set")
            .starts_with("uid=FEFF0000"),
        "{:?}",
        service.header("X-Set")
    );
    let v1 = server.get("/v1");
    assert!(
        v1.header("X-Set")
            .expect("$uid_set")
            .starts_with("uid=00000000")
    );
    let log = server.get("/log");
    assert_eq!(log.header("Set-Cookie"), None);
}

#[test]
fn bad_userid_lines_fail_the_load() {
    assert_http_body_fails("userid maybe;", "invalid value \"maybe\" in {conf}:4");
    assert_http_body_fails("userid_mark ab;", "incorrect marker \"ab\" in {conf}:4");
    assert_http_body_fails(
        "userid_flags samesite=sometimes;",
        "invalid value \"samesite=sometimes\" in {conf}:4",
    );
}
