//! The master thread: startup, the pid file, signals, reload and stop.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use conf::ConfError;
use logging::{ErrorLog, Level, LogFile};
use runtime::Phase;
use runtime::sys::linux as sys;

use crate::cache_zones::ZoneRegistry;
use crate::cli::{self, Options};
use crate::config::{self, Config, Paths};
use crate::generation::{self, GenerationHandle};
use crate::listeners::{ListenerSet, UnixFiles};
use crate::{pid_file, upgrade};

/// How often the master wakes without a signal to reap finished generations, while a
/// generation drains or a new binary runs.
const REAP_INTERVAL: Duration = Duration::from_millis(100);

/// How often the master wakes without a signal when nothing waits to be reaped: an idle
/// server's master is not woken ten times a second.
const QUIET_INTERVAL: Duration = Duration::from_secs(1);

/// Writes `portico: TEXT` to stderr, as nginx prefixes its own messages.
pub fn say(text: &str) {
    let mut stderr = std::io::stderr().lock();
    let _ = writeln!(stderr, "portico: {text}");
}

/// Reports a configuration or startup error: `portico: [LEVEL] TEXT` on stderr, and the
/// same message as an error-log line.
fn report(log: &ErrorLog, level: Level, text: &str) {
    say(&format!("[{level}] {text}"));
    let stderr_only = log.sinks().iter().all(|sink| sink.file.is_stderr());
    if !stderr_only {
        log.write(
            level,
            &runtime::clock::wall_now(),
            None,
            format_args!("{text}"),
            None,
        );
    }
}

fn log(log: &ErrorLog, level: Level, text: &str) {
    if log.enabled(level) {
        log.write(
            level,
            &runtime::clock::wall_now(),
            None,
            format_args!("{text}"),
            None,
        );
    }
}

/// The log that takes messages until the configuration names one: `-e` or the default.
fn startup_log(paths: &Paths) -> ErrorLog {
    let file = match &paths.error_log {
        Some(path) => match LogFile::open(path) {
            Ok(file) => file,
            Err(error) => {
                let text = sys::error_text(&error);
                say(&format!(
                    "[alert] could not open error log file: open() \"{}\" failed ({text})",
                    path.display()
                ));
                LogFile::stderr().unwrap_or_else(|_| fallback_stderr())
            }
        },
        None => LogFile::stderr().unwrap_or_else(|_| fallback_stderr()),
    };
    ErrorLog::new(vec![logging::ErrorSink {
        file: Arc::new(file),
        level: Level::Notice,
    }])
}

fn fallback_stderr() -> LogFile {
    // fd 2 could not be duplicated: the process is out of descriptors at startup. Logging
    // to /dev/null is the only option left that keeps the master going.
    LogFile::open(std::path::Path::new("/dev/null")).unwrap_or_else(|_| std::process::abort())
}

/// Runs what the command line asked for.
pub fn main(options: Options) -> ExitCode {
    let paths = Paths::from_options(&options);
    if options.version {
        print_version(&options);
        if !options.test {
            return ExitCode::SUCCESS;
        }
    }
    let startup = startup_log(&paths);
    let config = match config::load(&paths, options.directives.as_deref()) {
        Ok(config) => config,
        Err(error) => {
            report(&startup, Level::Emerg, &error.to_string());
            if options.test {
                say(&format!(
                    "configuration file {} test failed",
                    paths.conf_file.display()
                ));
            }
            return ExitCode::FAILURE;
        }
    };
    for warning in &config.warnings {
        report(&startup, Level::Warn, &warning.to_string());
    }
    for notice in &config.notices {
        report(&startup, Level::Notice, &notice.to_string());
    }
    if options.test {
        if !options.quiet {
            say(&format!(
                "the configuration file {} syntax is ok",
                paths.conf_file.display()
            ));
        }
        // As nginx's `-t`: the directories the workers write to are made (or taken over)
        // now, and every listen address is bound and let go, so that a path that cannot be
        // made or an address the machine does not have fails the test rather than the
        // start. An address in use (by the running server) is fine, as in nginx.
        let failure = config
            .http
            .as_ref()
            .and_then(|http| crate::work_dirs::prepare(http, config.user.as_ref()).err())
            .or_else(|| probe_listen_addresses(&config));
        if let Some(error) = failure {
            report(&startup, Level::Emerg, &error);
            say(&format!(
                "configuration file {} test failed",
                paths.conf_file.display()
            ));
            return ExitCode::FAILURE;
        }
        if !options.quiet {
            say(&format!(
                "configuration file {} test is successful",
                paths.conf_file.display()
            ));
        }
        if options.dump {
            let mut stdout = std::io::stdout().lock();
            let _ = stdout.write_all(conf::dump::render(&config.tree).as_bytes());
        }
        return ExitCode::SUCCESS;
    }
    if let Some(signal) = options.signal {
        return send_signal(&config, signal, &startup);
    }
    let code = Master::start(paths, options, config, startup);
    // The last lines (workers' exit notices, "exit") are on disk before the process ends.
    logging::writer::drain();
    code
}

