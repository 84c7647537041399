//! Loading a whole configuration: the main and `events` contexts here, `http` in the
//! `http` crate. A configuration that fails to load never starts or replaces workers.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use conf::{ConfError, ConfErrorKind, ConfigTree, Context, Directive, DiskSources, Span};
use http::HttpConf;
use logging::{ErrorLog, ErrorSink, Level, LogFiles};
use runtime::AcceptSettings;
use threadpool::PoolSettings;

use crate::cli;
use crate::directives::{self, MainSetter};

/// Where things are, from the command line and the compiled-in defaults.
#[derive(Clone, Debug)]
pub struct Paths {
    /// `-p`, always ending in `/`.
    pub prefix: PathBuf,
    /// `-c`, made absolute against the prefix.
    pub conf_file: PathBuf,
    /// The directory of the configuration file: relative `include`s hang off it.
    pub conf_prefix: PathBuf,
    /// `-e`: the error log used until the configuration names one (`None` = stderr).
    pub error_log: Option<PathBuf>,
}

impl Paths {
    pub fn from_options(options: &cli::Options) -> Paths {
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
        let prefix_text = options
            .prefix
            .clone()
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(cli::DEFAULT_PREFIX));
        let joined = if prefix_text.is_absolute() {
            prefix_text
        } else {
            cwd.join(prefix_text)
        };
        // `-p .` names the current directory; `/srv/./` prints as `/srv` in messages.
        let prefix: PathBuf = joined
            .components()
            .filter(|component| !matches!(component, std::path::Component::CurDir))
            .collect();
        let conf_text = options
            .conf_file
            .clone()
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(cli::DEFAULT_CONF_FILE));
        let conf_file = directives::resolve_path(&prefix, &conf_text.to_string_lossy());
        let conf_prefix = conf_file
            .parent()
            .map(Path::to_owned)
            .unwrap_or_else(|| prefix.clone());
        let error_log = match options
            .error_log
            .as_ref()
            .map(|path| path.to_string_lossy().into_owned())
        {
            Some(text) if text == "stderr" => None,
            Some(text) => Some(directives::resolve_path(&prefix, &text)),
            None => Some(directives::resolve_path(&prefix, cli::DEFAULT_ERROR_LOG)),
        };
        Paths {
            prefix,
            conf_file,
            conf_prefix,
            error_log,
        }
    }
}

/// `worker_processes`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkerCount {
    Auto,
    Fixed(usize),
}

/// `worker_cpu_affinity`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CpuAffinity {
    /// One CPU per worker in turn, optionally only among `limit`.
    Auto { limit: Option<Vec<usize>> },
    /// One CPU list per worker; the last repeats for further workers.
    Masks(Vec<Vec<usize>>),
}

/// `user`, looked up at load.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UserSetting {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
}

/// The main and `events` directives as read, before defaults.
#[derive(Debug, Default)]
pub struct MainLoad {
    pub prefix: PathBuf,
    /// `env`: names, and the values given, in order.
    pub env: Vec<(String, Option<String>)>,
    pub worker_processes: Option<WorkerCount>,
    pub worker_cpu_affinity: Option<CpuAffinity>,
    pub worker_rlimit_nofile: Option<u64>,
    pub worker_priority: Option<i32>,
    pub worker_shutdown_timeout: Option<Duration>,
    pub pid: Option<PathBuf>,
    pub error_log_directives: Vec<Directive>,
    pub daemon: Option<bool>,
    pub master_process: Option<bool>,
    pub user: Option<UserSetting>,
    pub thread_pools: Vec<PoolSettings>,
    pub worker_connections: Option<usize>,
    pub multi_accept: Option<bool>,
    /// `debug_connection`, in order.
    pub debug_connections: Vec<shared::access::Target>,
    pub accept_mutex: Option<bool>,
    pub accept_mutex_delay: Option<Duration>,
    pub event_method: Option<&'static str>,
    /// `timer_resolution`: kept, not used (see `directives::set_timer_resolution`).
    pub timer_resolution: Option<Duration>,
    /// `pcre_jit`: kept, not used.
    pub pcre_jit: Option<bool>,
    /// `quic_bpf`: kept, not used (see docs/http3.md).
    pub quic_bpf: Option<bool>,
    /// `[notice]` lines the directives ask for (a `load_module` of a built-in module).
    pub notices: Vec<ConfError>,
}

