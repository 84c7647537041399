//! What a successful unsafe request invalidates besides its own key (RFC 9111 section
//! 4.4): the URIs its response's `Location` and `Content-Location` name, when their host
//! is the request's. Each is keyed as a `GET` of that URI with the request's other fields
//! would be, under the same zone and `proxy_cache_key`.

use http1::request::assemble::{Parts, assemble};
use http1::request::{HeadLimits, RequestHead, RequestInfo};

use crate::kernel::request::Request;

/// Absolute paths (with their query) of the URIs in `values` (the `Location` and
/// `Content-Location` values) whose host is `host`: absolute URIs with that host,
/// network-path references, absolute paths, and paths relative to `target` (the
/// request's own). A fragment is left out.
pub(crate) fn same_origin_targets<'v>(
    target: &[u8],
    host: &[u8],
    values: impl Iterator<Item = &'v [u8]>,
) -> Vec<Vec<u8>> {
    let mut targets: Vec<Vec<u8>> = Vec::new();
    for value in values {
        let value = value.trim_ascii();
        let value = value
            .iter()
            .position(|b| *b == b'#')
            .map_or(value, |hash| &value[..hash]);
        let Some(path) = path_of(value, target, host) else {
            continue;
        };
        if !path.is_empty() && !targets.contains(&path) {
            targets.push(path);
        }
    }
    targets
}

/// The absolute path `value` names on `host`, if it does.
fn path_of(value: &[u8], target: &[u8], host: &[u8]) -> Option<Vec<u8>> {
    let lower = value.to_ascii_lowercase();
    let after_scheme = if lower.starts_with(b"http://") {
        Some(&value[7..])
    } else if lower.starts_with(b"https://") {
        Some(&value[8..])
    } else if value.starts_with(b"//") {
        Some(&value[2..])
    } else {
        None
    };
    if let Some(rest) = after_scheme {
        let end = rest
            .iter()
            .position(|b| matches!(b, b'/' | b'?'))
            .unwrap_or(rest.len());
        let authority = &rest[..end];
        // The host part: no user information, no port (RFC 9111 section 4.4 compares hosts).
        let authority = authority
            .iter()
            .rposition(|b| *b == b'@')
            .map_or(authority, |at| &authority[at + 1..]);
        let name = match authority.iter().rposition(|b| *b == b':') {
            Some(colon) if !authority.ends_with(b"]") => &authority[..colon],
            _ => authority,
        };
        if !name.eq_ignore_ascii_case(host) {
            return None;
        }
        let path = &rest[end..];
        return Some(if path.starts_with(b"/") {
            path.to_vec()
        } else {
            [b"/", path].concat()
        });
    }
    if value.starts_with(b"/") {
        return Some(value.to_vec());
    }
    if value.is_empty() || value.contains(&b':') && !value.starts_with(b".") {
        // Another scheme (`mailto:`), or nothing.
        return None;
    }
    // Relative to the directory of the request's path.
    let path_end = target
        .iter()
        .position(|b| *b == b'?')
        .unwrap_or(target.len());
    let directory = target[..path_end]
        .iter()
        .rposition(|b| *b == b'/')
        .map_or(&b"/"[..], |slash| &target[..=slash]);
    Some([directory, value].concat())
}

/// A copy of `request` as a `GET` of `target` (an absolute path and query) would be read,
/// with the request's other fields: what a cache key template is rendered on. `None` when
/// the head it makes does not read as one.
pub(crate) fn as_get_of<'b>(request: &Request<'_>, target: &[u8]) -> Option<Request<'b>> {
    let bytes = &request.head_bytes;
    let fields = request
        .head
        .headers
        .iter()
        .map(|field| (field.name_in(bytes), field.value_in(bytes)));
    let parts = Parts {
        method: b"GET",
        path: target,
        protocol: b"HTTP/1.1",
    };
    let (mut head_bytes, mut head) = (Vec::new(), RequestHead::default());
    let limits = HeadLimits::default();
    assemble(parts, fields, 0, &limits, &mut head_bytes, &mut head).ok()?;
    let mut info = RequestInfo::default();
    http1::request::analyze(&head_bytes, &head, &mut info).ok()?;
    let args = info
        .target
        .args
        .clone()
        .and_then(|args| head_bytes.get(args).map(<[u8]>::to_vec))
        .unwrap_or_default();
    let mut copy = Request {
        uri: head.uri.clone(),
        args,
        server: request.server,
        location: request.location,
        head_bytes,
        head,
        info,
        ..Request::default()
    };
    copy.upstream.proxy_host = request.upstream.proxy_host.clone();
    copy.upstream.proxy_port = request.upstream.proxy_port.clone();
    Some(copy)
}