/// `-t`'s bind of each listen address: the first error other than "in use", in nginx's
/// words. A Unix socket file the probe made is removed again.
fn probe_listen_addresses(config: &Config) -> Option<String> {
    for (address, options) in socket_list(config) {
        match runtime::Listener::open(&address, &options) {
            Ok(listener) => {
                drop(listener);
                if let runtime::ListenAddress::Unix(path) = &address {
                    let _ = std::fs::remove_file(path);
                }
            }
            Err(error) if error.source.raw_os_error() == Some(libc::EADDRINUSE) => {}
            Err(error) => return Some(error.to_string()),
        }
    }
    None
}

fn print_version(options: &Options) {
    let mut stderr = std::io::stderr().lock();
    let _ = writeln!(stderr, "{}", cli::VERSION_LINE);
    if options.help {
        let _ = stderr.write_all(cli::help_text().as_bytes());
    }
    if options.build_info {
        let _ = writeln!(
            stderr,
            "nginx compatibility: nginx/{}",
            shared::NGINX_COMPATIBLE_VERSION
        );
        let _ = writeln!(
            stderr,
            "built-in modules: core events thread_pool {} {}",
            http::assembly::modules::FAMILIES.join(" "),
            stream::FAMILIES.join(" ")
        );
        let _ = writeln!(stderr, "prefix: {}", cli::DEFAULT_PREFIX);
    }
}

/// `-s SIGNAL`: reads the pid file the configuration names and signals that master.
fn send_signal(config: &Config, signal: cli::Signal, startup: &ErrorLog) -> ExitCode {
    let pid = match pid_file::read(&config.pid) {
        Ok(pid) => pid,
        Err(text) => {
            report(startup, Level::Error, &text);
            return ExitCode::FAILURE;
        }
    };
    match sys::kill(pid, signal.number()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            let text = sys::error_text(&error);
            report(
                startup,
                Level::Alert,
                &format!("kill({pid}, {}) failed ({text})", signal.number()),
            );
            ExitCode::FAILURE
        }
    }
}

struct Master {
    paths: Paths,
    directives: Option<String>,
    listeners: ListenerSet,
    generations: Vec<GenerationHandle>,
    error_log: Arc<ErrorLog>,
    pid_path: PathBuf,
    pid: u32,
    connection_ids: Arc<AtomicU64>,
    number: u64,
    /// The proxy cache zones, kept across reloads.
    cache_zones: ZoneRegistry,
    /// Detached from the terminal (`daemon on`, or started by an old binary): only then
    /// does `WINCH` stop the workers, since a terminal sends it when its window changes.
    daemonized: bool,
    /// The new binary `USR2` started, while it runs; the pid file is then `PID.oldbin`.
    new_binary: Option<std::process::Child>,
    /// Our parent when we inherited sockets from it (a binary upgrade): while it runs, it
    /// shares them.
    spawned_by: Option<i32>,
    /// `WINCH` stopped the workers; the sockets stay open for a `HUP` to start new ones.
    noaccepting: bool,
}

