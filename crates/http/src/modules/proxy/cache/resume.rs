//! A response read from another request's fill (`proxy_cache_lock`, streaming waiters)
//! whose fill ended short: its upstream closed or stalled mid-body. nginx's waiters wait
//! for the whole entry, so a failed fill costs them a wait and a fetch of their own, never
//! a cut response; a streaming waiter has already sent the head and part of the body, so
//! it finishes from a fetch of its own instead: the request is run again through the
//! proxy (its cache lookup then finds the entry, a new fill to read, or makes this request
//! the new filler, one upstream request for all the waiters), the bytes it had sent are
//! checked against the new answer's, and the rest of the body follows. Only an answer
//! that is the same bytes is spliced in: any difference, or a second failure, cuts the
//! response as before, and it is logged.

use std::fs::File;
use std::io;
use std::sync::Arc;

use logging::Level;

use crate::kernel::body::BodyState;
use crate::kernel::client::{BodySource, Client, ReadAhead};
use crate::kernel::file::io::FileIo;
use crate::kernel::request::Request;
use crate::kernel::request_log::log;
use crate::kernel::send::body::{BodyContext, Output};
use crate::kernel::send::compress::Coder;
use crate::kernel::send::pull::{Puller, child_context};
use crate::modules::proxy::handler::{ProxyOutcome, proxy_one};

/// Fetches made for one response before it is given up.
const FETCHES_MAX: u32 = 2;

/// Bytes of the first fill's file read at once to check the new answer against.
const CHECK_BYTES_MAX: usize = 256 * 1024;

/// Where a resumed response stands, in the entity body's own offsets.
pub(crate) struct Resume<'f> {
    /// The fill's file, still readable after it was removed: the bytes already sent.
    pub old: &'f Arc<File>,
    pub io: &'f FileIo,
    /// Where the body starts in `old`.
    pub body_start: u64,
    /// The whole body's length (its `Content-Length`).
    pub body_len: u64,
    /// The stored response's status: the new answer must have it.
    pub status: u16,
    /// The part of the body this response sends (a range, or all of it), and how far it
    /// has been sent.
    pub window: (u64, u64),
    pub sent: u64,
}

/// Finishes the response from fetches of its own; `Err` (the response is cut) when none
/// gives the same bytes whole.
pub(crate) async fn finish(
    context: &BodyContext<'_>,
    output: &mut Output<'_>,
    request: &mut Request<'_>,
    mut coder: Coder,
    mut at: Resume<'_>,
) -> io::Result<()> {
    for _ in 0..FETCHES_MAX {
        match fetch_rest(context, output, request, &mut coder, &mut at).await {
            Ok(()) => return coder.finish(context, output, request).await,
            Err(Failed::Again) => {}
            Err(Failed::Differs) => {
                return Err(give_up(
                    context,
                    request,
                    "the answer fetched again differs",
                ));
            }
            Err(Failed::Output(error)) => return Err(error),
        }
    }
    Err(give_up(context, request, "fetching the rest failed"))
}

enum Failed {
    /// The fetch failed before the end: another may be tried.
    Again,
    /// The new answer is not the bytes already sent.
    Differs,
    /// Writing to the client failed.
    Output(io::Error),
}

fn give_up(context: &BodyContext<'_>, request: &Request<'_>, why: &str) -> io::Error {
    log(
        context.worker,
        context.connection,
        request,
        Level::Error,
        format_args!("the cache fill this response was read from ended short, and {why}"),
    );
    io::Error::other("the cache fill this response read ended")
}

/// One fetch: the request run again through the proxy, its body taken in, checked up to
/// what was sent and sent from there.
async fn fetch_rest(
    context: &BodyContext<'_>,
    output: &mut Output<'_>,
    request: &mut Request<'_>,
    coder: &mut Coder,
    at: &mut Resume<'_>,
) -> Result<(), Failed> {
    let worker = context.worker;
    let Some(location) = request.location else {
        return Err(Failed::Differs);
    };
    let Ok(mut child) = request.child(request.uri.clone(), request.args.clone()) else {
        return Err(Failed::Differs);
    };
    child.location = Some(location);
    let socket = output.sink.socket();
    let mut read_ahead = ReadAhead::new(1);
    let mut no_body = BodyState::Done;
    let mut client = Client {
        info: context.connection,
        source: BodySource::http1(socket, &mut read_ahead),
        body: &mut no_body,
    };
    let outcome = Box::pin(proxy_one(worker, &mut client, &mut child, location)).await;
    let ProxyOutcome::Respond(body) = outcome else {
        return Err(Failed::Again);
    };
    if child.response.status != at.status || child.response.content_length != Some(at.body_len) {
        return Err(Failed::Differs);
    }
    let Some(mut puller) = Puller::new(body) else {
        return Err(Failed::Differs);
    };
    let child_context = child_context(worker, context, &child);
    let mut position = 0u64;
    let mut piece = Vec::new();
    loop {
        piece.clear();
        let more = match puller
            .next(&child_context, socket, &mut child, &mut piece)
            .await
        {
            Ok(more) => more,
            Err(_) => return Err(Failed::Again),
        };
        let end = position + piece.len() as u64;
        if end > at.body_len {
            return Err(Failed::Differs);
        }
        // What was sent already must be what this answer has there.
        let checked_end = end.min(at.sent);
        if position < checked_end {
            let sent_part = &piece[..(checked_end - position) as usize];
            if !same_as_sent(context, at, position, sent_part).await {
                return Err(Failed::Differs);
            }
        }
        // The rest of the window goes to the client.
        let from = position.max(at.sent).max(at.window.0);
        let to = end.min(at.window.1);
        if from < to {
            let data = &piece[(from - position) as usize..(to - position) as usize];
            coder
                .code(context, output, request, data)
                .await
                .map_err(Failed::Output)?;
            at.sent = to;
        }
        position = end;
        if !more {
            break;
        }
        if at.sent >= at.window.1 && to > from {
            // The range is out: the client has it all now, while the rest of the answer
            // is read (a fill this request makes goes on for the cache and its waiters).
            coder.flush(output).await.map_err(Failed::Output)?;
        }
    }
    if position == at.body_len {
        Ok(())
    } else {
        Err(Failed::Again)
    }
}

/// Whether `bytes` are the body's bytes at `position` in the first fill's file.
async fn same_as_sent(
    context: &BodyContext<'_>,
    at: &Resume<'_>,
    position: u64,
    bytes: &[u8],
) -> bool {
    let mut checked = 0usize;
    while checked < bytes.len() {
        let len = (bytes.len() - checked).min(CHECK_BYTES_MAX);
        let file = Arc::clone(at.old);
        let offset = at.body_start + position + checked as u64;
        let read = move || {
            let mut buffer = vec![0u8; len];
            std::os::unix::fs::FileExt::read_exact_at(&*file, &mut buffer, offset).map(|()| buffer)
        };
        let path = std::path::Path::new("cache fill");
        match crate::modules::proxy::cache::run_read(context.worker, at.io, path, read).await {
            Ok(Ok(old)) if old == bytes[checked..checked + len] => checked += len,
            _ => return false,
        }
    }
    true
}
