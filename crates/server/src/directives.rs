//! The main and `events` contexts' directive table.

use std::path::PathBuf;
use std::time::Duration;

use conf::{Arity, BlockKind, ConfError, Contexts, Directive, DirectiveSpec};
use threadpool::PoolSettings;

use crate::config::{CpuAffinity, MainLoad, UserSetting, WorkerCount};

/// What a main-context directive does.
pub enum MainSetter {
    Set(fn(&mut MainLoad, &Directive) -> Result<(), ConfError>),
    /// `events { ... }`
    Events,
    /// `http { ... }`
    Http,
    /// `stream { ... }`
    Stream,
}

impl std::fmt::Debug for MainSetter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            MainSetter::Set(_) => "Set",
            MainSetter::Events => "Events",
            MainSetter::Http => "Http",
            MainSetter::Stream => "Stream",
        })
    }
}

pub type MainDirective = DirectiveSpec<MainSetter>;

const fn simple(
    name: &'static str,
    contexts: Contexts,
    arity: Arity,
    set: fn(&mut MainLoad, &Directive) -> Result<(), ConfError>,
) -> MainDirective {
    MainDirective {
        name,
        contexts,
        arity,
        block: BlockKind::Simple,
        set: MainSetter::Set(set),
    }
}

pub const DIRECTIVES: &[MainDirective] = &[
    MainDirective {
        name: "events",
        contexts: Contexts::MAIN,
        arity: Arity::NONE,
        block: BlockKind::Block,
        set: MainSetter::Events,
    },
    MainDirective {
        name: "http",
        contexts: Contexts::MAIN,
        arity: Arity::NONE,
        block: BlockKind::Block,
        set: MainSetter::Http,
    },
    MainDirective {
        name: "stream",
        contexts: Contexts::MAIN,
        arity: Arity::NONE,
        block: BlockKind::Block,
        set: MainSetter::Stream,
    },
    simple(
        "worker_processes",
        Contexts::MAIN,
        Arity::TAKE1,
        set_worker_processes,
    ),
    simple(
        "worker_cpu_affinity",
        Contexts::MAIN,
        Arity::ONE_OR_MORE,
        set_worker_cpu_affinity,
    ),
    simple(
        "worker_rlimit_nofile",
        Contexts::MAIN,
        Arity::TAKE1,
        set_worker_rlimit_nofile,
    ),
    simple(
        "worker_priority",
        Contexts::MAIN,
        Arity::TAKE1,
        set_worker_priority,
    ),
    simple(
        "worker_shutdown_timeout",
        Contexts::MAIN,
        Arity::TAKE1,
        set_worker_shutdown_timeout,
    ),
    simple("pid", Contexts::MAIN, Arity::TAKE1, set_pid),
    simple(
        "error_log",
        Contexts::MAIN,
        Arity::ONE_OR_MORE,
        set_error_log,
    ),
    simple("daemon", Contexts::MAIN, Arity::FLAG, set_daemon),
    simple(
        "master_process",
        Contexts::MAIN,
        Arity::FLAG,
        set_master_process,
    ),
    simple("user", Contexts::MAIN, Arity::TAKE12, set_user),
    simple(
        "thread_pool",
        Contexts::MAIN,
        Arity::TAKE23,
        set_thread_pool,
    ),
    simple(
        "worker_connections",
        Contexts::EVENTS,
        Arity::TAKE1,
        set_worker_connections,
    ),
    simple(
        "multi_accept",
        Contexts::EVENTS,
        Arity::FLAG,
        set_multi_accept,
    ),
    simple(
        "debug_connection",
        Contexts::EVENTS,
        Arity::TAKE1,
        set_debug_connection,
    ),
    simple(
        "accept_mutex",
        Contexts::EVENTS,
        Arity::FLAG,
        set_accept_mutex,
    ),
    simple(
        "accept_mutex_delay",
        Contexts::EVENTS,
        Arity::TAKE1,
        set_accept_mutex_delay,
    ),
    simple("use", Contexts::EVENTS, Arity::TAKE1, set_use),
    simple("load_module", Contexts::MAIN, Arity::TAKE1, set_load_module),
    simple(
        "timer_resolution",
        Contexts::MAIN,
        Arity::TAKE1,
        set_timer_resolution,
    ),
    simple("pcre_jit", Contexts::MAIN, Arity::FLAG, set_pcre_jit),
    simple("quic_bpf", Contexts::MAIN, Arity::FLAG, set_quic_bpf),
    simple("env", Contexts::MAIN, Arity::TAKE1, set_env),
];

