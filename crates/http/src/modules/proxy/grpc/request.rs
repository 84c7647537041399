//! The request head of a gRPC stream: the head the proxy wrote for the try (with
//! `grpc_set_header`'s fields and the client's own) turned into HTTP/2 fields, as nginx's
//! grpc module builds them: `:method`, `:scheme`, `:path`, `:authority` from `Host`, the
//! other fields in lower case, no connection-specific field, and `te: trailers` when the
//! client said it takes trailers.

use http2::hpack::HeaderField;

/// Fields that belong to one HTTP/1 connection and never go into an HTTP/2 head
/// (RFC 9113 §8.2.2); `te` is written apart.
const CONNECTION_FIELDS: &[&[u8]] = &[
    b"connection",
    b"keep-alive",
    b"proxy-connection",
    b"transfer-encoding",
    b"upgrade",
    b"te",
    b"host",
];

/// The HTTP/2 head for `head`, an HTTP/1 request head (`METHOD URI HTTP/1.1`, fields,
/// an empty line). `tls` gives `:scheme`; `te_trailers` adds `te: trailers`; with
/// `host_set` (`grpc_set_header Host`) `Host` goes as a `host` field, not `:authority`.
pub(crate) fn head_fields(
    head: &[u8],
    tls: bool,
    te_trailers: bool,
    host_set: bool,
) -> Vec<HeaderField> {
    let mut lines = head.split(|&byte| byte == b'\n').map(trim_cr);
    let request_line = lines.next().unwrap_or_default();
    let mut parts = request_line.splitn(3, |&byte| byte == b' ');
    let method = parts.next().unwrap_or(b"POST");
    let path = match parts.next() {
        Some(path) if !path.is_empty() => path,
        _ => b"/",
    };
    let mut fields = Vec::with_capacity(16);
    fields.push(field(b":method", method));
    fields.push(field(b":scheme", if tls { b"https" } else { b"http" }));
    fields.push(field(b":path", path));
    let mut others = Vec::with_capacity(12);
    for line in lines {
        if line.is_empty() {
            break;
        }
        let Some(colon) = memchr::memchr(b':', line) else {
            continue;
        };
        let name = line[..colon].to_ascii_lowercase();
        let value = line[colon + 1..].trim_ascii();
        if name == b"host" {
            if host_set {
                others.push(field(b"host", value));
            } else {
                fields.push(field(b":authority", value));
            }
            continue;
        }
        if CONNECTION_FIELDS.contains(&name.as_slice()) {
            continue;
        }
        others.push(HeaderField {
            name,
            value: value.to_vec(),
            sensitive: false,
        });
    }
    if te_trailers {
        others.push(field(b"te", b"trailers"));
    }
    fields.append(&mut others);
    fields
}

/// Whether `name` (any case) is a field of one HTTP/1 connection (or `Host`), never
/// passed into an HTTP/2 head or on to another connection.
pub(crate) fn is_connection_field(name: &[u8]) -> bool {
    CONNECTION_FIELDS
        .iter()
        .any(|field| field.eq_ignore_ascii_case(name))
        || name.eq_ignore_ascii_case(b"content-length")
}

/// Whether a client's `TE` field names `trailers` (nginx's `$grpc_internal_trailers`).
pub(crate) fn takes_trailers(te: &[u8]) -> bool {
    te.split(|&byte| byte == b',').any(|part| {
        let coding = part.split(|&byte| byte == b';').next().unwrap_or_default();
        coding.trim_ascii().eq_ignore_ascii_case(b"trailers")
    })
}

fn trim_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

fn field(name: &[u8], value: &[u8]) -> HeaderField {
    HeaderField {
        name: name.to_vec(),
        value: value.to_vec(),
        sensitive: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(fields: &[HeaderField]) -> Vec<(String, String)> {
        fields
            .iter()
            .map(|field| {
                (
                    String::from_utf8_lossy(&field.name).into_owned(),
                    String::from_utf8_lossy(&field.value).into_owned(),
                )
            })
            .collect()
    }

    #[test]
    fn an_http1_head_becomes_pseudo_fields_and_lower_case_fields() {
        let head = b"POST /pkg.Svc/Call?x=1 HTTP/1.1\r\nHost: 127.0.0.1:50051\r\n\
            Connection: close\r\nContent-Type: application/grpc\r\nTE: trailers\r\n\
            Transfer-Encoding: chunked\r\nX-Id: 7\r\n\r\n";
        let fields = head_fields(head, false, true, false);
        let pairs = pairs(&fields);
        let expected: Vec<(String, String)> = [
            (":method", "POST"),
            (":scheme", "http"),
            (":path", "/pkg.Svc/Call?x=1"),
            (":authority", "127.0.0.1:50051"),
            ("content-type", "application/grpc"),
            ("x-id", "7"),
            ("te", "trailers"),
        ]
        .iter()
        .map(|(name, value)| (name.to_string(), value.to_string()))
        .collect();
        assert_eq!(pairs, expected);
    }

    #[test]
    fn tls_is_https_te_goes_only_when_asked_and_a_set_host_is_host() {
        let fields = head_fields(b"GET / HTTP/1.1\r\nHost: custom\r\n\r\n", true, false, true);
        let pairs = pairs(&fields);
        assert_eq!(pairs[1], (":scheme".into(), "https".into()));
        assert!(pairs.iter().all(|(name, _)| name != "te"));
        // `grpc_set_header Host`: a `host` field and no `:authority`.
        assert!(pairs.iter().all(|(name, _)| name != ":authority"));
        assert!(pairs.contains(&("host".into(), "custom".into())));
    }

    #[test]
    fn te_trailers_is_found_among_codings() {
        assert!(takes_trailers(b"trailers"));
        assert!(takes_trailers(b"gzip, Trailers;q=1"));
        assert!(!takes_trailers(b"gzip"));
        assert!(!takes_trailers(b"trailersx"));
    }
}
