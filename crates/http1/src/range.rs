//! A `Range` request header (RFC 9110 §14.2) and its `If-Range` (§13.1.5), read as nginx's
//! range filter reads them: what the header asks of a body of a known length. [`decide`]
//! takes the fields and the response's validators; [`parse`] reads the ranges after
//! `bytes=`. Pure: the caller builds the 206, `multipart/byteranges` or 416 response.

use crate::conditional;

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

/// `max_ranges` when the directive is not set (nginx's `NGX_MAX_INT32_VALUE`): no limit on
/// the number of ranges, but the check against many small ranges is made.
pub const MAX_RANGES_UNLIMITED: u64 = 0x7fff_ffff;

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

/// What the decision looks at; the caller has already checked the request's version and
/// that the response is a 200 whose handler allows ranges.
#[derive(Clone, Copy, Debug, Default)]
pub struct RangeInput<'a> {
    pub range: Option<&'a [u8]>,
    pub if_range: Option<&'a [u8]>,
    pub etag: Option<&'a [u8]>,
    pub last_modified: Option<i64>,
    pub content_length: u64,
    pub max_ranges: u64,
}

/// What the range filter does with the response.
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
    conditional::date(if_range) == modified
}

#[cfg(test)]
mod tests;