/// `env NAME[=VALUE]`: nginx keeps (or sets) the variable for its workers and removes the
/// others. Portico's workers run nothing that reads the environment (no embedded
/// interpreter), so the line is checked and kept, and the environment is left as it is.
fn set_env(main: &mut MainLoad, directive: &Directive) -> Result<(), ConfError> {
    let text = directive.arg(0);
    let (name, value) = match text.split_once('=') {
        Some((name, value)) => (name, Some(value)),
        None => (text, None),
    };
    if name.is_empty() {
        return Err(ConfError::message(
            format!("invalid parameter \"{text}\""),
            &directive.span,
        ));
    }
    main.env.push((name.to_owned(), value.map(str::to_owned)));
    Ok(())
}

/// `load_module FILE`: Portico has no dynamic modules. A module Portico has built in is
/// accepted with a notice (distribution configs name them in `modules-enabled/`); any
/// other fails with a message naming it.
fn set_load_module(main: &mut MainLoad, directive: &Directive) -> Result<(), ConfError> {
    let file = directive.arg(0);
    let base = file.rsplit('/').next().unwrap_or(file);
    let family = base
        .strip_prefix("ngx_")
        .and_then(|name| name.strip_suffix("_module.so"))
        .unwrap_or(base);
    if http::assembly::modules::FAMILIES.contains(&family) || stream::FAMILIES.contains(&family) {
        main.notices.push(ConfError::message(
            format!("load_module \"{file}\": the \"{family}\" module is built into Portico"),
            &directive.span,
        ));
        return Ok(());
    }
    Err(ConfError::message(
        format!("load_module \"{file}\": Portico has no \"{family}\" module"),
        &directive.span,
    ))
}

fn duplicate(directive: &Directive) -> ConfError {
    ConfError::at(
        conf::ConfErrorKind::Duplicate {
            name: directive.name.clone(),
        },
        &directive.span,
    )
}

fn invalid_value(directive: &Directive) -> ConfError {
    ConfError::directive(&directive.name, "invalid value", &directive.span)
}

/// Fills an `Option` once, with nginx's duplicate error.
fn once<T>(slot: &mut Option<T>, directive: &Directive, value: T) -> Result<(), ConfError> {
    if slot.is_some() {
        return Err(duplicate(directive));
    }
    *slot = Some(value);
    Ok(())
}

fn set_worker_processes(main: &mut MainLoad, directive: &Directive) -> Result<(), ConfError> {
    let value = match directive.arg(0) {
        "auto" => WorkerCount::Auto,
        text => match conf::value::parse_number(text) {
            Some(count) if count > 0 => WorkerCount::Fixed(count as usize),
            _ => return Err(invalid_value(directive)),
        },
    };
    once(&mut main.worker_processes, directive, value)
}

/// `worker_cpu_affinity auto [MASK]` or one bit mask per worker (rightmost bit = CPU 0).
fn set_worker_cpu_affinity(main: &mut MainLoad, directive: &Directive) -> Result<(), ConfError> {
    let parse_mask = |text: &str| -> Result<Vec<usize>, ConfError> {
        if text.is_empty() || text.len() > 1024 || !text.bytes().all(|b| b == b'0' || b == b'1') {
            return Err(ConfError::message(
                format!("invalid character \"{text}\" in \"worker_cpu_affinity\""),
                &directive.span,
            ));
        }
        Ok(text
            .bytes()
            .rev()
            .enumerate()
            .filter(|(_, bit)| *bit == b'1')
            .map(|(cpu, _)| cpu)
            .collect())
    };
    let value = if directive.arg(0) == "auto" {
        let limit = match directive.args.get(1) {
            Some(mask) => Some(parse_mask(mask.as_str())?),
            None => None,
        };
        if directive.args.len() > 2 {
            return Err(ConfError::at(
                conf::ConfErrorKind::InvalidArgumentCount {
                    name: directive.name.clone(),
                },
                &directive.span,
            ));
        }
        CpuAffinity::Auto { limit }
    } else {
        let masks = directive
            .args
            .iter()
            .map(|argument| parse_mask(argument.as_str()))
            .collect::<Result<Vec<_>, _>>()?;
        CpuAffinity::Masks(masks)
    };
    once(&mut main.worker_cpu_affinity, directive, value)
}

