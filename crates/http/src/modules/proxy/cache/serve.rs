//! Answering from a stored entry: its head replayed through the serving location's
//! upstream-head rules (hidden fields, redirects, cookies), with `Content-Length` and
//! `Age`, and its body sent from the file by the static send path (a small one read with
//! the head, from memory).

use crate::kernel::file::io::{FileBody, FileIo};
use crate::kernel::request::{ConnectionInfo, Request};
use crate::kernel::response::Bytes;
use crate::kernel::send::body::Body;
use crate::kernel::worker::HttpWorker;
use crate::modules::proxy::Proxy;
use crate::modules::proxy::cache::lookup::Entry;
use crate::modules::proxy::cache::settings::ProxyCache;
use crate::modules::proxy::response::{self, RewriteInput};

/// How much longer than `proxy_read_timeout` a reader of a fill waits for its progress:
/// the fill's own upstream read times out first, fails the fill, and the reader finishes
/// its response from a fetch of its own instead of being cut.
const STALL_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

/// Sets the response from `entry` and gives its body. The entry's head was parsed when it
/// was opened; that parse is replayed here.
#[allow(clippy::too_many_arguments)]
pub(crate) fn respond_from<'a>(
    worker: &HttpWorker,
    info: &ConnectionInfo,
    request: &mut Request<'a>,
    proxy: &Proxy,
    settings: &ProxyCache,
    entry: Entry,
    rewrite: &RewriteInput<'_>,
    io: FileIo,
) -> Body<'a> {
    set_head(worker, info, request, proxy, settings, &entry, rewrite);
    let len = entry.body_len();
    if len == 0 {
        return Body::Empty;
    }
    // A small body read with the entry's head goes from memory, as the static send path
    // sends a small file it read behind the head.
    if let Some(body) = entry.body {
        return Body::Bytes(Bytes::Shared(body));
    }
    Body::File(FileBody {
        file: entry.file,
        offset: u64::from(entry.header.body_start),
        len,
        path: entry.path.to_path_buf(),
        io,
        direct: false,
    })
}

/// Sets the response from an entry that another request is still writing; its body is
/// read from the fill's temporary file as it grows.
#[allow(clippy::too_many_arguments)]
pub(crate) fn respond_attached<'a>(
    worker: &HttpWorker,
    info: &ConnectionInfo,
    request: &mut Request<'a>,
    proxy: &Proxy,
    settings: &ProxyCache,
    entry: Entry,
    fill: std::sync::Arc<cache::Fill>,
    rewrite: &RewriteInput<'_>,
    io: FileIo,
) -> Body<'a> {
    set_head(worker, info, request, proxy, settings, &entry, rewrite);
    // Ranges as for a stored entry (`set_head`): the range filter gives a streamed body one
    // range at most; a request for several does not attach (`lookup::attach`).
    Body::Upstream(Box::new(
        crate::modules::proxy::send::attach::AttachedBody {
            fill,
            start: u64::from(entry.header.body_start),
            end: entry.size,
            file: entry.file,
            io,
            stall_timeout: proxy.read_timeout + STALL_GRACE,
            status: entry.parsed.status,
        },
    ))
}

/// The response head from an entry's stored head (parsed when the entry was opened).
fn set_head(
    worker: &HttpWorker,
    info: &ConnectionInfo,
    request: &mut Request<'_>,
    proxy: &Proxy,
    settings: &ProxyCache,
    entry: &Entry,
    rewrite: &RewriteInput<'_>,
) {
    let head = &*entry.parsed;
    request
        .upstream
        .keep_head(&entry.head, head.len, &head.fields);
    response::apply(
        worker,
        info,
        request,
        proxy,
        head,
        response::RawHead::Stored(&entry.head),
        rewrite,
    );
    let len = entry.body_len();
    request.response.content_length = Some(len);
    // A complete stored response can always be served in parts (RFC 9111 section 3.4
    // combines them, RFC 9110 section 14.2 lets a cache answer ranges): unless the
    // upstream said `Accept-Ranges: none`. nginx wants the upstream's `Accept-Ranges`
    // (or `proxy_force_ranges`) for cached responses too.
    let refused = head.fields.iter().any(|(name, value)| {
        entry.head[name.clone()].eq_ignore_ascii_case(b"accept-ranges")
            && entry.head[value.clone()]
                .trim_ascii()
                .eq_ignore_ascii_case(b"none")
    });
    if settings.force_ranges || !refused {
        super::allow_ranges(request);
    }
    // The response's age (RFC 9111 sections 4.2.3 and 5.1): the age it arrived with (its
    // stored `Age`, the first member of a valid one) plus how long ago it was stored or
    // revalidated.
    let now = worker.clock.wall().unix_seconds;
    let arrived = head
        .fields
        .iter()
        .find(|(name, _)| entry.head[name.clone()].eq_ignore_ascii_case(b"age"))
        .and_then(|(_, value)| super::freshness::parse_age(&entry.head[value.clone()]))
        .unwrap_or(0);
    let age = now
        .saturating_sub(entry.header.date)
        .max(0)
        .saturating_add(arrived);
    request
        .response
        .headers
        .retain(|(name, _)| !name.as_slice().eq_ignore_ascii_case(b"age"));
    request.response.headers.push((
        Bytes::Borrowed(b"Age"),
        Bytes::Owned(age.to_string().into_bytes()),
    ));
}
