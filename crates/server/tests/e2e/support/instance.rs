//! A running `portico` with its own prefix, config and ports.
//!
//! The config is real nginx syntax. Nominal ports in it are mapped to free ones (see
//! [`super::ports`]), `%%PREFIX%%` becomes the prefix directory, and the harness appends
//! `daemon off;`, `pid` and `error_log ... info;` after the test's text, so that line numbers
//! in the test's text stay as written. The instance is ready once the pid file names the
//! child and every `listen` socket is listening; it is stopped with `QUIT` on drop, and its
//! error logs must then hold no `[alert]`, `[crit]`, `[emerg]` or `panicked` line unless the
//! test said it expects one.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::Duration;

use rustix::process::{Pid, Signal};

use super::client::{Client, Response, get};
use super::clock::MovableClock;
use super::ports::PortMap;
use super::prefix::TempPrefix;
use super::wait::{PATIENCE, poll, wait_until};

/// Names another binary to run instead of Portico, to compare with a reference nginx
/// (tests that assert Portico's name or version then fail, as they should).
pub const BINARY_VARIABLE: &str = "PORTICO_E2E_BINARY";

/// The binary under test: Portico, unless [`BINARY_VARIABLE`] says otherwise.
pub fn binary() -> String {
    std::env::var(BINARY_VARIABLE)
        .ok()
        .filter(|path| !path.is_empty())
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_portico").to_owned())
}

/// The config file, relative to the prefix (and given to `-c` that way), unless the test
/// chose another with [`Builder::conf_file`].
pub const CONF_FILE: &str = "portico.conf";
pub const PID_FILE: &str = "logs/portico.pid";
pub const ERROR_LOG: &str = "logs/error.log";
/// Where the child's stderr goes.
pub const STDERR_FILE: &str = "stderr.txt";

/// Error-log markers that fail a test unless it expects them.
const FORBIDDEN_MARKERS: &[&str] = &["[alert]", "[crit]", "[emerg]", "panicked"];

/// How the test's config text becomes the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// The text is the whole main context.
    Main,
    /// The text is the inside of `http { }`; one worker, default `events`.
    HttpBody,
}

/// Builds an [`Instance`].
#[derive(Debug)]
pub struct Builder {
    text: String,
    shape: Shape,
    files: Vec<(String, Vec<u8>)>,
    arguments: Vec<String>,
    expected_markers: Vec<&'static str>,
    ports: PortMap,
    conf_file: String,
    movable_clock: bool,
}

impl Builder {
    /// Runs the server on a wall clock the test moves ([`Instance::advance_clock`]).
    pub fn movable_clock(mut self) -> Builder {
        self.movable_clock = true;
        self
    }

    /// Replaces the config text (for a test that picks ports before it can write it).
    pub fn config(mut self, text: &str) -> Builder {
        text.clone_into(&mut self.text);
        self
    }

    /// Puts the config at `relative` (given to `-c` as written) instead of `portico.conf`.
    pub fn conf_file(mut self, relative: &str) -> Builder {
        self.conf_file = relative.to_owned();
        self
    }

    /// Adds a file under the prefix (`html/index.html`, `conf/extra.conf`); `%%PREFIX%%`
    /// and nominal ports in text files are expanded.
    pub fn file(mut self, relative: &str, contents: impl AsRef<[u8]>) -> Builder {
        self.files
            .push((relative.to_owned(), contents.as_ref().to_vec()));
        self
    }

    /// Adds command-line arguments after `-p PREFIX -c portico.conf`.
    pub fn args(mut self, arguments: &[&str]) -> Builder {
        self.arguments
            .extend(arguments.iter().map(|argument| (*argument).to_owned()));
        self
    }

    /// Declares that the error log may contain `marker` (`"[alert]"`, `"[emerg]"`...).
    pub fn expect_log(mut self, marker: &'static str) -> Builder {
        self.expected_markers.push(marker);
        self
    }

    /// Picks the real port for a nominal one now (for a test that needs it before start).
    pub fn port(&mut self, nominal: u16) -> u16 {
        self.ports.port(nominal)
    }

    /// Starts the server and waits until it serves; panics if it does not.
    pub fn start(self) -> Instance {
        match self.try_start() {
            Ok(instance) => instance,
            Err(failure) => panic!(
                "portico did not start: {:?}\nstderr:\n{}\nerror log:\n{}",
                failure.status, failure.stderr, failure.error_log
            ),
        }
    }

