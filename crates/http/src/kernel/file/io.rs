//! Reading a file body's bytes without stalling the worker: non-blocking reads of what is
//! in page cache, the page-cache residency test that decides where `sendfile` runs,
//! `sendfile` on a pool thread, and `O_DIRECT` reads for `directio`.

use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::Arc;

use runtime::sys::read_into::{ReadWait, pread_appending};
use threadpool::ThreadPool;

/// A file being sent: the open file and the range still to send.
#[derive(Debug)]
pub struct FileBody {
    pub file: Arc<File>,
    pub offset: u64,
    pub len: u64,
    pub path: PathBuf,
    /// Where reads (and the disk side of `sendfile`) run.
    pub io: FileIo,
    /// Opened with `O_DIRECT` (`directio`): read in aligned blocks, never sent by `sendfile`.
    pub direct: bool,
}

/// An error to log and the status to answer with.
#[derive(Debug)]
pub struct FileError {
    pub status: u16,
    pub level: logging::Level,
    pub message: String,
}

/// Where a file's blocking work runs, chosen per request from `aio`.
#[derive(Clone, Debug)]
pub enum FileIo {
    /// `aio off`: on the worker, as nginx does it.
    Worker,
    /// `aio threads`: on this pool.
    Pool(ThreadPool),
    /// `aio threads=$name` named a pool that does not exist. As in nginx, the file is
    /// opened on the worker and the head sent; the body then fails with
    /// `thread pool "NAME" not found` and the connection closes.
    Missing(String),
}

/// What a non-blocking read got.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct NowaitRead {
    /// Bytes read (appended to the buffer).
    pub filled: usize,
    pub end: NowaitEnd,
}

/// Why a non-blocking read stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NowaitEnd {
    /// The buffer is full.
    Complete,
    /// The file ended first.
    EndOfFile,
    /// The next byte is not in page cache: reading it would wait for the disk.
    WouldBlock,
    /// The file system does not support `RWF_NOWAIT`.
    Unsupported,
}

/// Appends `len` bytes of the file from `offset` to `buffer` with `preadv2(RWF_NOWAIT)`:
/// only what page cache holds is read, and the read never waits for the disk (nor is the
/// buffer zeroed first). Runs on the worker.
pub(crate) fn read_nowait(
    file: &File,
    offset: u64,
    buffer: &mut Vec<u8>,
    len: usize,
) -> io::Result<NowaitRead> {
    let mut filled = 0;
    while filled < len {
        let read = pread_appending(
            file,
            buffer,
            len - filled,
            offset + filled as u64,
            ReadWait::NoWait,
        );
        let errno = read
            .as_ref()
            .err()
            .and_then(rustix::io::Errno::from_io_error);
        let end = match (read, errno) {
            (Ok(0), _) => NowaitEnd::EndOfFile,
            (Ok(count), _) => {
                filled += count;
                continue;
            }
            (Err(_), Some(rustix::io::Errno::AGAIN)) => NowaitEnd::WouldBlock,
            (Err(_), Some(rustix::io::Errno::OPNOTSUPP | rustix::io::Errno::INVAL)) => {
                NowaitEnd::Unsupported
            }
            (Err(_), Some(rustix::io::Errno::INTR)) => continue,
            (Err(error), _) => return Err(error),
        };
        return Ok(NowaitRead { filled, end });
    }
    Ok(NowaitRead {
        filled,
        end: NowaitEnd::Complete,
    })
}

/// Whether page cache holds every page of `[offset, offset + len)`, by `mmap`+`mincore`+
/// `munmap` (about 2 µs for 256 KiB). A hint, never a promise: the pages may go at any
/// moment, so a worker that finds a range cached still reads it with `RWF_NOWAIT`. What
/// the hint spares is the other case: a worker's read of a range that is not cached starts
/// readahead on the worker, whose page allocations may reclaim memory there when memory
/// is short. Meaningful only where [`cache_state_visible`] says so; an error answers
/// `false` (leave it to the pool).
pub(crate) fn all_cached(file: &File, offset: u64, len: u64) -> bool {
    runtime::sys::linux::range_in_core(file, offset, len).unwrap_or(false)
}

/// Whether page cache seems to hold `[offset, offset + len)` of a file whose state is
/// hidden from this thread ([`cache_state_visible`]): one-byte reads that may not wait
/// (`preadv2(RWF_NOWAIT)`), at every [`PROBE_STRIDE`] bytes and at the range's last byte,
/// all find their page. A sample, so a hint like [`all_cached`]: a page between two probed
/// ones may be gone. How the probes ended: [`NowaitEnd::Complete`] when every one found
/// its page, otherwise the first miss (the end of the file counts as one).
pub(crate) fn probe_cached(file: &File, offset: u64, len: u64, scratch: &mut Vec<u8>) -> NowaitEnd {
    if len == 0 {
        return NowaitEnd::Complete;
    }
    let last = offset + len - 1;
    let mut at = offset;
    loop {
        scratch.clear();
        let end = match pread_appending(file, scratch, 1, at, ReadWait::NoWait) {
            Ok(1) => None,
            Ok(_) => Some(NowaitEnd::EndOfFile),
            Err(error) => match rustix::io::Errno::from_io_error(&error) {
                Some(rustix::io::Errno::INTR) => continue,
                Some(rustix::io::Errno::OPNOTSUPP | rustix::io::Errno::INVAL) => {
                    Some(NowaitEnd::Unsupported)
                }
                _ => Some(NowaitEnd::WouldBlock),
            },
        };
        if let Some(end) = end {
            return end;
        }
        if at == last {
            return NowaitEnd::Complete;
        }
        at = (at + PROBE_STRIDE).min(last);
    }
}

