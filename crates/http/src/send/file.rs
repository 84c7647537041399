//! Sending a file body: with `sendfile(2)` from page cache to the socket, or read in pieces
//! of `output_buffers` and written. Where the disk may be touched is decided by `aio`: on
//! the worker (`aio off`, nginx's blocking behaviour), or on a thread pool (`aio threads`),
//! after first taking from page cache what is already there (`aio_nowait`).

use std::io;
use std::sync::Arc;

use crate::request::Request;
use crate::send::body::{BodyContext, INLINE_BODY_BYTES_MAX, Output, finish};
use crate::send::framing::{CHUNK_END, Framing, chunk_header_len_max};
use crate::static_files::handler::{FileBody, FileError, read_chunk_into};
use crate::static_files::io::{
    FileIo, NowaitEnd, Residency, read_direct, read_nowait, residency, warm,
};
use crate::worker::offload_to;

/// How much of a file one page-cache residency test covers under `aio threads`: a hot
/// file is tested once per response rather than once per `sendfile_max_chunk`.
const RESIDENCY_WINDOW_BYTES: u64 = 16 * 1024 * 1024;

/// Sends `file` after `head` (which goes out first, or with the first piece).
pub(super) async fn send_file(
    context: &BodyContext<'_>,
    output: &mut Output<'_>,
    request: &mut Request<'_>,
    file: FileBody,
    head: &mut Vec<u8>,
) -> io::Result<()> {
    let statics = &context.location.settings.static_files;
    let chunked = context.framing == Framing::Chunked;
    if let FileIo::Missing(name) = &file.io {
        output.write(head).await?;
        head.clear();
        let message = format!("thread pool \"{name}\" not found");
        crate::phases::log(
            context.worker,
            context.connection,
            request,
            logging::Level::Error,
            format_args!("{message}"),
        );
        return Err(io::Error::other(message));
    }
    let result = if file.len <= INLINE_BODY_BYTES_MAX as u64 {
        read_behind_head(context, &file, head).await
    } else if statics.sendfile && !chunked && !file.direct {
        let cork = statics.tcp_nopush;
        if cork {
            // nginx's tcp_nopush: the head and the first file bytes share full packets.
            let _ = rustix::net::sockopt::set_tcp_cork(&output.connection.stream, true);
        }
        let sent = send_with_sendfile(context, output, &file, head).await;
        if cork {
            let _ = rustix::net::sockopt::set_tcp_cork(&output.connection.stream, false);
        }
        sent
    } else {
        send_with_reads(context, output, &file, head).await
    };
    result?;
    finish(context, request, head);
    if head.is_empty() {
        return Ok(());
    }
    output.write(head).await
}

/// A small file (up to [`INLINE_BODY_BYTES_MAX`], as for bodies in memory) is read behind
/// the head, which then goes out with it in one write: even with `sendfile on`, one system
/// call and one packet fewer than a `sendfile` after the head, which for small files costs
/// more than the copy saves (measured in docs/static-files.md).
async fn read_behind_head(
    context: &BodyContext<'_>,
    file: &FileBody,
    head: &mut Vec<u8>,
) -> io::Result<()> {
    let chunked = context.framing == Framing::Chunked;
    let len = file.len as usize;
    if len == 0 {
        return Ok(());
    }
    if chunked {
        http1::response::write_chunk_header(head, len);
    }
    let data_start = head.len();
    head.resize(data_start + len, 0);
    *head = read_file(context, file, file.offset, std::mem::take(head), data_start).await?;
    if chunked {
        head.extend_from_slice(CHUNK_END);
    }
    Ok(())
}

