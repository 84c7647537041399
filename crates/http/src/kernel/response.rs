//! The response: what handlers set, and the header filter that writes the head in nginx's
//! order (`Server`, `Date`, `Content-Type`, `Content-Length`, `Last-Modified`, `Location`,
//! `Transfer-Encoding`, `Connection`, `Keep-Alive`, then every other header in order).

/// Bytes a response holds: borrowed from the configuration (which outlives every request
/// of the generation, so no copy and no reference count is touched per request) or owned.
#[derive(Clone, Debug)]
pub enum Bytes<'a> {
    Borrowed(&'a [u8]),
    Owned(Vec<u8>),
    /// Kept elsewhere too (a small cached body, with its open entry).
    Shared(std::sync::Arc<[u8]>),
    /// Bytes `start..end` of bytes kept elsewhere (a field of a cached entry's stored head).
    Part(std::sync::Arc<[u8]>, u32, u32),
}

impl Bytes<'_> {
    pub fn as_slice(&self) -> &[u8] {
        match self {
            Bytes::Borrowed(bytes) => bytes,
            Bytes::Owned(bytes) => bytes,
            Bytes::Shared(bytes) => bytes,
            Bytes::Part(bytes, start, end) => &bytes[*start as usize..*end as usize],
        }
    }

    pub fn len(&self) -> usize {
        self.as_slice().len()
    }

    pub fn is_empty(&self) -> bool {
        self.as_slice().is_empty()
    }
}

/// The `Location` header and whether the header filter must make it absolute.
#[derive(Clone, Debug)]
pub struct Location {
    pub value: Vec<u8>,
}

/// Percent-escapes what may not appear in a request path as sent (nginx's URI escaping):
/// space, `"`, `#`, `%`, `<`, `>`, `?`, `\`, `^`, backquote, `{`, `|`, `}`, control bytes
/// and bytes above 0x7e.
pub fn escape_uri(bytes: &[u8], out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for &byte in bytes {
        let escaped = byte <= 0x20
            || byte >= 0x7f
            || matches!(
                byte,
                b'"' | b'#' | b'%' | b'<' | b'>' | b'?' | b'\\' | b'^' | b'`' | b'{' | b'|' | b'}'
            );
        if escaped {
            out.extend_from_slice(&[
                b'%',
                HEX[usize::from(byte >> 4)],
                HEX[usize::from(byte & 0xf)],
            ]);
        } else {
            out.push(byte);
        }
    }
}

/// Everything a handler sets about the response head.
#[derive(Debug, Default)]
pub struct ResponseHead<'a> {
    pub status: u16,
    /// The status line's `NNN Reason` as a proxied server wrote it.
    pub status_line: Option<Vec<u8>>,
    /// `Server` and `Date` passed from a proxied server (`proxy_pass_header`): sent
    /// instead of Portico's own.
    pub server: Option<Vec<u8>>,
    pub date: Option<Vec<u8>>,
    pub content_type: Option<Bytes<'a>>,
    pub content_length: Option<u64>,
    pub last_modified: Option<i64>,
    pub location: Option<Location>,
    pub etag: Option<Vec<u8>>,
    /// The `add_header ETag` (by its index in the location's list) that gave a response
    /// without its own `ETag` one: the field is written among the added headers there.
    pub etag_added_at: Option<usize>,
    /// The `add_header Last-Modified` (by index) whose value is sent instead of the
    /// response's own `Last-Modified`, and that value.
    pub last_modified_added: Option<(usize, Vec<u8>)>,
    /// Before the range filter: the handler allows ranges (nginx's `allow_ranges`); after
    /// it: the head carries `Accept-Ranges: bytes`.
    pub accept_ranges: bool,
    /// A proxied response that is not stored: the not-modified filter lets it through
    /// as the upstream sent it (nginx's `disable_not_modified`).
    pub disable_not_modified: bool,
    /// The part of a streamed body the client gets (a single range of a proxied
    /// response), as offsets into the whole body.
    pub body_window: Option<(u64, u64)>,
    /// `X-Accel-Charset` of a proxied response: the charset to recode it to, from the
    /// one its `Content-Type` names (nginx's `override_charset` of the headers).
    pub override_charset: Option<Vec<u8>>,
    /// The `Content-Range` of a 206, written after the `add_header` fields as nginx does.
    pub content_range: Option<Vec<u8>>,
    /// The charset of `content_type` when it is known apart from the type (nginx's
    /// `headers_out.charset`); the charset filter sets it and the head writes
    /// `TYPE; charset=NAME`.
    pub charset: Option<Bytes<'a>>,
    /// Portico answered with its own status page (nginx's "special response"): some
    /// statuses then end keep-alive.
    pub special: bool,
    /// Any other headers, in order.
    pub headers: Vec<(Bytes<'a>, Bytes<'a>)>,
    /// The body reached its end on a response `add_trailer` applies to: its fields now
    /// exist (nginx's trailers filter has run), for `$sent_trailer_NAME`.
    pub trailers_added: bool,
    /// Trailer fields the upstream sent (a gRPC response's `grpc-status`), passed on
    /// after the body ahead of the `add_trailer` fields, as nginx's `headers_out.trailers`;
    /// set by the module that streams the body, before the body's end is written.
    pub trailers: Vec<(Vec<u8>, Vec<u8>)>,
    /// `Vary: Accept-Encoding` is among `headers` (nginx's `gzip_vary` mark, set once by
    /// whichever of gzip, gunzip and gzip_static adds it).
    pub vary_accept_encoding: bool,
}

