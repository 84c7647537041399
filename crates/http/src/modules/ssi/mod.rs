//! `ssi`: server-side includes. The header part ([`filter`]) decides whether a response is
//! parsed (`ssi on`, `ssi_types`, a body that may have commands) and changes its head as
//! nginx does (no `Content-Length`, no ranges, no `Last-Modified` or `ETag` unless
//! `ssi_last_modified`). The body part ([`SsiBody`]) takes the body in piece by piece,
//! scans it for commands (`parse.rs`), runs them (`commands.rs`), and writes the text and
//! what the commands produce in order; `include` runs a subrequest and its body is placed
//! where the command was, as nginx's postpone filter places it.

mod commands;
pub mod directives;
mod expr;
pub mod parse;
pub mod settings;

use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::pin::Pin;

use logging::Level;
use runtime::Stream;

use crate::kernel::conf::Location;
use crate::kernel::request::{ConnectionInfo, Request};
use crate::kernel::send::body::{Body, BodyContext, StreamedBody};
use crate::kernel::send::pull::{PulledBody, Puller, child_context};
use crate::kernel::subrequest::{Subrequest, SubrequestRunner};
use crate::kernel::worker::HttpWorker;
use crate::modules::ssi::parse::{Event, Scanner};
use crate::modules::ssi::settings::Ssi;

/// Output is handed on once this much is gathered, and before any wait.
const GATHER_BYTES: usize = 16 * 1024;
/// nginx's default `config errmsg`.
pub const DEFAULT_ERRMSG: &[u8] = b"[an error occurred while processing the directive]";

/// nginx's SSI header filter: whether the response is parsed, and its head changed so.
pub fn filter<'a>(
    worker: &'a HttpWorker,
    connection: &ConnectionInfo,
    request: &mut Request<'a>,
    location: &'a Location,
    body: Body<'a>,
    runner: &'a dyn SubrequestRunner,
) -> Body<'a> {
    let settings = &location.settings.ssi;
    let response = &request.response;
    if !settings.ssi
        || response.content_length == Some(0)
        || body.is_empty()
        || matches!(body, Body::Pieces(_))
    {
        return body;
    }
    if !settings.types.contains(response.media_type()) {
        return body;
    }
    let response = &mut request.response;
    response.body_changes();
    if settings.last_modified {
        response.weaken_etag();
    } else {
        response.last_modified = None;
        response.etag = None;
    }
    let Some(source) = Puller::new(body) else {
        crate::kernel::request_log::log(
            worker,
            connection,
            request,
            Level::Alert,
            format_args!("SSI cannot take in this response's body"),
        );
        return Body::Empty;
    };
    Body::Upstream(Box::new(SsiBody::new(worker, settings, runner, source)))
}

/// A response being parsed for SSI commands.
pub struct SsiBody<'a> {
    worker: &'a HttpWorker,
    settings: &'a Ssi,
    runner: &'a dyn SubrequestRunner,
    /// The body being parsed; `None` once it has ended.
    source: Option<Puller<'a>>,
    scanner: Scanner,
    events: VecDeque<Event>,
    /// The subrequest whose body is being placed now.
    active: Option<Box<Active<'a>>>,
    /// What follows it, from includes that started together.
    ready: VecDeque<Ready<'a>>,
    state: commands::State,
}

/// Output waiting its turn behind the body being placed.
enum Ready<'a> {
    Text(Vec<u8>),
    Child(Box<Active<'a>>),
}

/// An included subrequest whose body goes out in place of its command.
struct Active<'a> {
    request: Box<Request<'a>>,
    body: Puller<'a>,
}

impl std::fmt::Debug for SsiBody<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SsiBody").finish_non_exhaustive()
    }
}

