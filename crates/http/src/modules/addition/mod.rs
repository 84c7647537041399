//! `add_before_body`, `add_after_body`: the bodies of subrequests placed before and after
//! a response's own (nginx's addition filter). Only a client's request with status 200 and
//! a type in `addition_types` gets them; its head loses `Content-Length` and ranges, and
//! its `ETag` becomes weak.

pub mod directives;
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
use crate::kernel::send::pull::{PulledBody, Puller, child_context};
use crate::kernel::subrequest::SubrequestRunner;
use crate::kernel::worker::HttpWorker;

/// nginx's addition header filter: whether the response gets additions; sets its head.
pub fn filter<'a>(
    worker: &'a HttpWorker,
    connection: &ConnectionInfo,
    request: &mut Request<'a>,
    location: &'a Location,
    body: Body<'a>,
    runner: &'a dyn SubrequestRunner,
) -> Body<'a> {
    let settings = &location.settings.addition;
    if settings.before_body.is_none() && settings.after_body.is_none()
        || request.response.status != 200
        || request.is_subrequest()
        || matches!(body, Body::Pieces(_))
    {
        return body;
    }
    if !settings.types.contains(request.response.media_type()) {
        return body;
    }
    let response = &mut request.response;
    response.body_changes();
    response.weaken_etag();
    let Some(main) = Puller::new(body) else {
        log(
            worker,
            connection,
            request,
            Level::Alert,
            format_args!("addition cannot take in this response's body"),
        );
        return Body::Empty;
    };
    Body::Upstream(Box::new(AdditionBody {
        worker,
        runner,
        before: settings.before_body.as_deref(),
        after: settings.after_body.as_deref(),
        stage: Stage::Before,
        main,
        active: None,
    }))
}

/// Where the response is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    Before,
    Main,
    After,
    Done,
}

/// A response with the bodies of its additions around it.
struct AdditionBody<'a> {
    worker: &'a HttpWorker,
    runner: &'a dyn SubrequestRunner,
    before: Option<&'a [u8]>,
    after: Option<&'a [u8]>,
    stage: Stage,
    main: Puller<'a>,
    /// The addition whose body is going out.
    active: Option<(Box<Request<'a>>, Puller<'a>)>,
}

impl std::fmt::Debug for AdditionBody<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdditionBody")
            .field("stage", &self.stage)
            .finish_non_exhaustive()
    }
}

impl<'a> AdditionBody<'a> {
    async fn next_output(
        &mut self,
        context: &BodyContext<'_>,
        socket: &Stream,
        request: &mut Request<'a>,
        out: &mut Vec<u8>,
    ) -> io::Result<bool> {
        loop {
            if let Some((child, body)) = &mut self.active {
                let child_context = child_context(self.worker, context, child);
                if !body.next(&child_context, socket, child, out).await? {
                    self.active = None;
                }
                if !out.is_empty() {
                    return Ok(true);
                }
                continue;
            }
            match self.stage {
                Stage::Before => {
                    self.stage = Stage::Main;
                    self.active = self.start(self.before, context, socket, request).await;
                }
                Stage::Main => {
                    if !self.main.next(context, socket, request, out).await? {
                        self.stage = Stage::After;
                    }
                    if !out.is_empty() {
                        return Ok(true);
                    }
                }
                Stage::After => {
                    self.stage = Stage::Done;
                    self.active = self.start(self.after, context, socket, request).await;
                }
                Stage::Done => return Ok(false),
            }
        }
    }

    /// Runs the subrequest for an addition's URI, if there is one.
    async fn start(
        &self,
        uri: Option<&[u8]>,
        context: &BodyContext<'_>,
        socket: &Stream,
        request: &mut Request<'a>,
    ) -> Option<(Box<Request<'a>>, Puller<'a>)> {
        let uri = uri?;
        let (path, args) = match memchr::memchr(b'?', uri) {
            Some(at) => (uri[..at].to_vec(), uri[at + 1..].to_vec()),
            None => (uri.to_vec(), Vec::new()),
        };
        let child = match request.child(path, args) {
            Ok(child) => child,
            Err(refused) => {
                let message = refused.message(uri);
                log(
                    self.worker,
                    context.connection,
                    request,
                    Level::Error,
                    format_args!("{message}"),
                );
                return None;
            }
        };
        let done = self
            .runner
            .run(self.worker, context.connection, socket, Box::new(child))
            .await;
        let body = done.body.and_then(Puller::new)?;
        Some((done.request, body))
    }
}

impl<'a> StreamedBody<'a> for AdditionBody<'a> {
    crate::kernel::send::pull::send_by_pulling!('a);
}

impl<'a> PulledBody<'a> for AdditionBody<'a> {
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
