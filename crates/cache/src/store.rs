//! The blocking file operations of the cache: temp files, commits by rename, opening and
//! reading entries, rewriting a header in place, unlinking.
//!
//! Each function makes system calls and may block on the disk, so the caller runs it on a
//! pool thread (or the manager or loader thread); none touches the index. Level
//! directories are created on demand with mode 0700, entry and temp files with 0600.

use std::fs::{DirBuilder, File, Metadata, OpenOptions};
use std::io::{self, ErrorKind};
use std::os::unix::fs::{DirBuilderExt, FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::format::HEADER_SIZE;
use crate::index::FileInfo;

/// How many names [`create_temp`] tries before giving up.
const TEMP_TRIES: u32 = 1000;
/// Digits of a temp file's number.
const TEMP_DIGITS: usize = 10;

/// Creates a temp file at `path` (`O_CREAT | O_EXCL`, 0600, close-on-exec), creating
/// missing directories; if the name is taken and ends in `.NNNNNNNNNN`, the next numbers
/// are tried. Returns the file and the name it got.
pub fn create_temp(path: &Path) -> io::Result<(File, PathBuf)> {
    let mut next = Some(path.to_path_buf());
    let taken = path.to_path_buf();
    create_temp_among(move || {
        let current = next.take()?;
        next = next_temp_name(&current);
        Some(current)
    })
    .map_err(|error| match error.kind() {
        ErrorKind::AlreadyExists => io::Error::new(
            ErrorKind::AlreadyExists,
            format!("no free temp file name from {}", taken.display()),
        ),
        _ => error,
    })
}

/// Creates a temp file at the first of `names` that is free (`O_CREAT | O_EXCL`, 0600,
/// close-on-exec), creating missing directories: a name taken by a file that a crash
/// left, or another writer's, is skipped, as nginx skips it. At most `TEMP_TRIES`
/// names, or until `names` has no more.
pub fn create_temp_among(
    mut names: impl FnMut() -> Option<PathBuf>,
) -> io::Result<(File, PathBuf)> {
    let mut created_dirs = false;
    let mut path = names().ok_or_else(|| io::Error::from(ErrorKind::InvalidInput))?;
    for _ in 0..TEMP_TRIES {
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
        {
            Ok(file) => return Ok((file, path)),
            Err(error) if error.kind() == ErrorKind::NotFound && !created_dirs => {
                create_parent(&path)?;
                created_dirs = true;
            }
            Err(error) if error.kind() == ErrorKind::NotFound => {
                // Another level directory (the name's number chose it).
                create_parent(&path)?;
            }
            Err(error) if error.kind() == ErrorKind::AlreadyExists => {
                path = names().ok_or(error)?;
            }
            Err(error) => return Err(error),
        }
    }
    Err(io::Error::new(
        ErrorKind::AlreadyExists,
        "no free temp file name",
    ))
}

/// Moves the finished temp file (`file`, named `temp`) to `final_path`: its inode and disk
/// size go into the index. Creates missing level directories; across file systems the
/// data is copied to a temp file beside `final_path`, renamed, and `temp` unlinked.
pub fn commit(
    file: &File,
    temp: &Path,
    final_path: &Path,
    block_size: u64,
) -> io::Result<FileInfo> {
    // The modification time says when the entry was stored, to the nanosecond: purges
    // compare it with their own time. The kernel's own stamp comes from a clock that lags
    // by up to a tick, so an entry stored just after a purge could look older than it.
    file.set_modified(std::time::SystemTime::now())?;
    let info = file_info(&file.metadata()?, block_size);
    match rename_creating_dirs(temp, final_path) {
        Ok(()) => Ok(info),
        Err(error) if error.raw_os_error() == Some(libc_exdev()) => {
            copy_across(temp, final_path, block_size)
        }
        Err(error) => Err(error),
    }
}

/// The inode and the bytes a file takes on disk: `max(size, blocks × 512)` rounded up to
/// the block size.
pub fn file_info(metadata: &Metadata, block_size: u64) -> FileInfo {
    let bytes = metadata.size().max(metadata.blocks().saturating_mul(512));
    FileInfo {
        written: u64::try_from(metadata.mtime()).unwrap_or(0),
        uniq: metadata.ino(),
        fs_size: bytes.div_ceil(block_size) * block_size,
    }
}

/// A file's modification time as nanoseconds since the epoch (what an entry's checks
/// compare; 0 before the epoch).
pub fn modified_nanos(seconds: i64, nanoseconds: impl TryInto<u64>) -> u64 {
    let nanoseconds = nanoseconds.try_into().unwrap_or(0);
    u64::try_from(seconds)
        .unwrap_or(0)
        .saturating_mul(1_000_000_000)
        .saturating_add(nanoseconds)
}

/// A cache's root directory, held open (`O_PATH`) from its zone's creation: an entry is
/// opened by its name below it (`openat`), which spares the kernel the walk down to the
/// root on every HIT. A root that cannot be opened, or that is no longer the directory
/// its path names (removed, moved, a symbolic link pointed elsewhere: seen at the first
/// entry not found below it), gives way to full paths, as without it.
#[derive(Debug)]
pub struct RootDir {
    fd: Option<std::os::fd::OwnedFd>,
    removed: std::sync::atomic::AtomicBool,
}

impl RootDir {
    pub fn open(root: &Path) -> RootDir {
        use rustix::fs::{Mode, OFlags};
        let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
        RootDir {
            fd: rustix::fs::open(root, flags, Mode::empty()).ok(),
            removed: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Opens the entry `md5` of `layout` (whose root this is) for reading, without a
    /// `fstat`.
    pub fn open_entry(&self, layout: &crate::key::Layout, md5: &[u8; 16]) -> io::Result<File> {
        use rustix::fs::{Mode, OFlags};
        use std::sync::atomic::Ordering;
        let Some(dir) = self
            .fd
            .as_ref()
            .filter(|_| !self.removed.load(Ordering::Relaxed))
        else {
            return File::open(layout.entry_path_of(md5));
        };
        let name = layout.relative_name_of(md5);
        match rustix::fs::openat(
            dir,
            name.as_c_str(),
            OFlags::RDONLY | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => Ok(File::from(fd)),
            Err(rustix::io::Errno::NOENT) if !is_still_root(dir, &layout.root) => {
                self.removed.store(true, Ordering::Relaxed);
                File::open(layout.entry_path_of(md5))
            }
            Err(errno) => Err(errno.into()),
        }
    }

    /// Whether entries are opened below the held root.
    pub fn is_held(&self) -> bool {
        self.fd.is_some() && !self.removed.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// Whether the held directory `dir` is still linked and still the one `root` names.
fn is_still_root(dir: &std::os::fd::OwnedFd, root: &Path) -> bool {
    match (rustix::fs::fstat(dir), rustix::fs::stat(root)) {
        (Ok(held), Ok(named)) => {
            held.st_nlink > 0 && held.st_dev == named.st_dev && held.st_ino == named.st_ino
        }
        _ => false,
    }
}

/// Opens an entry for reading and stats it.
pub fn open_entry(path: &Path) -> io::Result<(File, Metadata)> {
    let file = File::open(path)?;
    let metadata = file.metadata()?;
    Ok((file, metadata))
}

/// Reads up to `max` bytes from the start of `file` (fewer at its end).
pub fn read_head(file: &File, max: usize) -> io::Result<Vec<u8>> {
    let mut buf = vec![0u8; max];
    let mut filled = 0;
    while filled < max {
        match file.read_at(&mut buf[filled..], filled as u64) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(error) if error.kind() == ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    buf.truncate(filled);
    Ok(buf)
}

/// Writes a new fixed header over an entry's first 336 bytes (after a 304), if the file
/// is still inode `expected_uniq` of `expected_len` bytes, and gives the file its
/// modification time back. Returns whether it was rewritten.
pub fn rewrite_header(
    path: &Path,
    expected_uniq: u64,
    expected_len: u64,
    header: &[u8; HEADER_SIZE],
) -> io::Result<bool> {
    let file = OpenOptions::new().read(true).write(true).open(path)?;
    let metadata = file.metadata()?;
    if metadata.ino() != expected_uniq || metadata.len() != expected_len {
        return Ok(false);
    }
    file.write_all_at(header, 0)?;
    // The file keeps its modification time: it says when the entry was stored (purges
    // compare it), and a change of it is how a HIT sees a file damaged in place.
    file.set_modified(metadata.modified()?)?;
    Ok(true)
}

/// Writes `parts`, one after the other, at `offset`: one `pwritev` when the file takes
/// them whole.
pub fn write_all_parts_at(file: &File, parts: &[&[u8]], offset: u64) -> io::Result<()> {
    let total: usize = parts.iter().map(|part| part.len()).sum();
    let mut done = 0usize;
    let mut slices = Vec::with_capacity(parts.len());
    while done < total {
        slices.clear();
        let mut skip = done;
        for part in parts {
            if skip >= part.len() {
                skip -= part.len();
                continue;
            }
            slices.push(io::IoSlice::new(&part[skip..]));
            skip = 0;
        }
        match rustix::io::pwritev(file, &slices, offset + done as u64) {
            Ok(0) => return Err(ErrorKind::WriteZero.into()),
            Ok(written) => done += written,
            Err(rustix::io::Errno::INTR) => {}
            Err(errno) => return Err(errno.into()),
        }
    }
    Ok(())
}

/// Removes a file.
pub fn unlink(path: &Path) -> io::Result<()> {
    std::fs::remove_file(path)
}

fn rename_creating_dirs(from: &Path, to: &Path) -> io::Result<()> {
    match std::fs::rename(from, to) {
        Err(error) if error.kind() == ErrorKind::NotFound => {
            create_parent(to)?;
            std::fs::rename(from, to)
        }
        other => other,
    }
}

/// The cross-file-system commit: copy (the kernel's `copy_file_range` where it can) to a
/// temp file in the destination directory, rename that, unlink the source.
fn copy_across(temp: &Path, final_path: &Path, block_size: u64) -> io::Result<FileInfo> {
    let (mut copy, copy_path) = create_temp(&first_temp_name(final_path))?;
    let result = copy_into(temp, &mut copy)
        .and_then(|()| copy.set_modified(std::time::SystemTime::now()))
        .and_then(|()| copy.metadata())
        .and_then(|metadata| {
            std::fs::rename(&copy_path, final_path)?;
            Ok(file_info(&metadata, block_size))
        });
    match result {
        Ok(info) => {
            unlink(temp)?;
            Ok(info)
        }
        Err(error) => {
            let _ = unlink(&copy_path);
            Err(error)
        }
    }
}

/// Copies the temp file's data; it is opened again because temp files are write-only.
fn copy_into(source: &Path, destination: &mut File) -> io::Result<()> {
    let mut reader = File::open(source)?;
    io::copy(&mut reader, destination)?;
    Ok(())
}

fn create_parent(path: &Path) -> io::Result<()> {
    match path.parent() {
        Some(parent) => DirBuilder::new().recursive(true).mode(0o700).create(parent),
        None => Ok(()),
    }
}

/// `<path>.0000000001`.
fn first_temp_name(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".{:0TEMP_DIGITS$}", 1));
    PathBuf::from(name)
}

/// The same name with the temp number increased, or `None` if it has none.
fn next_temp_name(path: &Path) -> Option<PathBuf> {
    let name = path.file_name()?.to_str()?;
    if !crate::key::is_temp_name(std::ffi::OsStr::new(name)) {
        return None;
    }
    let (stem, digits) = name.split_at(name.len() - TEMP_DIGITS);
    let number: u64 = digits.parse().ok()?;
    let next = (number + 1) % 10u64.pow(TEMP_DIGITS as u32);
    Some(path.with_file_name(format!("{stem}{next:0TEMP_DIGITS$}")))
}

fn libc_exdev() -> i32 {
    rustix::io::Errno::XDEV.raw_os_error()
}

#[cfg(test)]
mod tests;
