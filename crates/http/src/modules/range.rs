//! nginx's range filter: `Range: bytes=...` on a 200 response whose handler allows ranges
//! (the static handler) becomes a 206 with one range or a `multipart/byteranges` body, or a
//! 416 when no range is satisfiable; `If-Range` and `max_ranges` decide whether the header
//! counts at all, and a response the filter leaves whole says `Accept-Ranges: bytes`.
//! The decision is the codec's (`http1::range`); [`filter`] applies it to the response.

use std::sync::atomic::Ordering;

use http1::Version;
use http1::range::{ByteRange, Decision, RangeInput, decide};

use crate::kernel::conf::Location;
use crate::kernel::request::{ConnectionInfo, Request};
use crate::kernel::response::{Bytes, ResponseHead};
use crate::kernel::send::body::Body;
use crate::kernel::send::head::OwnField;
use crate::kernel::send::pieces::{Piece, Pieces};
use crate::kernel::special::{self, Reply};
use crate::kernel::variables::evaluate::render;
use crate::kernel::worker::HttpWorker;

/// What the filter did, for the filters after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RangeOutcome {
    Unchanged,
    Partial,
    /// The response became the 416 status page.
    NotSatisfiable,
}

/// The range filter. `accept_ranges` on the response says on the way in whether the
/// handler allows ranges, and on the way out whether the head says `Accept-Ranges`.
pub fn filter<'a>(
    worker: &'a HttpWorker,
    connection: &ConnectionInfo,
    request: &mut Request<'a>,
    location: &Location,
    body: Body<'a>,
) -> (Body<'a>, RangeOutcome) {
    let allowed = std::mem::take(&mut request.response.accept_ranges);
    let response = &request.response;
    let Some(content_length) = response.content_length else {
        return (body, RangeOutcome::Unchanged);
    };
    if !allowed || response.status != 200 || request.head.version < Version::Http10 {
        return (body, RangeOutcome::Unchanged);
    }
    let known = &request.head.known;
    let last_modified = response.last_modified.or_else(|| {
        let (_, value) = response.last_modified_added.as_ref()?;
        http1::response::parse_http_date(value)
    });
    let input = RangeInput {
        range: request.known_header(known.range),
        if_range: request.known_header(known.if_range),
        etag: response.etag.as_deref(),
        last_modified,
        content_length,
        max_ranges: location.settings.core.max_ranges,
    };
    match decide(&input) {
        Decision::Skip => (body, RangeOutcome::Unchanged),
        Decision::Whole => {
            request.response.accept_ranges = true;
            (body, RangeOutcome::Unchanged)
        }
        // A streamed body gives one range at most; for several, the whole of it.
        Decision::Ranges(ranges) if ranges.len() > 1 && matches!(body, Body::Upstream(_)) => {
            (body, RangeOutcome::Unchanged)
        }
        Decision::Ranges(ranges) if ranges.len() == 1 => {
            let body = single_range(&mut request.response, body, ranges[0], content_length);
            (body, RangeOutcome::Partial)
        }
        Decision::Ranges(ranges) => {
            let boundary = worker
                .generation
                .temp_numbers
                .fetch_add(1, Ordering::Relaxed)
                + 1;
            let body = multipart(
                &mut request.response,
                body,
                &ranges,
                content_length,
                boundary,
            );
            (body, RangeOutcome::Partial)
        }
        Decision::NotSatisfiable => {
            let body = not_satisfiable(worker, connection, request, location, content_length);
            (body, RangeOutcome::NotSatisfiable)
        }
    }
}

/// 206 with `Content-Range`; a file body just starts and ends elsewhere.
fn single_range<'a>(
    response: &mut ResponseHead<'a>,
    body: Body<'a>,
    range: ByteRange,
    content_length: u64,
) -> Body<'a> {
    response.status = 206;
    response.content_range =
        Some(format!("bytes {}-{}/{content_length}", range.start, range.end - 1).into_bytes());
    response.content_length = Some(range.end - range.start);
    match body {
        Body::Upstream(streamed) => {
            response.body_window = Some((range.start, range.end));
            Body::Upstream(streamed)
        }
        Body::File(mut file) => {
            file.offset += range.start;
            file.len = range.end - range.start;
            Body::File(file)
        }
        other => {
            let mut pieces = Pieces::from_body(other);
            pieces.pieces = pieces.slice(range.start, range.end);
            Body::Pieces(pieces)
        }
    }
}

