//! Taking a body in piece by piece instead of sending it: what SSI does with the body it
//! parses and with the bodies of the subrequests it includes. Memory is one piece, a file
//! is read where its `aio` says, and a streamed body (the proxy's) gives its pieces as
//! they arrive through [`PulledBody`].

use std::future::Future;
use std::io;
use std::pin::Pin;

use runtime::Stream;

use crate::kernel::file::io::FileBody;
use crate::kernel::find::current_location;
use crate::kernel::request::Request;
use crate::kernel::response::Bytes;
use crate::kernel::send::body::{Body, BodyContext, Output, finish};
use crate::kernel::send::compress::framed;
use crate::kernel::send::framing::Framing;
use crate::kernel::worker::HttpWorker;

/// Bytes of a file read at once.
const FILE_PIECE_BYTES: usize = 32 * 1024;

/// A streamed body taken piece by piece.
pub trait PulledBody<'a> {
    /// Appends the next piece to `out`: `Ok(false)` once the body has ended (the last
    /// piece may come with it). A failure is logged by the body; `Err` only says so.
    fn next<'s>(
        &'s mut self,
        context: &'s BodyContext<'s>,
        socket: &'s Stream,
        request: &'s mut Request<'a>,
        out: &'s mut Vec<u8>,
    ) -> Pin<Box<dyn Future<Output = io::Result<bool>> + 's>>
    where
        'a: 's;
}

/// Any body, taken piece by piece.
pub enum Puller<'a> {
    Done,
    Bytes(Bytes<'a>),
    File { file: FileBody, offset: u64 },
    Streamed(Box<dyn PulledBody<'a> + 'a>),
}

impl std::fmt::Debug for Puller<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Puller::Done => "Puller::Done",
            Puller::Bytes(_) => "Puller::Bytes",
            Puller::File { .. } => "Puller::File",
            Puller::Streamed(_) => "Puller::Streamed",
        })
    }
}

impl<'a> Puller<'a> {
    /// `None` for a body that cannot be taken in (one a filter already made pieces of).
    pub fn new(body: Body<'a>) -> Option<Puller<'a>> {
        Some(match body {
            Body::Empty => Puller::Done,
            Body::Bytes(bytes) => Puller::Bytes(bytes),
            Body::File(file) => Puller::File {
                offset: file.offset,
                file,
            },
            Body::Upstream(streamed) => Puller::Streamed(streamed.into_pulled()?),
            Body::Pieces(_) => return None,
        })
    }

    /// Appends the next piece to `out`; `Ok(false)` once the body has ended.
    pub async fn next(
        &mut self,
        context: &BodyContext<'_>,
        socket: &Stream,
        request: &mut Request<'a>,
        out: &mut Vec<u8>,
    ) -> io::Result<bool> {
        match self {
            Puller::Done => Ok(false),
            Puller::Bytes(bytes) => {
                out.extend_from_slice(bytes.as_slice());
                *self = Puller::Done;
                Ok(false)
            }
            Puller::File { file, offset } => {
                let end = file.offset + file.len;
                if *offset >= end {
                    *self = Puller::Done;
                    return Ok(false);
                }
                let len = ((end - *offset) as usize).min(FILE_PIECE_BYTES);
                let piece = super::compress::read(context, file, *offset, len).await?;
                if piece.is_empty() {
                    return Err(io::Error::other(format!(
                        "file \"{}\" was truncated",
                        file.path.display()
                    )));
                }
                *offset += piece.len() as u64;
                out.extend_from_slice(&piece);
                Ok(*offset < end)
            }
            Puller::Streamed(streamed) => streamed.next(context, socket, request, out).await,
        }
    }
}

/// What a subrequest's body is read with: its own location.
pub fn child_context<'c>(
    worker: &'c HttpWorker,
    parent: &BodyContext<'c>,
    child: &Request<'_>,
) -> BodyContext<'c> {
    BodyContext {
        worker,
        connection: parent.connection,
        location: current_location(worker, child),
        framing: Framing::Length,
        header_only: false,
        expect_trailers: false,
        coding: std::cell::Cell::default(),
    }
}

/// The `send` of a [`StreamedBody`](crate::kernel::send::body::StreamedBody) that is a
/// [`PulledBody`] too (SSI, sub_filter, addition): its pieces go out through
/// [`send_pulled`]. Used inside the `impl` block, with the impl's lifetime:
/// `send_by_pulling!('a);`.
macro_rules! send_by_pulling {
    ($a:lifetime) => {
        fn send<'s, 'o>(
            self: Box<Self>,
            context: &'s $crate::kernel::send::body::BodyContext<'s>,
            output: &'s mut $crate::kernel::send::body::Output<'o>,
            request: &'s mut $crate::kernel::request::Request<$a>,
            head: &'s mut Vec<u8>,
        ) -> ::std::pin::Pin<Box<dyn ::std::future::Future<Output = ::std::io::Result<()>> + 's>>
        where
            $a: 's,
            'o: 's,
        {
            Box::pin(async move {
                let mut body = *self;
                $crate::kernel::send::pull::send_pulled(&mut body, context, output, request, head)
                    .await
            })
        }
    };
}
pub(crate) use send_by_pulling;

