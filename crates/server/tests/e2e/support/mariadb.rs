//! A throwaway MariaDB (Debian's `mariadb-server`): a data directory installed into a
//! temporary directory, a server on a unix socket there and no TCP, stopped by its pid.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use super::app_servers::{Server, TempDir, find_program, running_as_root};

/// A running MariaDB with one database, [`MariaDb::DATABASE`], and a user who owns it.
pub struct MariaDb {
    // Dropped first: the server stops before its directory goes.
    _server: Server,
    dir: TempDir,
}

/// The installed programs a [`MariaDb`] needs.
pub struct Programs {
    server: PathBuf,
    install_db: PathBuf,
}

/// Options for both the install and the server: small logs and buffers, and no syncing to
/// disk, which is the install's cost (3 s with it, 0.6 s without, on the 2-core machine);
/// the data is thrown away anyway.
const THROWAWAY_OPTIONS: &[&str] = &[
    "--innodb-buffer-pool-size=16M",
    "--innodb-log-file-size=4M",
    "--innodb-flush-method=nosync",
    "--innodb-flush-log-at-trx-commit=0",
    "--innodb-doublewrite=0",
];

impl MariaDb {
    pub const DATABASE: &'static str = "wordpress";
    pub const USER: &'static str = "wordpress";
    pub const PASSWORD: &'static str = "portico-e2e-database";

    /// `mariadbd` and `mariadb-install-db`, or `None`, said on stderr with the package to
    /// install.
    #[allow(clippy::print_stderr, reason = "a skipped test says so")]
    pub fn find() -> Option<Programs> {
        let server = find_program(|name| name == "mariadbd");
        let install_db = find_program(|name| name == "mariadb-install-db");
        let (Some(server), Some(install_db)) = (server, install_db) else {
            eprintln!("skipped: mariadbd not found (Debian: apt-get install mariadb-server)");
            return None;
        };
        Some(Programs { server, install_db })
    }

    /// Installs a data directory and starts the server on it; the database and its user
    /// are made by the server's `--init-file` as it starts.
    pub fn start(programs: &Programs) -> MariaDb {
        let dir = TempDir::new("e2e-mariadb");
        let data = dir.join("data");
        // Its own directory for temporary tables: two servers bootstrapping at once in the
        // shared /tmp failed now and then ("Could not remove temporary table", then
        // "Unknown table 'mysql.tmp_user_sys'"); none did in 16 runs of 4 at once with it.
        let tmp = dir.join("tmp");
        std::fs::create_dir_all(&tmp).expect("create the temporary tables' directory");
        let tmpdir = format!("--tmpdir={}", tmp.display());
        let mut install = Command::new(&programs.install_db);
        install
            .arg("--no-defaults")
            .arg(format!("--datadir={}", data.display()))
            .arg(&tmpdir)
            .args(["--skip-test-db", "--skip-name-resolve"])
            .args(THROWAWAY_OPTIONS);
        if running_as_root() {
            install.arg("--user=root");
        }
        let installed = install
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|error| panic!("run mariadb-install-db: {error}"));
        assert!(
            installed.status.success(),
            "mariadb-install-db failed ({}):\n{}{}",
            installed.status,
            String::from_utf8_lossy(&installed.stdout),
            String::from_utf8_lossy(&installed.stderr),
        );
        let init = dir.write(
            "init.sql",
            &format!(
                "CREATE DATABASE {database};\n\
                 CREATE USER '{user}'@'localhost' IDENTIFIED BY '{password}';\n\
                 GRANT ALL PRIVILEGES ON {database}.* TO '{user}'@'localhost';\n",
                database = MariaDb::DATABASE,
                user = MariaDb::USER,
                password = MariaDb::PASSWORD,
            ),
        );
        let socket = dir.join("mariadb.sock");
        let mut command = Command::new(&programs.server);
        command
            .arg("--no-defaults")
            .arg(format!("--datadir={}", data.display()))
            .arg(format!("--socket={}", socket.display()))
            .arg(&tmpdir)
            .arg("--skip-networking")
            .arg(format!("--pid-file={}", dir.join("mariadb.pid").display()))
            .arg(format!("--init-file={}", init.display()))
            .args(THROWAWAY_OPTIONS);
        if running_as_root() {
            command.arg("--user=root");
        }
        let server = Server::start(
            "mariadbd",
            command,
            &socket,
            dir.join("mariadb.log"),
            "TERM",
        );
        MariaDb {
            _server: server,
            dir,
        }
    }

    /// The server's unix socket.
    pub fn socket(&self) -> PathBuf {
        self.dir.join("mariadb.sock")
    }
}
