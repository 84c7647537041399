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

/// Where the body comes from.
#[derive(Debug, Default)]
pub enum Body<'a> {
    #[default]
    Empty,
    Bytes(Bytes<'a>),
    /// A file opened by the static handler, read on the thread pool as it is sent.
    File(crate::file::FileBody),
    /// A proxied response's body, read from the upstream as it is sent.
    Upstream(Box<dyn crate::send::StreamedBody<'a> + 'a>),
    /// Pieces of memory and of a file, possibly recoded on the way: what the range filter
    /// (`multipart/byteranges`) and the charset filter make of a body.
    Pieces(crate::send::pieces::Pieces<'a>),
}

impl Body<'_> {
    /// The length when it is known before sending.
    pub fn is_empty(&self) -> bool {
        self.len() == Some(0)
    }

    pub fn len(&self) -> Option<u64> {
        match self {
            Body::Empty => Some(0),
            Body::Bytes(bytes) => Some(bytes.len() as u64),
            Body::File(file) => Some(file.len),
            Body::Upstream(_) => None,
            Body::Pieces(pieces) => pieces.len(),
        }
    }
}

/// The `Location` header and whether the header filter must make it absolute.
#[derive(Clone, Debug)]
pub struct Location {
    pub value: Vec<u8>,
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

    /// A header set by a handler or filter, looked up case-insensitively (for
    /// `$sent_http_NAME`).
    pub fn find(&self, name: &[u8]) -> Option<&[u8]> {
        self.headers
            .iter()
            .find(|(key, _)| key.as_slice().eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_slice())
    }
}

/// Whether a response with this status and method carries a body.
pub(crate) fn status_has_body(status: u16) -> bool {
    !(status == 204 || status == 304 || (100..200).contains(&status))
}