#[cfg(test)]
mod tests {
    use super::*;
    use http1::request::Progress;

    fn targets(target: &str, values: &[&str]) -> Vec<String> {
        same_origin_targets(
            target.as_bytes(),
            b"example.com",
            values.iter().map(|value| value.as_bytes()),
        )
        .into_iter()
        .map(|path| String::from_utf8(path).expect("ascii"))
        .collect()
    }

    /// RFC 9111 section 4.4: `Location` and `Content-Location` URIs are invalidated when
    /// their host is the request's, never another host's.
    #[test]
    fn only_same_host_uris_are_taken() {
        assert_eq!(
            targets(
                "/items/new?x=1",
                &[
                    "http://example.com/items/5",
                    "https://EXAMPLE.com:8443/items/6?v=2#top",
                    "//example.com",
                    "/abs",
                    "rel",
                    "http://other.example/items/7",
                    "//other.example/x",
                    "mailto:someone@example.com",
                    "",
                ]
            ),
            ["/items/5", "/items/6?v=2", "/", "/abs", "/items/rel",]
        );
        assert_eq!(targets("/", &["/a", "/a"]), ["/a"], "each once");
        assert_eq!(
            targets("/", &["http://user@example.com:80/u"]),
            ["/u"],
            "user information is not the host"
        );
    }

    #[test]
    fn a_request_is_copied_as_a_get_of_another_target() {
        let mut request = Request {
            head_bytes: b"POST /items HTTP/1.1\r\nHost: example.com\r\nAccept-Language: de\r\n\r\n"
                .to_vec(),
            ..Request::default()
        };
        let mut head = RequestHead::default();
        assert!(matches!(
            http1::request::parse_head(&request.head_bytes, &HeadLimits::default(), &mut head),
            Ok(Progress::Complete)
        ));
        request.head = head;
        request.upstream.proxy_host = b"backend".to_vec();
        let copy = as_get_of(&request, b"/items/5?v=2").expect("a head");
        assert_eq!(copy.request_uri(), b"/items/5?v=2");
        assert_eq!(copy.uri, b"/items/5");
        assert_eq!(copy.args, b"v=2");
        assert_eq!(copy.method_bytes(), b"GET");
        assert_eq!(copy.header(b"accept-language"), Some(&b"de"[..]));
        assert_eq!(copy.upstream.proxy_host, b"backend");
    }

    /// An HTTP/2 request's head holds its fields without HTTP/1's syntax; the copy is
    /// made from the fields all the same.
    #[test]
    fn an_http2_request_is_copied_from_its_fields() {
        let mut request = Request::default();
        let fields: [(&[u8], &[u8]); 2] = [(b"host", b"example.com"), (b"accept-language", b"de")];
        let parts = Parts {
            method: b"DELETE",
            path: b"/items/5",
            protocol: b"HTTP/2.0",
        };
        assemble(
            parts,
            fields,
            0,
            &HeadLimits::default(),
            &mut request.head_bytes,
            &mut request.head,
        )
        .expect("a head");
        let copy = as_get_of(&request, b"/items?all").expect("a copy");
        assert_eq!(copy.method_bytes(), b"GET");
        assert_eq!(copy.request_uri(), b"/items?all");
        assert_eq!(copy.args, b"all");
        assert_eq!(copy.header(b"host"), Some(&b"example.com"[..]));
        assert_eq!(copy.header(b"accept-language"), Some(&b"de"[..]));
        assert_eq!(copy.info.host, b"example.com");
    }
}
