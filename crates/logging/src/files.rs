//! The log files one configuration opened, each path once.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::file::LogFile;

/// Every log file of one configuration, keyed by path, so that two directives naming the
/// same file share one descriptor and `USR1` reopens each file once.
#[derive(Debug, Default)]
pub struct LogFiles {
    by_path: HashMap<PathBuf, Arc<LogFile>>,
    stderr: Option<Arc<LogFile>>,
}

impl LogFiles {
    /// The file at `path` (absolute), opened on first use.
    pub fn open(&mut self, path: &Path) -> io::Result<Arc<LogFile>> {
        if let Some(file) = self.by_path.get(path) {
            return Ok(Arc::clone(file));
        }
        let file = Arc::new(LogFile::open(path)?);
        self.by_path.insert(path.to_owned(), Arc::clone(&file));
        Ok(file)
    }

    /// The process's stderr, for `error_log stderr`.
    pub fn stderr(&mut self) -> io::Result<Arc<LogFile>> {
        if let Some(file) = &self.stderr {
            return Ok(Arc::clone(file));
        }
        let file = Arc::new(LogFile::stderr()?);
        self.stderr = Some(Arc::clone(&file));
        Ok(file)
    }

    /// Reopens every file; returns the paths that failed with their errors.
    pub fn reopen_all(&self) -> Vec<(PathBuf, io::Error)> {
        let mut failures = Vec::new();
        for (path, file) in &self.by_path {
            if let Err(error) = file.reopen() {
                failures.push((path.clone(), error));
            }
        }
        failures
    }

    pub fn len(&self) -> usize {
        self.by_path.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_path.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_descriptor_per_path() {
        let dir = std::env::temp_dir().join(format!("portico-files-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let mut files = LogFiles::default();
        let a = files.open(&dir.join("a.log")).unwrap();
        let again = files.open(&dir.join("a.log")).unwrap();
        assert!(Arc::ptr_eq(&a, &again));
        files.open(&dir.join("b.log")).unwrap();
        assert_eq!(files.len(), 2);
        std::fs::remove_file(dir.join("a.log")).unwrap();
        assert!(files.reopen_all().is_empty());
        assert!(
            dir.join("a.log").exists(),
            "reopen recreated the removed file"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }
}
