//! File-system calls the request phases make outside the static handler: the `stat()` of
//! `if (-f ...)` and the `realpath()` of `$realpath_root`. Every function here runs on the
//! generation's file pool (through `HttpWorker::offload`), never on a worker's loop.

use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use crate::rewrite::condition::FileKind;

/// `stat()` of a tested path: what it is, or the error (ENOENT and ENOTDIR mean "absent").
pub fn stat(path: &PathBuf) -> io::Result<FileKind> {
    let metadata = std::fs::metadata(path)?;
    Ok(FileKind {
        // As nginx tests it: a FIFO or a socket does not "exist" for `-e`.
        exists: metadata.is_file() || metadata.is_dir(),
        is_file: metadata.is_file(),
        is_dir: metadata.is_dir(),
        is_exec: metadata.permissions().mode() & 0o100 != 0,
    })
}

/// `realpath()` of a document root.
pub fn realpath(path: &PathBuf) -> io::Result<PathBuf> {
    std::fs::canonicalize(path)
}

/// A path from bytes, as Unix allows any bytes but NUL.
pub fn path_from_bytes(bytes: &[u8]) -> PathBuf {
    PathBuf::from(<std::ffi::OsString as std::os::unix::ffi::OsStringExt>::from_vec(bytes.to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_tells_files_from_directories() {
        let dir = std::env::temp_dir();
        let kind = stat(&dir).unwrap();
        assert!(kind.exists && kind.is_dir && !kind.is_file);
        let missing = stat(&dir.join("portico-no-such-file-for-stat")).unwrap_err();
        assert_eq!(missing.raw_os_error(), Some(2));
    }

    #[test]
    fn paths_keep_every_byte() {
        let path = path_from_bytes(b"/a/\xff\x01b");
        assert_eq!(
            std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str()),
            b"/a/\xff\x01b"
        );
    }
}
