use super::*;

#[test]
fn refusals_keep_nginx_text() {
    assert_eq!(
        parse(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n"),
        Err(InvalidHead(
            "upstream sent unknown \"Transfer-Encoding\": \"gzip\"".to_owned()
        ))
    );
    assert!(parse(b"HTTP/1.1 200 OK\r\n").unwrap().is_none());
}

#[test]
fn cookie_attributes_are_found_after_the_cookie_itself() {
    assert_eq!(
        attribute_start(b"a=b; Domain=x.com; path=/", b"domain="),
        Some(12)
    );
    assert_eq!(attribute_start(b"domain=x; path=/p", b"domain="), None);
    assert_eq!(attribute_start(b"a=b;path=/p", b"path="), Some(9));
}

#[test]
fn standard_reason_phrases_are_not_kept() {
    assert!(is_portico_line(200, b"200 OK"));
    assert!(!is_portico_line(200, b"200 Fine"));
    assert!(!is_portico_line(299, b"299 Custom"));
}
