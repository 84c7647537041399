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

#[test]
fn a_stored_head_is_referred_to_and_a_buffer_copied() {
    let head: std::sync::Arc<[u8]> =
        std::sync::Arc::from(&b"HTTP/1.1 200 OK\r\nExpires: soon\r\n\r\n"[..]);
    let value = 26..30;
    match RawHead::Stored(&head).take(&value) {
        Bytes::Part(bytes, start, end) => {
            assert!(std::sync::Arc::ptr_eq(&bytes, &head));
            assert_eq!(&bytes[start as usize..end as usize], b"soon");
        }
        other => panic!("a stored head's field was copied: {other:?}"),
    }
    let taken = RawHead::Buffer(&head).take(&value);
    assert!(matches!(taken, Bytes::Owned(_)));
    assert_eq!(taken.as_slice(), b"soon");
}

/// nginx's header filter drops only the `Last-Modified` it made; an upstream's goes on with
/// any status (a cached 301 or 404 is revalidated with it, RFC 9111 section 4.3.1).
#[test]
fn only_dated_statuses_take_the_last_modified_apart() {
    for status in [200, 206, 304] {
        assert!(dates_its_response(status), "{status}");
    }
    for status in [201, 301, 302, 404, 410, 500] {
        assert!(!dates_its_response(status), "{status}");
    }
}
