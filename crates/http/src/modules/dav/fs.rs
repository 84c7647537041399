//! The WebDAV module's file operations. Every function here blocks on the disk and runs
//! on a pool thread, never on a worker's loop; each answers the status nginx answers and
//! the error-log line it writes.

use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

use logging::Level;

use crate::kernel::file::io::FileError;
use crate::kernel::file::open as errno;
use crate::modules::dav::headers::Depth;

/// How deep a tree [`copy_tree`] walks: a deeper one is refused rather than followed
/// without end (a directory cannot contain itself, but a bind mount can).
const TREE_DEPTH_MAX: usize = 256;

/// The modes of what the module makes.
#[derive(Clone, Copy, Debug)]
pub(super) struct Modes {
    pub file: u32,
    pub directory: u32,
}

/// A failed call's status and line, as nginx's WebDAV module maps the error: a missing
/// path is `not_found` (404, or 409 where the parent is missing), no permission 403, an
/// existing one 405, a full disk 507, anything else 500 at `crit`.
pub(super) fn failure(call: &str, path: &Path, error: &io::Error, not_found: u16) -> FileError {
    let errno = error.raw_os_error().unwrap_or(errno::EIO);
    let (status, level) = match errno {
        errno::ENOENT | errno::ENOTDIR | errno::ENAMETOOLONG => (not_found, Level::Error),
        errno::EACCES | errno::EPERM => (403, Level::Error),
        errno::EEXIST => (405, Level::Error),
        errno::ENOSPC => (507, Level::Crit),
        _ => (500, Level::Crit),
    };
    FileError {
        status,
        level,
        message: format!(
            "{call}() \"{}\" failed ({})",
            path.display(),
            crate::kernel::request_log::errno_text(error)
        ),
    }
}

/// [`failure`] of a call on two paths: `rename() "FROM" to "TO" failed (...)`.
pub(super) fn failure_between(
    call: &str,
    from: &Path,
    to: &Path,
    error: &io::Error,
    not_found: u16,
) -> FileError {
    FileError {
        message: format!(
            "{call}() \"{}\" to \"{}\" failed ({})",
            from.display(),
            to.display(),
            crate::kernel::request_log::errno_text(error)
        ),
        ..failure(call, to, error, not_found)
    }
}

/// A refusal with nginx's status and `error` line.
pub(super) fn refused(status: u16, message: String) -> FileError {
    FileError {
        status,
        level: Level::Error,
        message,
    }
}

/// `"PATH" could not be created (21: Is a directory)`, nginx's line for a target in the way.
fn in_the_way(status: u16, path: &Path, errno: i32) -> FileError {
    refused(
        status,
        format!(
            "\"{}\" could not be created ({})",
            path.display(),
            crate::kernel::request_log::errno_text(&io::Error::from_raw_os_error(errno))
        ),
    )
}

/// Before a `PUT`: 201 for a new file, 204 for one replaced; a directory is in the way (409).
pub(super) fn put_status(target: &Path) -> Result<u16, FileError> {
    match std::fs::metadata(target) {
        Ok(metadata) if metadata.is_dir() => Err(in_the_way(409, target, errno::EISDIR)),
        Ok(_) => Ok(204),
        Err(_) => Ok(201),
    }
}

/// `DELETE`: a directory (its URI ends in `/`, depth infinity) with everything in it, or
/// a file (depth 0 or infinity). 204 when done.
pub(super) fn delete(path: &Path, collection_uri: bool, depth: Depth) -> Result<u16, FileError> {
    let metadata =
        std::fs::symlink_metadata(path).map_err(|error| failure("stat", path, &error, 404))?;
    if metadata.is_dir() {
        if !collection_uri {
            return Err(refused(
                409,
                format!(
                    "DELETE \"{}\" failed ({})",
                    path.display(),
                    crate::kernel::request_log::errno_text(&io::Error::from_raw_os_error(
                        errno::EISDIR
                    ))
                ),
            ));
        }
        if depth != Depth::Infinity {
            return Err(refused(400, "\"Depth\" header must be infinity".to_owned()));
        }
        std::fs::remove_dir_all(path).map_err(|error| failure("rmdir", path, &error, 404))?;
    } else {
        if depth == Depth::One {
            return Err(refused(
                400,
                "\"Depth\" header must be 0 or infinity".to_owned(),
            ));
        }
        std::fs::remove_file(path).map_err(|error| failure("unlink", path, &error, 404))?;
    }
    Ok(204)
}

/// `MKCOL`: the directory at `path` (without its final `/`); 201.
pub(super) fn mkcol(path: &Path, directory_mode: u32) -> Result<u16, FileError> {
    std::fs::DirBuilder::new()
        .mode(directory_mode)
        .create(path)
        .map_err(|error| failure("mkdir", path, &error, 409))?;
    Ok(201)
}

