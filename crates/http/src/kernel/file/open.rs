//! Opening and stat-ing request paths as nginx's `ngx_open_and_stat_file` does, including
//! `disable_symlinks` (each path component opened with `openat()`, `O_NOFOLLOW` or an owner
//! check). Every function here may block: it runs where `aio` says (the worker for
//! `aio off`, a pool thread for `aio threads`), except `open_and_stat_cached`, which never
//! waits for a disk and runs on the worker.

use std::fs::File;
use std::os::fd::{AsFd, OwnedFd};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, Stat};
use rustix::io::Errno;

/// `disable_symlinks off | on | if_not_owner`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Symlinks {
    Off,
    On,
    IfNotOwner,
}

/// How symbolic links are checked for one path: the mode, and how many leading bytes of
/// the path (`from=`) are opened in one call, following links.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SymlinkCheck {
    pub mode: Symlinks,
    pub from: usize,
}

impl SymlinkCheck {
    pub const OFF: SymlinkCheck = SymlinkCheck {
        mode: Symlinks::Off,
        from: 0,
    };

    /// The check for `path` given `disable_symlinks` and its evaluated `from=` value, as
    /// nginx's `ngx_http_set_disable_symlinks` decides it: a `from` that is not a
    /// directory prefix of the path is ignored, and one equal to the path turns checks off.
    pub(crate) fn for_path(mode: Symlinks, from: Option<&[u8]>, path: &[u8]) -> SymlinkCheck {
        let mut check = SymlinkCheck { mode, from: 0 };
        let Some(from) = from else {
            return check;
        };
        if from.is_empty() || from.len() > path.len() || !path.starts_with(from) {
            return check;
        }
        if from.len() == path.len() {
            check.mode = Symlinks::Off;
        } else if path[from.len()] == b'/' {
            check.from = from.len();
        } else if path[from.len() - 1] == b'/' {
            check.from = from.len() - 1;
        }
        check
    }
}

/// What `stat()` says about a path, as the handlers use it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileInfo {
    pub len: u64,
    pub modified: i64,
    pub is_dir: bool,
    pub is_file: bool,
    /// The owner may execute it (`if (-x ...)`).
    pub is_exec: bool,
    /// Device and inode: a file replaced under the same name has another.
    pub uniq: (u64, u64),
}

/// A failed call: nginx names the call in its log line (`open() "/x" failed (2: ...)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpenFailure {
    pub errno: i32,
    pub call: &'static str,
}

impl OpenFailure {
    /// nginx's line for it: `CALL "PATH" failed (ERRNO: TEXT)`.
    pub fn message(&self, path: &[u8]) -> String {
        failed_message(self.call, &String::from_utf8_lossy(path), self.errno)
    }

    fn new(errno: Errno, call: &'static str) -> OpenFailure {
        OpenFailure {
            errno: errno.raw_os_error(),
            call,
        }
    }

    /// Whether the error means that the path does not exist (nginx's 404 errors).
    pub(crate) fn is_not_found(&self) -> bool {
        matches!(self.errno, ENOENT | ENOTDIR | ENAMETOOLONG)
    }
}

pub(crate) const ENOENT: i32 = 2;
pub(crate) const ENOTDIR: i32 = 20;
pub(crate) const ENAMETOOLONG: i32 = 36;
pub(crate) const EACCES: i32 = 13;
pub(crate) const EPERM: i32 = 1;
pub(crate) const EIO: i32 = 5;
pub(crate) const EEXIST: i32 = 17;
pub(crate) const EXDEV: i32 = 18;
pub(crate) const EISDIR: i32 = 21;
pub(crate) const ENOSPC: i32 = 28;
const ELOOP: i32 = 40;

/// Opens `path` for reading and stats it. A directory is not kept open.
pub(crate) fn open_and_stat(
    path: &[u8],
    check: SymlinkCheck,
) -> Result<(Option<File>, FileInfo), OpenFailure> {
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer and hold a
    // pool thread forever. Reads of regular files ignore the flag.
    let fd = open_wrapper(path, check, OFlags::RDONLY | OFlags::NONBLOCK)?;
    let stat = rustix::fs::fstat(&fd).map_err(|errno| OpenFailure::new(errno, "fstat()"))?;
    let info = file_info(&stat);
    if info.is_dir {
        return Ok((None, info));
    }
    Ok((Some(File::from(fd)), info))
}

