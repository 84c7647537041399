//! nginx's range filter: `Range: bytes=...` on a 200 response whose handler allows ranges
//! (the static handler) becomes a 206 with one range or a `multipart/byteranges` body, or a
//! 416 when no range is satisfiable; `If-Range` and `max_ranges` decide whether the header
//! counts at all, and a response the filter leaves whole says `Accept-Ranges: bytes`.
//! [`parse`] and [`decide`] are pure; [`filter`] applies the decision to the response.

use std::sync::atomic::Ordering;

use http1::Version;

use crate::conf::Location;
use crate::core::settings::MAX_RANGES_UNLIMITED;
use crate::request::{ConnectionInfo, Request};
use crate::response::{Body, Bytes, ResponseHead};
use crate::send::head::OwnField;
use crate::send::pieces::{Piece, Pieces};
use crate::special::{self, Reply};
use crate::variables::render;
use crate::worker::HttpWorker;

/// One range, as byte offsets `start..end` of the response body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ByteRange {
    pub start: u64,
    pub end: u64,
}

/// What a `Range` header asks of a body of a given length.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Parsed {
    /// Send these ranges, in the order asked.
    Ranges(Vec<ByteRange>),
    /// 416.
    NotSatisfiable,
    /// Ignore the header and send the whole body (too many ranges, or ranges that add up
    /// to more than the body).
    Whole,
}

/// nginx's `off_t` limit, which range numbers may not pass.
const OFFSET_MAX: u64 = i64::MAX as u64;

/// Parses the ranges after `bytes=` as nginx does: spaces around numbers and commas,
/// `N-M`, `N-` and `-N`; anything else makes the header unsatisfiable. A range past the
/// end is cut to the body; one starting past it is dropped. `max_ranges` is the most
/// ranges allowed; more make the whole body the answer.
pub fn parse(spec: &[u8], content_length: u64, max_ranges: u64) -> Parsed {
    let content_length = content_length.min(OFFSET_MAX);
    let mut position = 0;
    let mut ranges = Vec::new();
    let mut total: u64 = 0;
    let mut allowed = max_ranges;
    loop {
        let Some((start, end, after)) = parse_range(spec, position, content_length) else {
            return Parsed::NotSatisfiable;
        };
        position = after;
        if start < end {
            ranges.push(ByteRange { start, end });
            if total > OFFSET_MAX - (end - start) {
                return Parsed::NotSatisfiable;
            }
            total += end - start;
            if allowed == 0 {
                return Parsed::Whole;
            }
            allowed -= 1;
        } else if start == 0 {
            return Parsed::Whole;
        }
        if byte_at(spec, position) != b',' {
            break;
        }
        position += 1;
    }
    match ranges.len() {
        0 => return Parsed::NotSatisfiable,
        1 => return Parsed::Ranges(ranges),
        _ => {}
    }
    if total > content_length {
        return Parsed::Whole;
    }
    // With the default limit, nginx also refuses many small ranges whose part heads would
    // make the response much larger than the body.
    if max_ranges == MAX_RANGES_UNLIMITED {
        let heads = (ranges.len() as u64).saturating_mul(256);
        if total.saturating_add(heads) > content_length.saturating_add(4096) {
            return Parsed::Whole;
        }
    }
    Parsed::Ranges(ranges)
}

/// One range at `position`: its start, its end (exclusive, cut to the body) and the
/// position of the `,` or end after it; `None` when it is malformed. The start may be at or
/// past the end: the caller drops such a range.
fn parse_range(spec: &[u8], position: usize, content_length: u64) -> Option<(u64, u64, usize)> {
    let position = skip_spaces(spec, position);
    if byte_at(spec, position) == b'-' {
        let (suffix, after) = parse_number(spec, position + 1)?;
        let after = end_of_range(spec, after)?;
        return Some((content_length.saturating_sub(suffix), content_length, after));
    }
    let (start, after) = parse_number(spec, position)?;
    let position = skip_spaces(spec, after);
    if byte_at(spec, position) != b'-' {
        return None;
    }
    let position = skip_spaces(spec, position + 1);
    if matches!(byte_at(spec, position), b',' | 0) {
        return Some((start, content_length, position));
    }
    let (last, after) = parse_number(spec, position)?;
    let after = end_of_range(spec, after)?;
    let end = if last >= content_length {
        content_length
    } else {
        last + 1
    };
    Some((start, end, after))
}