/// `sendfile on`: pieces of at most `sendfile_max_chunk` go from the file to the socket
/// without a copy. Under `aio threads` a piece not wholly in page cache is first read into
/// it on the pool (`aio_nowait off`: every piece is), so the worker's `sendfile` does not
/// wait for the disk.
async fn send_with_sendfile(
    context: &BodyContext<'_>,
    output: &mut Output<'_>,
    file: &FileBody,
    head: &mut Vec<u8>,
) -> io::Result<()> {
    let statics = &context.location.settings.static_files;
    if !head.is_empty() {
        output.write(head).await?;
        head.clear();
    }
    let max_chunk = match statics.sendfile_max_chunk {
        0 => u64::MAX,
        limit => limit,
    };
    let mut offset = file.offset;
    let end = file.offset + file.len;
    // Data known to be in page cache up to here: one residency test covers many pieces.
    let mut resident_until = offset;
    while offset < end {
        let allowed = output.allowance().await;
        let count = (end - offset)
            .min(max_chunk)
            .min(allowed)
            .min(isize::MAX as u64);
        if let FileIo::Pool(pool) = &file.io {
            if offset + count > resident_until {
                let window = (end - offset).min(RESIDENCY_WINDOW_BYTES).max(count);
                if statics.aio_nowait
                    && timed_residency(context, file, offset, window) == Residency::Resident
                {
                    resident_until = offset + window;
                } else {
                    let handle = Arc::clone(&file.file);
                    let available = offload_to(pool, move || warm(&handle, offset, count))
                        .await
                        .map_err(pool_failure)??;
                    if available < count {
                        return Err(truncated(format!(
                            "read only {available} of {count} from \"{}\"",
                            file.path.display()
                        )));
                    }
                }
            }
        }
        let (sent, took) = sendfile_timed(output, file, offset, count as usize).await?;
        context.worker.note_blocking(took, || {
            format!("sendfile() of \"{}\"", file.path.display())
        });
        output.record(sent);
        offset += sent as u64;
    }
    Ok(())
}

/// The residency test, noted for the stall watcher (it maps and unmaps the range).
fn timed_residency(context: &BodyContext<'_>, file: &FileBody, offset: u64, len: u64) -> Residency {
    let started = crate::worker::BlockingTimer::start();
    let answer = residency(&file.file, offset, len);
    context.worker.note_blocking(started.elapsed(), || {
        format!("mincore() of \"{}\"", file.path.display())
    });
    answer
}

/// One `sendfile(2)` on the non-blocking socket, waiting for it to be writable within
/// `send_timeout`. At least one byte is sent; a file that ends early is an error. Also
/// returns how long the system calls themselves took (the worker's loop stood still).
async fn sendfile_timed(
    output: &Output<'_>,
    file: &FileBody,
    offset: u64,
    count: usize,
) -> io::Result<(usize, std::time::Duration)> {
    let stream = &output.connection.stream;
    let mut took = std::time::Duration::ZERO;
    loop {
        let mut position = offset;
        let started = crate::worker::BlockingTimer::start();
        let sent = stream.try_io_write(|| {
            rustix::fs::sendfile(stream, &*file.file, Some(&mut position), count)
                .map_err(io::Error::from)
        });
        took += started.elapsed();
        match sent {
            Ok(0) => {
                return Err(truncated(format!(
                    "sendfile() reported that \"{}\" was truncated at {offset}",
                    file.path.display()
                )));
            }
            Ok(sent) => return Ok((sent, took)),
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                let wait = stream.writable();
                match tokio::time::timeout(output.send_timeout, wait).await {
                    Ok(result) => result?,
                    Err(_) => return Err(io::ErrorKind::TimedOut.into()),
                }
            }
            Err(error) => return Err(error),
        }
    }
}

/// `sendfile off` (or a chunked body, or `directio`): the file is read in pieces of
/// `output_buffers` (no larger than the rate limit lets go now) and written; the head goes
/// out with the first piece.
async fn send_with_reads(
    context: &BodyContext<'_>,
    output: &mut Output<'_>,
    file: &FileBody,
    head: &mut Vec<u8>,
) -> io::Result<()> {
    let statics = &context.location.settings.static_files;
    let piece_max = statics.output_buffers.read_bytes().max(1);
    let chunked = context.framing == Framing::Chunked;
    let framing_bytes = if chunked {
        chunk_header_len_max(piece_max) + CHUNK_END.len()
    } else {
        0
    };
    let mut offset = file.offset;
    let end = file.offset + file.len;
    let mut buffer = Vec::new();
    while offset < end {
        let allowed = output.allowance().await;
        let overhead = (head.len() + framing_bytes) as u64;
        if allowed <= overhead && !head.is_empty() {
            // Not even the head fits this second: send it on its own.
            output.write(head).await?;
            head.clear();
            continue;
        }
        let len = (end - offset)
            .min(piece_max as u64)
            .min(allowed.saturating_sub(overhead).max(1)) as usize;
        buffer.clear();
        buffer.extend_from_slice(head);
        head.clear();
        if chunked {
            http1::response::write_chunk_header(&mut buffer, len);
        }
        let data_start = buffer.len();
        buffer.resize(data_start + len, 0);
        buffer = read_file(context, file, offset, buffer, data_start).await?;
        if chunked {
            buffer.extend_from_slice(CHUNK_END);
        }
        output.write(&buffer).await?;
        offset += len as u64;
    }
    Ok(())
}