impl Master {
    fn start(paths: Paths, options: Options, config: Config, startup: ErrorLog) -> ExitCode {
        if let Some(limit) = config.worker_rlimit_nofile {
            set_nofile(&config.error_log, limit);
        }
        let error_log = Arc::clone(&config.error_log);
        // Before the sockets and before `daemon on` forks, as nginx: a directory that
        // cannot be made is reported on the terminal and the start fails.
        if let Some(http) = &config.http
            && let Err(error) = crate::work_dirs::prepare(http, config.user.as_ref())
        {
            report(&error_log, Level::Emerg, &error);
            return ExitCode::FAILURE;
        }
        let mut listeners = ListenerSet::default();
        let inherited = listeners.inherit_from_environment();
        if let Some((text, problems)) = &inherited {
            log(
                &error_log,
                Level::Notice,
                &format!("using inherited sockets from \"{text}\""),
            );
            for problem in problems {
                log(&error_log, Level::Emerg, problem);
            }
        }
        let socket_list = socket_list(&config);
        let sockets = match listeners.acquire(&socket_list, config.workers, |retry| {
            report(&error_log, Level::Emerg, &retry.to_string())
        }) {
            Ok(sockets) => sockets,
            Err(error) => {
                report(&error_log, Level::Emerg, &error.to_string());
                if error.source.raw_os_error() == Some(libc::EADDRINUSE) {
                    report(&error_log, Level::Emerg, "still could not bind()");
                }
                return ExitCode::FAILURE;
            }
        };
        listeners.close_unused_inherited();
        drop(startup);
        // A binary started by an old one is already detached (or runs where the old one
        // ran): it does not fork again, or the old one would see it exit at once.
        let spawned_by = inherited.is_some().then(sys::parent_pid);
        let daemonized = config.daemon || spawned_by.is_some();
        if config.daemon && spawned_by.is_none() {
            match sys::fork() {
                Ok(sys::Forked::Parent) => return ExitCode::SUCCESS,
                Ok(sys::Forked::Child) => {
                    let _ = rustix::process::setsid();
                    let keep_stderr = error_log.sinks().iter().any(|sink| sink.file.is_stderr());
                    let _ = sys::redirect_stdio_to_null(keep_stderr);
                }
                Err(error) => {
                    report(
                        &error_log,
                        Level::Emerg,
                        &format!("fork() failed ({})", sys::error_text(&error)),
                    );
                    return ExitCode::FAILURE;
                }
            }
        }
        if let Err(error) = sys::lock_executable() {
            // Not fatal: without it, a worker may wait for its own code to be read back from
            // the disk when memory is short.
            log(
                &error_log,
                Level::Notice,
                &format!(
                    "mlock() of the executable failed ({}), its code may be paged out",
                    sys::error_text(&error)
                ),
            );
        }
        // Before the log writer, the pools and the workers start: threads share the
        // environment, so a reload keeps this one.
        if !sys::keep_environment(&config.env) {
            log(
                &error_log,
                Level::Alert,
                "the environment was not changed for \"env\": another thread runs",
            );
        }
        if let Err(error) = sys::block_master_signals() {
            report(
                &error_log,
                Level::Emerg,
                &format!("sigprocmask() failed ({})", sys::error_text(&error)),
            );
            return ExitCode::FAILURE;
        }
        // `pin_hot_files` locks pages on a thread of the master's credentials: the workers
        // and pools may run as `user`, whose RLIMIT_MEMLOCK the executable's own locked
        // pages already use up. It starts with the master's signals blocked, as every thread.
        if let Err(error) = http::kernel::file::pin::start_locker() {
            log(
                &error_log,
                Level::Alert,
                &format!(
                    "the pin_hot_files thread did not start ({})",
                    sys::error_text(&error)
                ),
            );
        }
        // From here log writes go through the log writer thread (no fork follows; it inherits
        // the blocked signals), so that no worker loop waits on a log file's disk.
        if let Err(error) = logging::writer::start() {
            report(
                &error_log,
                Level::Alert,
                &format!(
                    "the log writer thread could not start ({}), workers write logs themselves",
                    sys::error_text(&error)
                ),
            );
        }
        let pid_path = config.pid.clone();
        let connection_ids = Arc::new(AtomicU64::new(1));
        let mut cache_zones = ZoneRegistry::default();
        let handle = match generation::start(
            1,
            config,
            sockets,
            Arc::clone(&connection_ids),
            &mut cache_zones,
            None,
        ) {
            Ok(handle) => handle,
            Err(error) => {
                report(&error_log, Level::Emerg, &error.0);
                return ExitCode::FAILURE;
            }
        };
        let pid = std::process::id();
        if let Err(error) = pid_file::write(&pid_path, pid) {
            let text = sys::error_text(&error);
            report(
                &error_log,
                Level::Emerg,
                &format!("open() \"{}\" failed ({text})", pid_path.display()),
            );
            let mut handle = handle;
            handle.set_phase(Phase::Stopping);
            handle.finish();
            return ExitCode::FAILURE;
        }
        log(
            &error_log,
            Level::Notice,
            &format!("portico/{} started", env!("CARGO_PKG_VERSION")),
        );
        // As `-V` says it; nginx writes its own version at start, and tools look for it.
        log(
            &error_log,
            Level::Notice,
            &format!(
                "nginx compatibility: nginx/{}",
                shared::NGINX_COMPATIBLE_VERSION
            ),
        );
        let mut master = Master {
            paths,
            directives: options.directives,
            listeners,
            generations: vec![handle],
            error_log,
            pid_path,
            pid,
            connection_ids,
            number: 1,
            cache_zones,
            daemonized,
            new_binary: None,
            spawned_by,
            noaccepting: false,
        };
        master.run()
    }

