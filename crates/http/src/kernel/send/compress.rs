//! Compressing a body as it is written (the send path's half of `gzip`): a gzip stream
//! produced piece by piece, so the worker compresses at most one piece between two writes
//! and a large body never holds the loop for long; and in-memory and file bodies (a file
//! read piece by piece, on the pool where `aio` says) sent through their codings
//! (`send/coding.rs`: gunzip, recoding, gzip) on the way.

use std::future::Future;
use std::io::{self, Write};
use std::pin::Pin;

use flate2::Compression;
use flate2::write::GzEncoder;

use crate::kernel::file::io::{FileBody, FileIo};
use crate::kernel::request::Request;
use crate::kernel::send::body::{BodyContext, Output, StreamedBody, finish};
use crate::kernel::send::coding::{Coding, CodingError};
use crate::kernel::send::framing::{CHUNK_END, Framing};
use crate::kernel::send::turn::Turn;

/// Bytes of a file read and compressed at once.
const PIECE_BYTES: usize = 64 * 1024;
/// Compressed bytes gathered before a write.
const GATHER_BYTES: usize = 16 * 1024;

/// A gzip stream being produced.
pub struct Compressor {
    encoder: GzEncoder<Vec<u8>>,
    /// Bytes in and out, for `$gzip_ratio`.
    pub taken: u64,
    pub given: u64,
}

impl Compressor {
    pub fn new(level: u32) -> Compressor {
        Compressor {
            encoder: GzEncoder::new(Vec::new(), Compression::new(level.clamp(1, 9))),
            taken: 0,
            given: 0,
        }
    }

    /// Compresses `data`; what the stream has ready (maybe nothing yet).
    pub fn compress(&mut self, data: &[u8]) -> Vec<u8> {
        self.taken += data.len() as u64;
        let _ = self.encoder.write_all(data);
        let out = std::mem::take(self.encoder.get_mut());
        self.given += out.len() as u64;
        out
    }

    /// Ends the stream: the rest of it and the gzip trailer.
    pub fn finish(self) -> Vec<u8> {
        self.encoder.finish().unwrap_or_default()
    }
}

/// `data` as the client gets it: a chunk when the response is chunked.
pub fn framed(data: &[u8], chunked: bool, out: &mut Vec<u8>) {
    if data.is_empty() {
        return;
    }
    if chunked {
        http1::response::write_chunk_header(out, data.len());
        out.extend_from_slice(data);
        out.extend_from_slice(CHUNK_END);
    } else {
        out.extend_from_slice(data);
    }
}

/// A file body sent through codings (gzip, gunzip, recoding).
pub struct CodedFile {
    pub file: FileBody,
    pub coding: Coding,
}

impl std::fmt::Debug for CodedFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodedFile").finish_non_exhaustive()
    }
}

impl<'a> StreamedBody<'a> for CodedFile {
    fn send<'s, 'o>(
        self: Box<Self>,
        context: &'s BodyContext<'s>,
        output: &'s mut Output<'o>,
        request: &'s mut Request<'a>,
        head: &'s mut Vec<u8>,
    ) -> Pin<Box<dyn Future<Output = io::Result<()>> + 's>>
    where
        'a: 's,
        'o: 's,
    {
        Box::pin(send_file(context, output, request, *self, head))
    }
}

async fn send_file(
    context: &BodyContext<'_>,
    output: &mut Output<'_>,
    request: &mut Request<'_>,
    body: CodedFile,
    head: &mut Vec<u8>,
) -> io::Result<()> {
    if context.header_only {
        return output.write(head).await;
    }
    let mut coder = Coder::new(context, body.coding, std::mem::take(head));
    let file = body.file;
    let mut offset = file.offset;
    let end = file.offset + file.len;
    while offset < end {
        let len = ((end - offset) as usize).min(PIECE_BYTES);
        let piece = read(context, &file, offset, len).await?;
        if piece.is_empty() {
            return Err(io::Error::other(format!(
                "file \"{}\" was truncated",
                file.path.display()
            )));
        }
        offset += piece.len() as u64;
        coder.code(context, output, request, &piece).await?;
    }
    coder.finish(context, output, request).await
}

/// An in-memory body sent through codings, in the response's framing (chunked, as nginx
/// sends a compressed body).
pub struct CodedBytes {
    pub data: Vec<u8>,
    pub coding: Coding,
}

impl std::fmt::Debug for CodedBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodedBytes").finish_non_exhaustive()
    }
}