/// Fills `buffer[data_start..]` from the file at `offset` where `aio` says ([`read_piece`]);
/// a read on the worker is timed for the stall watcher. Used for every read of a file
/// body: small files behind the head, `sendfile off`, and multipart or recoded pieces.
pub(super) async fn read_file(
    context: &BodyContext<'_>,
    file: &FileBody,
    offset: u64,
    buffer: Vec<u8>,
    data_start: usize,
) -> io::Result<Vec<u8>> {
    let statics = &context.location.settings.static_files;
    let started = crate::worker::BlockingTimer::start();
    let buffer = read_piece(
        file,
        statics.aio_nowait,
        statics.directio_alignment,
        offset,
        buffer,
        data_start,
    )
    .await?;
    if matches!(file.io, FileIo::Worker) {
        context.worker.note_blocking(started.elapsed(), || {
            format!("read() of \"{}\"", file.path.display())
        });
    }
    Ok(buffer)
}

/// Fills `buffer[data_start..]` from the file at `offset`: on the worker under `aio off`;
/// under `aio threads` what page cache holds is read on the worker without waiting
/// (`aio_nowait`), and only the rest on the pool. A file shorter than promised (truncated
/// while being sent) is an error: the promised length cannot be met.
async fn read_piece(
    file: &FileBody,
    nowait: bool,
    alignment: u64,
    offset: u64,
    mut buffer: Vec<u8>,
    data_start: usize,
) -> io::Result<Vec<u8>> {
    let wanted = buffer.len() - data_start;
    let direct = file.direct;
    let read = move |file: &std::fs::File, at: u64, into: &mut [u8]| {
        if direct {
            read_direct(file, at, into, alignment)
        } else {
            read_chunk_into(file, at, into)
        }
    };
    let pool = match &file.io {
        FileIo::Worker | FileIo::Missing(_) => {
            let filled = read(&file.file, offset, &mut buffer[data_start..])?;
            return complete(file, buffer, filled, wanted);
        }
        FileIo::Pool(pool) => pool,
    };
    let mut done = 0;
    if nowait && !direct {
        let got = read_nowait(&file.file, offset, &mut buffer[data_start..])?;
        match got.end {
            NowaitEnd::Complete => return Ok(buffer),
            NowaitEnd::EndOfFile => return complete(file, buffer, got.filled, wanted),
            NowaitEnd::WouldBlock | NowaitEnd::Unsupported => done = got.filled,
        }
    }
    let handle = Arc::clone(&file.file);
    let (buffer, filled) = offload_to(pool, move || {
        let start = data_start + done;
        let filled = read(&handle, offset + done as u64, &mut buffer[start..]);
        (buffer, filled)
    })
    .await
    .map_err(pool_failure)?;
    complete(file, buffer, done + filled?, wanted)
}

/// The buffer, or nginx's `read only N of M from "FILE"` when the file ended early.
fn complete(file: &FileBody, buffer: Vec<u8>, filled: usize, wanted: usize) -> io::Result<Vec<u8>> {
    if filled < wanted {
        return Err(truncated(format!(
            "read only {filled} of {wanted} from \"{}\"",
            file.path.display()
        )));
    }
    Ok(buffer)
}

/// A file that is shorter than its size when opened (truncated while being sent): the
/// promised length cannot be met, the connection closes and nginx's `alert` says why.
#[derive(Debug)]
struct Truncated(String);

impl std::fmt::Display for Truncated {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Truncated {}

fn truncated(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::UnexpectedEof, Truncated(message))
}

/// A pool task refused (queue overflow) or lost while the body is being sent.
#[derive(Debug)]
struct PoolFailure(FileError);

impl std::fmt::Display for PoolFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0.message)
    }
}

impl std::error::Error for PoolFailure {}

fn pool_failure(error: FileError) -> io::Error {
    io::Error::other(PoolFailure(error))
}

/// A file body that failed part-way: the head may be out already, so the connection just
/// closes; the error log says why with nginx's line (`thread pool "NAME" queue overflow: N
/// tasks waiting` at the pool's level, a truncated file at `alert`).
pub(super) fn log_file_failure(
    context: &BodyContext<'_>,
    request: &Request<'_>,
    error: &io::Error,
) {
    let Some(inner) = error.get_ref() else {
        return;
    };
    let (level, message) = if let Some(failure) = inner.downcast_ref::<PoolFailure>() {
        (failure.0.level, failure.0.message.as_str())
    } else if let Some(Truncated(message)) = inner.downcast_ref::<Truncated>() {
        (logging::Level::Alert, message.as_str())
    } else {
        return;
    };
    crate::phases::log(
        context.worker,
        context.connection,
        request,
        level,
        format_args!("{message}"),
    );
}