/// `open()` and `fstat()` on the worker, but only when no disk access can be needed: the
/// path resolves from cached directory entries alone (`openat2` with `RESOLVE_CACHED`,
/// Linux 5.12), and `fstat` of an open file reads its in-memory inode. `None` means the
/// answer needs the disk (or the kernel cannot tell): the caller asks the pool. Only for
/// paths without a symlink check (`disable_symlinks off`).
pub(crate) fn open_and_stat_cached(
    path: &[u8],
) -> Option<Result<(Option<File>, FileInfo), OpenFailure>> {
    let opened = rustix::fs::openat2(
        rustix::fs::CWD,
        path,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
        rustix::fs::ResolveFlags::CACHED,
    );
    let fd = match opened {
        Ok(fd) => fd,
        Err(Errno::AGAIN) | Err(Errno::NOSYS) | Err(Errno::INVAL) | Err(Errno::XDEV) => {
            return None;
        }
        Err(errno) => return Some(Err(OpenFailure::new(errno, "open()"))),
    };
    let stat = match rustix::fs::fstat(&fd) {
        Ok(stat) => stat,
        Err(errno) => return Some(Err(OpenFailure::new(errno, "fstat()"))),
    };
    let info = file_info(&stat);
    if info.is_dir {
        return Some(Ok((None, info)));
    }
    Some(Ok((Some(File::from(fd)), info)))
}

/// Stats `path` without keeping it open (`try_files`, nginx's `test_only`): `stat()`
/// when links are allowed, else an `openat()` walk and `fstat()`.
pub fn test(path: &[u8], check: SymlinkCheck) -> Result<FileInfo, OpenFailure> {
    if check.mode == Symlinks::Off {
        let stat = rustix::fs::stat(path).map_err(|errno| OpenFailure::new(errno, "stat()"))?;
        return Ok(file_info(&stat));
    }
    let fd = open_wrapper(path, check, OFlags::RDONLY | OFlags::NONBLOCK)?;
    let stat = rustix::fs::fstat(&fd).map_err(|errno| OpenFailure::new(errno, "fstat()"))?;
    Ok(file_info(&stat))
}

fn file_info(stat: &Stat) -> FileInfo {
    let kind = FileType::from_raw_mode(stat.st_mode);
    FileInfo {
        len: stat.st_size.max(0) as u64,
        modified: stat.st_mtime,
        is_dir: kind == FileType::Directory,
        is_file: kind == FileType::RegularFile,
        is_exec: stat.st_mode & 0o100 != 0,
        uniq: (stat.st_dev, stat.st_ino),
    }
}

/// nginx's `ngx_open_file_wrapper`: a plain `open()`, or with symlink checks a walk that
/// opens every directory component relative to the previous one.
fn open_wrapper(path: &[u8], check: SymlinkCheck, flags: OFlags) -> Result<OwnedFd, OpenFailure> {
    let flags = flags | OFlags::CLOEXEC;
    if check.mode == Symlinks::Off {
        return rustix::fs::open(path, flags, Mode::empty())
            .map_err(|errno| OpenFailure::new(errno, "open()"));
    }
    let search = OFlags::PATH | OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let (mut at, mut rest): (Option<OwnedFd>, &[u8]) = if check.from > 0 {
        let at = rustix::fs::open(&path[..check.from], search, Mode::empty())
            .map_err(|errno| OpenFailure::new(errno, "open()"))?;
        (Some(at), path.get(check.from + 1..).unwrap_or_default())
    } else if path.starts_with(b"/") {
        let at = rustix::fs::open("/", search, Mode::empty())
            .map_err(|errno| OpenFailure::new(errno, "openat()"))?;
        (Some(at), &path[1..])
    } else {
        (None, path)
    };
    while let Some(slash) = memchr::memchr(b'/', rest) {
        let component = &rest[..slash];
        rest = &rest[slash + 1..];
        if component.is_empty() {
            continue;
        }
        let fd = open_component(at.as_ref(), component, check.mode, search)?;
        at = Some(fd);
    }
    if rest.is_empty() {
        // A trailing slash: the last component is a directory; reopen it as asked.
        return openat(at.as_ref(), b".", flags)
            .map_err(|errno| OpenFailure::new(errno, "openat()"));
    }
    open_component(at.as_ref(), rest, check.mode, flags)
}

/// Opens one component below `at`: never following a link with `on`, and with
/// `if_not_owner` only a link whose owner owns its target.
fn open_component(
    at: Option<&OwnedFd>,
    name: &[u8],
    mode: Symlinks,
    flags: OFlags,
) -> Result<OwnedFd, OpenFailure> {
    let failure = |errno| OpenFailure::new(errno, "openat()");
    if mode != Symlinks::IfNotOwner {
        return openat(at, name, flags | OFlags::NOFOLLOW).map_err(failure);
    }
    let fd = openat(at, name, flags).map_err(failure)?;
    let link = match at {
        Some(at) => rustix::fs::statat(at, name, AtFlags::SYMLINK_NOFOLLOW),
        None => rustix::fs::statat(rustix::fs::CWD, name, AtFlags::SYMLINK_NOFOLLOW),
    }
    .map_err(failure)?;
    let target = rustix::fs::fstat(&fd).map_err(failure)?;
    if target.st_uid != link.st_uid {
        return Err(OpenFailure {
            errno: ELOOP,
            call: "openat()",
        });
    }
    Ok(fd)
}

