//! Compressing a body as it is written (the send path's half of `gzip`): a gzip stream
//! produced piece by piece, so the worker compresses at most one piece between two writes
//! and a large body never holds the loop for long; and a file body read piece by piece
//! (on the pool where `aio` says) and compressed on the way.

use std::future::Future;
use std::io::{self, Write};
use std::pin::Pin;

use flate2::Compression;
use flate2::write::GzEncoder;

use crate::file::FileBody;
use crate::file::io::FileIo;
use crate::request::Request;
use crate::send::body::{BodyContext, Output, StreamedBody, finish};
use crate::send::framing::{CHUNK_END, Framing};

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

/// A whole in-memory body, compressed.
pub fn compress_all(data: &[u8], level: u32) -> Vec<u8> {
    let mut compressor = Compressor::new(level);
    let mut out = compressor.compress(data);
    out.extend_from_slice(&compressor.finish());
    out
}

/// A file body sent compressed.
pub struct CompressedFile {
    pub file: FileBody,
    pub level: u32,
}

impl std::fmt::Debug for CompressedFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompressedFile").finish_non_exhaustive()
    }
}

impl<'a> StreamedBody<'a> for CompressedFile {
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
    body: CompressedFile,
    head: &mut Vec<u8>,
) -> io::Result<()> {
    if context.header_only {
        return output.write(head).await;
    }
    let chunked = context.framing == Framing::Chunked;
    let mut compressor = Compressor::new(body.level);
    let file = body.file;
    let mut offset = file.offset;
    let end = file.offset + file.len;
    // Compressed bytes gather until a write is worth it; the head goes out with the first.
    let mut gathered = Vec::new();
    let mut pending = std::mem::take(head);
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
        gathered.extend_from_slice(&compressor.compress(&piece));
        if gathered.len() >= GATHER_BYTES {
            framed(&gathered, chunked, &mut pending);
            gathered.clear();
            output.write(&pending).await?;
            pending.clear();
        }
    }
    gathered.extend_from_slice(&compressor.finish());
    framed(&gathered, chunked, &mut pending);
    finish(context, request, &mut pending);
    output.write(&pending).await
}

/// An in-memory body sent compressed, in the response's framing (chunked, as nginx
/// sends a compressed body).
pub struct CompressedBytes {
    pub data: Vec<u8>,
}

impl std::fmt::Debug for CompressedBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompressedBytes").finish_non_exhaustive()
    }
}

impl<'a> StreamedBody<'a> for CompressedBytes {
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
            if !context.header_only {
                framed(&self.data, context.framing == Framing::Chunked, head);
                finish(context, request, head);
            }
            output.write(head).await
        })
    }
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
        let mut buffer = vec![0u8; len];
        let read = crate::file::read_chunk_into(&handle, offset, &mut buffer)?;
        buffer.truncate(read);
        Ok::<_, io::Error>(buffer)
    };
    match &file.io {
        FileIo::Pool(pool) => crate::worker::offload_to(pool, work)
            .await
            .map_err(|error| io::Error::other(error.message))?,
        FileIo::Worker | FileIo::Missing(_) => {
            let _ = context;
            work()
        }
    }
}