fn set_worker_rlimit_nofile(main: &mut MainLoad, directive: &Directive) -> Result<(), ConfError> {
    let value = conf::value::parse_number(directive.arg(0))
        .ok_or_else(|| ConfError::directive(&directive.name, "invalid number", &directive.span))?;
    once(&mut main.worker_rlimit_nofile, directive, value)
}

/// `worker_priority N`: a nice value, `-N` or `+N` (nginx leaves the range to the kernel,
/// which clamps it to -20..19).
fn set_worker_priority(main: &mut MainLoad, directive: &Directive) -> Result<(), ConfError> {
    let text = directive.arg(0);
    let (negative, digits) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let value = conf::value::parse_number(digits)
        .and_then(|number| i32::try_from(number).ok())
        .ok_or_else(|| ConfError::directive(&directive.name, "invalid number", &directive.span))?;
    once(
        &mut main.worker_priority,
        directive,
        if negative { -value } else { value },
    )
}

fn set_worker_shutdown_timeout(
    main: &mut MainLoad,
    directive: &Directive,
) -> Result<(), ConfError> {
    let value: Duration =
        conf::value::parse_time(directive.arg(0)).ok_or_else(|| invalid_value(directive))?;
    once(&mut main.worker_shutdown_timeout, directive, value)
}

fn set_pid(main: &mut MainLoad, directive: &Directive) -> Result<(), ConfError> {
    let path = main.path(directive.arg(0));
    once(&mut main.pid, directive, path)
}

fn set_error_log(main: &mut MainLoad, directive: &Directive) -> Result<(), ConfError> {
    main.error_log_directives.push(directive.clone());
    Ok(())
}

fn set_daemon(main: &mut MainLoad, directive: &Directive) -> Result<(), ConfError> {
    let value = conf::value::parse_flag(directive)?;
    once(&mut main.daemon, directive, value)
}

fn set_master_process(main: &mut MainLoad, directive: &Directive) -> Result<(), ConfError> {
    let value = conf::value::parse_flag(directive)?;
    once(&mut main.master_process, directive, value)
}

/// `user USER [GROUP]`: looked up at load; without GROUP, nginx uses the user's name as
/// the group name.
fn set_user(main: &mut MainLoad, directive: &Directive) -> Result<(), ConfError> {
    let name = directive.arg(0);
    let group_name = directive
        .args
        .get(1)
        .map_or(name, |argument| argument.as_str());
    let account = runtime::sys::linux::user_by_name(name)
        .ok()
        .flatten()
        .ok_or_else(|| {
            ConfError::message(format!("getpwnam(\"{name}\") failed"), &directive.span)
        })?;
    let gid = runtime::sys::linux::group_by_name(group_name)
        .ok()
        .flatten()
        .ok_or_else(|| {
            ConfError::message(
                format!("getgrnam(\"{group_name}\") failed"),
                &directive.span,
            )
        })?;
    once(
        &mut main.user,
        directive,
        UserSetting {
            name: name.to_owned(),
            uid: account.uid,
            gid,
        },
    )
}

/// `thread_pool NAME threads=N [max_queue=M]`.
fn set_thread_pool(main: &mut MainLoad, directive: &Directive) -> Result<(), ConfError> {
    let span = &directive.span;
    let name = directive.arg(0);
    let mut threads = None;
    let mut max_queue = 65_536;
    for argument in &directive.args[1..] {
        let text = argument.as_str();
        if let Some(value) = text.strip_prefix("threads=") {
            let count = conf::value::parse_number(value).filter(|n| *n > 0);
            let count = count.ok_or_else(|| {
                ConfError::message(format!("invalid threads value \"{text}\""), span)
            })?;
            threads = Some(count as usize);
        } else if let Some(value) = text.strip_prefix("max_queue=") {
            let limit = conf::value::parse_number(value).ok_or_else(|| {
                ConfError::message(format!("invalid max_queue value \"{text}\""), span)
            })?;
            max_queue = limit as usize;
        }
        // nginx ignores any other parameter; so does Portico.
    }
    let Some(threads) = threads else {
        return Err(ConfError::message(
            format!("\"{}\" must have \"threads\" parameter", directive.name),
            span,
        ));
    };
    if main.thread_pools.iter().any(|pool| pool.name == name) {
        return Err(ConfError::message(
            format!("duplicate thread pool \"{name}\""),
            span,
        ));
    }
    main.thread_pools.push(PoolSettings {
        name: name.to_owned(),
        threads,
        max_queue,
    });
    Ok(())
}

