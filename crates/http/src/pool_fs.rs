//! File-system calls the request phases make outside the static handler: the `realpath()`
//! of `$realpath_root` (the `stat()` of `if (-f ...)` goes through
//! `file::cache`, as nginx's file tests use `open_file_cache`). `realpath`
//! runs on the worker's `default` pool (through `HttpWorker::offload`), never on its loop.

use std::io;
use std::path::PathBuf;

/// `realpath()` of a document root.
pub(crate) fn realpath(path: &PathBuf) -> io::Result<PathBuf> {
    std::fs::canonicalize(path)
}

/// A path from bytes, as Unix allows any bytes but NUL.
pub(crate) fn path_from_bytes(bytes: &[u8]) -> PathBuf {
    path_from_vec(bytes.to_vec())
}

/// [`path_from_bytes`] without a copy.
pub(crate) fn path_from_vec(bytes: Vec<u8>) -> PathBuf {
    PathBuf::from(<std::ffi::OsString as std::os::unix::ffi::OsStringExt>::from_vec(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_keep_every_byte() {
        let path = path_from_bytes(b"/a/\xff\x01b");
        assert_eq!(
            std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str()),
            b"/a/\xff\x01b"
        );
    }
}
