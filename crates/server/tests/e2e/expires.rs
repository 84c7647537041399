//! `expires`: the `Expires` and `Cache-Control` headers of every form, the statuses they
//! apply to, inheritance, and values from variables (nginx-tests `headers.t`, without its
//! proxy cases).

use crate::support::{Instance, Response, get};

const EXPIRES: &str = "
server {
    listen 127.0.0.1:8080;
    root html;
    expires epoch;
    location /t1 { }
    location /nx { }
    location /epoch { expires epoch; }
    location /max { expires max; }
    location /off { expires off; }
    location /access {
        expires 2048;
        location /access_inner { }
    }
    location /zero { expires 0; }
    location /negative { expires -2048; }
    location /daily { expires @15h30m33s; }
    location /modified { expires modified 2048; }
    location /modified_negative { expires modified -1h; }
    location /var {
        expires $arg_e;
        location /var_inner { }
        location /var_modified { expires modified $arg_e; }
    }
    location /redirect { expires 1h; return 302 /elsewhere; }
    location /error { expires 1h; return 500; }
    location /created { expires 1h; return 201 made; }
    location /cache_control { expires 1h; add_header Cache-Control private; }
}";

fn start() -> Instance {
    let mut builder = Instance::http_builder(EXPIRES);
    for name in [
        "t1",
        "epoch",
        "max",
        "off",
        "access",
        "access_inner",
        "zero",
        "negative",
        "daily",
        "modified",
        "modified_negative",
        "var",
        "var_inner",
        "var_modified",
        "cache_control",
    ] {
        builder = builder.file(&format!("html/{name}"), "");
    }
    builder.start()
}