impl MainLoad {
    pub fn path(&self, text: &str) -> PathBuf {
        directives::resolve_path(&self.prefix, text)
    }
}

/// A loaded configuration.
#[derive(Debug)]
pub struct Config {
    pub tree: ConfigTree,
    pub workers: usize,
    pub cpu_affinity: Option<CpuAffinity>,
    pub worker_rlimit_nofile: Option<u64>,
    /// `worker_priority`: the nice value of worker and pool threads.
    pub worker_priority: Option<i32>,
    pub shutdown_timeout: Option<Duration>,
    pub pid: PathBuf,
    pub daemon: bool,
    /// Whom workers and pool threads run as, when the master runs as root.
    pub user: Option<UserSetting>,
    pub thread_pools: Vec<PoolSettings>,
    pub accept: AcceptSettings,
    /// `debug_connection`: the clients whose connections log at `debug` everywhere.
    pub debug_connections: Option<shared::access::Rules>,
    pub error_log: Arc<ErrorLog>,
    pub log_files: LogFiles,
    pub http: Option<HttpConf>,
    /// The `stream` block, if the configuration has one.
    pub stream: Option<stream::StreamConf>,
    pub warnings: Vec<ConfError>,
    /// Reported at `notice`, like `warnings` at `warn`.
    pub notices: Vec<ConfError>,
    /// `env`: the variables the workers keep, or are given.
    pub env: Vec<(String, Option<String>)>,
}

/// nginx's default for `worker_connections`.
const WORKER_CONNECTIONS_DEFAULT: usize = 512;

/// Reads and checks the configuration at `paths.conf_file` with `-g` directives first.
pub fn load(paths: &Paths, command_line: Option<&str>) -> Result<Config, ConfError> {
    // Certificates, keys, CA lists and CRLs named several times are read once.
    let _files = tls::LoadFiles::begin();
    let sources = DiskSources;
    let mut tree = conf::parse_file(&paths.conf_file, &sources)?;
    if let Some(text) = command_line {
        let mut extra = conf::parse_command_line(text, &paths.conf_prefix, &sources)?;
        extra.directives.append(&mut tree.directives);
        tree.directives = extra.directives;
        tree.files.append(&mut extra.files);
    }
    let mut main = MainLoad {
        prefix: paths.prefix.clone(),
        ..MainLoad::default()
    };
    let mut http_block: Option<&Directive> = None;
    let mut stream_block: Option<&Directive> = None;
    let mut events_seen = false;
    for directive in &tree.directives {
        let spec = check_main(directive, Context::Main)?;
        match &spec.set {
            MainSetter::Set(set) => set(&mut main, directive)?,
            MainSetter::Events => {
                if events_seen {
                    return Err(ConfError::at(
                        ConfErrorKind::Duplicate {
                            name: directive.name.clone(),
                        },
                        &directive.span,
                    ));
                }
                events_seen = true;
                read_events(&mut main, directive)?;
            }
            MainSetter::Http => {
                if http_block.is_some() {
                    return Err(ConfError::at(
                        ConfErrorKind::Duplicate {
                            name: directive.name.clone(),
                        },
                        &directive.span,
                    ));
                }
                http_block = Some(directive);
            }
            MainSetter::Stream => {
                if stream_block.is_some() {
                    return Err(ConfError::at(
                        ConfErrorKind::Duplicate {
                            name: directive.name.clone(),
                        },
                        &directive.span,
                    ));
                }
                stream_block = Some(directive);
            }
        }
    }
    if !events_seen {
        return Err(ConfError::new(
            ConfErrorKind::Message("no \"events\" section in configuration".to_owned()),
            None,
        ));
    }
    let mut log_files = LogFiles::default();
    let error_log = Arc::new(open_error_logs(&main, paths, &mut log_files)?);
    let mut warnings = Vec::new();
    let http = match http_block {
        Some(block) => {
            let env = http::kernel::conf::LoadEnv {
                prefix: &paths.prefix,
                main_error_log: Arc::clone(&error_log),
                log_files: &mut log_files,
                hostname: hostname(),
                outer_directives: &outer_directives(),
            };
            let mut http =
                http::assembly::load::load_http(block.block.as_deref().unwrap_or_default(), env)?;
            warnings.append(&mut http.warnings);
            check_thread_pools_used(&http, &main.thread_pools)?;
            Some(http)
        }
        None => Some(HttpConf::empty(&http::kernel::conf::MergeEnv {
            prefix: paths.prefix.clone(),
            main_error_log: Arc::clone(&error_log),
        })),
    };
    let stream = match stream_block {
        Some(block) => {
            let env = stream::LoadEnv {
                prefix: &paths.prefix,
                main_error_log: Arc::clone(&error_log),
                log_files: &mut log_files,
            };
            let mut stream = stream::load_stream(block.block.as_deref().unwrap_or_default(), env)?;
            warnings.append(&mut stream.warnings);
            Some(stream)
        }
        None => None,
    };
    let user = resolve_user(&main, &mut warnings);
    Ok(Config {
        workers: worker_count(main.worker_processes.unwrap_or(WorkerCount::Auto)),
        cpu_affinity: main.worker_cpu_affinity,
        worker_rlimit_nofile: main.worker_rlimit_nofile,
        worker_priority: main.worker_priority,
        shutdown_timeout: main.worker_shutdown_timeout,
        pid: main
            .pid
            .unwrap_or_else(|| paths.prefix.join(cli::DEFAULT_PID_FILE)),
        daemon: main.daemon.unwrap_or(true),
        user,
        thread_pools: main.thread_pools,
        accept: AcceptSettings {
            worker_connections: main
                .worker_connections
                .unwrap_or(WORKER_CONNECTIONS_DEFAULT),
            multi_accept: main.multi_accept.unwrap_or(false),
        },
        debug_connections: (!main.debug_connections.is_empty()).then(|| {
            let mut rules = shared::access::Rules::default();
            for target in &main.debug_connections {
                rules.push(shared::access::Action::Allow, *target);
            }
            rules
        }),
        error_log,
        log_files,
        http,
        stream,
        warnings,
        notices: std::mem::take(&mut main.notices),
        env: std::mem::take(&mut main.env),
        tree,
    })
}