fn set_worker_connections(main: &mut MainLoad, directive: &Directive) -> Result<(), ConfError> {
    let value = conf::value::parse_number(directive.arg(0))
        .filter(|count| *count > 0)
        .ok_or_else(|| {
            ConfError::message(
                format!("invalid number \"{}\"", directive.arg(0)),
                &directive.span,
            )
        })?;
    once(&mut main.worker_connections, directive, value as usize)
}

fn set_multi_accept(main: &mut MainLoad, directive: &Directive) -> Result<(), ConfError> {
    let value = conf::value::parse_flag(directive)?;
    once(&mut main.multi_accept, directive, value)
}

/// `debug_connection address | CIDR | unix:`: connections from there log at `debug` to
/// every error log. Host names are not looked up (nginx resolves them at load).
fn set_debug_connection(main: &mut MainLoad, directive: &Directive) -> Result<(), ConfError> {
    let value = directive.arg(0);
    match shared::access::parse_target(value) {
        Some(parsed) if parsed.target != shared::access::Target::All => {
            main.debug_connections.push(parsed.target);
            Ok(())
        }
        _ => Err(ConfError::message(
            format!("invalid address \"{value}\" in \"debug_connection\""),
            &directive.span,
        )),
    }
}

/// Accepted: Portico's workers share listening sockets without a mutex, as nginx does by
/// default (the kernel wakes one waiter per connection with EPOLLEXCLUSIVE-style accept).
fn set_accept_mutex(main: &mut MainLoad, directive: &Directive) -> Result<(), ConfError> {
    let value = conf::value::parse_flag(directive)?;
    once(&mut main.accept_mutex, directive, value)
}

fn set_accept_mutex_delay(main: &mut MainLoad, directive: &Directive) -> Result<(), ConfError> {
    let value =
        conf::value::parse_time(directive.arg(0)).ok_or_else(|| invalid_value(directive))?;
    once(&mut main.accept_mutex_delay, directive, value)
}

/// `timer_resolution TIME`: checked and kept; a worker reads the clock once per turn of a
/// connection's task whatever it says.
fn set_timer_resolution(main: &mut MainLoad, directive: &Directive) -> Result<(), ConfError> {
    let value =
        conf::value::parse_time(directive.arg(0)).ok_or_else(|| invalid_value(directive))?;
    once(&mut main.timer_resolution, directive, value)
}

/// `pcre_jit on|off`: checked and kept; Portico's regular expressions (PCRE2) are
/// always JIT-compiled.
fn set_pcre_jit(main: &mut MainLoad, directive: &Directive) -> Result<(), ConfError> {
    let value = conf::value::parse_flag(directive)?;
    once(&mut main.pcre_jit, directive, value)
}

/// `quic_bpf on|off`: checked and kept. nginx's eBPF program routes a QUIC connection's
/// datagrams to the worker that holds it after a reload or a migration; Portico's
/// `reuseport` sockets stay with the kernel's hashing by address (docs/http3.md).
fn set_quic_bpf(main: &mut MainLoad, directive: &Directive) -> Result<(), ConfError> {
    let value = conf::value::parse_flag(directive)?;
    once(&mut main.quic_bpf, directive, value)
}

/// `use epoll`: the only method on Linux; anything else is nginx's error.
fn set_use(main: &mut MainLoad, directive: &Directive) -> Result<(), ConfError> {
    match directive.arg(0) {
        "epoll" => once(&mut main.event_method, directive, "epoll"),
        other => Err(ConfError::message(
            format!("invalid event type \"{other}\""),
            &directive.span,
        )),
    }
}

/// A relative path in the main context hangs off the prefix.
pub fn resolve_path(prefix: &std::path::Path, text: &str) -> PathBuf {
    let path = std::path::Path::new(text);
    if path.is_absolute() {
        path.to_owned()
    } else {
        prefix.join(path)
    }
}
