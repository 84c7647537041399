//! A temporary prefix directory per test, removed on drop unless `PORTICO_E2E_KEEP=1`.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Set to `1` to keep every prefix directory (its path is printed) for debugging.
pub const KEEP_VARIABLE: &str = "PORTICO_E2E_KEEP";

static PREFIX_SERIAL: AtomicU64 = AtomicU64::new(0);

/// A directory under the system temp dir, named after the test that made it, with `logs/`
/// and `html/` ready as nginx's prefix layout expects.
#[derive(Debug)]
pub struct TempPrefix {
    path: PathBuf,
}

impl TempPrefix {
    pub fn new() -> TempPrefix {
        let serial = PREFIX_SERIAL.fetch_add(1, Ordering::Relaxed);
        let test_name: String = std::thread::current()
            .name()
            .unwrap_or("test")
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        let path = std::env::temp_dir().join(format!(
            "portico-e2e-{}-{serial}-{test_name}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&path);
        let prefix = TempPrefix { path };
        for directory in ["logs", "html", "conf"] {
            prefix.create_dir(directory);
        }
        prefix
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The prefix as `-p` takes it, with the trailing slash.
    pub fn arg(&self) -> String {
        format!("{}/", self.path.display())
    }

    /// An absolute path inside the prefix.
    pub fn join(&self, relative: &str) -> PathBuf {
        self.path.join(relative)
    }

    /// Creates a directory (and its parents) under the prefix, readable by everyone: when
    /// the tests run as root, workers serve files as `nobody`.
    pub fn create_dir(&self, relative: &str) -> PathBuf {
        let path = self.join(relative);
        std::fs::create_dir_all(&path)
            .unwrap_or_else(|error| panic!("create {}: {error}", path.display()));
        let mut directory = path.as_path();
        while directory.starts_with(&self.path) {
            set_mode(directory, 0o755);
            match directory.parent() {
                Some(parent) => directory = parent,
                None => break,
            }
        }
        path
    }

    /// Writes a file under the prefix (mode 0644), creating its directories.
    pub fn write(&self, relative: &str, contents: impl AsRef<[u8]>) -> PathBuf {
        let path = self.join(relative);
        if let Some(parent) = Path::new(relative).parent() {
            self.create_dir(&parent.display().to_string());
        }
        std::fs::write(&path, contents)
            .unwrap_or_else(|error| panic!("write {}: {error}", path.display()));
        set_mode(&path, 0o644);
        path
    }

    /// A file's text, or an empty string when it does not exist.
    pub fn read(&self, relative: &str) -> String {
        std::fs::read(self.join(relative))
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
            .unwrap_or_default()
    }
}

fn set_mode(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .unwrap_or_else(|error| panic!("chmod {}: {error}", path.display()));
}

impl Drop for TempPrefix {
    #[allow(
        clippy::print_stderr,
        reason = "the kept directory's path is for the developer"
    )]
    fn drop(&mut self) {
        if std::env::var(KEEP_VARIABLE).is_ok_and(|value| value == "1") {
            eprintln!("portico e2e: prefix kept at {}", self.path.display());
            return;
        }
        let _ = std::fs::remove_dir_all(&self.path);
    }
}
