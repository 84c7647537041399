//! Temporary files for request bodies: names, directory levels, creation. The functions
//! here touch the disk and run on a thread pool, never on a worker's loop.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::kernel::core::TempPath;

/// Digits of a temp file name, as nginx names them (`0000000123`).
const NAME_DIGITS: usize = 10;

/// Names [`create_numbered`] tries before it gives up: each taken name moves the number
/// by a random jump, so a run of names left by a crash is passed in one or two tries.
const NAME_TRIES: u32 = 16;

/// The first temporary number of a generation: random, so that a restarted server (or a
/// reloaded configuration, whose old generation still writes its files) does not start
/// on the names that a crash, or the generation before, left under the temp paths.
pub fn first_number() -> u64 {
    random_below(10u64.pow(NAME_DIGITS as u32))
}

/// A random number below `bound` (std's per-instance random hasher keys: no dependency,
/// and plenty for spreading names).
fn random_below(bound: u64) -> u64 {
    use std::hash::BuildHasher;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.subsec_nanos());
    std::collections::hash_map::RandomState::new().hash_one((nanos, std::process::id())) % bound
}

/// Creates a new temp file under `temp`, named by `number`; a name that is taken (a file
/// left by a crash or written by another generation) is skipped for another, as nginx
/// skips it. Runs on a pool. Returns the file and its name.
pub(crate) fn create_numbered(temp: &TempPath, number: u64) -> io::Result<(File, PathBuf)> {
    let mut number = number;
    let mut tries = 0;
    loop {
        let path = temp_file_path(temp, number);
        match create(&path) {
            Ok(file) => return Ok((file, path)),
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists && tries < NAME_TRIES => {
                tries += 1;
                number = number.wrapping_add(1 + random_below(1 << 20));
            }
            Err(error) => return Err(error),
        }
    }
}

/// The names [`cache::store::create_temp_among`] tries for a cache entry's temporary file
/// under `proxy_temp_path` (`use_temp_path=on`): `number`'s, then random jumps from it.
pub(crate) fn numbered_names(temp: TempPath, number: u64) -> impl FnMut() -> PathBuf + Send {
    let mut next = number;
    move || {
        let path = temp_file_path(&temp, next);
        next = next.wrapping_add(1 + random_below(1 << 20));
        path
    }
}

/// The path of temp file `number` under `temp`: levels `1 2` put `0000000123` in `3/12/`
/// (the last digits of the name, from the end), as nginx's `*_temp_path` levels do.
pub(crate) fn temp_file_path(temp: &TempPath, number: u64) -> PathBuf {
    let name = format!(
        "{:0width$}",
        number % 10u64.pow(NAME_DIGITS as u32),
        width = NAME_DIGITS
    );
    let mut path = temp.path.clone();
    let mut end = name.len();
    for level in &temp.levels {
        let width = usize::from(*level);
        path.push(&name[end - width..end]);
        end -= width;
    }
    path.push(name);
    path
}

/// Creates a new temp file (mode 0600, failing if it exists), making missing directories.
pub fn create(path: &Path) -> io::Result<File> {
    let open = || {
        OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
    };
    match open() {
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)?;
            }
            open()
        }
        other => other,
    }
}

/// Removes a temp file; a file already gone is fine.
pub fn remove(path: &Path) {
    let _ = std::fs::remove_file(path);
}

/// A body that was read.
#[derive(Debug)]
pub enum RequestBody {
    Memory(Vec<u8>),
    File(TempBody),
}

impl RequestBody {
    pub fn len(&self) -> u64 {
        match self {
            RequestBody::Memory(bytes) => bytes.len() as u64,
            RequestBody::File(file) => file.len,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A body in a temp file. Unless it is kept (`client_body_in_file_only on`), the file is
/// removed, on the pool, when the body is dropped.
#[derive(Debug)]
pub struct TempBody {
    pub path: PathBuf,
    pub file: Arc<File>,
    pub len: u64,
    pub keep: bool,
    pub(crate) pool: threadpool::ThreadPool,
}

impl TempBody {
    /// The same file for another reader (the body sent upstream again after an internal
    /// redirect): this handle never removes it, the request's own does.
    pub(crate) fn shared(&self) -> TempBody {
        TempBody {
            path: self.path.clone(),
            file: Arc::clone(&self.file),
            len: self.len,
            keep: true,
            pool: self.pool.clone(),
        }
    }
}

impl Drop for TempBody {
    fn drop(&mut self) {
        if self.keep {
            return;
        }
        let path = std::mem::take(&mut self.path);
        // A full queue leaves the file behind; nginx would leak it the same way on error.
        let _ = self.pool.submit(move || remove(&path));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_levels_match_nginx() {
        let flat = TempPath {
            path: PathBuf::from("/t"),
            levels: Vec::new(),
        };
        assert_eq!(temp_file_path(&flat, 123), PathBuf::from("/t/0000000123"));
        let leveled = TempPath {
            path: PathBuf::from("/t"),
            levels: vec![1, 2],
        };
        assert_eq!(
            temp_file_path(&leveled, 123),
            PathBuf::from("/t/3/12/0000000123")
        );
        let deep = TempPath {
            path: PathBuf::from("/t"),
            levels: vec![2, 2, 2],
        };
        assert_eq!(
            temp_file_path(&deep, 9_876_543_210),
            PathBuf::from("/t/10/32/54/9876543210")
        );
    }

    #[test]
    fn a_taken_name_is_skipped_for_another() {
        let root = std::env::temp_dir().join(format!("portico-temp-taken-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let temp = TempPath {
            path: root.clone(),
            levels: vec![1],
        };
        // Names 1 to 200 left by a crash, as a restarted server numbering from 1 meets them.
        for number in 1..=200 {
            create(&temp_file_path(&temp, number)).unwrap();
        }
        let mut made = Vec::new();
        for number in 1..=20 {
            let (_, path) = create_numbered(&temp, number).unwrap();
            assert!(path.starts_with(&root), "{path:?}");
            let name = path.file_name().unwrap().to_str().unwrap().to_owned();
            assert_eq!(name.len(), NAME_DIGITS, "{name}");
            let value: u64 = name.parse().unwrap();
            assert!(value > 200, "a leftover's name was not reused: {name}");
            assert_eq!(
                path,
                temp_file_path(&temp, value),
                "the levels follow the number"
            );
            made.push(path);
        }
        made.sort();
        made.dedup();
        assert_eq!(made.len(), 20, "twenty distinct files");
        std::fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn first_numbers_spread() {
        let numbers: Vec<u64> = (0..8).map(|_| first_number()).collect();
        assert!(numbers.iter().all(|number| *number < 10_000_000_000));
        let mut distinct = numbers.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert!(distinct.len() > 1, "{numbers:?}");
    }

    #[test]
    fn create_makes_directories_and_refuses_existing_files() {
        let root = std::env::temp_dir().join(format!("portico-temp-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let temp = TempPath {
            path: root.clone(),
            levels: vec![1, 2],
        };
        let path = temp_file_path(&temp, 42);
        create(&path).unwrap();
        assert!(path.exists());
        assert_eq!(
            create(&path).unwrap_err().kind(),
            io::ErrorKind::AlreadyExists
        );
        remove(&path);
        remove(&path);
        assert!(!path.exists());
        std::fs::remove_dir_all(root).unwrap();
    }
}
