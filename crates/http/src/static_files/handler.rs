//! Serving a file: URI to path, `index`, directory redirects, and the file body. The
//! system calls that touch the file system run where `aio` says (`file_cache.rs`).

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::Arc;

use http1::Method;
use logging::Level;

use crate::conf::Location;
use crate::core::types::extension_of;
use crate::core::{AliasPart, DocumentRoot};
use crate::request::Request;
use crate::response::{Body, Bytes};
use crate::static_files::open::OpenFailure;

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

/// Maps the request's URI to a file path under the location's `root` or `alias`
/// (`root` already evaluated), as nginx's `ngx_http_map_uri_to_path` does.
pub fn map_path(location: &Location, root: &[u8], request: &Request<'_>) -> Vec<u8> {
    map_uri(location, root, &request.uri, request.add_uri_to_alias)
}

/// [`map_path`] for a URI that is not (yet) the request's.
pub fn map_uri(location: &Location, root: &[u8], uri: &[u8], add_uri_to_alias: bool) -> Vec<u8> {
    let mut path = Vec::with_capacity(root.len() + uri.len());
    path.extend_from_slice(root);
    match &location.settings.core.document_root {
        DocumentRoot::Root(_) => path.extend_from_slice(uri),
        // In a regex location the alias, with its captures, is the whole path, unless
        // `try_files` made `$uri` the part after it.
        DocumentRoot::Alias(_, AliasPart::Whole) if add_uri_to_alias => {
            path.extend_from_slice(uri);
        }
        DocumentRoot::Alias(_, AliasPart::Whole) => {}
        DocumentRoot::Alias(_, AliasPart::Prefix(len)) => {
            path.extend_from_slice(uri.get(*len..).unwrap_or_default());
        }
    }
    path
}

/// The `Location` of the redirect for a directory without its slash: `$uri/`, escaped as
/// nginx escapes a URI, with `?$args` when there are arguments.
pub fn directory_location(request: &Request<'_>) -> Vec<u8> {
    let mut value = Vec::with_capacity(request.uri.len() + request.args.len() + 2);
    crate::static_files::autoindex::escape_uri(&request.uri, &mut value);
    value.push(b'/');
    if !request.args.is_empty() {
        value.push(b'?');
        value.extend_from_slice(&request.args);
    }
    value
}

/// The ETag nginx sends for a file: `"MTIME-SIZE"` in hex.
pub fn etag(modified: i64, len: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(28);
    out.push(b'"');
    push_hex(&mut out, modified as u64);
    out.push(b'-');
    push_hex(&mut out, len);
    out.push(b'"');
    out
}

/// Lowercase hex without leading zeros, as `{:x}` writes it (for the per-request `ETag`,
/// without the formatting machinery).
fn push_hex(out: &mut Vec<u8>, value: u64) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digits = (64 - value.leading_zeros()).div_ceil(4).max(1);
    for shift in (0..digits).rev() {
        out.push(HEX[((value >> (shift * 4)) & 0xf) as usize]);
    }
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
pub fn open_failure(failure: &OpenFailure, path: &[u8], log_not_found: bool) -> FileError {
    let errno = failure.errno;
    let message = failure.message(path);
    match errno {
        _ if failure.is_not_found() => FileError {
            status: 404,
            level: if log_not_found {
                Level::Error
            } else {
                Level::Debug
            },
            message,
        },
        EACCES | EMLINK | ELOOP => FileError {
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

/// The errno values answered with 403.
const EACCES: i32 = 13;
const EMLINK: i32 = 31;
const ELOOP: i32 = 40;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::static_files::open::{self, SymlinkCheck};

    #[test]
    fn etag_is_hex_mtime_and_size() {
        assert_eq!(etag(0x6b02091b, 3), b"\"6b02091b-3\"");
        assert_eq!(etag(0, 0), b"\"0-0\"");
        assert_eq!(
            etag(0x10, u64::MAX as i64 as u64),
            b"\"10-ffffffffffffffff\""
        );
        assert_eq!(etag(-1, 0x1000), b"\"ffffffffffffffff-1000\"");
    }

    #[test]
    fn open_failures_map_to_nginx_statuses() {
        let failure = |errno| OpenFailure {
            errno,
            call: "open()",
        };
        let missing = open_failure(&failure(2), b"/x", true);
        assert_eq!((missing.status, missing.level), (404, Level::Error));
        assert_eq!(
            missing.message,
            "open() \"/x\" failed (2: No such file or directory)"
        );
        assert_eq!(open_failure(&failure(2), b"/x", false).level, Level::Debug);
        assert_eq!(open_failure(&failure(13), b"/x", true).status, 403);
        assert_eq!(open_failure(&failure(5), b"/x", true).status, 500);
    }

    #[test]
    fn cached_open_answers_without_the_pool_for_a_cached_path() {
        let path = std::env::temp_dir().join(format!("portico-cached-{}", std::process::id()));
        std::fs::write(&path, b"cached").unwrap();
        let bytes = std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str()).to_vec();
        // Just written: its directory entry is in the dentry cache.
        match open::open_and_stat_cached(&bytes) {
            Some(Ok((Some(_), info))) => assert_eq!(info.len, 6),
            other => panic!("expected an open file, got {other:?}"),
        }
        let directory = std::env::temp_dir();
        let directory = std::os::unix::ffi::OsStrExt::as_bytes(directory.as_os_str()).to_vec();
        assert!(matches!(
            open::open_and_stat_cached(&directory),
            Some(Ok((None, info))) if info.is_dir
        ));
        std::fs::remove_file(&path).unwrap();
        // A name the cache knows to be absent is a real answer; one it does not know is
        // left to the pool. Either way nothing waits for the disk.
        match open::open_and_stat_cached(&bytes) {
            Some(Err(failure)) => assert_eq!(failure.errno, 2),
            None => {}
            Some(Ok(_)) => panic!("a removed file opened"),
        }
    }

    #[test]
    fn reads_whole_and_short_files() {
        let path = std::env::temp_dir().join(format!("portico-static-{}", std::process::id()));
        std::fs::write(&path, b"hello world").unwrap();
        let bytes = std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str()).to_vec();
        let (Some(file), info) = open::open_and_stat(&bytes, SymlinkCheck::OFF).unwrap() else {
            panic!("not a file")
        };
        assert_eq!(info.len, 11);
        let mut buf = [0u8; 100];
        assert_eq!(read_chunk_into(&file, 6, &mut buf).unwrap(), 5);
        assert_eq!(&buf[..5], b"world");
        let (none, info) = open::open_and_stat(b"/tmp", SymlinkCheck::OFF).unwrap();
        assert!(none.is_none() && info.is_dir);
        let fifo = std::env::temp_dir().join(format!("portico-fifo-{}", std::process::id()));
        let _ = std::fs::remove_file(&fifo);
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        let fifo_bytes = std::os::unix::ffi::OsStrExt::as_bytes(fifo.as_os_str()).to_vec();
        let (_, info) = open::open_and_stat(&fifo_bytes, SymlinkCheck::OFF)
            .expect("a FIFO opens without blocking");
        assert!(!info.is_file && !info.is_dir);
        std::fs::remove_file(&fifo).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert!(open::open_and_stat(&bytes, SymlinkCheck::OFF).is_err());
    }
}