/// Spaces, then the `,` or the end that must follow a range; its position.
fn end_of_range(spec: &[u8], position: usize) -> Option<usize> {
    let position = skip_spaces(spec, position);
    matches!(byte_at(spec, position), b',' | 0).then_some(position)
}

/// The byte at `position`, or 0 past the end (nginx reads up to the string's NUL).
fn byte_at(spec: &[u8], position: usize) -> u8 {
    spec.get(position).copied().unwrap_or(0)
}

fn skip_spaces(spec: &[u8], mut position: usize) -> usize {
    while byte_at(spec, position) == b' ' {
        position += 1;
    }
    position
}

/// Decimal digits at `position`: the number and the position after it; `None` without a
/// digit or past nginx's `off_t` limit.
fn parse_number(spec: &[u8], mut position: usize) -> Option<(u64, usize)> {
    let first = *spec.get(position)?;
    if !first.is_ascii_digit() {
        return None;
    }
    let mut value: u64 = 0;
    while let Some(&digit) = spec.get(position).filter(|b| b.is_ascii_digit()) {
        value = value
            .checked_mul(10)
            .and_then(|value| value.checked_add(u64::from(digit - b'0')))
            .filter(|value| *value <= OFFSET_MAX)?;
        position += 1;
    }
    Some((value, position))
}

/// What the filter looks at besides the request's version and the response's status.
#[derive(Clone, Copy, Debug, Default)]
pub struct RangeInput<'a> {
    pub range: Option<&'a [u8]>,
    pub if_range: Option<&'a [u8]>,
    pub etag: Option<&'a [u8]>,
    pub last_modified: Option<i64>,
    pub content_length: u64,
    pub max_ranges: u64,
}

/// What the filter does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Nothing, and no `Accept-Ranges` (`max_ranges 0`).
    Skip,
    /// The whole response, with `Accept-Ranges: bytes`.
    Whole,
    Ranges(Vec<ByteRange>),
    NotSatisfiable,
}

/// nginx's header-filter decision for a 200 response that allows ranges.
pub fn decide(input: &RangeInput<'_>) -> Decision {
    if input.max_ranges == 0 {
        return Decision::Skip;
    }
    let Some(spec) = input
        .range
        .filter(|value| value.len() >= 7 && value[..6].eq_ignore_ascii_case(b"bytes="))
        .map(|value| &value[6..])
    else {
        return Decision::Whole;
    };
    if let Some(if_range) = input.if_range
        && !if_range_holds(if_range, input.etag, input.last_modified)
    {
        return Decision::Whole;
    }
    match parse(spec, input.content_length, input.max_ranges) {
        Parsed::Ranges(ranges) => Decision::Ranges(ranges),
        Parsed::NotSatisfiable => Decision::NotSatisfiable,
        Parsed::Whole => Decision::Whole,
    }
}

/// `If-Range`: a value ending in `"` is an entity tag and must equal the response's byte
/// for byte; anything else is a date that must equal `Last-Modified` to the second.
fn if_range_holds(if_range: &[u8], etag: Option<&[u8]>, last_modified: Option<i64>) -> bool {
    if if_range.len() >= 2 && if_range.ends_with(b"\"") {
        return etag == Some(if_range);
    }
    let Some(modified) = last_modified else {
        return false;
    };
    http1::response::parse_http_date(if_range).unwrap_or(-1) == modified
}

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

#[cfg(test)]
mod tests;