    /// Starts the server; a failure to start is returned, not a panic.
    pub fn try_start(mut self) -> Result<Instance, StartFailure> {
        let prefix = TempPrefix::new();
        for (relative, contents) in &self.files {
            match std::str::from_utf8(contents) {
                Ok(text) if may_hold_placeholders(text) => {
                    prefix.write(relative, expand(&mut self.ports, text, &prefix));
                }
                _ => {
                    prefix.write(relative, contents);
                }
            }
        }
        let kept: &[&str] = if self.movable_clock {
            super::clock::VARIABLES
        } else {
            &[]
        };
        let config = render(&mut self.ports, self.shape, &self.text, &prefix, kept);
        prefix.write(&self.conf_file, &config);
        let stderr = File::create(prefix.join(STDERR_FILE)).expect("create the stderr file");
        let clock = self
            .movable_clock
            .then(|| MovableClock::new(&prefix.join("clock")));
        let mut command = Command::new(binary());
        if let Some(clock) = &clock {
            clock.apply(&mut command);
        }
        let mut child = command
            .arg("-p")
            .arg(prefix.arg())
            .arg("-c")
            .arg(&self.conf_file)
            .args(&self.arguments)
            .current_dir(prefix.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .expect("spawn portico");
        if let Err(status) = wait_ready(&mut child, &prefix, &config) {
            return Err(StartFailure {
                status,
                stderr: prefix.read(STDERR_FILE),
                error_log: prefix.read(ERROR_LOG),
                prefix,
            });
        }
        Ok(Instance {
            prefix,
            child,
            shape: self.shape,
            ports: self.ports,
            expected_markers: self.expected_markers,
            exit: None,
            config,
            conf_file: self.conf_file,
            clock,
        })
    }
}

/// Why an instance did not start.
#[derive(Debug)]
pub struct StartFailure {
    pub status: Option<ExitStatus>,
    pub stderr: String,
    pub error_log: String,
    /// The prefix, kept alive so that the test can look at other files.
    pub prefix: TempPrefix,
}

/// A running server.
#[derive(Debug)]
pub struct Instance {
    prefix: TempPrefix,
    child: Child,
    shape: Shape,
    ports: PortMap,
    expected_markers: Vec<&'static str>,
    exit: Option<ExitStatus>,
    config: String,
    conf_file: String,
    clock: Option<MovableClock>,
}

impl Instance {
    /// Moves the server's wall clock forward by `by` (whole seconds), at once: what waits
    /// on the wall clock (a cache entry's freshness) sees the time pass; timers do not.
    /// The instance must have been built with [`Builder::movable_clock`].
    pub fn advance_clock(&self, by: Duration) {
        self.clock
            .as_ref()
            .expect("built with Builder::movable_clock")
            .advance(by);
    }

    /// An instance whose config is the whole main context (the test writes `events {}`).
    pub fn builder(config: &str) -> Builder {
        Builder::new(config, Shape::Main)
    }

    /// An instance whose config is `worker_processes 1; events {} http { BODY }`.
    pub fn http_builder(body: &str) -> Builder {
        Builder::new(body, Shape::HttpBody)
    }

    /// Starts `worker_processes 1; events {} http { BODY }`.
    pub fn http(body: &str) -> Instance {
        Instance::http_builder(body).start()
    }

    /// Starts a config that is the whole main context.
    pub fn start(config: &str) -> Instance {
        Instance::builder(config).start()
    }

    /// The real port of nominal port 8080.
    pub fn port(&self) -> u16 {
        self.port_of(8080)
    }

    /// The real port of a nominal port the config used.
    pub fn port_of(&self, nominal: u16) -> u16 {
        self.ports
            .get(nominal)
            .unwrap_or_else(|| panic!("the config does not use port {nominal}"))
    }

    pub fn prefix(&self) -> &TempPrefix {
        &self.prefix
    }

    /// The master's pid.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The config file as written.
    pub fn config(&self) -> &str {
        &self.config
    }

    /// The config file's path, relative to the prefix, as given to `-c`.
    pub fn conf_file(&self) -> &str {
        &self.conf_file
    }

