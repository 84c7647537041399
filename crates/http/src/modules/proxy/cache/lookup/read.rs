//! Opening a stored entry on the thread that may block (a pool thread, or the worker
//! under `aio off`): the file, its first bytes, their checks.

use std::sync::Arc;

use cache::Key;
use cache::format;

use super::Entry;

/// The most of an entry the first read takes: header, key, head and a small body.
pub(super) const FIRST_READ: usize = 16 * 1024;

/// Bodies up to this size are kept with their entry once read (a worker keeps up to
/// 1024 entries open: at most 8 MiB of bodies each).
pub(super) const SMALL_BODY_MAX: usize = 8 * 1024;

pub(super) enum EntryError {
    Missing,
    WrongLength { uniq: u64, stored: u64, found: u64 },
    Io(std::io::Error),
    Damaged(format::ReadError, u64),
    InvalidHead(u64),
}

/// The blocking part of opening an entry (`opened`, the file at `path`): read the header,
/// key and head (and a small body), with a `fstat` for the file's size, inode and time.
/// With `known` (the inode the index names, and neither a purge rule nor the worker's
/// kept entries to compare the time with) a first read that ends short of
/// [`FIRST_READ`] has met the file's end, and gives its size: no `fstat`.
pub(super) fn read_entry(
    opened: std::io::Result<std::fs::File>,
    path: Arc<std::path::Path>,
    key: &Key,
    key_text: &[u8],
    known: Option<u64>,
    block_size: u64,
) -> Result<Entry, EntryError> {
    use std::os::unix::fs::MetadataExt;
    let file = match opened {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Err(EntryError::Missing);
        }
        Err(error) => return Err(EntryError::Io(error)),
    };
    // With `known`, the first read comes before any `fstat`: into room that is not zeroed
    // first, and a regular file's read ends short only at its end.
    let mut first = None;
    if let Some(uniq) = known {
        let mut buffer = FIRST_ROOM.take();
        buffer.clear();
        runtime::sys::read_into::pread_appending(
            &file,
            &mut buffer,
            FIRST_READ,
            0,
            runtime::sys::read_into::ReadWait::Wait,
        )
        .map_err(EntryError::Io)?;
        if buffer.len() < FIRST_READ {
            let checked = check_entry(
                file,
                path,
                key,
                key_text,
                (buffer.len() as u64, uniq, 0),
                &mut buffer,
            );
            give_back(buffer);
            return checked;
        }
        // A larger file: its size from a `fstat`, the bytes already read kept.
        first = Some(buffer);
    }
    let metadata = file.metadata().map_err(EntryError::Io)?;
    let size = metadata.len();
    let written = metadata
        .modified()
        .ok()
        .and_then(|time| time.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |since| {
            u64::try_from(since.as_nanos()).unwrap_or(u64::MAX)
        });
    let mut buffer = match first {
        Some(buffer) => buffer,
        None => {
            let want = usize::try_from(size.min(FIRST_READ as u64)).unwrap_or(FIRST_READ);
            cache::store::read_head(&file, want).map_err(EntryError::Io)?
        }
    };
    let stat = cache::store::file_info(&metadata, block_size);
    let entry = check_entry(
        file,
        path,
        key,
        key_text,
        (size, metadata.ino(), written),
        &mut buffer,
    );
    give_back(buffer);
    let mut entry = entry?;
    entry.stat = Some(stat);
    Ok(entry)
}

thread_local! {
    /// The first read's room, kept on its thread between entries: a HIT allocates only
    /// what its entry keeps (a 16 KiB buffer freed per HIT made the allocator consolidate).
    static FIRST_ROOM: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// Keeps `buffer` for the thread's next first read, unless a long head grew it.
fn give_back(buffer: Vec<u8>) {
    if buffer.capacity() <= 2 * FIRST_READ {
        FIRST_ROOM.set(buffer);
    }
}

/// Checks the first bytes of an opened entry (`size`, inode and time known) and makes
/// the [`Entry`]: the header, the head parsed, the body's length against its
/// `Content-Length`, a small body kept when the bytes hold it whole.
fn check_entry(
    file: std::fs::File,
    path: Arc<std::path::Path>,
    key: &Key,
    key_text: &[u8],
    (size, uniq, written): (u64, u64, u64),
    buffer: &mut Vec<u8>,
) -> Result<Entry, EntryError> {
    use std::os::unix::fs::FileExt;
    let header = format::check(buffer, key, key_text, size)
        .map_err(|error| EntryError::Damaged(error, uniq))?;
    let head_start = usize::from(header.header_start);
    let body_start = usize::from(header.body_start);
    if body_start > buffer.len() {
        let mut rest = vec![0u8; body_start - buffer.len()];
        file.read_exact_at(&mut rest, buffer.len() as u64)
            .map_err(EntryError::Io)?;
        buffer.extend_from_slice(&rest);
    }
    let head: Arc<[u8]> = Arc::from(&buffer[head_start..body_start]);
    let Ok(Some(parsed)) = crate::modules::proxy::response::parse(&head) else {
        return Err(EntryError::InvalidHead(uniq));
    };
    // A body shorter or longer than its stored Content-Length was damaged on disk. An
    // empty body is a stored answer to HEAD (`proxy_cache_convert_head off`), which keeps
    // the length of the body it did not send.
    let body_len = size.saturating_sub(body_start as u64);
    if let Some(length) = parsed.content_length
        && length != body_len
        && body_len != 0
    {
        return Err(EntryError::WrongLength {
            uniq,
            stored: length,
            found: body_len,
        });
    }
    let body = (size == buffer.len() as u64 && body_len as usize <= SMALL_BODY_MAX && body_len > 0)
        .then(|| Arc::from(&buffer[body_start..]));
    Ok(Entry {
        file: Arc::new(file),
        path,
        header: Arc::new(header),
        head,
        parsed: Arc::new(parsed),
        size,
        uniq,
        written,
        body,
        stat: None,
    })
}
