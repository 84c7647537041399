//! The request head of a gRPC stream: the head the proxy wrote for the try (with
//! `grpc_set_header`'s fields and the client's own) turned into HTTP/2 fields, as nginx's
//! grpc module builds them: `:method`, `:scheme`, `:path`, `:authority` from `Host`, the
//! other fields in lower case, no connection-specific field, and `te: trailers` when the
//! client said it takes trailers.

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

/// A request head as HTTP/2 fields, borrowing from the HTTP/1 head it was made from: names
/// not in lower case there are lowered into one buffer, so that a head costs two
/// allocations, not two per field.
pub(crate) struct HeadFields<'h> {
    lowered: Vec<u8>,
    fields: Vec<(Name<'h>, &'h [u8])>,
}

/// Where a field's name is.
enum Name<'h> {
    Borrowed(&'h [u8]),
    /// In `HeadFields::lowered`.
    Lowered(std::ops::Range<usize>),
}

impl HeadFields<'_> {
    /// The fields in order, names in lower case.
    pub(crate) fn pairs(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.fields.iter().map(|(name, value)| {
            let name = match name {
                Name::Borrowed(name) => *name,
                Name::Lowered(range) => &self.lowered[range.clone()],
            };
            (name, *value)
        })
    }
}

/// The HTTP/2 head for `head`, an HTTP/1 request head (`METHOD URI HTTP/1.1`, fields,
/// an empty line). `tls` gives `:scheme`; `te_trailers` adds `te: trailers`; with
/// `host_set` (`grpc_set_header Host`) `Host` goes as a `host` field, not `:authority`.
pub(crate) fn head_fields(
    head: &[u8],
    tls: bool,
    te_trailers: bool,
    host_set: bool,
) -> HeadFields<'_> {
    let mut lines = head.split(|&byte| byte == b'\n').map(trim_cr);
    let request_line = lines.next().unwrap_or_default();
    let mut parts = request_line.splitn(3, |&byte| byte == b' ');
    let method = parts.next().unwrap_or(b"POST");
    let path: &[u8] = match parts.next() {
        Some(path) if !path.is_empty() => path,
        _ => b"/",
    };
    let scheme: &[u8] = if tls { b"https" } else { b"http" };
    let mut fields = Vec::with_capacity(16);
    fields.push((Name::Borrowed(b":method"), method));
    fields.push((Name::Borrowed(b":scheme"), scheme));
    fields.push((Name::Borrowed(b":path"), path));
    let mut lowered = Vec::new();
    for line in lines {
        if line.is_empty() {
            break;
        }
        let Some(colon) = memchr::memchr(b':', line) else {
            continue;
        };
        let name = &line[..colon];
        let value = line[colon + 1..].trim_ascii();
        if name.eq_ignore_ascii_case(b"host") {
            if host_set {
                fields.push((Name::Borrowed(b"host"), value));
            } else {
                // Pseudo-fields come first.
                fields.insert(3, (Name::Borrowed(b":authority"), value));
            }
            continue;
        }
        if is_connection_field(name) && !name.eq_ignore_ascii_case(b"content-length") {
            continue;
        }
        let name = if name.iter().any(u8::is_ascii_uppercase) {
            let start = lowered.len();
            lowered.extend(name.iter().map(u8::to_ascii_lowercase));
            Name::Lowered(start..lowered.len())
        } else {
            Name::Borrowed(name)
        };
        fields.push((name, value));
    }
    if te_trailers {
        fields.push((Name::Borrowed(b"te"), b"trailers"));
    }
    HeadFields { lowered, fields }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(fields: &HeadFields<'_>) -> Vec<(String, String)> {
        fields
            .pairs()
            .map(|(name, value)| {
                (
                    String::from_utf8_lossy(name).into_owned(),
                    String::from_utf8_lossy(value).into_owned(),
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