/// A failure that ends the request without flushing what waits to be written: nginx
/// finalizes such a request with an error (an SSI `include set=` past its buffer), so a
/// head it held back never goes out. Other failures (an upstream that closed early) flush
/// what was made first, as nginx flushes them.
#[derive(Debug)]
pub struct Unflushed(pub String);

impl std::fmt::Display for Unflushed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Unflushed {}

/// Sends a body a filter makes by pulling (SSI's, addition's): each piece framed (chunked,
/// or compressed when gzip applies) and written as soon as it is ready, the head with the
/// first. A failure ends the response where it is, after what was made so far; an
/// [`Unflushed`] one before anything was written sends nothing.
pub async fn send_pulled<'a>(
    body: &mut dyn PulledBody<'a>,
    context: &BodyContext<'_>,
    output: &mut Output<'_>,
    request: &mut Request<'a>,
    head: &mut Vec<u8>,
) -> io::Result<()> {
    if context.header_only {
        return output.write(head).await;
    }
    let chunked = context.framing == Framing::Chunked;
    // The codings the filters chose (gunzip, recoding, gzip), applied piece by piece.
    let mut coding = context.coding.take();
    let mut coded = Vec::new();
    let socket = output.sink.socket();
    let mut pending = std::mem::take(head);
    let mut piece = Vec::new();
    let mut started = false;
    loop {
        piece.clear();
        let more = match body.next(context, socket, request, &mut piece).await {
            Ok(more) => more,
            Err(error) => {
                // What was made so far goes out (unless the failure says not to, before
                // the response started); the connection then closes.
                let unflushed = error.get_ref().is_some_and(|inner| inner.is::<Unflushed>());
                if started || !unflushed {
                    let _ = output.write(&pending).await;
                }
                return Err(error);
            }
        };
        if coding.is_empty() {
            framed(&piece, chunked, &mut pending);
        } else {
            coded.clear();
            let mut result = coding.step_all(&piece, &mut coded);
            if result.is_ok() && !more {
                result = coding.finish(&mut coded);
                request.gzip_ratio = coding.gzip_ratio;
            }
            framed(&coded, chunked, &mut pending);
            if let Err(error) = result {
                let _ = output.write(&pending).await;
                return Err(io::Error::other(error.0));
            }
        }
        if !more {
            finish(context, request, &mut pending);
            return output.write(&pending).await;
        }
        if !pending.is_empty() {
            output.write(&pending).await?;
            pending.clear();
            started = true;
        }
    }
}

/// A gzip body decoded as it is taken in: a subrequest's, which nginx's gunzip always
/// decodes (a subrequest is never sent gzip) before SSI or `sub_filter` read it.
#[derive(Debug)]
pub struct Gunzipped<'a> {
    inner: Puller<'a>,
    coding: super::coding::Coding,
    input: Vec<u8>,
}

impl<'a> Gunzipped<'a> {
    /// `None` for a body that cannot be taken in.
    pub fn new(body: Body<'a>) -> Option<Gunzipped<'a>> {
        Some(Gunzipped {
            inner: Puller::new(body)?,
            coding: super::coding::Coding {
                gunzip: Some(Box::default()),
                ..Default::default()
            },
            input: Vec::new(),
        })
    }

    async fn next_decoded(
        &mut self,
        context: &BodyContext<'_>,
        socket: &Stream,
        request: &mut Request<'a>,
        out: &mut Vec<u8>,
    ) -> io::Result<bool> {
        loop {
            self.input.clear();
            let more = self
                .inner
                .next(context, socket, request, &mut self.input)
                .await?;
            self.coding
                .step_all(&self.input, out)
                .map_err(|error| io::Error::other(error.0))?;
            if !more {
                self.coding
                    .finish(out)
                    .map_err(|error| io::Error::other(error.0))?;
                return Ok(false);
            }
            if !out.is_empty() {
                return Ok(true);
            }
        }
    }
}

impl<'a> super::body::StreamedBody<'a> for Gunzipped<'a> {
    send_by_pulling!('a);

    fn into_pulled(self: Box<Self>) -> Option<Box<dyn PulledBody<'a> + 'a>> {
        Some(self)
    }
}

impl<'a> PulledBody<'a> for Gunzipped<'a> {
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
        Box::pin(self.next_decoded(context, socket, request, out))
    }
}
