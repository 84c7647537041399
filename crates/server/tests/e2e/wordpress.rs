//! A real WordPress (Debian's package) on a real MariaDB, behind Portico with the server
//! WordPress's nginx documentation gives: the install posted through Portico, the front
//! page, a post by its pretty permalink, WordPress's 404, the login and the dashboard, and
//! static files from disk. Skipped, with a message, where PHP-FPM, MariaDB or WordPress is
//! not installed.

use crate::support::app_servers::TempDir;
use crate::support::mariadb::MariaDb;
use crate::support::php_fpm::{Listen, PhpFpm, conf_file};
use crate::support::wordpress::{self, PHP_SETTINGS, Site};
use crate::support::{Client, Instance, Response};

const TITLE: &str = "Portico e2e WordPress";
const ADMIN: &str = "admin";
const ADMIN_PASSWORD: &str = "portico-e2e-Admin-password-7";

#[test]
fn wordpress_installs_serves_pages_and_logs_in() {
    let Some(php_fpm) = PhpFpm::find() else {
        return;
    };
    let Some(mariadb) = MariaDb::find() else {
        return;
    };
    if !Site::is_installed() {
        return;
    }
    let database = MariaDb::start(&mariadb);
    let site = Site::copy(&database);
    let php = PhpFpm::start(
        &php_fpm,
        TempDir::new("e2e-wordpress-php-fpm"),
        Listen::UnixSocket,
        PHP_SETTINGS,
    );
    let config = format!(
        "include mime.types;
         access_log logs/access.log;
         upstream php {{ server unix:{socket}; }}
         {server}",
        socket = php.socket(),
        server = wordpress::documented_server(8080, &site.root()),
    );
    let read_conf = |name: &str| std::fs::read_to_string(conf_file(name)).expect("a stock file");
    let server = Instance::http_builder(&config)
        .file("mime.types", read_conf("mime.types"))
        .file("fastcgi_params", read_conf("fastcgi_params"))
        .start();
    let mut browser = Browser::new(server.port());

    install(&browser);
    // WordPress's own request, with its own user agent.
    let checked = server.wait_for_line("logs/access.log", "\"WordPress/");
    assert!(
        checked.contains("/hello-world/ HTTP/1.1\" 200 "),
        "{checked}"
    );
    pages(&browser);
    log_in(&mut browser);
    let css = browser.get("/wp-includes/css/dashicons.min.css");
    assert_eq!(css.status, 200);
    assert!(css.body == site.read("/wp-includes/css/dashicons.min.css"));
    assert_eq!(css.header("Content-Type"), Some("text/css"));
    assert_eq!(css.header("Cache-Control"), Some("max-age=315360000"));
    assert_eq!(css.header("X-Powered-By"), None, "PHP never saw it");

    // WordPress got every CGI variable it reads: PHP warned about nothing.
    let log = server.error_log();
    assert!(!log.contains("FastCGI sent in stderr"), "{log}");
}

/// Before the install every page sends the visitor to it; the install form is posted
/// through Portico. While it runs WordPress requests a post's pretty permalink through
/// Portico, and keeps pretty permalinks only when that answers.
fn install(browser: &Browser) {
    let front = browser.get("/");
    assert_eq!(front.status, 302, "{}", front.body_text());
    assert_eq!(
        front.header("Location"),
        Some(browser.url("/wp-admin/install.php").as_str())
    );
    let installed = browser.post(
        "/wp-admin/install.php?step=2",
        &[
            ("weblog_title", TITLE),
            ("user_name", ADMIN),
            ("admin_password", ADMIN_PASSWORD),
            ("admin_password2", ADMIN_PASSWORD),
            ("admin_email", "admin@wordpress.test"),
            ("blog_public", "0"),
            ("language", ""),
            ("Submit", "Install WordPress"),
        ],
    );
    assert_eq!(installed.status, 200, "{}", installed.body_text());
    assert!(
        installed.body_text().contains("<h1>Success!</h1>"),
        "{}",
        installed.body_text()
    );
}

/// The front page, the first post by `?p=1` and by its permalink, and a missing slug.
fn pages(browser: &Browser) {
    let front = browser.get("/");
    assert_eq!(front.status, 200, "{}", front.head_text());
    assert_eq!(
        front.header("Content-Type"),
        Some("text/html; charset=UTF-8")
    );
    assert!(
        front
            .body_text()
            .contains(&format!("<title>{TITLE}</title>")),
        "{}",
        front.body_text()
    );

    let by_id = browser.get("/?p=1");
    assert_eq!(by_id.status, 301, "{}", by_id.head_text());
    let location = by_id.header("Location").expect("a Location");
    let permalink = location
        .strip_prefix(&browser.url(""))
        .unwrap_or_else(|| panic!("{location} is on this site"));
    // /YYYY/MM/DD/hello-world/: WordPress's first choice of pretty permalinks.
    let parts: Vec<&str> = permalink.split('/').collect();
    assert!(
        parts.len() == 6
            && parts[1..4]
                .iter()
                .all(|part| part.chars().all(|c| c.is_ascii_digit()))
            && parts[4] == "hello-world",
        "{permalink}"
    );
    let post = browser.get(permalink);
    assert_eq!(post.status, 200, "{}", post.head_text());
    assert!(
        post.body_text()
            .contains(&format!("<title>Hello world! &#8211; {TITLE}</title>")),
        "{}",
        post.body_text()
    );

    // WordPress's own page: without an `error_page 404`, the intercepted status is passed.
    let missing = browser.get("/no-such-post/");
    assert_eq!(missing.status, 404, "{}", missing.head_text());
    assert!(
        missing
            .body_text()
            .contains(&format!("<title>Page not found &#8211; {TITLE}</title>")),
        "{}",
        missing.body_text()
    );
}