impl<'a> StreamedBody<'a> for CodedBytes {
    fn send<'s, 'o>(
        self: Box<Self>,
        context: &'s BodyContext<'s>,
        output: &'s mut Output<'o>,
        request: &'s mut Request<'a>,
        head: &'s mut Vec<u8>,
    ) -> Pin<Box<dyn Future<Output = io::Result<()>> + 's>>
    where
        'a: 's,
        'o: 's,
    {
        Box::pin(async move {
            if context.header_only {
                return output.write(head).await;
            }
            let mut coder = Coder::new(context, self.coding, std::mem::take(head));
            coder.code(context, output, request, &self.data).await?;
            coder.finish(context, output, request).await
        })
    }
}

/// Runs a body's buffers through its codings step by step and writes what they give,
/// gathered into writes of a useful size; the head goes out with the first.
pub struct Coder {
    coding: Coding,
    chunked: bool,
    /// Coded bytes not yet framed.
    gathered: Vec<u8>,
    /// Framed bytes not yet written (the head first).
    pending: Vec<u8>,
    /// Steps of an inflating body let the worker's other connections run.
    turn: Turn,
}

impl Coder {
    pub fn new(context: &BodyContext<'_>, coding: Coding, head: Vec<u8>) -> Coder {
        Coder {
            coding,
            chunked: context.framing == Framing::Chunked,
            gathered: Vec::new(),
            pending: head,
            turn: Turn::new(),
        }
    }

    /// Codes one buffer of the body, writing as the output grows; a body that cannot be
    /// decoded is logged as nginx logs it and ends the response.
    pub async fn code(
        &mut self,
        context: &BodyContext<'_>,
        output: &mut Output<'_>,
        request: &Request<'_>,
        mut data: &[u8],
    ) -> io::Result<()> {
        loop {
            let step = match self.coding.step(data, &mut self.gathered) {
                Ok(step) => step,
                Err(error) => {
                    framed(&self.gathered, self.chunked, &mut self.pending);
                    let _ = output.write(&self.pending).await;
                    return Err(coding_failed(context, request, &error));
                }
            };
            data = &data[step.consumed..];
            if self.gathered.len() >= GATHER_BYTES {
                framed(&self.gathered, self.chunked, &mut self.pending);
                self.gathered.clear();
                output.write(&self.pending).await?;
                self.pending.clear();
            }
            if !step.more {
                return Ok(());
            }
            self.turn.after_piece().await;
        }
    }

    /// Writes what is coded so far (before a wait for more of the body).
    pub async fn flush(&mut self, output: &mut Output<'_>) -> io::Result<()> {
        framed(&self.gathered, self.chunked, &mut self.pending);
        self.gathered.clear();
        if !self.pending.is_empty() {
            output.write(&self.pending).await?;
            self.pending.clear();
        }
        Ok(())
    }

    /// Ends the codings and the body, and writes the rest.
    pub async fn finish(
        mut self,
        context: &BodyContext<'_>,
        output: &mut Output<'_>,
        request: &mut Request<'_>,
    ) -> io::Result<()> {
        let ended = self.coding.finish(&mut self.gathered);
        request.gzip_ratio = self.coding.gzip_ratio;
        if let Err(error) = ended {
            // What was decoded goes out; the client sees the body cut short.
            framed(&self.gathered, self.chunked, &mut self.pending);
            let _ = output.write(&self.pending).await;
            return Err(coding_failed(context, request, &error));
        }
        framed(&self.gathered, self.chunked, &mut self.pending);
        finish(context, request, &mut self.pending);
        output.write(&self.pending).await
    }
}

/// Logs a body that could not be decoded (at `error`, as nginx does) and gives the error
/// that ends the response.
pub fn coding_failed(
    context: &BodyContext<'_>,
    request: &Request<'_>,
    error: &CodingError,
) -> io::Error {
    crate::kernel::request_log::log(
        context.worker,
        context.connection,
        request,
        logging::Level::Error,
        format_args!("{error}"),
    );
    io::Error::other(error.to_string())
}

/// `len` bytes of the file at `offset`, read where its `aio` says.
pub(crate) async fn read(
    context: &BodyContext<'_>,
    file: &FileBody,
    offset: u64,
    len: usize,
) -> io::Result<Vec<u8>> {
    let handle = std::sync::Arc::clone(&file.file);
    let work = move || {
        let mut buffer = Vec::new();
        crate::kernel::file::read_chunk_into(&handle, offset, &mut buffer, len)?;
        Ok::<_, io::Error>(buffer)
    };
    match &file.io {
        FileIo::Pool(pool) => {
            crate::kernel::worker::offload_to(pool, threadpool::TaskKind::Read, work)
                .await
                .map_err(|error| io::Error::other(error.message))?
        }
        FileIo::Worker | FileIo::Missing(_) => {
            let _ = context;
            work()
        }
    }
}
