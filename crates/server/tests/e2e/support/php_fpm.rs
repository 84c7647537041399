//! PHP-FPM (Debian's `php-fpm`) started by a test from its own directory and stopped by its
//! pid, and the stock parameter files a test's config includes.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::app_servers::{Server, TempDir, find_program, running_as_root};
use super::{PATIENCE, proc_net, wait_until};

/// A PHP-FPM pool running from its own directory, where its socket, pid file and logs are.
pub struct PhpFpm {
    // Dropped first: the server stops before its directory goes.
    _server: Server,
    dir: TempDir,
}

/// Where a pool listens.
#[derive(Debug, Clone, Copy)]
pub enum Listen {
    /// `php.sock` in the pool's directory.
    UnixSocket,
    /// 127.0.0.1 on this port.
    Port(u16),
}

impl PhpFpm {
    /// The installed `php-fpm`, or `None`, said on stderr with the package to install.
    #[allow(clippy::print_stderr, reason = "a skipped test says so")]
    pub fn find() -> Option<PathBuf> {
        let program = find_program(|name| {
            name.strip_prefix("php-fpm")
                .is_some_and(|version| version.chars().all(|c| c.is_ascii_digit() || c == '.'))
        });
        if program.is_none() {
            eprintln!("skipped: php-fpm not found (Debian: apt-get install php-fpm)");
        }
        program
    }

    /// Starts `program` (from [`PhpFpm::find`]) with two children, in `dir`, which the pool
    /// owns from then on. PHP reads no `php.ini`; `php_settings` are given as `-d` options
    /// (`extension=mysqli`).
    pub fn start(program: &Path, dir: TempDir, listen: Listen, php_settings: &[&str]) -> PhpFpm {
        let socket = dir.join("php.sock");
        let address = match listen {
            Listen::Port(port) => format!("127.0.0.1:{port}"),
            Listen::UnixSocket => socket.display().to_string(),
        };
        let user = if running_as_root() {
            "user = root\ngroup = root\n"
        } else {
            ""
        };
        let config = format!(
            "[global]\npid = {pid}\nerror_log = {log}\ndaemonize = no\n\n\
             [portico]\nlisten = {address}\nlisten.mode = 0666\npm = static\n\
             pm.max_children = 2\nclear_env = yes\n{user}",
            pid = dir.join("php-fpm.pid").display(),
            log = dir.join("php-fpm-error.log").display(),
        );
        let config = dir.write("php-fpm.conf", &config);
        let mut command = Command::new(program);
        // -n: no php.ini, so that the system's settings (error_log among them) do not
        // apply: `error_log()` goes to FastCGI's stderr.
        command.arg("-n");
        for setting in php_settings {
            command.arg("-d").arg(setting);
        }
        command
            .arg("--nodaemonize")
            .arg("--fpm-config")
            .arg(&config);
        if running_as_root() {
            command.arg("--allow-to-run-as-root");
        }
        let server = match listen {
            Listen::Port(port) => {
                let server = Server::spawn("php-fpm", command, dir.join("php-fpm.out"), "QUIT");
                wait_until("php-fpm to listen", PATIENCE, || {
                    proc_net::is_listening(port)
                });
                server
            }
            Listen::UnixSocket => {
                Server::start("php-fpm", command, &socket, dir.join("php-fpm.out"), "QUIT")
            }
        };
        PhpFpm {
            _server: server,
            dir,
        }
    }

    /// The pool's directory, with a trailing `/`.
    pub fn root(&self) -> String {
        self.dir.join("").display().to_string()
    }

    /// The pool's unix socket (with [`Listen::UnixSocket`]).
    pub fn socket(&self) -> String {
        self.dir.join("php.sock").display().to_string()
    }
}

/// A stock file from the repository's `conf/` (`fastcgi.conf`, `mime.types`), as a user's
/// `include` names it.
pub fn conf_file(name: &str) -> String {
    format!("{}/../../conf/{name}", env!("CARGO_MANIFEST_DIR"))
}
