//! Changing the binary on the fly (`USR2`), as nginx does: the master renames its pid file
//! to `PID.oldbin` and starts the binary at the path it was started from, with the same
//! arguments, passing its listening sockets in the `NGINX` variable. Both masters serve
//! until the operator stops one: `WINCH` then `QUIT` to the old one to finish the upgrade,
//! or `HUP` to the old one and `QUIT` to the new one to go back. docs/command-line.md.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};

use crate::listeners::{INHERITED_VARIABLE, ListenerSet};

/// Where the pid file goes while a new binary runs: `PATH.oldbin`.
pub fn oldbin_path(pid_path: &Path) -> PathBuf {
    let mut name = pid_path.as_os_str().to_owned();
    name.push(".oldbin");
    PathBuf::from(name)
}

/// Starts the binary at the path this process was started from, with its arguments and
/// environment and the listening sockets. The error is nginx's message.
pub fn start_new_binary(listeners: &ListenerSet) -> Result<Child, String> {
    let mut arguments = std::env::args_os();
    let program = arguments
        .next()
        .ok_or_else(|| "no path to start the new binary from".to_owned())?;
    let (copies, sockets) = listeners
        .for_new_binary()
        .map_err(|error| format!("dup() failed ({})", runtime::sys::linux::error_text(&error)))?;
    let started = Command::new(&program)
        .args(arguments)
        .env(INHERITED_VARIABLE, &sockets)
        .spawn()
        .map_err(|error| {
            format!(
                "execve() failed while executing new binary process \"{}\" ({})",
                program.to_string_lossy(),
                runtime::sys::linux::error_text(&error)
            )
        });
    // The new binary has its own copies now (or never will).
    drop(copies);
    started
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_old_pid_file_is_named_as_nginx_names_it() {
        assert_eq!(
            oldbin_path(Path::new("/run/portico.pid")),
            PathBuf::from("/run/portico.pid.oldbin")
        );
    }
}