    /// `-p PREFIX/ -c CONF` followed by `more`: the arguments for a second `portico` that
    /// addresses this instance (`-s`, `-t`).
    pub fn cli_args<'a>(&'a self, more: &[&'a str]) -> Vec<String> {
        let mut arguments = vec![
            "-p".to_owned(),
            self.prefix.arg(),
            "-c".to_owned(),
            self.conf_file.clone(),
        ];
        arguments.extend(more.iter().map(|argument| (*argument).to_owned()));
        arguments
    }

    /// A new connection to nominal port 8080.
    pub fn connect(&self) -> Client {
        Client::connect(self.port())
    }

    /// `GET PATH` on a new connection to port 8080, `Connection: close`.
    pub fn get(&self, path: &str) -> Response {
        self.request(get(path))
    }

    /// Sends `request` on a new connection to port 8080 and reads one response.
    pub fn request(&self, request: impl AsRef<[u8]>) -> Response {
        self.connect().request(request)
    }

    /// Sends `request` on a new connection to a nominal port and reads one response.
    pub fn request_to(&self, nominal: u16, request: impl AsRef<[u8]>) -> Response {
        Client::connect(self.port_of(nominal)).request(request)
    }

    /// The main error log's text.
    pub fn error_log(&self) -> String {
        self.prefix.read(ERROR_LOG)
    }

    /// A file's text under the prefix (empty if missing).
    pub fn read(&self, relative: &str) -> String {
        self.prefix.read(relative)
    }

    /// Waits until the file at `relative` contains `needle`; returns the first line that does.
    pub fn wait_for_line(&self, relative: &str, needle: &str) -> String {
        poll(PATIENCE, || {
            self.read(relative)
                .lines()
                .find(|line| line.contains(needle))
                .map(str::to_owned)
        })
        .unwrap_or_else(|| {
            panic!(
                "no line with {needle:?} in {relative}; it holds:\n{}",
                self.read(relative)
            )
        })
    }

    /// Waits until the error log contains `needle`; returns the first line that does.
    pub fn wait_for_error_log(&self, needle: &str) -> String {
        self.wait_for_line(ERROR_LOG, needle)
    }

    /// Waits until the server has read every byte `client` sent: a request written in part
    /// is then in the server's hands, not in a socket buffer or the listen queue.
    pub fn wait_read_by_server(&self, client: &Client) {
        let (server_port, client_port) = (client.peer_port(), client.local_port());
        wait_until("the server to read what the client sent", PATIENCE, || {
            super::proc_net::server_unread_bytes(server_port, client_port) == Some(0)
        });
    }

    /// Declares, after start, that the error log may contain `marker`.
    pub fn expect_log(&mut self, marker: &'static str) {
        self.expected_markers.push(marker);
    }

    /// Sends `signal` to the master (only to the process this instance started).
    pub fn signal(&self, signal: Signal) {
        let pid = Pid::from_raw(self.child.id() as i32).expect("a child pid is positive");
        rustix::process::kill_process(pid, signal)
            .unwrap_or_else(|error| panic!("kill({pid:?}, {signal:?}): {error}"));
    }

    /// Rewrites the config (same shape and port mapping as at start) without signalling.
    pub fn write_config(&mut self, text: &str) {
        let kept: &[&str] = if self.clock.is_some() {
            super::clock::VARIABLES
        } else {
            &[]
        };
        self.config = render(&mut self.ports, self.shape, text, &self.prefix, kept);
        self.prefix.write(&self.conf_file, &self.config);
    }

    /// Writes a new config, sends HUP and waits until `serves_new` says the new generation
    /// answers (it is polled with a deadline).
    pub fn reload(&mut self, text: &str, mut serves_new: impl FnMut(&Instance) -> bool) {
        self.write_config(text);
        self.signal(Signal::HUP);
        wait_until("the new configuration to serve after HUP", PATIENCE, || {
            serves_new(self)
        });
    }

    /// Writes a config that must fail to load, sends HUP and waits for the `[emerg]` line it
    /// causes; returns that line. The line is then expected in the error log.
    pub fn reload_expect_failure(&mut self, text: &str) -> String {
        let before = count_lines(&self.error_log(), "[emerg]");
        self.expect_log("[emerg]");
        self.write_config(text);
        self.signal(Signal::HUP);
        poll(PATIENCE, || {
            let log = self.error_log();
            let lines: Vec<&str> = log
                .lines()
                .filter(|line| line.contains("[emerg]"))
                .collect();
            (lines.len() > before).then(|| lines[before].to_owned())
        })
        .unwrap_or_else(|| {
            panic!(
                "no [emerg] line after a broken reload:\n{}",
                self.error_log()
            )
        })
    }

