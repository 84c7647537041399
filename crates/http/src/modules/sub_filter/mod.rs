//! `sub_filter`: strings replaced in a response as it goes out (nginx's sub module), several
//! at once, without regard to case, across the pieces a body arrives in; the strings and
//! replacements may have variables. The response loses `Content-Length` and ranges, and
//! `Last-Modified` and `ETag` unless `sub_filter_last_modified on` (then a weak `ETag`).

pub mod directives;
mod matcher;
pub mod settings;

use std::future::Future;
use std::io;
use std::pin::Pin;

use logging::Level;
use runtime::Stream;

use crate::kernel::conf::Location;
use crate::kernel::request::{ConnectionInfo, Request};
use crate::kernel::request_log::log;
use crate::kernel::send::body::{Body, BodyContext, StreamedBody};
use crate::kernel::send::pull::{PulledBody, Puller};
use crate::kernel::variables::evaluate::render;
use crate::kernel::worker::HttpWorker;

pub use matcher::Matcher;

/// nginx's sub header filter: whether the response is rewritten; sets its head.
pub fn filter<'a>(
    worker: &'a HttpWorker,
    connection: &ConnectionInfo,
    request: &mut Request<'a>,
    location: &'a Location,
    body: Body<'a>,
) -> Body<'a> {
    let settings = &location.settings.sub_filter;
    // An encoded (compressed) body is not searched, as nginx leaves it.
    let encoded = request
        .response
        .find(b"content-encoding")
        .is_some_and(|value| !value.is_empty());
    if settings.substitutions.is_empty()
        || encoded
        || request.response.content_length == Some(0)
        || body.is_empty()
        || matches!(body, Body::Pieces(_))
    {
        return body;
    }
    if !settings.types.contains(request.response.media_type()) {
        return body;
    }
    let pairs = settings
        .substitutions
        .iter()
        .map(|substitution| {
            (
                render(worker, connection, request, &substitution.string),
                render(worker, connection, request, &substitution.replacement),
            )
        })
        .collect();
    let Some(matcher) = Matcher::new(pairs, settings.once) else {
        return body;
    };
    let response = &mut request.response;
    response.body_changes();
    if settings.last_modified {
        response.weaken_etag();
    } else {
        response.last_modified = None;
        response.etag = None;
    }
    let Some(source) = Puller::new(body) else {
        log(
            worker,
            connection,
            request,
            Level::Alert,
            format_args!("sub_filter cannot take in this response's body"),
        );
        return Body::Empty;
    };
    Body::Upstream(Box::new(SubBody {
        source,
        matcher,
        ended: false,
    }))
}

/// A response being rewritten.
struct SubBody<'a> {
    source: Puller<'a>,
    matcher: Matcher,
    ended: bool,
}

impl std::fmt::Debug for SubBody<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SubBody").finish_non_exhaustive()
    }
}

impl<'a> SubBody<'a> {
    async fn next_output(
        &mut self,
        context: &BodyContext<'_>,
        socket: &Stream,
        request: &mut Request<'a>,
        out: &mut Vec<u8>,
    ) -> io::Result<bool> {
        let mut input = Vec::new();
        while !self.ended {
            input.clear();
            let more = self
                .source
                .next(context, socket, request, &mut input)
                .await?;
            self.matcher.feed(&input, out);
            if !more {
                self.matcher.finish(out);
                self.ended = true;
            } else if !out.is_empty() {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

impl<'a> StreamedBody<'a> for SubBody<'a> {
    crate::kernel::send::pull::send_by_pulling!('a);

    fn into_pulled(self: Box<Self>) -> Option<Box<dyn PulledBody<'a> + 'a>> {
        Some(self)
    }
}

impl<'a> PulledBody<'a> for SubBody<'a> {
    fn next<'s>(
        &'s mut self,
        context: &'s BodyContext<'s>,
        socket: &'s Stream,
        request: &'s mut Request<'a>,
        out: &'s mut Vec<u8>,
    ) -> Pin<Box<dyn Future<Output = io::Result<bool>> + 's>>
    where
        'a: 's,
    {
        Box::pin(self.next_output(context, socket, request, out))
    }
}