    fn run(&mut self) -> ExitCode {
        loop {
            let pending = self.new_binary.is_some()
                || self
                    .generations
                    .iter()
                    .any(|generation| generation.draining);
            let interval = if pending {
                REAP_INTERVAL
            } else {
                QUIET_INTERVAL
            };
            let signal = match sys::wait_signal(interval) {
                Ok(signal) => signal,
                Err(error) => {
                    log(
                        &self.error_log,
                        Level::Alert,
                        &format!("sigtimedwait() failed ({})", sys::error_text(&error)),
                    );
                    None
                }
            };
            match signal {
                Some(libc::SIGHUP) => self.reload(),
                Some(libc::SIGUSR1) => self.reopen(),
                Some(libc::SIGUSR2) => self.change_binary(),
                Some(libc::SIGWINCH) => self.stop_accepting(),
                Some(libc::SIGQUIT) => {
                    return self.stop(
                        Phase::Draining,
                        "signal 3 (SIGQUIT) received, shutting down",
                    );
                }
                Some(number @ (libc::SIGTERM | libc::SIGINT)) => {
                    let message = format!("signal {number} received, exiting");
                    return self.stop(Phase::Stopping, &message);
                }
                Some(number) => {
                    log(
                        &self.error_log,
                        Level::Notice,
                        &format!("signal {number} received and ignored"),
                    );
                }
                None => {}
            }
            self.reap();
        }
    }

