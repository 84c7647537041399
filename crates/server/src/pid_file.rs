//! The pid file: `PID\n`, written once the master is ready, removed when it exits.

use std::io;
use std::path::Path;

/// Writes `PID\n` to `path`, replacing what was there.
pub fn write(path: &Path, pid: u32) -> io::Result<()> {
    std::fs::write(path, format!("{pid}\n"))
}

/// Reads a master's pid for `-s`. The errors are nginx's texts.
pub fn read(path: &Path) -> Result<i32, String> {
    let text = std::fs::read(path).map_err(|error| {
        let errno = error.raw_os_error().unwrap_or(0);
        format!(
            "open() \"{}\" failed ({errno}: {})",
            path.display(),
            runtime::sys::linux::strerror(errno)
        )
    })?;
    let trimmed = String::from_utf8_lossy(&text)
        .trim_end_matches(['\n', '\r', ' '])
        .to_owned();
    match trimmed.parse::<i32>() {
        Ok(pid) if pid > 0 => Ok(pid),
        _ => Err(format!(
            "invalid PID number \"{trimmed}\" in \"{}\"",
            path.display()
        )),
    }
}

/// Removes the pid file if it still names this process.
pub fn remove(path: &Path, pid: u32) {
    if read(path).ok() == Some(pid as i32) {
        let _ = std::fs::remove_file(path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_errors() {
        let dir = std::env::temp_dir().join(format!("portico-pid-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("portico.pid");
        write(&path, 4321).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "4321\n");
        assert_eq!(read(&path), Ok(4321));
        std::fs::write(&path, "").unwrap();
        assert_eq!(
            read(&path),
            Err(format!("invalid PID number \"\" in \"{}\"", path.display()))
        );
        std::fs::remove_file(&path).unwrap();
        assert_eq!(
            read(&path),
            Err(format!(
                "open() \"{}\" failed (2: No such file or directory)",
                path.display()
            ))
        );
        write(&path, 1).unwrap();
        remove(&path, 2);
        assert!(path.exists(), "another process's pid file stays");
        remove(&path, 1);
        assert!(!path.exists());
        std::fs::remove_dir_all(dir).unwrap();
    }
}