/// The dashboard sends a visitor to the login; the login form, posted with the test
/// cookie WordPress set, answers with the session cookies, and they open the dashboard.
fn log_in(browser: &mut Browser) {
    let dashboard = browser.get("/wp-admin/");
    assert_eq!(dashboard.status, 302, "{}", dashboard.head_text());
    let location = dashboard.header("Location").unwrap_or_default();
    assert!(
        location.starts_with(&browser.url("/wp-login.php?redirect_to=")),
        "{location}"
    );

    let form = browser.get("/wp-login.php");
    assert_eq!(form.status, 200, "{}", form.head_text());
    browser.keep_cookies(&form);
    assert!(
        browser.has_cookie("wordpress_test_cookie"),
        "{}",
        form.head_text()
    );
    let redirect_to = browser.url("/wp-admin/");
    let logged_in = browser.post(
        "/wp-login.php",
        &[
            ("log", ADMIN),
            ("pwd", ADMIN_PASSWORD),
            ("wp-submit", "Log In"),
            ("redirect_to", &redirect_to),
            ("testcookie", "1"),
        ],
    );
    assert_eq!(logged_in.status, 302, "{}", logged_in.body_text());
    assert_eq!(logged_in.header("Location"), Some(redirect_to.as_str()));
    browser.keep_cookies(&logged_in);
    assert!(
        browser.has_cookie("wordpress_logged_in_"),
        "{}",
        logged_in.head_text()
    );

    let dashboard = browser.get("/wp-admin/");
    assert_eq!(dashboard.status, 200, "{}", dashboard.head_text());
    assert!(
        dashboard.body_text().contains(&format!(
            "<title>Dashboard &lsaquo; {TITLE} &#8212; WordPress</title>"
        )),
        "{}",
        dashboard.body_text()
    );
}

/// Requests to the site as a browser makes them: `Host` is the address, and the cookies
/// the site set are sent back.
struct Browser {
    port: u16,
    cookies: Vec<(String, String)>,
}

impl Browser {
    fn new(port: u16) -> Browser {
        Browser {
            port,
            cookies: Vec::new(),
        }
    }

    /// The absolute URL of `path` (WordPress takes its address from the install's `Host`).
    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    fn get(&self, path: &str) -> Response {
        self.send("GET", path, None)
    }

    /// Posts `fields` as a form (`application/x-www-form-urlencoded`).
    fn post(&self, path: &str, fields: &[(&str, &str)]) -> Response {
        let body = fields
            .iter()
            .map(|(name, value)| format!("{}={}", form_encode(name), form_encode(value)))
            .collect::<Vec<_>>()
            .join("&");
        self.send("POST", path, Some(&body))
    }

    fn send(&self, method: &str, path: &str, form: Option<&str>) -> Response {
        let mut request = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n",
            self.port
        );
        if !self.cookies.is_empty() {
            let pairs: Vec<String> = self
                .cookies
                .iter()
                .map(|(name, value)| format!("{name}={value}"))
                .collect();
            request.push_str(&format!("Cookie: {}\r\n", pairs.join("; ")));
        }
        if let Some(form) = form {
            request.push_str(&format!(
                "Content-Type: application/x-www-form-urlencoded\r\n\
                 Content-Length: {}\r\n\r\n{form}",
                form.len()
            ));
        } else {
            request.push_str("\r\n");
        }
        Client::connect(self.port).request(request)
    }

    /// Keeps the name and value of each `Set-Cookie`, the last one of a name winning.
    fn keep_cookies(&mut self, response: &Response) {
        for set_cookie in response.header_all("Set-Cookie") {
            let pair = set_cookie.split(';').next().unwrap_or_default();
            let Some((name, value)) = pair.split_once('=') else {
                continue;
            };
            self.cookies.retain(|(kept, _)| kept != name);
            self.cookies.push((name.to_owned(), value.to_owned()));
        }
    }

    fn has_cookie(&self, name_prefix: &str) -> bool {
        self.cookies
            .iter()
            .any(|(name, _)| name.starts_with(name_prefix))
    }
}

/// A form field's name or value, percent-encoded (space as `+`).
fn form_encode(text: &str) -> String {
    let mut encoded = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'*' => {
                encoded.push(char::from(byte));
            }
            b' ' => encoded.push('+'),
            _ => encoded.push_str(&format!("%{byte:02X}")),
        }
    }
    encoded
}
