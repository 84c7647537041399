//! Reading a directory for `random_index`: its regular files. Runs on a pool thread, never
//! on a worker's loop.

use std::os::unix::ffi::OsStrExt;

use logging::Level;

use crate::kernel::file::io::FileError;
use crate::kernel::file::open::{EACCES, ENAMETOOLONG, ENOENT, ENOTDIR};

/// The names of `directory`'s regular files (through links), dot files left out; the
/// errors of `opendir()` as nginx maps them. Runs on a pool thread.
pub(super) fn regular_files(directory: &[u8]) -> Result<Vec<Vec<u8>>, FileError> {
    let path = crate::kernel::pool_fs::path_from_bytes(directory);
    let shown = String::from_utf8_lossy(directory);
    let reader = std::fs::read_dir(&path).map_err(|error| {
        let errno = error.raw_os_error().unwrap_or(0);
        let (status, level) = match errno {
            ENOENT | ENOTDIR | ENAMETOOLONG => (404, Level::Error),
            EACCES => (403, Level::Error),
            _ => (500, Level::Crit),
        };
        FileError {
            status,
            level,
            message: format!("opendir() \"{shown}\" failed ({errno}: {error})"),
        }
    })?;
    let mut names = Vec::new();
    for item in reader {
        let item = item.map_err(|error| FileError {
            status: 500,
            level: Level::Crit,
            message: format!("readdir() \"{shown}\" failed ({error})"),
        })?;
        let name = item.file_name();
        if name.as_bytes().starts_with(b".") {
            continue;
        }
        if std::fs::metadata(item.path()).is_ok_and(|metadata| metadata.is_file()) {
            names.push(name.as_bytes().to_vec());
        }
    }
    Ok(names)
}
