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

/// What [`store_file`] does when the target's directory is missing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MissingDirectories {
    /// Made, as `proxy_store` and `create_full_put_path on` make them.
    Create,
    /// The rename fails.
    Fail,
}

/// Puts a finished temporary file in place as `target` (`proxy_store`, a WebDAV `PUT`),
/// with the mode `access` and `modified` (Unix seconds) as its time; missing directories
/// are made with that mode plus search rights where it reads, if `missing` says so. A
/// temporary file on another file system is copied, then removed. Runs on a pool. A failure
/// is the failed call's name with its error.
pub(crate) fn store_file(
    file: &std::fs::File,
    temp: &std::path::Path,
    target: &std::path::Path,
    access: u32,
    modified: Option<i64>,
    missing: MissingDirectories,
) -> Result<(), (&'static str, io::Error)> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    file.set_permissions(std::fs::Permissions::from_mode(access))
        .map_err(|error| ("chmod", error))?;
    if let Some(seconds) = modified.and_then(|seconds| u64::try_from(seconds).ok()) {
        let time = std::time::UNIX_EPOCH + std::time::Duration::from_secs(seconds);
        file.set_modified(time).map_err(|error| ("utimes", error))?;
    }
    let renamed = match std::fs::rename(temp, target) {
        Err(error)
            if error.kind() == io::ErrorKind::NotFound && missing == MissingDirectories::Create =>
        {
            // A directory is searchable wherever the file is readable.
            let search = (access & 0o444) >> 2;
            if let Some(parent) = target.parent() {
                std::fs::DirBuilder::new()
                    .recursive(true)
                    .mode(access | search)
                    .create(parent)
                    .map_err(|error| ("mkdir", error))?;
            }
            std::fs::rename(temp, target)
        }
        other => other,
    };
    match renamed {
        Err(error) if error.raw_os_error() == Some(crate::kernel::file::open::EXDEV) => {
            std::fs::copy(temp, target).map_err(|error| ("copy", error))?;
            let _ = std::fs::remove_file(temp);
            Ok(())
        }
        other => other.map_err(|error| ("rename", error)),
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