impl<'a> SsiBody<'a> {
    fn new(
        worker: &'a HttpWorker,
        settings: &'a Ssi,
        runner: &'a dyn SubrequestRunner,
        source: Puller<'a>,
    ) -> SsiBody<'a> {
        let value_len = usize::try_from(settings.value_length).unwrap_or(usize::MAX);
        SsiBody {
            worker,
            settings,
            runner,
            source: Some(source),
            scanner: Scanner::new(value_len.max(1)),
            events: VecDeque::new(),
            active: None,
            ready: VecDeque::new(),
            state: commands::State::default(),
        }
    }

    /// Appends the next output to `out`: `Ok(false)` once everything is out.
    async fn next_output(
        &mut self,
        context: &BodyContext<'_>,
        socket: &Stream,
        request: &mut Request<'a>,
        out: &mut Vec<u8>,
    ) -> io::Result<bool> {
        loop {
            if self.active.is_none()
                && let Some(ready) = self.ready.pop_front()
            {
                match ready {
                    Ready::Text(text) => out.extend_from_slice(&text),
                    Ready::Child(active) => self.active = Some(active),
                }
                continue;
            }
            if let Some(active) = &mut self.active {
                let child_context = child_context(self.worker, context, &active.request);
                let more = active
                    .body
                    .next(&child_context, socket, &mut active.request, out)
                    .await?;
                if !more {
                    self.active = None;
                }
                if !out.is_empty() {
                    return Ok(true);
                }
                continue;
            }
            if let Some(event) = self.events.pop_front() {
                // What was made goes out before an include waits for its subrequest.
                if !out.is_empty()
                    && matches!(&event, Event::Command(command) if command.name == "include")
                {
                    self.events.push_front(event);
                    return Ok(true);
                }
                if self.state.to_page() && starts_a_batch(&event, &self.events) {
                    self.events.push_front(event);
                    self.start_batch(context, socket, request).await;
                    continue;
                }
                if let Some(active) = self.handle(event, context, socket, request, out).await {
                    self.active = Some(active);
                    if !out.is_empty() {
                        return Ok(true);
                    }
                }
                if let Some(message) = self.state.fatal.take() {
                    let failed = crate::kernel::send::pull::Unflushed(message);
                    return Err(io::Error::other(failed));
                }
                if out.len() >= GATHER_BYTES {
                    return Ok(true);
                }
                continue;
            }
            let Some(source) = &mut self.source else {
                return Ok(false);
            };
            if !out.is_empty() {
                return Ok(true);
            }
            let mut input = Vec::new();
            let more = source.next(context, socket, request, &mut input).await?;
            let mut events = Vec::new();
            self.scanner.feed(&input, &mut events);
            if !more {
                self.scanner.finish(&mut events);
                self.source = None;
            }
            self.events.extend(events);
        }
    }

    /// Starts the includes at the head of the queue together, as nginx runs subrequests
    /// while their output waits its turn: their phases (and a proxied one's wait for its
    /// upstream's head) overlap, and their bodies are placed in order.
    async fn start_batch(
        &mut self,
        context: &BodyContext<'_>,
        socket: &Stream,
        request: &mut Request<'a>,
    ) {
        let mut children = Vec::new();
        while let Some(event) = self.events.pop_front() {
            match event {
                Event::Text(text) => self.ready.push_back(Ready::Text(text)),
                Event::Command(command) if is_plain_include(&command) => {
                    let mut errors = Vec::new();
                    match self.prepare_include(&command, context, request, &mut errors) {
                        Some((child, _)) => {
                            children.push((self.ready.len(), Box::new(child)));
                            self.ready.push_back(Ready::Text(Vec::new()));
                        }
                        None => self.ready.push_back(Ready::Text(errors)),
                    }
                }
                other => {
                    self.events.push_front(other);
                    break;
                }
            }
        }
        let runner = self.runner;
        let runs = children
            .into_iter()
            .map(|(index, child)| {
                let run = runner.run(self.worker, context.connection, socket, child);
                (index, run)
            })
            .collect();
        for (index, done) in join_all(runs).await {
            if let Some(body) = done.body.and_then(Puller::new)
                && let Some(slot) = self.ready.get_mut(index)
            {
                *slot = Ready::Child(Box::new(Active {
                    request: done.request,
                    body,
                }));
            }
        }
    }
}

impl<'a> StreamedBody<'a> for SsiBody<'a> {
    crate::kernel::send::pull::send_by_pulling!('a);

    fn into_pulled(self: Box<Self>) -> Option<Box<dyn PulledBody<'a> + 'a>> {
        Some(self)
    }
}

/// A nested document: a subrequest's SSI output, taken in by its parent's SSI.
impl<'a> PulledBody<'a> for SsiBody<'a> {
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

/// An `include` that may start together with others: no `set`, `stub` or `wait`.
fn is_plain_include(command: &parse::Command) -> bool {
    command.name == "include"
        && command.param("set").is_none()
        && command.param("stub").is_none()
        && command.param("wait").is_none()
}

/// Whether `event` is a plain include followed, past text only, by another one.
fn starts_a_batch(event: &Event, queue: &VecDeque<Event>) -> bool {
    let Event::Command(command) = event else {
        return false;
    };
    is_plain_include(command)
        && queue
            .iter()
            .take_while(|next| match next {
                Event::Text(_) => true,
                Event::Command(command) => is_plain_include(command),
                Event::Invalid(_) => false,
            })
            .any(|next| matches!(next, Event::Command(_)))
}

/// A running subrequest, with the place its output takes.
type Run<'a, 's> = (usize, Pin<Box<dyn Future<Output = Subrequest<'a>> + 's>>);

/// Runs the subrequests together until all have their answers.
async fn join_all<'a, 's>(mut runs: Vec<Run<'a, 's>>) -> Vec<(usize, Subrequest<'a>)> {
    let mut done: Vec<(usize, Subrequest<'a>)> = Vec::with_capacity(runs.len());
    std::future::poll_fn(|cx| {
        let mut at = 0;
        while at < runs.len() {
            match runs[at].1.as_mut().poll(cx) {
                std::task::Poll::Ready(subrequest) => {
                    let (index, _) = runs.swap_remove(at);
                    done.push((index, subrequest));
                }
                std::task::Poll::Pending => at += 1,
            }
        }
        if runs.is_empty() {
            std::task::Poll::Ready(())
        } else {
            std::task::Poll::Pending
        }
    })
    .await;
    done
}