/// The names of the main and `events` directives, for the `http` loader.
fn outer_directives() -> Vec<&'static str> {
    directives::DIRECTIVES
        .iter()
        .map(|spec| spec.name)
        .collect()
}

/// Checks a main or `events` directive; a name only an HTTP module knows is "not allowed
/// here", as nginx, which knows every directive, says.
fn check_main(
    directive: &Directive,
    context: Context,
) -> Result<&'static directives::MainDirective, ConfError> {
    conf::spec::check(directives::DIRECTIVES, directive, context).map_err(|error| {
        match error.kind {
            ConfErrorKind::UnknownDirective { name }
                if http::assembly::modules::directives().any(|spec| spec.name == name)
                    || stream::conf::directives::DIRECTIVES
                        .iter()
                        .any(|spec| spec.name == name) =>
            {
                ConfError::at(ConfErrorKind::NotAllowedHere { name }, &directive.span)
            }
            _ => error,
        }
    })
}

/// Every pool `aio threads=NAME` names must be declared by `thread_pool`, except
/// `default`, which exists anyway (nginx's `unknown thread pool` error otherwise).
fn check_thread_pools_used(http: &HttpConf, declared: &[PoolSettings]) -> Result<(), ConfError> {
    for (name, span) in &http.thread_pools_used {
        if name != "default" && !declared.iter().any(|pool| &pool.name == name) {
            return Err(ConfError::message(
                format!("unknown thread pool \"{name}\""),
                span,
            ));
        }
    }
    Ok(())
}

fn read_events(main: &mut MainLoad, block: &Directive) -> Result<(), ConfError> {
    for directive in block.block.as_deref().unwrap_or_default() {
        let spec = check_main(directive, Context::Events)?;
        match &spec.set {
            MainSetter::Set(set) => set(main, directive)?,
            MainSetter::Events | MainSetter::Http | MainSetter::Stream => {
                return Err(ConfError::at(
                    ConfErrorKind::NotAllowedHere {
                        name: directive.name.clone(),
                    },
                    &directive.span,
                ));
            }
        }
    }
    Ok(())
}

