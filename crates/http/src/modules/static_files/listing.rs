//! Reading a directory for `autoindex`, as nginx does: every entry but dot files, stat-ed
//! through links. Runs on a pool thread, never on a worker's loop.

use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;

/// One directory entry, as nginx keeps it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub name: Vec<u8>,
    pub is_dir: bool,
    pub is_file: bool,
    pub modified: i64,
    pub len: u64,
}

/// What reading a directory gave: its entries, or the failure, and lines to log either way.
#[derive(Debug)]
pub struct Listing {
    pub result: Result<Vec<Entry>, ListFailure>,
    /// `crit` lines about entries that could not be stat-ed.
    pub warnings: Vec<String>,
}

/// Why the listing failed.
#[derive(Debug)]
pub struct ListFailure {
    /// The errno of `opendir()`, or none when reading failed after it.
    pub opendir_errno: Option<i32>,
    pub message: String,
}

/// Reads `directory` (a path without its trailing slash): every entry whose name does not
/// start with `.`, stat-ed through links (a dangling link is described by itself), sorted
/// with directories first, then by name. Runs on a pool thread.
pub fn read_listing(directory: &[u8]) -> Listing {
    let path = crate::kernel::pool_fs::path_from_bytes(directory);
    let shown = String::from_utf8_lossy(directory).into_owned();
    let mut warnings = Vec::new();
    let reader = match std::fs::read_dir(&path) {
        Ok(reader) => reader,
        Err(error) => {
            let errno = error.raw_os_error().unwrap_or(0);
            return Listing {
                result: Err(ListFailure {
                    opendir_errno: Some(errno),
                    message: failed("opendir()", &shown, errno),
                }),
                warnings,
            };
        }
    };
    let mut entries = Vec::new();
    for item in reader {
        let item = match item {
            Ok(item) => item,
            Err(error) => {
                let errno = error.raw_os_error().unwrap_or(0);
                return Listing {
                    result: Err(ListFailure {
                        opendir_errno: None,
                        message: failed("readdir()", &shown, errno),
                    }),
                    warnings,
                };
            }
        };
        let name = item.file_name().as_bytes().to_vec();
        if name.starts_with(b".") {
            continue;
        }
        let full = item.path();
        let metadata = match std::fs::metadata(&full) {
            Ok(metadata) => metadata,
            Err(error) if is_gone_or_loop(&error) => match std::fs::symlink_metadata(&full) {
                Ok(metadata) => metadata,
                Err(error) => {
                    let errno = error.raw_os_error().unwrap_or(0);
                    let message = failed("lstat()", &full.to_string_lossy(), errno);
                    return Listing {
                        result: Err(ListFailure {
                            opendir_errno: None,
                            message,
                        }),
                        warnings,
                    };
                }
            },
            Err(error) => {
                let errno = error.raw_os_error().unwrap_or(0);
                let message = failed("stat()", &full.to_string_lossy(), errno);
                if errno == EACCES {
                    warnings.push(message);
                    continue;
                }
                return Listing {
                    result: Err(ListFailure {
                        opendir_errno: None,
                        message,
                    }),
                    warnings,
                };
            }
        };
        entries.push(Entry {
            name,
            is_dir: metadata.is_dir(),
            is_file: metadata.is_file(),
            modified: metadata.mtime(),
            len: metadata.len(),
        });
    }
    entries.sort_by(|a, b| b.is_dir.cmp(&a.is_dir).then_with(|| a.name.cmp(&b.name)));
    Listing {
        result: Ok(entries),
        warnings,
    }
}

const EACCES: i32 = 13;

fn is_gone_or_loop(error: &io::Error) -> bool {
    matches!(error.raw_os_error(), Some(2) | Some(40))
}

use crate::kernel::file::open::failed_message as failed;