impl ResponseHead<'_> {
    pub fn clear(&mut self) {
        self.status = 0;
        self.status_line = None;
        self.server = None;
        self.date = None;
        self.content_type = None;
        self.content_length = None;
        self.last_modified = None;
        self.location = None;
        self.etag = None;
        self.etag_added_at = None;
        self.last_modified_added = None;
        self.accept_ranges = false;
        self.disable_not_modified = false;
        self.body_window = None;
        self.override_charset = None;
        self.content_range = None;
        self.charset = None;
        self.special = false;
        self.headers.clear();
        self.trailers_added = false;
        self.trailers.clear();
        self.vary_accept_encoding = false;
    }

    /// Adds `Vary: Accept-Encoding` once (`gzip_vary on`), however many of gzip, gunzip
    /// and gzip_static ask.
    pub fn add_vary_accept_encoding(&mut self) {
        if !self.vary_accept_encoding {
            self.vary_accept_encoding = true;
            self.headers.push((
                Bytes::Borrowed(b"Vary"),
                Bytes::Borrowed(b"Accept-Encoding"),
            ));
        }
    }

    /// The media type of `Content-Type`: before any `;`, without the spaces around it;
    /// empty without the field.
    pub fn media_type(&self) -> &[u8] {
        let Some(value) = &self.content_type else {
            return b"";
        };
        let value = value.as_slice();
        let end = memchr::memchr(b';', value).unwrap_or(value.len());
        value[..end].trim_ascii()
    }

    /// A filter will change the body: its length and ranges of it are unknown from here
    /// (nginx's clear-content-length and clear-accept-ranges).
    pub fn body_changes(&mut self) {
        self.content_length = None;
        self.accept_ranges = false;
        self.headers
            .retain(|(name, _)| !name.as_slice().eq_ignore_ascii_case(b"accept-ranges"));
    }

    /// Makes a strong `ETag` weak (`W/`), as a body that changes keeps only a weak one.
    pub fn weaken_etag(&mut self) {
        if let Some(etag) = &mut self.etag
            && !etag.starts_with(b"W/")
        {
            etag.splice(0..0, b"W/".iter().copied());
        }
    }

    /// A header set by a handler or filter, looked up case-insensitively (for
    /// `$sent_http_NAME`).
    pub fn find(&self, name: &[u8]) -> Option<&[u8]> {
        self.headers
            .iter()
            .find(|(key, _)| key.as_slice().eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_slice())
    }
}

/// A response head or trailer section as name and value pairs, for the protocols that
/// encode fields rather than write text (HTTP/2, and HTTP/3 after it): names in lower case,
/// and none of the fields that only an HTTP/1 connection has (RFC 9113 §8.2.2). The bytes
/// live in one buffer, kept with its capacity from one response to the next.
#[derive(Clone, Debug, Default)]
pub struct FieldList {
    /// `:status`; 0 for a trailer section.
    pub status: u16,
    bytes: Vec<u8>,
    /// Each field's name start, value start (the name's end) and value end in `bytes`.
    fields: Vec<(u32, u32, u32)>,
}

impl FieldList {
    /// A list with room for `bytes` bytes of names and values and `fields` fields.
    pub fn with_capacity(bytes: usize, fields: usize) -> FieldList {
        FieldList {
            status: 0,
            bytes: Vec::with_capacity(bytes),
            fields: Vec::with_capacity(fields),
        }
    }

