//! Choosing the location: `=`, `^~`, longest prefix, regexes in order, nesting, captures.

use crate::support::Instance;

const LOCATIONS: &str = "server {
    listen 127.0.0.1:8080;
    location / { return 200 \"root\\n\"; }
    location = /exact { return 200 \"exact\\n\"; }
    location /exact { return 200 \"exact prefix\\n\"; }
    location /static/ { return 200 \"static prefix\\n\"; }
    location ^~ /static/img/ { return 200 \"no regex\\n\"; }
    location ~ \\.(png|jpg)$ { return 200 \"regex $1\\n\"; }
    location ~* \\.TXT$ { return 200 \"case-insensitive regex\\n\"; }
    location /nest/ {
        return 200 \"nest\\n\";
        location /nest/inner/ { return 200 \"inner\\n\"; }
        location ~ ^/nest/(?<name>[a-z]+)\\.x$ { return 200 \"nested regex $name\\n\"; }
    }
    location ~ ^/first/ { return 200 \"first regex\\n\"; }
    location ~ ^/first/second { return 200 \"second regex\\n\"; }
    location /longest/ { return 200 \"short\\n\"; }
    location /longest/longer/ { return 200 \"long\\n\"; }
}";

#[track_caller]
fn assert_location(server: &Instance, path: &str, expected: &str) {
    let response = server.request(format!("GET {path} HTTP/1.0\r\n\r\n"));
    assert_eq!(response.body_text(), format!("{expected}\n"), "for {path}");
}

#[test]
fn exact_match() {
    let server = Instance::http(LOCATIONS);
    assert_location(&server, "/exact", "exact");
    assert_location(&server, "/exact/x", "exact prefix");
}

#[test]
fn longest_prefix() {
    let server = Instance::http(LOCATIONS);
    assert_location(&server, "/longest/longer/x", "long");
    assert_location(&server, "/longest/x", "short");
    assert_location(&server, "/other", "root");
}

#[test]
fn regex_beats_prefix_unless_caret_tilde() {
    let server = Instance::http(LOCATIONS);
    assert_location(&server, "/static/a.png", "regex png");
    assert_location(&server, "/static/img/a.png", "no regex");
    assert_location(&server, "/static/a.css", "static prefix");
}

#[test]
fn regex_captures() {
    let server = Instance::http(LOCATIONS);
    assert_location(&server, "/any/a.jpg", "regex jpg");
}

#[test]
fn case_insensitive_regex() {
    let server = Instance::http(LOCATIONS);
    assert_location(&server, "/a.txt", "case-insensitive regex");
    assert_location(&server, "/a.Txt", "case-insensitive regex");
}

#[test]
fn first_matching_regex_wins() {
    let server = Instance::http(LOCATIONS);
    assert_location(&server, "/first/second", "first regex");
}

#[test]
fn nested_locations() {
    let server = Instance::http(LOCATIONS);
    assert_location(&server, "/nest/", "nest");
    assert_location(&server, "/nest/inner/a", "inner");
    assert_location(&server, "/nest/abc.x", "nested regex abc");
    // A top-level regex still beats the nested prefix match.
    assert_location(&server, "/nest/inner/a.png", "regex png");
}

#[test]
fn location_matching_uses_the_normalised_uri() {
    let server = Instance::http(LOCATIONS);
    assert_location(&server, "/%65xact", "exact");
    assert_location(&server, "/a/../exact", "exact");
}
