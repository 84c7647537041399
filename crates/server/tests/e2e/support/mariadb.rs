//! A throwaway MariaDB (Debian's `mariadb-server`): a data directory installed into a
//! temporary directory, a server on a unix socket there (and, when asked, on a TCP port of
//! 127.0.0.1), stopped by its pid.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::app_servers::{PATIENCE, Server, TempDir, find_program, running_as_root};

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

/// Where a [`MariaDb`] listens besides its unix socket.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Networking {
    /// The unix socket only (`--skip-networking`).
    UnixSocketOnly,
    /// Also 127.0.0.1 on this TCP port, where the user may log in from 127.0.0.1.
    Tcp(u16),
    /// The same, and every TCP client must start TLS (MySQL's own, asked for inside the
    /// protocol after the greeting) with this certificate and key
    /// (`--require-secure-transport`).
    TcpRequiringTls {
        port: u16,
        certificate: PathBuf,
        key: PathBuf,
    },
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

    /// Installs a data directory and starts the server on its unix socket only.
    pub fn start(programs: &Programs) -> MariaDb {
        MariaDb::start_with(programs, Networking::UnixSocketOnly)
    }

    /// Installs a data directory and starts the server on it; the database and its user
    /// are made by the server's `--init-file` as it starts.
    pub fn start_with(programs: &Programs, networking: Networking) -> MariaDb {
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
        // With `--skip-name-resolve`, a TCP client from 127.0.0.1 may be known by that
        // address rather than as `localhost`.
        let hosts: &[&str] = match networking {
            Networking::UnixSocketOnly => &["localhost"],
            Networking::Tcp(_) | Networking::TcpRequiringTls { .. } => &["localhost", "127.0.0.1"],
        };
        let mut init_sql = format!("CREATE DATABASE {};\n", MariaDb::DATABASE);
        for host in hosts {
            init_sql.push_str(&format!(
                "CREATE USER '{user}'@'{host}' IDENTIFIED BY '{password}';\n\
                 GRANT ALL PRIVILEGES ON {database}.* TO '{user}'@'{host}';\n",
                database = MariaDb::DATABASE,
                user = MariaDb::USER,
                password = MariaDb::PASSWORD,
            ));
        }
        let init = dir.write("init.sql", &init_sql);
        let socket = dir.join("mariadb.sock");
        let mut command = Command::new(&programs.server);
        command
            .arg("--no-defaults")
            .arg(format!("--datadir={}", data.display()))
            .arg(format!("--socket={}", socket.display()))
            .arg(&tmpdir)
            .arg(format!("--pid-file={}", dir.join("mariadb.pid").display()))
            .arg(format!("--init-file={}", init.display()))
            .args(THROWAWAY_OPTIONS);
        match networking {
            Networking::UnixSocketOnly => {
                command.arg("--skip-networking");
            }
            Networking::Tcp(port) => {
                command
                    .arg("--bind-address=127.0.0.1")
                    .arg(format!("--port={port}"));
            }
            Networking::TcpRequiringTls {
                port,
                certificate,
                key,
            } => {
                command
                    .arg("--bind-address=127.0.0.1")
                    .arg(format!("--port={port}"))
                    .arg(format!("--ssl-cert={}", certificate.display()))
                    .arg(format!("--ssl-key={}", key.display()))
                    .arg("--require-secure-transport=ON");
            }
        }
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

/// The `mariadb` command-line client, or `None`, said on stderr with the package to install.
#[allow(clippy::print_stderr, reason = "a skipped test says so")]
pub fn find_client() -> Option<PathBuf> {
    let client = find_program(|name| name == "mariadb");
    if client.is_none() {
        eprintln!("skipped: the mariadb client not found (Debian: apt-get install mariadb-client)");
    }
    client
}

/// Runs `sql` with the `mariadb` client as [`MariaDb::USER`] over TCP to 127.0.0.1:`port`
/// (a server or a proxy in front of one), in batch mode without column names; its standard
/// output. Panics with the client's error when it fails or takes longer than [`PATIENCE`].
pub fn query_over_tcp(client: &Path, port: u16, sql: &str) -> String {
    query_over_tcp_with(client, port, &[], sql)
        .unwrap_or_else(|error| panic!("mariadb -e {sql:?} failed: {error}"))
}

/// [`query_over_tcp`] with more of the client's `arguments` (`--ssl`); the client's
/// standard error when it fails. Panics when it takes longer than [`PATIENCE`].
pub fn query_over_tcp_with(
    client: &Path,
    port: u16,
    arguments: &[&str],
    sql: &str,
) -> Result<String, String> {
    let mut child = Command::new(client)
        .arg("--no-defaults")
        .args(["--protocol=TCP", "--host=127.0.0.1"])
        .arg(format!("--port={port}"))
        .arg(format!("--user={}", MariaDb::USER))
        .arg(format!("--password={}", MariaDb::PASSWORD))
        .args(["--connect-timeout=10", "--batch", "--skip-column-names"])
        .args(arguments)
        .arg(format!("--execute={sql}"))
        .arg(MariaDb::DATABASE)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|error| panic!("run the mariadb client: {error}"));
    // Read on threads, so that an answer larger than a pipe's buffer does not stall the
    // client while this thread waits for it to exit.
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        let mut pipe = pipe.expect("a piped output");
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            bytes
        })
    };
    let stdout = drain(child.stdout.take().map(|pipe| Box::new(pipe) as _));
    let stderr = drain(child.stderr.take().map(|pipe| Box::new(pipe) as _));
    let deadline = Instant::now() + PATIENCE;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the mariadb client") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the mariadb client took longer than {PATIENCE:?} for {sql:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let stdout = stdout.join().expect("the stdout reader");
    let stderr = stderr.join().expect("the stderr reader");
    if !status.success() {
        return Err(format!("{status}: {}", String::from_utf8_lossy(&stderr)));
    }
    Ok(String::from_utf8_lossy(&stdout).into_owned())
}