/// The main `error_log` directives, or the `-e`/default log when there are none.
fn open_error_logs(
    main: &MainLoad,
    paths: &Paths,
    log_files: &mut LogFiles,
) -> Result<ErrorLog, ConfError> {
    let mut sinks = Vec::new();
    for directive in &main.error_log_directives {
        if directive.args.len() > 2 {
            return Err(ConfError::at(
                ConfErrorKind::InvalidArgumentCount {
                    name: directive.name.clone(),
                },
                &directive.span,
            ));
        }
        let level = match directive.args.get(1) {
            Some(argument) => Level::parse(argument.as_str()).ok_or_else(|| {
                ConfError::message(
                    format!("invalid log level \"{}\"", argument.as_str()),
                    &directive.span,
                )
            })?,
            None => Level::Error,
        };
        if let Some(syslog) = logging::syslog_target(directive.arg(0)) {
            let file = syslog
                .map(Arc::new)
                .map_err(|error| ConfError::message(error.to_string(), &directive.span))?;
            sinks.push(ErrorSink { file, level });
            continue;
        }
        let file = match directive.arg(0) {
            "stderr" => log_files.stderr(),
            text if text.starts_with("memory:") => {
                return Err(ConfError::message(
                    format!("error_log target \"{text}\" is not supported"),
                    &directive.span,
                ));
            }
            text => log_files.open(&main.path(text)),
        }
        .map_err(|error| open_error(&main.path(directive.arg(0)), &error, Some(&directive.span)))?;
        sinks.push(ErrorSink { file, level });
    }
    if sinks.is_empty() {
        // The default log (no `error_log` in the main context) that cannot be opened was
        // already reported with an [alert] when the command line was read; as nginx does,
        // the load goes on (the configuration's own errors still get reported), logging to
        // stderr.
        let opened = paths.error_log.as_ref().map(|path| log_files.open(path));
        let file = match opened {
            Some(Ok(file)) => file,
            Some(Err(_)) | None => log_files
                .stderr()
                .map_err(|error| open_error(Path::new("stderr"), &error, None))?,
        };
        sinks.push(ErrorSink {
            file,
            level: Level::Error,
        });
    }
    Ok(ErrorLog::new(sinks))
}

pub fn open_error(path: &Path, error: &std::io::Error, span: Option<&Span>) -> ConfError {
    let errno = error.raw_os_error().unwrap_or(0);
    ConfError::new(
        ConfErrorKind::Io {
            call: "open",
            path: path.to_owned(),
            errno,
            text: runtime::sys::linux::strerror(errno),
        },
        span.cloned(),
    )
}

/// `worker_processes auto` is the number of CPUs this process may run on.
fn worker_count(count: WorkerCount) -> usize {
    match count {
        WorkerCount::Fixed(count) => count,
        WorkerCount::Auto => rustix::thread::sched_getaffinity(None)
            .map(|set| set.count() as usize)
            .ok()
            .filter(|count| *count > 0)
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from)),
    }
}

/// nginx runs workers as `nobody` when the master is root and no `user` is given, and
/// ignores `user` (with a warning) when it is not root.
fn resolve_user(main: &MainLoad, warnings: &mut Vec<ConfError>) -> Option<UserSetting> {
    let root = rustix::process::geteuid().is_root();
    if !root {
        if main.user.is_some() {
            warnings.push(ConfError::new(
                ConfErrorKind::Message(
                    "the \"user\" directive makes sense only if the master process runs with \
                     super-user privileges, ignored"
                        .to_owned(),
                ),
                None,
            ));
        }
        return None;
    }
    if let Some(user) = &main.user {
        return Some(user.clone());
    }
    let account = runtime::sys::linux::user_by_name("nobody").ok().flatten()?;
    let gid = runtime::sys::linux::group_by_name("nogroup")
        .ok()
        .flatten()
        .unwrap_or(account.gid);
    Some(UserSetting {
        name: "nobody".to_owned(),
        uid: account.uid,
        gid,
    })
}

/// The machine's host name (`$hostname`).
pub fn hostname() -> String {
    logging::hostname()
}