/// Seconds since the epoch of an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`).
fn unix_seconds(date: &str) -> i64 {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let parts: Vec<&str> = date.split([' ', ':']).collect();
    assert_eq!(parts.len(), 8, "not an IMF-fixdate: {date}");
    let number = |index: usize| -> i64 { parts[index].parse().expect("a number") };
    let (day, year) = (number(1), number(3));
    let month = MONTHS.iter().position(|m| *m == parts[2]).expect("a month") as i64 + 1;
    // Days from the civil date (proleptic Gregorian), with March as the first month.
    let (shifted_year, shifted_month) = if month <= 2 {
        (year - 1, month + 9)
    } else {
        (year, month - 3)
    };
    let era = shifted_year.div_euclid(400);
    let year_of_era = shifted_year - era * 400;
    let day_of_year = (153 * shifted_month + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    let days = era * 146_097 + day_of_era - 719_468;
    days * 86_400 + number(4) * 3600 + number(5) * 60 + number(6)
}

/// `Expires` minus `Date`, in seconds.
fn expires_after_date(response: &Response) -> i64 {
    let expires = response.header("Expires").expect("an Expires header");
    let date = response.header("Date").expect("a Date header");
    unix_seconds(expires) - unix_seconds(date)
}

#[test]
fn date_parsing_helper() {
    assert_eq!(unix_seconds("Thu, 01 Jan 1970 00:00:01 GMT"), 1);
    assert_eq!(unix_seconds("Thu, 31 Dec 2037 23:55:55 GMT"), 2_145_916_555);
    assert_eq!(unix_seconds("Sat, 21 Nov 2026 23:29:13 GMT"), 1_795_303_753);
}

#[test]
fn on_good_statuses_only() {
    let server = start();
    let response = server.get("/t1");
    assert_eq!(response.status, 200);
    assert_eq!(response.header("Cache-Control"), Some("no-cache"));
    let missing = server.get("/nx");
    assert_eq!(missing.status, 404);
    assert!(!missing.has_header("Cache-Control"));
    assert!(!missing.has_header("Expires"));
    let redirect = server.get("/redirect");
    assert_eq!(redirect.status, 302);
    assert_eq!(redirect.header("Cache-Control"), Some("max-age=3600"));
    let created = server.get("/created");
    assert_eq!(created.status, 201);
    assert_eq!(created.header("Cache-Control"), Some("max-age=3600"));
    let error = server.get("/error");
    assert_eq!(error.status, 500);
    assert!(!error.has_header("Expires"));
}

#[test]
fn epoch_max_and_off() {
    let server = start();
    let epoch = server.get("/epoch");
    assert_eq!(
        epoch.header("Expires"),
        Some("Thu, 01 Jan 1970 00:00:01 GMT")
    );
    assert_eq!(epoch.header("Cache-Control"), Some("no-cache"));
    let max = server.get("/max");
    assert_eq!(max.header("Expires"), Some("Thu, 31 Dec 2037 23:55:55 GMT"));
    assert_eq!(max.header("Cache-Control"), Some("max-age=315360000"));
    let off = server.get("/off");
    assert!(!off.has_header("Expires"));
    assert!(!off.has_header("Cache-Control"));
}

#[test]
fn relative_to_the_response() {
    let server = start();
    for path in ["/access", "/access_inner"] {
        let response = server.get(path);
        assert_eq!(response.header("Cache-Control"), Some("max-age=2048"));
        assert_eq!(expires_after_date(&response), 2048, "{path}");
    }
    let zero = server.get("/zero");
    assert_eq!(zero.header("Cache-Control"), Some("max-age=0"));
    assert_eq!(zero.header("Expires"), zero.header("Date"));
    let negative = server.get("/negative");
    assert_eq!(negative.header("Cache-Control"), Some("no-cache"));
    assert_eq!(expires_after_date(&negative), -2048);
}

#[test]
fn the_header_order_follows_nginx() {
    let server = start();
    let response = server.get("/access");
    let names: Vec<&str> = response.headers.iter().map(|(n, _)| n.as_str()).collect();
    let at = |name: &str| names.iter().position(|n| *n == name).unwrap();
    assert!(at("ETag") < at("Expires"));
    assert_eq!(at("Expires") + 1, at("Cache-Control"));
}

#[test]
fn daily_time() {
    let server = start();
    let response = server.get("/daily");
    let expires = response.header("Expires").unwrap();
    assert!(expires.ends_with(":33 GMT"), "{expires}");
    let ahead = expires_after_date(&response);
    assert!((1..=86_400).contains(&ahead), "{ahead}");
    assert_eq!(
        response.header("Cache-Control"),
        Some(format!("max-age={ahead}").as_str())
    );
}

#[test]
fn relative_to_last_modified() {
    let server = start();
    let response = server.get("/modified");
    let modified = unix_seconds(response.header("Last-Modified").unwrap());
    let expires = unix_seconds(response.header("Expires").unwrap());
    assert_eq!(expires - modified, 2048);
    let date = unix_seconds(response.header("Date").unwrap());
    assert_eq!(
        response.header("Cache-Control"),
        Some(format!("max-age={}", expires - date).as_str())
    );
    // The file was written just now: an hour before that is past.
    let negative = server.get("/modified_negative");
    assert_eq!(negative.header("Cache-Control"), Some("no-cache"));
}

#[test]
fn values_from_variables() {
    let server = start();
    let epoch = server.get("/var?e=epoch");
    assert_eq!(
        epoch.header("Expires"),
        Some("Thu, 01 Jan 1970 00:00:01 GMT")
    );
    assert_eq!(
        server.get("/var?e=max").header("Cache-Control"),
        Some("max-age=315360000")
    );
    assert!(!server.get("/var?e=off").has_header("Expires"));
    assert_eq!(
        server.get("/var?e=2048").header("Cache-Control"),
        Some("max-age=2048")
    );
    assert_eq!(
        server.get("/var_inner?e=2048").header("Cache-Control"),
        Some("max-age=2048")
    );
    assert_eq!(
        server.get("/var?e=-2048").header("Cache-Control"),
        Some("no-cache")
    );
    let daily = server.get("/var?e=@33s");
    assert!(daily.header("Expires").unwrap().ends_with(":33 GMT"));
    let modified = server.get("/var_modified?e=2048");
    let from_modified = unix_seconds(modified.header("Expires").unwrap())
        - unix_seconds(modified.header("Last-Modified").unwrap());
    assert_eq!(from_modified, 2048);
    // Values that do not parse give no headers, and no error.
    for path in ["/var", "/var?e=bad", "/var_modified?e=epoch", "/var?e=@25h"] {
        let response = server.get(path);
        assert_eq!(response.status, 200, "{path}");
        assert!(!response.has_header("Expires"), "{path}");
        assert!(!response.has_header("Cache-Control"), "{path}");
    }
}

#[test]
fn add_header_cache_control_comes_after() {
    let server = start();
    let response = server.request(get("/cache_control"));
    assert_eq!(
        response.header_all("Cache-Control"),
        vec!["max-age=3600", "private"]
    );
}