    /// Graceful stop: QUIT, then wait for the exit.
    pub fn stop(&mut self) -> ExitStatus {
        self.stop_with(Signal::QUIT)
    }

    /// Fast stop: TERM, then wait for the exit.
    pub fn kill_fast(&mut self) -> ExitStatus {
        self.stop_with(Signal::TERM)
    }

    /// Sends `signal` and waits for the exit; SIGKILL and a panic if it takes too long.
    pub fn stop_with(&mut self, signal: Signal) -> ExitStatus {
        if let Some(status) = self.exit {
            return status;
        }
        if let Ok(Some(status)) = self.child.try_wait() {
            self.exit = Some(status);
            return status;
        }
        self.signal(signal);
        self.wait_exit(PATIENCE).unwrap_or_else(|| {
            let _ = self.child.kill();
            let status = self.child.wait().expect("wait for the killed child");
            self.exit = Some(status);
            panic!("portico did not exit within {PATIENCE:?} after {signal:?}; killed it");
        })
    }

    /// Waits up to `timeout` for the master to exit.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let status = poll(timeout, || {
            self.child.try_wait().expect("try_wait on the child")
        })?;
        self.exit = Some(status);
        Some(status)
    }

    /// True while the master runs.
    pub fn is_running(&mut self) -> bool {
        self.exit.is_none() && matches!(self.child.try_wait(), Ok(None))
    }

    /// Lines of the error logs (every `logs/*error*.log`) and of stderr that the test did
    /// not declare it expects.
    pub fn unexpected_log_lines(&self) -> Vec<String> {
        let mut files = vec![self.prefix.join(STDERR_FILE)];
        if let Ok(entries) = std::fs::read_dir(self.prefix.join("logs")) {
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if name.contains("error") {
                    files.push(entry.path());
                }
            }
        }
        let mut found = Vec::new();
        for file in files {
            let text =
                std::fs::read(&file).map(|bytes| String::from_utf8_lossy(&bytes).into_owned());
            for line in text.unwrap_or_default().lines() {
                let bad = FORBIDDEN_MARKERS
                    .iter()
                    .any(|marker| line.contains(marker) && !self.expected_markers.contains(marker));
                if bad {
                    found.push(format!("{}: {line}", file.display()));
                }
            }
        }
        found
    }
}

impl Drop for Instance {
    #[allow(
        clippy::print_stderr,
        reason = "a failed test shows the server's logs in its output"
    )]
    fn drop(&mut self) {
        let panicking = std::thread::panicking();
        let mut problems = Vec::new();
        if self.exit.is_none() {
            match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.stop())) {
                Ok(status) if !status.success() => {
                    problems.push(format!("portico exited with {status}"));
                }
                Ok(_) => {}
                Err(_) => problems.push("portico did not stop after QUIT".to_owned()),
            }
        }
        problems.extend(self.unexpected_log_lines());
        if panicking {
            eprintln!(
                "portico e2e: error log of the failed test ({}):\n{}\nstderr:\n{}",
                self.prefix.path().display(),
                tail(&self.error_log(), 40),
                tail(&self.read(STDERR_FILE), 40)
            );
            for problem in &problems {
                eprintln!("portico e2e: {problem}");
            }
        } else if !problems.is_empty() {
            panic!(
                "portico e2e: problems found at the end of the test:\n{}\n\
                 error log ({}):\n{}\nstderr:\n{}",
                problems.join("\n"),
                self.prefix.path().display(),
                tail(&self.error_log(), 40),
                tail(&self.read(STDERR_FILE), 40)
            );
        }
    }
}

impl Builder {
    fn new(text: &str, shape: Shape) -> Builder {
        Builder {
            text: text.to_owned(),
            shape,
            files: Vec::new(),
            arguments: Vec::new(),
            expected_markers: Vec::new(),
            ports: PortMap::default(),
            conf_file: CONF_FILE.to_owned(),
            movable_clock: false,
        }
    }
}

