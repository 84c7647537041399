//! `modern_browser`, `ancient_browser`, their values and `$modern_browser`,
//! `$ancient_browser`, `$msie`; `msie_refresh`.

use crate::support::Instance;
use crate::support::cli::assert_http_body_fails;

const CONF: &str = "
server {
    listen 127.0.0.1:8080;
    modern_browser msie 5.5;
    modern_browser gecko 1.0.0;
    modern_browser opera 9.0;
    ancient_browser Lynx netscape4;
    modern_browser_value modern;
    ancient_browser_value old;
    location / { return 200 \"[$modern_browser|$ancient_browser|$msie]\"; }
    location /unlisted {
        modern_browser unlisted;
        return 200 \"[$modern_browser|$ancient_browser|$msie]\";
    }
    location /redirect {
        msie_refresh on;
        return 302 \"/to place\";
    }
    location /plain { return 302 /to; }
}";

fn with_agent(server: &Instance, path: &str, agent: Option<&str>) -> String {
    let header = agent.map_or(String::new(), |agent| format!("User-Agent: {agent}\r\n"));
    server
        .request(format!(
            "GET {path} HTTP/1.0\r\nHost: localhost\r\n{header}\r\n"
        ))
        .body_text()
}

#[test]
fn browsers_are_judged_by_their_user_agent() {
    let server = Instance::http(CONF);
    let msie6 = "Mozilla/4.0 (compatible; MSIE 6.0; Windows NT 5.1)";
    assert_eq!(with_agent(&server, "/", Some(msie6)), "[modern||1]");
    let msie5 = "Mozilla/4.0 (compatible; MSIE 5.01; Windows NT 5.0)";
    assert_eq!(with_agent(&server, "/", Some(msie5)), "[|old|1]");
    // Opera names MSIE too, but is judged as Opera, and is not MSIE.
    let opera = "Mozilla/4.0 (compatible; MSIE 6.0; Windows NT 5.1) Opera 8.50";
    assert_eq!(with_agent(&server, "/", Some(opera)), "[|old|]");
    let firefox = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0";
    assert_eq!(with_agent(&server, "/", Some(firefox)), "[modern||]");
    assert_eq!(with_agent(&server, "/", Some("Lynx/2.8.9rel.1")), "[|old|]");
    assert_eq!(
        with_agent(&server, "/", Some("Mozilla/4.08 [en] (WinNT; U)")),
        "[|old|]"
    );
    assert_eq!(with_agent(&server, "/", Some("curl/8.5.0")), "[|old|]");
    assert_eq!(with_agent(&server, "/", None), "[|old|]");
    assert_eq!(
        with_agent(&server, "/unlisted", Some("curl/8.5.0")),
        "[modern||]"
    );
    assert_eq!(with_agent(&server, "/unlisted", None), "[modern||]");
    assert_eq!(
        with_agent(&server, "/unlisted", Some("Lynx/2.8")),
        "[|old|]"
    );
}

#[test]
fn msie_refresh_answers_msie_with_a_refresh_page() {
    let server = Instance::http(CONF);
    let msie = "GET /redirect HTTP/1.0\r\nUser-Agent: Mozilla/4.0 (compatible; MSIE 6.0)\r\n\r\n";
    let response = server.request(msie);
    assert_eq!(response.status, 200);
    assert_eq!(response.header("Location"), None);
    assert_eq!(response.header("Content-Type"), Some("text/html"));
    assert_eq!(
        response.body_text(),
        "<html><head><meta http-equiv=\"Refresh\" content=\"0; URL=/to%20place\">\
         </head><body></body></html>\r\n"
    );
    // Other browsers, and locations without it, get the redirect.
    let other = server.request("GET /redirect HTTP/1.0\r\nUser-Agent: curl\r\n\r\n");
    assert_eq!(other.status, 302);
    let plain = server
        .request("GET /plain HTTP/1.0\r\nUser-Agent: Mozilla/4.0 (compatible; MSIE 6.0)\r\n\r\n");
    assert_eq!(plain.status, 302);
}

#[test]
fn bad_browser_lines_fail_the_load() {
    assert_http_body_fails(
        "modern_browser lynx 2.0;",
        "unknown browser name \"lynx\" in {conf}:4",
    );
    assert_http_body_fails(
        "modern_browser msie 5.x;",
        "invalid browser version \"5.x\" in {conf}:4",
    );
}
