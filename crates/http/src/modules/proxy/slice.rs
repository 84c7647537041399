//! The slice module (`slice SIZE`, `$slice_range`), done in the proxy: a response is
//! fetched in ranges of `SIZE` bytes, each its own request upstream (with
//! `proxy_set_header Range $slice_range`) and its own cache entry (with `$slice_range` in
//! the key), and sent to the client as one response. The first slice is fetched here; its
//! 206 becomes the client's 200 (or, through the range filter, its 206) with the whole
//! length, and the following slices are fetched one after another as the body is sent
//! (`send/slice.rs`).

use logging::Level;

use crate::kernel::client::Client as RequestClient;
use crate::kernel::conf::LocationId;
use crate::kernel::request::Request;
use crate::kernel::request_log::log;
use crate::kernel::send::body::Body;
use crate::kernel::worker::HttpWorker;
use crate::modules::proxy::handler::{ProxyOutcome, proxy_one};

/// A slice's `Content-Range: bytes FIRST-LAST/TOTAL`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SliceRange {
    pub first: u64,
    pub last: u64,
    pub total: u64,
}

/// Parses `bytes FIRST-LAST/TOTAL`; `None` for anything else (`*` totals included).
pub(crate) fn parse_content_range(value: &[u8]) -> Option<SliceRange> {
    let text = std::str::from_utf8(value).ok()?.trim();
    let rest = text.strip_prefix("bytes ")?;
    let (span, total) = rest.split_once('/')?;
    let (first, last) = span.split_once('-')?;
    let range = SliceRange {
        first: first.trim().parse().ok()?,
        last: last.trim().parse().ok()?,
        total: total.trim().parse().ok()?,
    };
    (range.first <= range.last && range.last < range.total).then_some(range)
}

/// Where the client's range starts (nginx's rule: the first range's start; 0 without a
/// range, for a suffix or multipart range, or with `If-Range`).
fn client_start(request: &Request<'_>) -> u64 {
    if request.header(b"if-range").is_some() {
        return 0;
    }
    let Some(range) = request.header(b"range") else {
        return 0;
    };
    let Some(spec) = range.strip_prefix(b"bytes=") else {
        return 0;
    };
    let spec = spec.trim_ascii_start();
    if spec.contains(&b',') {
        return 0;
    }
    let digits = spec.iter().take_while(|b| b.is_ascii_digit()).count();
    std::str::from_utf8(&spec[..digits])
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(0)
}

/// The proxy's content handler with `slice`: the first slice, and the response made of
/// all of them.
pub(crate) async fn proxy_sliced<'a>(
    worker: &'a HttpWorker,
    client: &mut RequestClient<'_>,
    request: &mut Request<'a>,
    location_id: LocationId,
    size: u64,
) -> ProxyOutcome<'a> {
    let first = client_start(request) / size * size;
    request.upstream.slice = Some((first, first + size - 1));
    let outcome = proxy_one(worker, client, request, location_id).await;
    let ProxyOutcome::Respond(body) = outcome else {
        return outcome;
    };
    // A 200 (or any answer but 206) means the upstream does not slice: sent as it is. A
    // first slice that does not fit closes the connection with nothing sent, as nginx's
    // failing header filter does.
    if request.response.status != 206 {
        return ProxyOutcome::Respond(body);
    }
    let info = client.info;
    let Some(range) = request
        .response
        .content_range
        .as_deref()
        .and_then(parse_content_range)
    else {
        log(
            worker,
            info,
            request,
            Level::Error,
            format_args!("invalid range in slice response"),
        );
        return ProxyOutcome::Finalize(crate::kernel::special::STATUS_CLOSE);
    };
    let expected_last = (first + size).min(range.total) - 1;
    if range.first != first || range.last != expected_last {
        log(
            worker,
            info,
            request,
            Level::Error,
            format_args!(
                "unexpected range in slice response: {}-{}, expected: {first}-{expected_last}",
                range.first, range.last
            ),
        );
        return ProxyOutcome::Finalize(crate::kernel::special::STATUS_CLOSE);
    }
    let response = &mut request.response;
    response.status = 200;
    response.status_line = None;
    response.content_range = None;
    response.content_length = Some(range.total);
    let etag = response.etag.clone();
    crate::modules::proxy::cache::allow_ranges(request);
    ProxyOutcome::Respond(Body::Upstream(Box::new(
        crate::modules::proxy::send::slice::SliceBody {
            worker,
            location_id,
            size,
            total: range.total,
            etag,
            first: Some(body),
            first_start: first,
        },
    )))
}

#[cfg(test)]
mod tests {
    use super::{SliceRange, parse_content_range};

    #[test]
    fn content_ranges() {
        assert_eq!(
            parse_content_range(b"bytes 0-9/100"),
            Some(SliceRange {
                first: 0,
                last: 9,
                total: 100
            })
        );
        assert_eq!(parse_content_range(b"bytes 0-9/*"), None);
        assert_eq!(parse_content_range(b"bytes 9-0/100"), None);
        assert_eq!(parse_content_range(b"bytes 0-100/100"), None);
    }
}
