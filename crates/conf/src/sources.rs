//! Where configuration text comes from: the disk, or memory in tests.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::glob;

/// Reads configuration files and expands `include` globs. The master uses [`DiskSources`];
/// tests use an in-memory map so the parser can be checked without touching the disk.
pub trait Sources {
    /// Reads a whole file.
    fn read(&self, path: &Path) -> io::Result<Vec<u8>>;
    /// Lists the paths matching a glob pattern (`*`, `?`, `[...]` in any component), sorted
    /// bytewise as glob(3) sorts them. No match is an empty list, not an error.
    fn glob(&self, pattern: &Path) -> io::Result<Vec<PathBuf>>;
}

/// The real file system. It blocks, which is fine: only the master reads configuration.
#[derive(Clone, Copy, Debug, Default)]
pub struct DiskSources;

impl Sources for DiskSources {
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        std::fs::read(path)
    }

    fn glob(&self, pattern: &Path) -> io::Result<Vec<PathBuf>> {
        glob::expand_on_disk(pattern)
    }
}

/// `ENOENT` on Linux: what [`MemorySources`] reports for a file it does not hold, so errors
/// read exactly as they do from disk.
const ENOENT: i32 = 2;
/// `EISDIR` on Linux: what [`MemorySources`] reports for a path that holds other files.
const EISDIR: i32 = 21;

/// Configuration files held in memory, for tests and fuzzing. Paths are matched exactly as
/// given (no normalisation), like the strings nginx passes to open(2).
#[derive(Clone, Debug, Default)]
pub struct MemorySources {
    /// Keyed by the path's bytes: `Path` compares by components and would take `/c/./a` for
    /// `/c/a`, and its order is not glob(3)'s.
    files: BTreeMap<OsString, Vec<u8>>,
}

impl MemorySources {
    pub fn new() -> MemorySources {
        MemorySources::default()
    }

    /// Adds or replaces a file.
    pub fn insert(&mut self, path: impl Into<PathBuf>, contents: impl Into<Vec<u8>>) {
        self.files
            .insert(path.into().into_os_string(), contents.into());
    }

    /// Adds or replaces a file, for building a set in one expression.
    pub fn with(mut self, path: impl Into<PathBuf>, contents: impl Into<Vec<u8>>) -> Self {
        self.insert(path, contents);
        self
    }
}

impl Sources for MemorySources {
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        if let Some(contents) = self.files.get(path.as_os_str()) {
            return Ok(contents.clone());
        }
        // A path under which files are stored is a directory, as on disk.
        let mut directory = path.as_os_str().as_bytes().to_vec();
        if directory.last() != Some(&b'/') {
            directory.push(b'/');
        }
        let is_directory = self
            .files
            .keys()
            .any(|key| key.as_bytes().starts_with(&directory));
        Err(io::Error::from_raw_os_error(if is_directory {
            EISDIR
        } else {
            ENOENT
        }))
    }

    /// Matches the stored paths; the map's order is already bytewise.
    fn glob(&self, pattern: &Path) -> io::Result<Vec<PathBuf>> {
        let paths = self.files.keys().map(PathBuf::from);
        Ok(paths
            .filter(|path| glob::matches_path(pattern, path))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unique_temp_dir(name: &str) -> PathBuf {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let unique = COUNTER.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!(
            "portico-conf-{name}-{}-{unique}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn disk_glob_lists_sorted_matches_and_skips_hidden_files() {
        let dir = unique_temp_dir("glob");
        for name in [
            "b.conf",
            "a.conf",
            "[x.conf",
            ".hidden.conf",
            "a.conf.bak",
            "B/y.conf",
            "b/y.conf",
        ] {
            let path = dir.join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, "").unwrap();
        }
        std::fs::create_dir_all(dir.join("c.conf")).unwrap();
        let names = |pattern: &str| -> Vec<String> {
            let paths = DiskSources.glob(&dir.join(pattern)).unwrap();
            let prefix = format!("{}/", dir.display());
            paths
                .iter()
                .map(|p| p.display().to_string().replace(&prefix, ""))
                .collect()
        };
        assert_eq!(names("*.conf"), ["[x.conf", "a.conf", "b.conf", "c.conf"]);
        assert_eq!(names(".*.conf"), [".hidden.conf"]);
        assert_eq!(names("*/y.conf"), ["B/y.conf", "b/y.conf"]);
        assert_eq!(
            names("*/../a.conf"),
            ["B/../a.conf", "b/../a.conf", "c.conf/../a.conf"]
        );
        assert_eq!(names("[ab].conf"), ["a.conf", "b.conf"]);
        assert_eq!(names("\\[x.con?"), ["[x.conf"]);
        assert_eq!(names("nothing*"), Vec::<String>::new());
        assert_eq!(names("missing/*"), Vec::<String>::new());
        assert_eq!(names("*/"), ["B/", "b/", "c.conf/"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn disk_read_reports_errno() {
        let dir = unique_temp_dir("read");
        let error = DiskSources.read(&dir.join("missing.conf")).unwrap_err();
        assert_eq!(error.raw_os_error(), Some(ENOENT));
        assert_eq!(
            DiskSources.read(&dir).unwrap_err().kind(),
            io::ErrorKind::IsADirectory
        );
        std::fs::write(dir.join("x.conf"), "x;\n").unwrap();
        assert_eq!(DiskSources.read(&dir.join("x.conf")).unwrap(), b"x;\n");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn memory_sources_read_and_glob() {
        let sources = MemorySources::new()
            .with("/c/b-c.conf", "1")
            .with("/c/b/c.conf", "2")
            .with("/c/.h.conf", "3")
            .with("/c/a.conf", "4");
        assert_eq!(sources.read(Path::new("/c/a.conf")).unwrap(), b"4");
        assert_eq!(
            sources
                .read(Path::new("/c/./a.conf"))
                .unwrap_err()
                .raw_os_error(),
            Some(ENOENT)
        );
        assert_eq!(
            sources.read(Path::new("/c/b")).unwrap_err().raw_os_error(),
            Some(EISDIR)
        );
        assert_eq!(
            sources.read(Path::new("/c/")).unwrap_err().raw_os_error(),
            Some(EISDIR)
        );
        assert_eq!(
            sources.read(Path::new("/c/b-")).unwrap_err().raw_os_error(),
            Some(ENOENT)
        );
        let glob = |pattern: &str| sources.glob(Path::new(pattern)).unwrap();
        assert_eq!(
            glob("/c/*.conf"),
            ["/c/a.conf", "/c/b-c.conf"].map(PathBuf::from)
        );
        assert_eq!(glob("/c/*/*.conf"), ["/c/b/c.conf"].map(PathBuf::from));
        assert_eq!(glob("/c/b*"), ["/c/b-c.conf"].map(PathBuf::from));
        assert!(glob("/d/*").is_empty());
    }
}
