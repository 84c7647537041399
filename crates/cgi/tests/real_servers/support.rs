//! What the real-server tests share: a temporary directory, servers started from it and
//! stopped by their pid, waits with deadlines, and whole answers read from a unix socket.

use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use portico_cgi::head::{HeadParser, HeadProgress, HeadStyle};

/// How long anything a server should do "soon" may take (start, answer, stop). Generous:
/// the tests share two cores with other builds.
pub const PATIENCE: Duration = Duration::from_secs(20);

const POLL_INTERVAL: Duration = Duration::from_millis(10);

static DIRECTORY_SERIAL: AtomicU64 = AtomicU64::new(0);

/// A directory under the system temp dir, removed with everything in it on drop.
pub struct TempDir {
    path: PathBuf,
}

impl TempDir {
    pub fn new(name: &str) -> TempDir {
        let serial = DIRECTORY_SERIAL.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!(
            "portico-cgi-{name}-{}-{serial}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("create the temp dir");
        TempDir { path }
    }

    pub fn join(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Writes `contents` to `name` in the directory and returns its path.
    pub fn write(&self, name: &str, contents: &str) -> PathBuf {
        let path = self.join(name);
        std::fs::write(&path, contents).expect("write into the temp dir");
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// The first executable on `PATH` or in the sbin directories whose file name `matches`
/// (Debian installs `php-fpm8.2` in `/usr/sbin`, which a user's `PATH` may lack).
pub fn find_program(matches: impl Fn(&str) -> bool) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut directories: Vec<PathBuf> = std::env::split_paths(&path).collect();
    directories.extend(["/usr/local/sbin", "/usr/sbin", "/sbin"].map(PathBuf::from));
    for directory in directories {
        let Ok(entries) = std::fs::read_dir(&directory) else {
            continue;
        };
        let mut found: Vec<PathBuf> = entries
            .flatten()
            .filter(|entry| entry.file_name().to_str().is_some_and(&matches))
            .map(|entry| entry.path())
            .collect();
        found.sort();
        if let Some(program) = found.into_iter().next() {
            return Some(program);
        }
    }
    None
}

/// True when the tests run as root (servers then need to be told that is fine).
pub fn running_as_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            let line = status
                .lines()
                .find(|line| line.starts_with("Uid:"))?
                .to_owned();
            Some(line.split_whitespace().nth(1)? == "0")
        })
        .unwrap_or(false)
}

/// A server process this test started. Dropping it stops the process by its pid: the
/// stop signal first, a kill if it has not exited within [`PATIENCE`].
pub struct Server {
    name: &'static str,
    child: Child,
    stop_signal: &'static str,
    log: PathBuf,
}

impl Server {
    /// Starts `command` with its output in `log`, and waits until `socket` accepts a
    /// connection. Panics with the log when the server exits or never listens.
    pub fn start(
        name: &'static str,
        command: Command,
        socket: &Path,
        log: PathBuf,
        stop_signal: &'static str,
    ) -> Server {
        let mut server = Server::spawn(name, command, log, stop_signal);
        let deadline = Instant::now() + PATIENCE;
        while UnixStream::connect(socket).is_err() {
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!(
                    "{name} exited ({status}) before listening:\n{}",
                    server.log_text()
                );
            }
            if Instant::now() > deadline {
                panic!(
                    "{name} did not listen on {} in time:\n{}",
                    socket.display(),
                    server.log_text()
                );
            }
            std::thread::sleep(POLL_INTERVAL);
        }
        server
    }

    /// Starts `command` with its output in `log`, without waiting for it to listen.
    pub fn spawn(
        name: &'static str,
        mut command: Command,
        log: PathBuf,
        stop_signal: &'static str,
    ) -> Server {
        let output = File::create(&log).expect("create the server log");
        let errors = output.try_clone().expect("share the server log");
        command.stdin(Stdio::null()).stdout(output).stderr(errors);
        let child = command
            .spawn()
            .unwrap_or_else(|error| panic!("start {name}: {error}"));
        Server {
            name,
            child,
            stop_signal,
            log,
        }
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Sends `signal` (`HUP`, ...) to the server, by its pid.
    #[allow(
        dead_code,
        reason = "the e2e harness's dnsmasq uses it; these tests do not"
    )]
    pub fn signal(&self, signal: &str) {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill").args(["-s", signal, &pid]).status();
        assert!(
            sent.is_ok_and(|status| status.success()),
            "kill -s {signal} {pid}"
        );
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let pid = self.child.id().to_string();
        let _ = Command::new("kill")
            .args(["-s", self.stop_signal, &pid])
            .status();
        let deadline = Instant::now() + PATIENCE;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(POLL_INTERVAL);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        if !std::thread::panicking() {
            panic!(
                "{} (pid {pid}) ignored SIG{} and was killed",
                self.name, self.stop_signal
            );
        }
    }
}

/// A connection to a server's unix socket, with [`PATIENCE`] as its read and write timeouts.
pub fn connect(socket: &Path) -> UnixStream {
    let stream = UnixStream::connect(socket).expect("connect to the server");
    stream
        .set_read_timeout(Some(PATIENCE))
        .expect("read timeout");
    stream
        .set_write_timeout(Some(PATIENCE))
        .expect("write timeout");
    stream
}

/// Sends `request` and reads until the server closes the connection.
pub fn exchange_until_close(socket: &Path, request: &[u8]) -> Vec<u8> {
    let mut stream = connect(socket);
    stream.write_all(request).expect("send the request");
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).expect("read the answer");
    answer
}

/// A uwsgi or SCGI answer's head as the crate read it, and the body after it.
#[derive(Debug)]
pub struct AnswerHead {
    pub status: u16,
    pub status_line: Option<Vec<u8>>,
    pub fields: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl AnswerHead {
    pub fn has_field(&self, name: &str, value: &str) -> bool {
        self.fields
            .iter()
            .any(|(field, field_value)| field == name && field_value == value)
    }
}

/// Reads the head of a whole uwsgi or SCGI answer, fed to the parser in pieces of 7 bytes.
pub fn read_answer_head(answer: &[u8]) -> AnswerHead {
    let mut parser = HeadParser::new(HeadStyle::StatusLineOrCgi, 4096);
    let mut at = 0;
    for piece in answer.chunks(7) {
        let progress = parser.push(piece).expect("a valid head");
        if let HeadProgress::Complete { head, body_offset } = progress {
            let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
            return AnswerHead {
                status: head.status(),
                status_line: head.status_line().map(<[u8]>::to_vec),
                fields: head
                    .fields()
                    .map(|(name, value)| (text(name), text(value)))
                    .collect(),
                body: answer[at + body_offset..].to_vec(),
            };
        }
        at += piece.len();
    }
    panic!("no whole head in {:?}", String::from_utf8_lossy(answer));
}