    /// HUP: load the configuration again; on success start a new generation on the same
    /// sockets and let the old one drain; on failure keep serving the old one.
    /// HUP: a new generation from the configuration, counted for the metrics.
    fn reload(&mut self) {
        // After `WINCH` the workers are gone and the sockets open: new workers start
        // (nginx starts them from the configuration it has; Portico reads it again).
        self.noaccepting = false;
        let counter = if self.start_new_generation() {
            &metrics::GLOBAL.reloads
        } else {
            &metrics::GLOBAL.reloads_failed
        };
        counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether the configuration loaded and its generation started.
    fn start_new_generation(&mut self) -> bool {
        log(
            &self.error_log,
            Level::Notice,
            "signal 1 (SIGHUP) received, reconfiguring",
        );
        let config = match config::load(&self.paths, self.directives.as_deref()) {
            Ok(config) => config,
            Err(error) => {
                self.log_conf_error(&error);
                return false;
            }
        };
        for warning in &config.warnings {
            log(&self.error_log, Level::Warn, &warning.to_string());
        }
        for notice in &config.notices {
            log(&self.error_log, Level::Notice, &notice.to_string());
        }
        if let Some(limit) = config.worker_rlimit_nofile {
            set_nofile(&config.error_log, limit);
        }
        let socket_list = socket_list(&config);
        let error_log = Arc::clone(&self.error_log);
        let sockets = match self
            .listeners
            .acquire(&socket_list, config.workers, |retry| {
                log(&error_log, Level::Emerg, &retry.to_string())
            }) {
            Ok(sockets) => sockets,
            Err(error) => {
                log(&self.error_log, Level::Emerg, &error.to_string());
                return false;
            }
        };
        let new_log = Arc::clone(&config.error_log);
        let pid_path = config.pid.clone();
        self.number += 1;
        let handle = match generation::start(
            self.number,
            config,
            sockets,
            Arc::clone(&self.connection_ids),
            &mut self.cache_zones,
            self.generations.iter().rev().find(|old| !old.draining),
        ) {
            Ok(handle) => handle,
            Err(error) => {
                log(&self.error_log, Level::Alert, &error.0);
                self.listeners.prune(self.unix_files());
                return false;
            }
        };
        for old in &mut self.generations {
            if !old.draining {
                old.set_phase(Phase::Draining);
            }
        }
        self.generations.push(handle);
        self.error_log = new_log;
        if pid_path != self.pid_path && pid_file::write(&pid_path, self.pid).is_ok() {
            pid_file::remove(&self.pid_path, self.pid);
            self.pid_path = pid_path;
        }
        log(
            &self.error_log,
            Level::Notice,
            "reconfigured, old workers are shutting down gracefully",
        );
        true
    }

    fn log_conf_error(&self, error: &ConfError) {
        log(&self.error_log, Level::Emerg, &error.to_string());
    }

    /// USR1: reopen every log file of every generation still running.
    fn reopen(&mut self) {
        log(
            &self.error_log,
            Level::Notice,
            "signal 10 (SIGUSR1) received, reopening logs",
        );
        // What was logged before the signal goes to the files being rotated away.
        logging::writer::drain();
        for generation in &self.generations {
            for (path, error) in generation.log_files.reopen_all() {
                let text = sys::error_text(&error);
                log(
                    &self.error_log,
                    Level::Alert,
                    &format!("open() \"{}\" failed ({text})", path.display()),
                );
            }
        }
    }

    /// Joins generations whose workers have all exited, then closes unused sockets.
    fn reap(&mut self) {
        let mut index = 0;
        while index < self.generations.len() {
            if self.generations[index].draining && self.generations[index].is_finished() {
                let finished = self.generations.remove(index);
                let number = finished.generation.number;
                let panics = finished.finish();
                for panic in &panics {
                    log(&self.error_log, Level::Alert, panic);
                }
                // nginx's words for a worker process that ended, which tools watch for.
                let code = u8::from(!panics.is_empty());
                log(
                    &self.error_log,
                    Level::Notice,
                    &format!("generation {number} exited with code {code}"),
                );
                continue;
            }
            index += 1;
        }
        self.reap_new_binary();
        // After `WINCH` no generation uses the sockets, and they must stay for `HUP`.
        if !self.noaccepting {
            self.listeners.prune(self.unix_files());
        }
    }

    /// Which Unix socket files closing a socket may remove.
    fn unix_files(&self) -> UnixFiles {
        UnixFiles {
            new_binary_running: self.new_binary.is_some(),
            old_binary_running: self.spawned_by == Some(sys::parent_pid()),
        }
    }

    /// USR2: start the binary again from its path, handing it the sockets.
    fn change_binary(&mut self) {
        if self.new_binary.is_some() || self.unix_files().old_binary_running {
            log(
                &self.error_log,
                Level::Notice,
                "signal 12 (SIGUSR2) received, ignoring",
            );
            log(
                &self.error_log,
                Level::Notice,
                "the changing binary signal is ignored: you should shutdown or terminate \
                 before either old or new binary's process",
            );
            return;
        }
        log(
            &self.error_log,
            Level::Notice,
            "signal 12 (SIGUSR2) received, changing binary",
        );
        let oldbin = upgrade::oldbin_path(&self.pid_path);
        if let Err(error) = std::fs::rename(&self.pid_path, &oldbin) {
            log(
                &self.error_log,
                Level::Alert,
                &format!(
                    "rename() \"{}\" to \"{}\" failed ({})",
                    self.pid_path.display(),
                    oldbin.display(),
                    sys::error_text(&error)
                ),
            );
            return;
        }
        match upgrade::start_new_binary(&self.listeners) {
            Ok(child) => {
                log(
                    &self.error_log,
                    Level::Notice,
                    &format!("start new binary process {}", child.id()),
                );
                self.new_binary = Some(child);
            }
            Err(message) => {
                log(&self.error_log, Level::Alert, &message);
                self.restore_pid_file();
            }
        }
    }

    /// Puts `PID.oldbin` back as the pid file.
    fn restore_pid_file(&self) {
        let oldbin = upgrade::oldbin_path(&self.pid_path);
        if let Err(error) = std::fs::rename(&oldbin, &self.pid_path) {
            log(
                &self.error_log,
                Level::Alert,
                &format!(
                    "rename() \"{}\" to \"{}\" failed ({})",
                    oldbin.display(),
                    self.pid_path.display(),
                    sys::error_text(&error)
                ),
            );
        }
    }

    /// A new binary that exited gives the pid file back; workers stopped by `WINCH` start
    /// again, as nginx does.
    fn reap_new_binary(&mut self) {
        let Some(child) = &mut self.new_binary else {
            return;
        };
        let status = match child.try_wait() {
            Ok(Some(status)) => status,
            Ok(None) => return,
            Err(error) => {
                log(
                    &self.error_log,
                    Level::Alert,
                    &format!("waitpid() failed ({})", sys::error_text(&error)),
                );
                return;
            }
        };
        let pid = child.id();
        self.new_binary = None;
        let how = match (
            status.code(),
            std::os::unix::process::ExitStatusExt::signal(&status),
        ) {
            (Some(code), _) => format!("exited with code {code}"),
            (None, Some(signal)) => format!("exited on signal {signal}"),
            (None, None) => "exited".to_owned(),
        };
        log(
            &self.error_log,
            Level::Notice,
            &format!("new binary process {pid} {how}"),
        );
        self.restore_pid_file();
        if self.noaccepting {
            self.noaccepting = false;
            self.start_new_generation();
        }
    }

    /// WINCH: the workers finish what they serve and exit; the master and its sockets stay.
    fn stop_accepting(&mut self) {
        if !self.daemonized {
            log(
                &self.error_log,
                Level::Notice,
                "signal 28 (SIGWINCH) received",
            );
            return;
        }
        log(
            &self.error_log,
            Level::Notice,
            "signal 28 (SIGWINCH) received, stop accepting connections",
        );
        self.noaccepting = true;
        for generation in &mut self.generations {
            if !generation.draining {
                generation.set_phase(Phase::Draining);
            }
        }
    }

    /// Stops every generation; `message` is logged once the workers have been told.
    fn stop(&mut self, phase: Phase, message: &str) -> ExitCode {
        for generation in &mut self.generations {
            generation.set_phase(phase);
            // Stopping takes no new connections: the sockets close as soon as the workers'
            // accept loops let go of them, so new clients are refused, as nginx does.
            generation.sockets.clear();
        }
        let files = self.unix_files();
        self.listeners.close_all(files);
        log(&self.error_log, Level::Notice, message);
        while !self.generations.iter().all(GenerationHandle::is_finished) {
            if let Ok(Some(libc::SIGTERM | libc::SIGINT)) = sys::wait_signal(REAP_INTERVAL) {
                for generation in &mut self.generations {
                    generation.set_phase(Phase::Stopping);
                }
            }
        }
        for generation in self.generations.drain(..) {
            for panic in generation.finish() {
                log(&self.error_log, Level::Alert, &panic);
            }
        }
        let files = self.unix_files();
        self.listeners.close_all(files);
        self.cache_zones.shutdown(&self.error_log);
        pid_file::remove(&self.pid_path, self.pid);
        if self.new_binary.is_some() {
            pid_file::remove(&upgrade::oldbin_path(&self.pid_path), self.pid);
        }
        log(&self.error_log, Level::Notice, "exit");
        ExitCode::SUCCESS
    }
}

/// The http block's sockets, then the stream block's (`generation::run_worker` takes
/// them in that order).
fn socket_list(config: &Config) -> Vec<(runtime::ListenAddress, runtime::ListenOptions)> {
    let mut list: Vec<_> = config
        .http
        .as_ref()
        .map(|http| {
            http.sockets
                .iter()
                .map(|socket| (socket.address.clone(), socket.options.clone()))
                .collect()
        })
        .unwrap_or_default();
    if let Some(stream) = &config.stream {
        list.extend(stream.socket_list());
    }
    list
}

/// `worker_rlimit_nofile`: one process, so the limit is the process's.
fn set_nofile(error_log: &ErrorLog, limit: u64) {
    let rlimit = rustix::process::Rlimit {
        current: Some(limit),
        maximum: Some(limit),
    };
    if let Err(error) = rustix::process::setrlimit(rustix::process::Resource::Nofile, rlimit) {
        let error = std::io::Error::from(error);
        log(
            error_log,
            Level::Alert,
            &format!(
                "setrlimit(RLIMIT_NOFILE, {limit}) failed ({})",
                sys::error_text(&error)
            ),
        );
    }
}
