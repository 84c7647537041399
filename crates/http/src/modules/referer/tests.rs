use super::*;
use crate::kernel::conf::server_names::parse;
use crate::kernel::variables::VariableRegistry;
use shared::regex::Regex;

fn name(text: &str) -> ServerName {
    parse(
        text,
        "box",
        &mut VariableRegistry::default(),
        &conf::Span::CommandLine,
    )
    .expect("a valid test name")
}

fn referers(hosts: &[&str], regexes: &[&str]) -> ValidReferers {
    ValidReferers {
        hosts: hosts
            .iter()
            .map(|text| match text.find('/') {
                Some(at) => (name(&text[..at]), Some(text.as_bytes()[at..].into())),
                None => (name(text), None),
            })
            .collect(),
        regexes: regexes
            .iter()
            .map(|pattern| Regex::compile(pattern, true).expect("a valid test regex"))
            .collect(),
        ..ValidReferers::default()
    }
}

fn valid(referers: &ValidReferers, referer: &str) -> bool {
    is_valid(referers, Some(referer.as_bytes()), &[])
}

#[test]
fn nothing_configured_accepts_everything() {
    let only_keywords = ValidReferers {
        none: true,
        blocked: true,
        ..ValidReferers::default()
    };
    assert!(is_valid(
        &only_keywords,
        Some(b"http://anything.example"),
        &[]
    ));
    assert!(is_valid(&ValidReferers::default(), None, &[]));
}

#[test]
fn none_and_blocked() {
    let mut list = referers(&["www.example.org"], &[]);
    assert!(!is_valid(&list, None, &[]));
    list.none = true;
    assert!(is_valid(&list, None, &[]));
    // An empty header is not a missing one.
    assert!(!valid(&list, ""));
    for blocked in [
        "www.example.org",
        "foobar",
        "http://su",
        "",
        "ftp://www.example.org",
    ] {
        assert!(!valid(&list, blocked), "{blocked}");
    }
    list.blocked = true;
    for blocked in [
        "www.example.org",
        "foobar",
        "http://su",
        "",
        "ftp://www.example.org",
    ] {
        assert!(valid(&list, blocked), "{blocked}");
    }
}

#[test]
fn hosts_ignore_case_port_and_path() {
    let list = referers(&["www.example.org"], &[]);
    assert!(valid(&list, "http://www.example.org"));
    assert!(valid(&list, "HTTPS://WWW.Example.ORG/uri"));
    assert!(valid(&list, "http://www.example.org:8080/uri"));
    assert!(!valid(&list, "http://www.example.com"));
    assert!(!valid(&list, "http://example.org"));
}

#[test]
fn hosts_longer_than_256_bytes_are_invalid() {
    let list = referers(&[], &[".*"]);
    assert!(valid(&list, &format!("http://{}", "a".repeat(256))));
    assert!(!valid(&list, &format!("http://{}", "a".repeat(257))));
    let list = referers(&["www.example.org"], &[]);
    assert!(valid(
        &list,
        &format!("http://www.example.org/{}", "a".repeat(300))
    ));
}

#[test]
fn uri_prefixes_are_case_sensitive() {
    let list = referers(&["www.example.org/uri", "www.example.*/uri"], &[]);
    assert!(valid(&list, "http://www.example.org/uri"));
    assert!(valid(&list, "http://www.example.org/urii"));
    assert!(valid(&list, "http://www.example.org:80/urii"));
    assert!(!valid(&list, "http://www.example.org/uRi"));
    assert!(!valid(&list, "http://www.example.org/ur"));
    assert!(!valid(&list, "http://www.example.org"));
    assert!(valid(&list, "http://www.example.net/urii"));
    assert!(!valid(&list, "http://www.example.net/URI"));
}

#[test]
fn wildcards() {
    let list = referers(&["*.example.com", ".example.net", "www.example.*"], &[]);
    assert!(valid(&list, "http://a.b.example.com"));
    assert!(!valid(&list, "http://example.com"));
    assert!(valid(&list, "http://example.net"));
    assert!(valid(&list, "http://www.example.net"));
    assert!(valid(&list, "http://www.example.org"));
    assert!(!valid(&list, "http://ww.example.org"));
}

#[test]
fn regexes_see_the_referer_after_the_scheme_without_case() {
    let list = referers(&[], &["example.org", "(?-i)example.net", "example.org/uri"]);
    assert!(valid(&list, "http://www.eXample.org"));
    assert!(!valid(&list, "http://www.eXample.net"));
    assert!(valid(&list, "http://www.example.net"));
    let anchored = referers(&[], &["^www\\.example\\.org$"]);
    assert!(valid(&anchored, "https://www.example.org"));
    assert!(!valid(&anchored, "https://www.example.org/"));
}

#[test]
fn server_names_with_regexes() {
    let mut list = ValidReferers {
        server_names: true,
        ..ValidReferers::default()
    };
    let names = [name("localhost"), name("~bar"), name("~^anchoredre$")];
    let check =
        |list: &ValidReferers, referer: &str| is_valid(list, Some(referer.as_bytes()), &names);
    assert!(check(&list, "http://localHost/uri"));
    assert!(check(&list, "http://foobAr/uri"));
    assert!(check(&list, "http://anchoredre/uri"));
    assert!(!check(&list, "http://anchoredre2/uri"));
    assert!(!check(&list, "localhost"));
    list.blocked = true;
    assert!(check(&list, "localhost"));
    // A server without names has nothing to check against.
    assert!(is_valid(&list, Some(b"http://elsewhere"), &[]));
}