fn openat(at: Option<&OwnedFd>, name: &[u8], flags: OFlags) -> Result<OwnedFd, Errno> {
    match at {
        Some(at) => rustix::fs::openat(at.as_fd(), name, flags, Mode::empty()),
        None => rustix::fs::openat(rustix::fs::CWD, name, flags, Mode::empty()),
    }
}

/// nginx's `CALL "PATH" failed (ERRNO: TEXT)`.
pub(crate) fn failed_message(call: &str, path: &str, errno: i32) -> String {
    format!(
        "{call} \"{path}\" failed ({errno}: {})",
        runtime::sys::linux::strerror(errno)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStrExt;

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("portico-open-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("real")).unwrap();
        std::fs::write(dir.join("real/file"), b"data").unwrap();
        std::os::unix::fs::symlink(dir.join("real"), dir.join("link")).unwrap();
        std::os::unix::fs::symlink(dir.join("real/file"), dir.join("real/filelink")).unwrap();
        dir
    }

    fn bytes(path: &std::path::Path) -> Vec<u8> {
        path.as_os_str().as_bytes().to_vec()
    }

    #[test]
    fn off_follows_links_and_on_refuses_them() {
        let dir = scratch("modes");
        let through_link = bytes(&dir.join("link/file"));
        let final_link = bytes(&dir.join("real/filelink"));
        assert!(open_and_stat(&through_link, SymlinkCheck::OFF).is_ok());
        assert!(open_and_stat(&final_link, SymlinkCheck::OFF).is_ok());
        let on = SymlinkCheck {
            mode: Symlinks::On,
            from: 0,
        };
        let (file, info) = open_and_stat(&bytes(&dir.join("real/file")), on).unwrap();
        assert!(file.is_some() && info.is_file && info.len == 4);
        // The link itself is a component opened with O_PATH|O_NOFOLLOW: what is below it
        // is "not a directory", as nginx reports it.
        let error = open_and_stat(&through_link, on).unwrap_err();
        assert_eq!((error.errno, error.call), (ENOTDIR, "openat()"));
        let error = open_and_stat(&final_link, on).unwrap_err();
        assert_eq!((error.errno, error.call), (ELOOP, "openat()"));
        // Same owner: if_not_owner allows the links.
        let owner = SymlinkCheck {
            mode: Symlinks::IfNotOwner,
            from: 0,
        };
        assert!(open_and_stat(&through_link, owner).is_ok());
        assert!(open_and_stat(&final_link, owner).is_ok());
        // from= skips the checks for the leading part.
        let link_dir = bytes(&dir.join("link"));
        let check = SymlinkCheck::for_path(Symlinks::On, Some(&link_dir), &through_link);
        assert_eq!(check.from, link_dir.len());
        assert!(open_and_stat(&through_link, check).is_ok());
        let info = test(&bytes(&dir.join("real/")), on).unwrap();
        assert!(info.is_dir);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn from_applies_only_to_a_directory_prefix() {
        let path = b"/srv/www/a/b";
        let check = SymlinkCheck::for_path(Symlinks::On, Some(b"/srv/www"), path);
        assert_eq!(check.from, 8);
        let check = SymlinkCheck::for_path(Symlinks::On, Some(b"/srv/www/"), path);
        assert_eq!(check.from, 8);
        let check = SymlinkCheck::for_path(Symlinks::On, Some(b"/srv/ww"), path);
        assert_eq!(check.from, 0);
        let check = SymlinkCheck::for_path(Symlinks::On, Some(b"/other"), path);
        assert_eq!((check.mode, check.from), (Symlinks::On, 0));
        let check = SymlinkCheck::for_path(Symlinks::On, Some(path), path);
        assert_eq!(check.mode, Symlinks::Off);
    }

    #[test]
    fn missing_files_name_the_call() {
        let error = test(b"/portico-no-such-dir/x", SymlinkCheck::OFF).unwrap_err();
        assert_eq!((error.errno, error.call), (ENOENT, "stat()"));
        assert!(error.is_not_found());
        let on = SymlinkCheck {
            mode: Symlinks::On,
            from: 0,
        };
        let error = open_and_stat(b"/portico-no-such-dir/x", on).unwrap_err();
        assert_eq!((error.errno, error.call), (ENOENT, "openat()"));
    }
}