/// The distance between two probes of [`probe_cached`]: 16 pages, so a 512 KiB piece costs
/// 9 one-byte reads (a few microseconds), against a copy of the whole piece.
pub(crate) const PROBE_STRIDE: u64 = 64 * 1024;

/// Whether [`all_cached`] can answer for this file on this thread: Linux tells a thread
/// the page-cache state of a file only if it owns the file or could write it (a cache
/// file the workers wrote; not a web root owned by root, served as `user www-data`).
pub(crate) fn cache_state_visible(file: &File) -> bool {
    runtime::sys::linux::page_cache_visible(file)
}

/// How a `sendfile` made on a pool thread ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PoolSendEnd {
    /// All the bytes asked for went out.
    Complete,
    /// The socket's buffer filled (or the socket failed after some bytes went out: the
    /// next write reports why); the worker waits until it can take more.
    SocketFull,
    /// The file ended first: it was truncated while being sent.
    EndOfFile,
}

/// What a `sendfile` on a pool thread sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PoolSend {
    pub sent: usize,
    pub end: PoolSendEnd,
}

/// `sendfile(2)` of `[offset, offset + count)` of `file` to `socket`, a duplicate of the
/// client's non-blocking socket. Runs on a pool thread, as nginx runs its threaded
/// `sendfile`: the thread waits for the disk, never for the client, since the socket
/// answers `EAGAIN` when full. Reading the data into page cache on the pool and sending it
/// from the worker afterwards is a race under memory pressure (the pages can be evicted in
/// between, and the worker's `sendfile` then reads the disk).
pub(crate) fn sendfile_from_pool(
    socket: &OwnedFd,
    file: &File,
    offset: u64,
    count: usize,
) -> io::Result<PoolSend> {
    let mut sent = 0;
    while sent < count {
        let mut position = offset + sent as u64;
        let end = match rustix::fs::sendfile(socket, file, Some(&mut position), count - sent) {
            Ok(0) => PoolSendEnd::EndOfFile,
            Ok(more) => {
                sent += more;
                continue;
            }
            Err(rustix::io::Errno::INTR) => continue,
            Err(rustix::io::Errno::AGAIN) => PoolSendEnd::SocketFull,
            Err(_) if sent > 0 => PoolSendEnd::SocketFull,
            Err(error) => return Err(error.into()),
        };
        return Ok(PoolSend { sent, end });
    }
    Ok(PoolSend {
        sent,
        end: PoolSendEnd::Complete,
    })
}

/// Turns on `O_DIRECT` for a file of at least `directio` bytes, as nginx does after
/// opening it. Whether it took effect (some file systems, tmpfs among them, refuse it).
pub(crate) fn enable_directio(file: &File) -> bool {
    let Ok(flags) = rustix::fs::fcntl_getfl(file) else {
        return false;
    };
    flags.contains(rustix::fs::OFlags::DIRECT)
        || rustix::fs::fcntl_setfl(file, flags | rustix::fs::OFlags::DIRECT).is_ok()
}

/// Whether `O_DIRECT` is on for the descriptor.
pub(crate) fn is_direct(file: &File) -> bool {
    rustix::fs::fcntl_getfl(file).is_ok_and(|flags| flags.contains(rustix::fs::OFlags::DIRECT))
}

/// Fills `buf` from a file opened with `O_DIRECT`: reads whole `alignment` blocks into an
/// aligned scratch buffer and copies the wanted bytes. Fewer bytes only at end of file.
pub(crate) fn read_direct(
    file: &File,
    offset: u64,
    buf: &mut [u8],
    alignment: u64,
) -> io::Result<usize> {
    let alignment = alignment.max(1);
    let start = offset - offset % alignment;
    let end = (offset + buf.len() as u64).div_ceil(alignment) * alignment;
    let span = (end - start) as usize;
    let align = alignment as usize;
    let mut scratch = vec![0u8; span + align];
    let skip = scratch.as_ptr().align_offset(align);
    if skip > align {
        return Err(io::Error::other("cannot align a directio buffer"));
    }
    let aligned = &mut scratch[skip..skip + span];
    let mut filled = 0;
    while filled < span {
        match file.read_at(&mut aligned[filled..], start + filled as u64) {
            Ok(0) => break,
            Ok(read) => filled += read,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        }
        if filled % align != 0 {
            // A short read that is not a whole block is the end of the file.
            break;
        }
    }
    let lead = (offset - start) as usize;
    let available = filled.saturating_sub(lead).min(buf.len());
    buf[..available].copy_from_slice(&aligned[lead..lead + available]);
    Ok(available)
}

#[cfg(test)]
#[path = "io/tests.rs"]
mod tests;