/// The config file for a test's text: its own text first, so that its line numbers hold,
/// then the harness's directives.
fn render(
    ports: &mut PortMap,
    shape: Shape,
    text: &str,
    prefix: &TempPrefix,
    kept: &[&str],
) -> String {
    let text = expand(ports, text, prefix);
    let body = match shape {
        Shape::Main => text,
        Shape::HttpBody => format!("worker_processes 1;\nevents {{\n}}\nhttp {{\n{text}\n}}\n"),
    };
    let env: String = kept.iter().map(|name| format!("env {name};\n")).collect();
    format!(
        "{body}\n# Added by the e2e harness.\ndaemon off;\npid {PID_FILE};\nerror_log {ERROR_LOG} info;\n{env}"
    )
}

/// Polls until the pid file names the child and every listen socket listens. On failure
/// the child has exited (or was killed) and its status is returned.
fn wait_ready(
    child: &mut Child,
    prefix: &TempPrefix,
    config: &str,
) -> Result<(), Option<ExitStatus>> {
    let pid_path = prefix.join(PID_FILE);
    let expected_pid = format!("{}\n", child.id());
    let targets = listen_targets(config);
    let ready = poll(PATIENCE, || {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(Err(Some(status)));
        }
        let pid_ok = std::fs::read_to_string(&pid_path).is_ok_and(|text| text == expected_pid);
        (pid_ok && targets.iter().all(ListenTarget::is_listening)).then_some(Ok(()))
    });
    match ready {
        Some(result) => result,
        None => {
            let _ = child.kill();
            Err(child.wait().ok())
        }
    }
}

/// Whether a file's text may use `%%...%%` or a nominal port.
fn may_hold_placeholders(text: &str) -> bool {
    ["%%", "127.0.0.1:", "[::1]:", "localhost:"]
        .iter()
        .any(|pattern| text.contains(pattern))
}

/// Expands nominal ports and `%%PREFIX%%` (the prefix directory, no trailing slash).
pub fn expand(ports: &mut PortMap, text: &str, prefix: &TempPrefix) -> String {
    ports
        .expand(text)
        .replace("%%PREFIX%%", &prefix.path().display().to_string())
}

fn count_lines(text: &str, needle: &str) -> usize {
    text.lines().filter(|line| line.contains(needle)).count()
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// A socket the config listens on.
#[derive(Debug, Clone, PartialEq, Eq)]
enum ListenTarget {
    Tcp(u16),
    Unix(PathBuf),
}

impl ListenTarget {
    fn is_listening(&self) -> bool {
        match self {
            ListenTarget::Tcp(port) => super::proc_net::is_listening(*port),
            ListenTarget::Unix(path) => Path::new(path).exists(),
        }
    }
}

/// The first argument of every `listen` directive of an (expanded) config.
fn listen_targets(config: &str) -> Vec<ListenTarget> {
    let mut targets = Vec::new();
    for line in config.lines() {
        let code = line.split('#').next().unwrap_or_default();
        // A `udp` socket never shows as listening in the TCP tables.
        if code
            .split(|c: char| c.is_whitespace() || c == ';')
            .any(|word| word == "udp")
        {
            continue;
        }
        let mut words = code.split(|c: char| c.is_whitespace() || matches!(c, ';' | '{' | '}'));
        while let Some(word) = words.next() {
            if word != "listen" {
                continue;
            }
            let Some(address) = words.find(|word| !word.is_empty()) else {
                break;
            };
            if let Some(path) = address.strip_prefix("unix:") {
                targets.push(ListenTarget::Unix(PathBuf::from(path)));
            } else if let Some(port) = address
                .rsplit(':')
                .next()
                .and_then(|port| port.parse().ok())
            {
                targets.push(ListenTarget::Tcp(port));
            }
        }
    }
    targets
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_targets_are_found() {
        let config = "server { listen 127.0.0.1:1234 default_server; listen [::1]:99; }\n\
                      # listen 5;\nserver {listen unix:/tmp/x.sock;}\nserver { listen 77; }";
        assert_eq!(
            listen_targets(config),
            vec![
                ListenTarget::Tcp(1234),
                ListenTarget::Tcp(99),
                ListenTarget::Unix(PathBuf::from("/tmp/x.sock")),
                ListenTarget::Tcp(77)
            ]
        );
    }
}
