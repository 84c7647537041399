//! `secure_link`, `secure_link_md5`, `secure_link_secret`, `$secure_link` and
//! `$secure_link_expires`: both modes, expiry, malformed checksums, inheritance, and the
//! mixing nginx refuses. The checksums were computed once for these fixed texts.

use crate::support::Instance;
use crate::support::cli::assert_http_body_fails;

const CONF: &str = "
server {
    listen 127.0.0.1:8080;
    secure_link $arg_h,$arg_e;
    location / {
        secure_link_md5 secret$uri$arg_e;
        return 200 \"[$secure_link|$secure_link_expires]\";
    }
    location /plain/ {
        secure_link $arg_h;
        secure_link_md5 secret$uri;
        return 200 \"[$secure_link]\";
    }
    location /p/ {
        secure_link_secret secret;
        return 200 \"[$secure_link]\";
        location /p/own/ {
            secure_link $arg_h;
            secure_link_md5 secret/page.html;
            return 200 \"[$secure_link]\";
        }
    }
    location /none { return 200 \"x${secure_link}${secure_link_expires}x\"; }
}";

/// `md5("secret/page.html")` in URL-safe base64 without padding.
const PAGE: &str = "Ua8NYcFar5M7gaewYOxZZQ";

#[test]
fn the_md5_mode_with_and_without_expiry() {
    let server = Instance::http(CONF);
    let body = |path: &str| server.get(path).body_text();
    assert_eq!(body(&format!("/plain/page.html?h={PAGE}")), "[]");
    assert_eq!(body(&format!("/page.html?h={PAGE}")), "[|]");
    assert_eq!(
        body("/e.html?h=6ItiM2mxVuaHWIbjGM7XDA&e=4102444800"),
        "[1|4102444800]"
    );
    assert_eq!(
        body("/e.html?h=-ZzqCC9W3YUFaj1nR6lG_w&e=1000000000"),
        "[0|1000000000]"
    );
    assert_eq!(
        body("/e.html?h=6ItiM2mxVuaHWIbjGM7XDA&e=4102444801"),
        "[|4102444801]"
    );
}

#[test]
fn checksums_with_or_without_padding_and_malformed_ones() {
    let server = Instance::http(CONF);
    let body = |path: &str| server.get(path).body_text();
    // The server-level `secure_link` has an expiry part; `/plain/` has its own.
    assert_eq!(body(&format!("/plain/page.html?h={PAGE}")), "[]");
    let server_plain = Instance::http(
        "server { listen 127.0.0.1:8080; location / { secure_link $arg_h;
            secure_link_md5 secret$uri; return 200 \"[$secure_link]\"; } }",
    );
    let plain = |path: &str| server_plain.get(path).body_text();
    assert_eq!(plain(&format!("/page.html?h={PAGE}")), "[1]");
    assert_eq!(plain(&format!("/page.html?h={PAGE}==")), "[1]");
    assert_eq!(plain(&format!("/page.html?h={PAGE}QQ")), "[]");
    assert_eq!(plain("/page.html?h=BADHASHLENGTH"), "[]");
    assert_eq!(plain("/page.html"), "[]");
    assert_eq!(plain(&format!("/other.html?h={PAGE}")), "[]");
}

#[test]
fn the_secret_mode_and_inheritance() {
    let server = Instance::http(CONF);
    let body = |path: &str| server.get(path).body_text();
    assert_eq!(
        body("/p/ad3ff9f7feae33fb0dee5811c25d2546/page.html"),
        "[page.html]"
    );
    assert_eq!(
        body("/p/AD3FF9F7FEAE33FB0DEE5811C25D2546/page.html"),
        "[page.html]"
    );
    assert_eq!(body("/p/ad3ff9f7feae33fb0dee5811c25d2547/page.html"), "[]");
    assert_eq!(body("/p/page.html"), "[]");
    // A level with `secure_link` does not inherit the secret.
    assert_eq!(body(&format!("/p/own/x?h={PAGE}")), "[1]");
    assert_eq!(body("/none"), "xx");
}

#[test]
fn the_secret_cannot_be_mixed_with_the_md5_mode() {
    assert_http_body_fails(
        "server { location / { secure_link $arg_h; secure_link_secret s; } }",
        "\"secure_link_secret\" cannot be mixed with \"secure_link\" and \"secure_link_md5\" in {conf}:4",
    );
}