/// 206 with a `multipart/byteranges` body, byte for byte as nginx writes it: each part is
/// `CRLF--BOUNDARY CRLF [Content-Type: T CRLF] Content-Range: bytes S-E/LEN CRLF CRLF DATA`,
/// then `CRLF--BOUNDARY-- CRLF`. The boundary is nginx's: a counter in 20 digits.
fn multipart<'a>(
    response: &mut ResponseHead<'a>,
    body: Body<'a>,
    ranges: &[ByteRange],
    content_length: u64,
    boundary: u64,
) -> Body<'a> {
    let boundary = format!("{boundary:020}");
    let mut part_head = format!("\r\n--{boundary}\r\n").into_bytes();
    if let Some(content_type) = &response.content_type {
        part_head.extend_from_slice(b"Content-Type: ");
        part_head.extend_from_slice(content_type.as_slice());
        if let Some(charset) = &response.charset {
            part_head.extend_from_slice(b"; charset=");
            part_head.extend_from_slice(charset.as_slice());
        }
        part_head.extend_from_slice(b"\r\n");
    }
    part_head.extend_from_slice(b"Content-Range: bytes ");
    let source = Pieces::from_body(body);
    let mut pieces = Vec::with_capacity(ranges.len() * 2 + 1);
    for range in ranges {
        let mut head = part_head.clone();
        let last = range.end - 1;
        head.extend_from_slice(
            format!("{}-{last}/{content_length}\r\n\r\n", range.start).as_bytes(),
        );
        pieces.push(Piece::Bytes(Bytes::Owned(head)));
        pieces.extend(source.slice(range.start, range.end));
    }
    pieces.push(Piece::Bytes(Bytes::Owned(
        format!("\r\n--{boundary}--\r\n").into_bytes(),
    )));
    response.status = 206;
    response.content_type = Some(Bytes::Owned(
        format!("multipart/byteranges; boundary={boundary}").into_bytes(),
    ));
    response.charset = None;
    response.content_range = None;
    let multipart = Pieces {
        file: source.file,
        pieces,
        recoder: source.recoder,
    };
    response.content_length = multipart.len();
    Body::Pieces(multipart)
}

/// 416 with `Content-Range: bytes */LEN` and its status page. nginx's headers filter had
/// already added the `add_header` fields for a 200 when the range filter turned the response
/// into an error, and they stay, before `Content-Range`.
fn not_satisfiable<'a>(
    worker: &'a HttpWorker,
    connection: &ConnectionInfo,
    request: &mut Request<'a>,
    location: &Location,
    content_length: u64,
) -> Body<'a> {
    let added = added_headers_of_200(worker, connection, request, location);
    request.response.content_range = None;
    let body = match special::special_response(worker, request, 416) {
        Reply::Respond(page) => page,
        Reply::Close => Body::Empty,
    };
    let headers = &mut request.response.headers;
    for (name, value) in added {
        headers.push((Bytes::Owned(name.to_vec()), Bytes::Owned(value)));
    }
    headers.push((
        Bytes::Borrowed(b"Content-Range"),
        Bytes::Owned(format!("bytes */{content_length}").into_bytes()),
    ));
    body
}

/// The `add_header` fields as they apply to a 200, except `ETag` and `Last-Modified`
/// (which an error page drops).
fn added_headers_of_200<'a>(
    worker: &'a HttpWorker,
    connection: &ConnectionInfo,
    request: &Request<'_>,
    location: &'a Location,
) -> Vec<(&'a [u8], Vec<u8>)> {
    location
        .settings
        .headers
        .add_header
        .iter()
        .filter(|field| OwnField::of(&field.name) == OwnField::None)
        .filter_map(|field| {
            let value = render(worker, connection, request, &field.value);
            (!value.is_empty()).then_some((&field.name[..], value))
        })
        .collect()
}
