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

/// `proxy_store`: puts a finished temporary file in place as `target`, with the mode
/// `proxy_store_access` gives and the upstream's `Last-Modified` as its time; missing
/// directories are made with that mode plus search rights where it reads. Runs on a pool.
pub(crate) fn store_file(
    file: &std::fs::File,
    temp: &std::path::Path,
    target: &std::path::Path,
    access: u32,
    modified: Option<i64>,
) -> io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    file.set_permissions(std::fs::Permissions::from_mode(access))?;
    if let Some(seconds) = modified.and_then(|seconds| u64::try_from(seconds).ok()) {
        let time = std::time::UNIX_EPOCH + std::time::Duration::from_secs(seconds);
        file.set_modified(time)?;
    }
    match std::fs::rename(temp, target) {
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            // A directory is searchable wherever the file is readable.
            let search = (access & 0o444) >> 2;
            if let Some(parent) = target.parent() {
                std::fs::DirBuilder::new()
                    .recursive(true)
                    .mode(access | search)
                    .create(parent)?;
            }
            std::fs::rename(temp, target)
        }
        other => other,
    }
}

/// A whole (small) file: an `auth_basic_user_file`. Runs on a pool.
pub(crate) fn whole_file(path: &std::path::Path) -> io::Result<Vec<u8>> {
    std::fs::read(path)
}

/// A path from bytes, as Unix allows any bytes but NUL.
pub(crate) fn path_from_bytes(bytes: &[u8]) -> PathBuf {
    path_from_vec(bytes.to_vec())
}

/// [`path_from_bytes`] without a copy.
pub(crate) fn path_from_vec(bytes: Vec<u8>) -> PathBuf {
    PathBuf::from(<std::ffi::OsString as std::os::unix::ffi::OsStringExt>::from_vec(bytes))
}

/// Opens a log file for appending, made `0644` if it is new, as nginx makes logs.
pub(crate) fn open_append(path: &std::path::Path) -> io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o644)
        .open(path)
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