/// What a `COPY` or `MOVE` is asked to do, once its headers were checked.
#[derive(Debug)]
pub(super) struct Transfer {
    pub source: PathBuf,
    pub destination: PathBuf,
    pub overwrite: bool,
    pub depth: Depth,
    pub kind: TransferKind,
    pub modes: Modes,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum TransferKind {
    Copy,
    Move,
}

/// `COPY` or `MOVE`: 201 for a collection, 204 for a file, as nginx answers. A destination
/// that exists is replaced (a directory removed first) unless `Overwrite: F` (412).
pub(super) fn transfer(transfer: &Transfer) -> Result<u16, FileError> {
    let Transfer {
        source,
        destination,
        ..
    } = transfer;
    let source_metadata =
        std::fs::symlink_metadata(source).map_err(|error| failure("stat", source, &error, 404))?;
    if let Ok(existing) = std::fs::symlink_metadata(destination) {
        if !transfer.overwrite {
            return Err(in_the_way(412, destination, errno::EEXIST));
        }
        if existing.is_dir() {
            if !source_metadata.is_dir() {
                return Err(in_the_way(409, destination, errno::EISDIR));
            }
            std::fs::remove_dir_all(destination)
                .map_err(|error| failure("rmdir", destination, &error, 409))?;
        }
    }
    let directory = source_metadata.is_dir();
    match (transfer.kind, directory) {
        (TransferKind::Move, _) => move_path(transfer, directory)?,
        (TransferKind::Copy, true) => {
            let depth = match transfer.depth {
                Depth::Zero => 1,
                _ => TREE_DEPTH_MAX,
            };
            copy_tree(source, destination, transfer.modes, depth)?;
        }
        (TransferKind::Copy, false) => copy_file(source, destination, transfer.modes.file)?,
    }
    Ok(if directory { 201 } else { 204 })
}

/// `rename()`, or a copy and a removal across file systems.
fn move_path(transfer: &Transfer, directory: bool) -> Result<(), FileError> {
    let (source, destination) = (&transfer.source, &transfer.destination);
    match std::fs::rename(source, destination) {
        Ok(()) => Ok(()),
        Err(error) if error.raw_os_error() == Some(errno::EXDEV) => {
            if directory {
                copy_tree(source, destination, transfer.modes, TREE_DEPTH_MAX)?;
                std::fs::remove_dir_all(source)
                    .map_err(|error| failure("rmdir", source, &error, 404))
            } else {
                copy_file(source, destination, transfer.modes.file)?;
                std::fs::remove_file(source).map_err(|error| failure("unlink", source, &error, 404))
            }
        }
        Err(error) => Err(failure_between("rename", source, destination, &error, 409)),
    }
}

/// A file's bytes to `destination` (replaced), with `mode` and the source's time.
fn copy_file(source: &Path, destination: &Path, mode: u32) -> Result<(), FileError> {
    let modified = std::fs::metadata(source)
        .and_then(|metadata| metadata.modified())
        .map_err(|error| failure("stat", source, &error, 404))?;
    std::fs::copy(source, destination)
        .map_err(|error| failure_between("copy", source, destination, &error, 409))?;
    let file = std::fs::File::options()
        .write(true)
        .open(destination)
        .map_err(|error| failure("open", destination, &error, 409))?;
    file.set_permissions(std::fs::Permissions::from_mode(mode))
        .and_then(|()| file.set_modified(modified))
        .map_err(|error| failure("chmod", destination, &error, 500))
}

/// A directory and, `levels` deep, what it holds: directories made with the directory
/// mode, regular files copied; links and special files are left out, so that a copy never
/// reads or writes through a link out of the tree.
fn copy_tree(
    source: &Path,
    destination: &Path,
    modes: Modes,
    levels: usize,
) -> Result<(), FileError> {
    std::fs::DirBuilder::new()
        .mode(modes.directory)
        .create(destination)
        .map_err(|error| failure("mkdir", destination, &error, 409))?;
    if levels <= 1 {
        return Ok(());
    }
    let entries =
        std::fs::read_dir(source).map_err(|error| failure("opendir", source, &error, 404))?;
    for entry in entries {
        let entry = entry.map_err(|error| failure("readdir", source, &error, 500))?;
        let name = entry.file_name();
        if name.as_bytes() == b"." || name.as_bytes() == b".." {
            continue;
        }
        let (from, to) = (entry.path(), destination.join(&name));
        let kind = entry
            .file_type()
            .map_err(|error| failure("stat", &from, &error, 500))?;
        if kind.is_dir() {
            copy_tree(&from, &to, modes, levels - 1)?;
        } else if kind.is_file() {
            copy_file(&from, &to, modes.file)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let directory =
            std::env::temp_dir().join(format!("portico-dav-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&directory);
        std::fs::create_dir_all(&directory).unwrap();
        directory
    }

    const MODES: Modes = Modes {
        file: 0o644,
        directory: 0o755,
    };

    #[test]
    fn delete_checks_the_depth_and_the_collection_uri() {
        let directory = scratch("delete");
        std::fs::create_dir_all(directory.join("tree/sub")).unwrap();
        std::fs::write(directory.join("tree/sub/f"), "x").unwrap();
        std::fs::write(directory.join("file"), "x").unwrap();
        let tree = directory.join("tree");
        assert_eq!(
            delete(&tree, false, Depth::Infinity).unwrap_err().status,
            409
        );
        assert_eq!(delete(&tree, true, Depth::Zero).unwrap_err().status, 400);
        assert_eq!(delete(&tree, true, Depth::Infinity).unwrap(), 204);
        assert!(!tree.exists());
        let file = directory.join("file");
        assert_eq!(delete(&file, false, Depth::One).unwrap_err().status, 400);
        assert_eq!(delete(&file, false, Depth::Zero).unwrap(), 204);
        let missing = delete(&file, false, Depth::Zero).unwrap_err();
        assert_eq!((missing.status, missing.level), (404, Level::Error));
        assert!(
            missing.message.starts_with("stat() \""),
            "{}",
            missing.message
        );
        std::fs::remove_dir_all(directory).unwrap();
    }

    #[test]
    fn mkcol_answers_405_for_an_existing_one_and_409_without_a_parent() {
        let directory = scratch("mkcol");
        let made = directory.join("new");
        assert_eq!(mkcol(&made, 0o755).unwrap(), 201);
        assert_eq!(mkcol(&made, 0o755).unwrap_err().status, 405);
        assert_eq!(
            mkcol(&directory.join("a/b"), 0o755).unwrap_err().status,
            409
        );
        std::fs::remove_dir_all(directory).unwrap();
    }

    #[test]
    fn copies_and_moves_of_files_and_trees() {
        let directory = scratch("transfer");
        std::fs::create_dir_all(directory.join("src/sub")).unwrap();
        std::fs::write(directory.join("src/a"), "A").unwrap();
        std::fs::write(directory.join("src/sub/b"), "B").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", directory.join("src/link")).unwrap();
        let copy = |from: &str, to: &str, overwrite: bool, depth: Depth, kind: TransferKind| {
            transfer(&Transfer {
                source: directory.join(from),
                destination: directory.join(to),
                overwrite,
                depth,
                kind,
                modes: MODES,
            })
        };
        use TransferKind::{Copy, Move};
        assert_eq!(
            copy("src", "dst", true, Depth::Infinity, Copy).unwrap(),
            201
        );
        assert_eq!(std::fs::read(directory.join("dst/sub/b")).unwrap(), b"B");
        assert!(!directory.join("dst/link").exists(), "links are not copied");
        assert_eq!(
            copy("src", "shallow", true, Depth::Zero, Copy).unwrap(),
            201
        );
        assert!(!directory.join("shallow/a").exists());
        assert_eq!(
            copy("src/a", "dst/a", false, Depth::Zero, Copy)
                .unwrap_err()
                .status,
            412
        );
        std::fs::write(directory.join("dst/a"), "old and longer").unwrap();
        assert_eq!(
            copy("src/a", "dst/a", true, Depth::Zero, Copy).unwrap(),
            204
        );
        assert_eq!(std::fs::read(directory.join("dst/a")).unwrap(), b"A");
        assert_eq!(
            copy("src/a", "dst", true, Depth::Zero, Copy)
                .unwrap_err()
                .status,
            409
        );
        assert_eq!(
            copy("none", "x", true, Depth::Zero, Copy)
                .unwrap_err()
                .status,
            404
        );
        assert_eq!(
            copy("src", "dst", true, Depth::Infinity, Move).unwrap(),
            201
        );
        assert!(!directory.join("src").exists());
        assert_eq!(std::fs::read(directory.join("dst/a")).unwrap(), b"A");
        assert_eq!(
            copy("dst/a", "moved", true, Depth::Infinity, Move).unwrap(),
            204
        );
        assert_eq!(std::fs::read(directory.join("moved")).unwrap(), b"A");
        assert_eq!(put_status(&directory.join("moved")).unwrap(), 204);
        assert_eq!(put_status(&directory.join("absent")).unwrap(), 201);
        assert_eq!(put_status(&directory.join("dst")).unwrap_err().status, 409);
        std::fs::remove_dir_all(directory).unwrap();
    }
}