    pub fn clear(&mut self) {
        self.status = 0;
        self.bytes.clear();
        self.fields.clear();
    }

    pub fn len(&self) -> usize {
        self.fields.len()
    }

    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// Adds a field; a connection-specific one is left out.
    pub fn push(&mut self, name: &[u8], value: &[u8]) {
        self.push_with(name, |out| out.extend_from_slice(value));
    }

    /// Adds a field whose value `value` appends; a connection-specific one is left out
    /// (and `value` not called).
    pub fn push_with(&mut self, name: &[u8], value: impl FnOnce(&mut Vec<u8>)) {
        if is_connection_specific(name) {
            return;
        }
        let start = self.bytes.len();
        self.bytes.extend(name.iter().map(u8::to_ascii_lowercase));
        let value_start = self.bytes.len();
        value(&mut self.bytes);
        let offset = |at: usize| u32::try_from(at).unwrap_or(u32::MAX);
        self.fields
            .push((offset(start), offset(value_start), offset(self.bytes.len())));
    }

    /// The fields in order, names in lower case.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> + Clone + '_ {
        self.fields.iter().map(|&(name, value, end)| {
            (
                &self.bytes[name as usize..value as usize],
                &self.bytes[value as usize..end as usize],
            )
        })
    }

    /// The first value of a field, by its lower-case name.
    pub fn get(&self, name: &[u8]) -> Option<&[u8]> {
        self.iter()
            .find(|(have, _)| *have == name)
            .map(|(_, value)| value)
    }
}

/// The fields that belong to an HTTP/1 connection, not to a message (RFC 9113 §8.2.2):
/// other protocols never send them.
pub fn is_connection_specific(name: &[u8]) -> bool {
    // By length first: most names are none of these lengths, and the check runs for every
    // field of every HTTP/2 response head.
    match name.len() {
        7 => name.eq_ignore_ascii_case(b"upgrade"),
        10 => name.eq_ignore_ascii_case(b"connection") || name.eq_ignore_ascii_case(b"keep-alive"),
        16 => name.eq_ignore_ascii_case(b"proxy-connection"),
        17 => name.eq_ignore_ascii_case(b"transfer-encoding"),
        _ => false,
    }
}

/// Whether a response with this status and method carries a body.
pub(crate) fn status_has_body(status: u16) -> bool {
    !(status == 204 || status == 304 || (100..200).contains(&status))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 9113 8.2.2's fields, in any case; names of the same length or a prefix are not.
    #[test]
    fn connection_specific_fields_are_known_by_name() {
        for name in [
            &b"Upgrade"[..],
            b"connection",
            b"KEEP-ALIVE",
            b"Proxy-Connection",
            b"transfer-encoding",
        ] {
            assert!(is_connection_specific(name), "{name:?}");
        }
        for name in [
            &b"upgraded"[..],
            b"upgrades",
            b"connectio",
            b"keep-alivf",
            b"content-type",
            b"te",
            b"",
            b"transfer-encodings",
        ] {
            assert!(!is_connection_specific(name), "{name:?}");
        }
    }

    #[test]
    fn a_field_list_lowers_names_and_leaves_out_connection_fields() {
        let mut fields = FieldList::default();
        fields.push(b"Content-Type", b"text/html");
        fields.push(b"Connection", b"keep-alive");
        fields.push(b"Transfer-Encoding", b"chunked");
        fields.push_with(b"X-Count", |out| out.extend_from_slice(b"12"));
        fields.push(b"UPGRADE", b"websocket");
        let pairs: Vec<(&[u8], &[u8])> = fields.iter().collect();
        let want: Vec<(&[u8], &[u8])> = vec![(b"content-type", b"text/html"), (b"x-count", b"12")];
        assert_eq!(pairs, want);
        assert_eq!(fields.get(b"x-count"), Some(&b"12"[..]));
        assert_eq!(fields.get(b"connection"), None);
        fields.clear();
        assert!(fields.is_empty());
        assert_eq!(fields.iter().count(), 0);
    }

    #[test]
    fn escape_uri_escapes_what_a_path_cannot_carry() {
        let mut out = Vec::new();
        escape_uri(b"/a b#c?d%e\x01\xff/ok", &mut out);
        assert_eq!(out, b"/a%20b%23c%3Fd%25e%01%FF/ok");
        out.clear();
        escape_uri(b"/\"<>\\^`{|}~&+;=", &mut out);
        assert_eq!(out, b"/%22%3C%3E%5C%5E%60%7B%7C%7D~&+;=");
    }
}
