//! Serving a file: URI to path, `index`, directory redirects, and the file body. Every
//! system call that touches the file system runs on the generation's file pool.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::PathBuf;
use std::sync::Arc;

use http1::Method;
use logging::Level;

use crate::conf::Location;
use crate::core::DocumentRoot;
use crate::core::types::extension_of;
use crate::response::{Body, Bytes};

/// A file being sent: the open file and the range still to send.
#[derive(Debug)]
pub struct FileBody {
    pub file: Arc<File>,
    pub offset: u64,
    pub len: u64,
    pub path: PathBuf,
    /// Where reads (and the disk side of `sendfile`) run.
    pub io: crate::static_files::io::FileIo,
    /// Opened with `O_DIRECT` (`directio`): read in aligned blocks, never sent by `sendfile`.
    pub direct: bool,
}

/// What the static handler decided.
#[derive(Debug)]
pub enum StaticOutcome<'a> {
    /// Respond with this status; for 200 the head is set and the body given.
    Respond { status: u16, body: Body<'a> },
    /// `index` found a file: continue with this URI as a new internal request.
    Redirect(Vec<u8>),
    /// A directory without the trailing slash: 301 to the URI with `/`.
    AddSlash,
}

/// An error to log and the status to answer with.
#[derive(Debug)]
pub struct FileError {
    pub status: u16,
    pub level: Level,
    pub message: String,
}

/// What a file-pool task found.
#[derive(Debug)]
pub enum Opened {
    File {
        file: File,
        len: u64,
        modified: i64,
    },
    Directory,
    /// A FIFO, socket or device: nginx refuses to serve these.
    NotRegular,
    Failed(io::Error),
}

/// `open()` and `fstat()` of a request path; runs on a pool thread under `aio threads`.
pub fn open_and_stat(path: &PathBuf) -> Opened {
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer and hold
    // a pool thread forever. Reads of regular files ignore the flag.
    let opened = OpenOptions::new()
        .read(true)
        .custom_flags(O_NONBLOCK)
        .open(path);
    match opened {
        Ok(file) => stat_opened(file),
        Err(error) => Opened::Failed(error),
    }
}

fn stat_opened(file: File) -> Opened {
    match file.metadata() {
        Ok(metadata) if metadata.is_dir() => Opened::Directory,
        Ok(metadata) if !metadata.is_file() => Opened::NotRegular,
        Ok(metadata) => Opened::File {
            len: metadata.len(),
            modified: metadata.mtime(),
            file,
        },
        Err(error) => Opened::Failed(error),
    }
}

/// `open()` and `fstat()` on the worker, but only if the path resolves from cached
/// directory entries (`openat2(RESOLVE_CACHED)`, Linux 5.12): such an open does no disk
/// I/O, and `fstat` of an open file reads the in-memory inode. `None` means the answer
/// needs the disk (or the kernel cannot tell): the caller asks the pool.
pub fn open_and_stat_cached(path: &PathBuf) -> Option<Opened> {
    use rustix::fs::{Mode, OFlags, ResolveFlags};
    let opened = rustix::fs::openat2(
        rustix::fs::CWD,
        path,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
        ResolveFlags::CACHED,
    );
    match opened {
        Ok(fd) => Some(stat_opened(File::from(fd))),
        Err(rustix::io::Errno::AGAIN)
        | Err(rustix::io::Errno::NOSYS)
        | Err(rustix::io::Errno::INVAL)
        | Err(rustix::io::Errno::XDEV) => None,
        Err(errno) => Some(Opened::Failed(errno.into())),
    }
}

/// Fills `buf` from the file at `offset`; fewer bytes only at the end of the file. Runs on
/// a pool thread.
pub fn read_chunk_into(file: &File, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match file.read_at(&mut buf[filled..], offset + filled as u64) {
            Ok(0) => break,
            Ok(read) => filled += read,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        }
    }
    Ok(filled)
}

/// The methods the static handler serves; anything else is 405 (nginx lets POST reach the
/// handler so that a missing file is still 404).
pub fn method_allowed(method: Method) -> bool {
    matches!(method, Method::Get | Method::Head | Method::Post)
}

/// Maps `uri` to a file path under the location's `root` or `alias`.
pub fn map_path(location: &Location, root: &[u8], uri: &[u8]) -> Vec<u8> {
    let mut path = root.to_vec();
    match &location.settings.core.document_root {
        DocumentRoot::Root(_) => path.extend_from_slice(uri),
        // In a regex location the alias, with its captures, is the whole path.
        DocumentRoot::Alias(_) if location.is_regex() => {}
        DocumentRoot::Alias(_) => {
            let prefix = location.prefix();
            path.extend_from_slice(uri.strip_prefix(prefix).unwrap_or(uri));
        }
    }
    path
}

/// The ETag nginx sends for a file: `"MTIME-SIZE"` in hex.
pub fn etag(modified: i64, len: u64) -> Vec<u8> {
    format!("\"{modified:x}-{len:x}\"").into_bytes()
}

