//! The directories the workers write to (`client_body_temp_path`, `proxy_temp_path`,
//! every `proxy_cache_path`), made ready by the master as nginx's `ngx_create_paths`
//! does: before `-t` says a configuration is good, before the first generation starts
//! (so a failure is reported on the terminal, before `daemon on` forks), and at each
//! reload for the paths it adds.
//!
//! Each directory is created (mode 0700) when missing, with its missing parents (0755, a
//! convenience nginx does not offer); when the master runs as root, a directory that is
//! not the workers' user's is given to it (its owner only, as nginx does) and gets
//! `u+rwx`, so a cache directory made earlier by root is taken over rather than left
//! unwritable. Errors are nginx's words and name the directory and the call that failed.

use std::path::Path;

use rustix::fs::Mode;
use rustix::io::Errno;

use crate::config::UserSetting;

/// Makes every directory `http` writes to ready for the workers of `user`.
pub fn prepare(
    http: &http::kernel::conf::HttpConf,
    user: Option<&UserSetting>,
) -> Result<(), String> {
    for path in paths(http) {
        prepare_one(path, user)?;
    }
    Ok(())
}

/// The temp paths of every location, then the cache paths, each once.
fn paths(http: &http::kernel::conf::HttpConf) -> Vec<&Path> {
    let mut paths: Vec<&Path> = Vec::new();
    let temp = http.locations.iter().flat_map(|location| {
        [
            location.settings.core.client_body_temp_path.path.as_path(),
            location.settings.proxy.proxy_temp_path.path.as_path(),
        ]
    });
    let cache = http.cache_paths.iter().map(|path| path.path.as_path());
    for path in temp.chain(cache) {
        if !paths.contains(&path) {
            paths.push(path);
        }
    }
    paths
}

/// One directory: made if missing, then owned by `user` with `u+rwx`.
fn prepare_one(path: &Path, user: Option<&UserSetting>) -> Result<(), String> {
    match rustix::fs::mkdir(path, Mode::from_raw_mode(0o700)) {
        Ok(()) | Err(Errno::EXIST) => {}
        Err(Errno::NOENT) => {
            if let Some(parent) = path.parent() {
                make_parents(parent)?;
            }
            match rustix::fs::mkdir(path, Mode::from_raw_mode(0o700)) {
                Ok(()) | Err(Errno::EXIST) => {}
                Err(errno) => return Err(failed("mkdir()", path, errno)),
            }
        }
        Err(errno) => return Err(failed("mkdir()", path, errno)),
    }
    let stat = rustix::fs::stat(path).map_err(|errno| failed("stat()", path, errno))?;
    if rustix::fs::FileType::from_raw_mode(stat.st_mode) != rustix::fs::FileType::Directory {
        // What mkdir() said: the name is taken by something that is not a directory.
        return Err(failed("mkdir()", path, Errno::EXIST));
    }
    let Some(user) = user else {
        return Ok(());
    };
    if stat.st_uid != user.uid {
        let uid = rustix::process::Uid::from_raw(user.uid);
        rustix::fs::chown(path, Some(uid), None).map_err(|errno| {
            format!(
                "chown(\"{}\", {}) failed ({})",
                path.display(),
                user.uid,
                errno_text(errno)
            )
        })?;
    }
    let mode = stat.st_mode & 0o7777;
    if mode & 0o700 != 0o700 {
        rustix::fs::chmod(path, Mode::from_raw_mode(mode | 0o700))
            .map_err(|errno| failed("chmod()", path, errno))?;
    }
    Ok(())
}

/// Missing parents of a temp or cache directory, searchable by everyone (0755).
fn make_parents(dir: &Path) -> Result<(), String> {
    match rustix::fs::mkdir(dir, Mode::from_raw_mode(0o755)) {
        Ok(()) | Err(Errno::EXIST) => Ok(()),
        Err(Errno::NOENT) => {
            if let Some(parent) = dir.parent() {
                make_parents(parent)?;
            }
            match rustix::fs::mkdir(dir, Mode::from_raw_mode(0o755)) {
                Ok(()) | Err(Errno::EXIST) => Ok(()),
                Err(errno) => Err(failed("mkdir()", dir, errno)),
            }
        }
        Err(errno) => Err(failed("mkdir()", dir, errno)),
    }
}

/// nginx's `CALL "PATH" failed (ERRNO: TEXT)`.
fn failed(call: &str, path: &Path, errno: Errno) -> String {
    format!(
        "{call} \"{}\" failed ({})",
        path.display(),
        errno_text(errno)
    )
}

fn errno_text(errno: Errno) -> String {
    crate::generation::errno_text(&std::io::Error::from(errno))
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    use super::*;

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir =
            std::env::temp_dir().join(format!("portico-work-dirs-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch directory");
        dir
    }

    #[test]
    fn a_missing_directory_is_made_with_its_parents() {
        let dir = scratch("missing");
        let path = dir.join("a/b/cache");
        prepare_one(&path, None).expect("made");
        let mode =
            |path: &Path| std::fs::metadata(path).expect("stat").permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o700);
        assert_eq!(mode(&dir.join("a/b")), 0o755);
        prepare_one(&path, None).expect("already there");
        std::fs::remove_dir_all(dir).expect("clean up");
    }

    #[test]
    fn a_path_below_a_file_names_the_directory_and_enotdir() {
        let dir = scratch("file");
        std::fs::write(dir.join("afile"), b"x").expect("a file");
        let path = dir.join("afile/cache");
        let error = prepare_one(&path, None).expect_err("cannot be made");
        assert_eq!(
            error,
            format!(
                "mkdir() \"{}\" failed (20: Not a directory)",
                path.display()
            )
        );
        let taken = dir.join("afile");
        let error = prepare_one(&taken, None).expect_err("a file, not a directory");
        assert_eq!(
            error,
            format!("mkdir() \"{}\" failed (17: File exists)", taken.display())
        );
        std::fs::remove_dir_all(dir).expect("clean up");
    }

    #[test]
    fn an_existing_directory_is_given_to_the_user() {
        if !rustix::process::geteuid().is_root() {
            return;
        }
        let dir = scratch("owner");
        let path = dir.join("cache");
        std::fs::create_dir(&path).expect("made by root");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o500)).expect("chmod");
        let user = UserSetting {
            name: "someone".to_owned(),
            uid: 65534,
            gid: 65534,
        };
        prepare_one(&path, Some(&user)).expect("taken over");
        let metadata = std::fs::metadata(&path).expect("stat");
        assert_eq!(metadata.uid(), 65534);
        assert_eq!(
            metadata.gid(),
            0,
            "the group is left as it was, as nginx leaves it"
        );
        assert_eq!(metadata.permissions().mode() & 0o777, 0o700);
        std::fs::remove_dir_all(dir).expect("clean up");
    }
}