/// The MIME type of a URI's extension, else `default_type`.
pub fn content_type<'a>(location: &'a Location, uri: &[u8]) -> Bytes<'a> {
    let core = &location.settings.core;
    let extension = extension_of(uri);
    if extension.is_empty() {
        return Bytes::Borrowed(&core.default_type);
    }
    match core.types.get(extension) {
        Some(mime) => Bytes::Borrowed(mime),
        None => Bytes::Borrowed(&core.default_type),
    }
}

/// The status and log line for a failed `open()`, as nginx's static module chooses them.
pub fn open_failure(error: &io::Error, path: &[u8], log_not_found: bool) -> FileError {
    let errno = error.raw_os_error().unwrap_or(0);
    let text = runtime::sys::linux::strerror(errno);
    let message = format!(
        "open() \"{}\" failed ({errno}: {text})",
        String::from_utf8_lossy(path)
    );
    match errno {
        libc_errno::ENOENT | libc_errno::ENOTDIR | libc_errno::ENAMETOOLONG => FileError {
            status: 404,
            level: if log_not_found {
                Level::Error
            } else {
                Level::Debug
            },
            message,
        },
        libc_errno::EACCES | libc_errno::ELOOP | libc_errno::EMLINK => FileError {
            status: 403,
            level: Level::Error,
            message,
        },
        _ => FileError {
            status: 500,
            level: Level::Crit,
            message,
        },
    }
}

/// `O_NONBLOCK` on Linux.
const O_NONBLOCK: i32 = 0o4000;

/// The errno values the static handler distinguishes.
mod libc_errno {
    pub const ENOENT: i32 = 2;
    pub const EACCES: i32 = 13;
    pub const ENOTDIR: i32 = 20;
    pub const ENAMETOOLONG: i32 = 36;
    pub const EMLINK: i32 = 31;
    pub const ELOOP: i32 = 40;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn etag_is_hex_mtime_and_size() {
        assert_eq!(etag(0x6b02091b, 3), b"\"6b02091b-3\"");
    }

    #[test]
    fn open_failures_map_to_nginx_statuses() {
        let missing = open_failure(&io::Error::from_raw_os_error(2), b"/x", true);
        assert_eq!((missing.status, missing.level), (404, Level::Error));
        assert_eq!(
            missing.message,
            "open() \"/x\" failed (2: No such file or directory)"
        );
        assert_eq!(
            open_failure(&io::Error::from_raw_os_error(2), b"/x", false).level,
            Level::Debug
        );
        assert_eq!(
            open_failure(&io::Error::from_raw_os_error(13), b"/x", true).status,
            403
        );
        assert_eq!(
            open_failure(&io::Error::from_raw_os_error(5), b"/x", true).status,
            500
        );
    }

    #[test]
    fn cached_open_answers_without_the_pool_for_a_cached_path() {
        let path = std::env::temp_dir().join(format!("portico-cached-{}", std::process::id()));
        std::fs::write(&path, b"cached").unwrap();
        // Just written: its directory entry is in the dentry cache.
        match open_and_stat_cached(&path) {
            Some(Opened::File { len, .. }) => assert_eq!(len, 6),
            other => panic!("expected an open file, got {other:?}"),
        }
        assert!(matches!(
            open_and_stat_cached(&std::env::temp_dir()),
            Some(Opened::Directory)
        ));
        std::fs::remove_file(&path).unwrap();
        // A name the cache knows to be absent is a real answer; one it does not know is
        // left to the pool. Either way nothing waits for the disk.
        match open_and_stat_cached(&path) {
            Some(Opened::Failed(error)) => assert_eq!(error.raw_os_error(), Some(2)),
            None => {}
            Some(other) => panic!("a removed file opened: {other:?}"),
        }
    }

    #[test]
    fn reads_whole_and_short_files() {
        let path = std::env::temp_dir().join(format!("portico-static-{}", std::process::id()));
        std::fs::write(&path, b"hello world").unwrap();
        let Opened::File { file, len, .. } = open_and_stat(&path) else {
            panic!("not a file")
        };
        assert_eq!(len, 11);
        let mut buf = [0u8; 100];
        assert_eq!(read_chunk_into(&file, 6, &mut buf).unwrap(), 5);
        assert_eq!(&buf[..5], b"world");
        assert!(matches!(
            open_and_stat(&std::env::temp_dir()),
            Opened::Directory
        ));
        let fifo = std::env::temp_dir().join(format!("portico-fifo-{}", std::process::id()));
        let _ = std::fs::remove_file(&fifo);
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        assert!(
            matches!(open_and_stat(&fifo), Opened::NotRegular),
            "a FIFO opens without blocking"
        );
        std::fs::remove_file(&fifo).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert!(matches!(open_and_stat(&path), Opened::Failed(_)));
    }
}
