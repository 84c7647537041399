//! The logging directives.

use std::sync::Arc;

use conf::{Arity, BlockKind, ConfError, Contexts, Directive, Span};
use logging::{ErrorLog, ErrorSink, Level, LogFile};

use crate::kernel::conf::{HttpDirective, LoadContext, LocationScope, MainScope, Setter};
use crate::modules::log::{
    AccessLogTarget, Buffering, Escape, LogFormat, LogPath, OpenLogFileCache,
};
use std::time::Duration;

pub const DIRECTIVES: &[HttpDirective] = &[
    HttpDirective {
        name: "log_format",
        contexts: Contexts::HTTP,
        arity: Arity::TWO_OR_MORE,
        block: BlockKind::Simple,
        set: Setter::Main(set_log_format),
    },
    HttpDirective {
        name: "access_log",
        contexts: Contexts::HTTP_SERVER_LOCATION
            .with(Contexts::LOCATION_IF)
            .with(Contexts::LIMIT_EXCEPT),
        arity: Arity::ONE_OR_MORE,
        block: BlockKind::Simple,
        set: Setter::Location(set_access_log),
    },
    HttpDirective {
        name: "error_log",
        contexts: Contexts::HTTP_SERVER_LOCATION,
        arity: Arity::ONE_OR_MORE,
        block: BlockKind::Simple,
        set: Setter::Location(set_error_log),
    },
    HttpDirective {
        name: "open_log_file_cache",
        contexts: Contexts::HTTP_SERVER_LOCATION,
        arity: Arity::TAKE1234,
        block: BlockKind::Simple,
        set: Setter::Location(set_open_log_file_cache),
    },
];

/// `open_log_file_cache off | max=N [inactive=time] [min_uses=N] [valid=time]`, with
/// nginx's defaults (10 s, 1, 60 s) and errors.
fn set_open_log_file_cache(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    let span = &directive.span;
    if scope.access_log.open_log_file_cache.is_some() {
        return Err(context.duplicate(directive));
    }
    if directive.arg(0) == "off" && directive.args.len() == 1 {
        scope.access_log.open_log_file_cache = Some(None);
        return Ok(());
    }
    let mut cache = OpenLogFileCache {
        max: 0,
        inactive: Duration::from_secs(10),
        min_uses: 1,
        valid: Duration::from_secs(60),
    };
    for argument in &directive.args {
        let text = argument.as_str();
        let (name, value) = text.split_once('=').unwrap_or((text, ""));
        let parsed = match name {
            "max" => conf::value::parse_number(value)
                .filter(|n| *n > 0)
                .map(|n| cache.max = n as usize),
            "min_uses" => conf::value::parse_number(value)
                .and_then(|n| u32::try_from(n).ok())
                .map(|n| cache.min_uses = n),
            "inactive" => conf::value::parse_time_seconds(value).map(|time| cache.inactive = time),
            "valid" => conf::value::parse_time_seconds(value).map(|time| cache.valid = time),
            _ => {
                return Err(ConfError::message(
                    format!("invalid \"open_log_file_cache\" parameter \"{text}\""),
                    span,
                ));
            }
        };
        if parsed.is_none() {
            return Err(ConfError::message(
                format!("invalid {name} value \"{value}\""),
                span,
            ));
        }
    }
    if cache.max == 0 {
        return Err(ConfError::message(
            "\"open_log_file_cache\" must have \"max\" parameter",
            span,
        ));
    }
    scope.access_log.open_log_file_cache = Some(Some(Arc::new(cache)));
    Ok(())
}

fn set_log_format(
    _scope: &mut MainScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    let name = directive.arg(0);
    if name == "combined" || context.log_formats.contains_key(name) {
        return Err(ConfError::message(
            format!("duplicate \"log_format\" name \"{name}\""),
            &directive.span,
        ));
    }
    let mut strings = &directive.args[1..];
    let mut escape = Escape::Default;
    if let Some(first) = strings.first()
        && let Some(value) = first.as_str().strip_prefix("escape=")
    {
        escape = match value {
            "default" => Escape::Default,
            "json" => Escape::Json,
            "none" => Escape::None,
            _ => {
                return Err(ConfError::message(
                    format!("unknown log format escaping \"{value}\""),
                    &directive.span,
                ));
            }
        };
        strings = &strings[1..];
    }
    if strings.is_empty() {
        return Err(ConfError::at(
            conf::ConfErrorKind::InvalidArgumentCount {
                name: directive.name.clone(),
            },
            &directive.span,
        ));
    }
    let text: String = strings.iter().map(|argument| argument.as_str()).collect();
    let template = context.template(&text, &directive.span)?;
    context.log_formats.insert(
        name.to_owned(),
        Arc::new(LogFormat {
            name: name.to_owned(),
            escape,
            template,
        }),
    );
    Ok(())
}

fn set_access_log(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    let span = &directive.span;
    let targets = scope.access_log.access_log.get_or_insert_with(Vec::new);
    if directive.arg(0) == "off" {
        if directive.args.len() > 1 {
            return Err(ConfError::at(
                conf::ConfErrorKind::InvalidArgumentCount {
                    name: directive.name.clone(),
                },
                span,
            ));
        }
        targets.clear();
        scope.access_log.access_log_off = Some(true);
        return Ok(());
    }
    scope.access_log.access_log_off.get_or_insert(false);
    let path_text = directive.arg(0);
    let format_name = directive
        .args
        .get(1)
        .map_or("combined", |argument| argument.as_str());
    let format = context
        .log_format(format_name)
        .ok_or_else(|| ConfError::message(format!("unknown log format \"{format_name}\""), span))?;
    let mut buffer_size = None;
    let mut flush = None;
    let mut gzip = None;
    let mut condition = None;
    for argument in directive.args.iter().skip(2) {
        let text = argument.as_str();
        if let Some(value) = text.strip_prefix("buffer=") {
            let size = conf::value::parse_size(value).filter(|size| *size > 0);
            let size = size.ok_or_else(|| {
                ConfError::message(format!("invalid buffer size \"{value}\""), span)
            })?;
            buffer_size = Some(size as usize);
        } else if let Some(value) = text.strip_prefix("flush=") {
            let time = conf::value::parse_time(value).filter(|time| !time.is_zero());
            flush = Some(time.ok_or_else(|| {
                ConfError::message(format!("invalid flush time \"{value}\""), span)
            })?);
        } else if let Some(value) = text.strip_prefix("if=") {
            condition = Some(context.template(value, span)?);
        } else if text == "gzip" {
            gzip = Some(1);
        } else if let Some(value) = text.strip_prefix("gzip=") {
            let level = conf::value::parse_number(value).filter(|level| (1..=9).contains(level));
            gzip = Some(level.ok_or_else(|| {
                ConfError::message(format!("invalid compression level \"{value}\""), span)
            })? as u32);
        } else {
            return Err(ConfError::message(
                format!("invalid parameter \"{text}\""),
                span,
            ));
        }
    }
    if (flush.is_some() || gzip.is_some()) && buffer_size.is_none() {
        buffer_size = Some(64 * 1024);
    }
    let buffering = buffer_size.map(|size| Buffering {
        size,
        flush,
        slot: context.next_access_log_slot(),
        gzip,
    });
    let path = if path_text.starts_with("syslog:") {
        // A syslog message is sent as its line is logged.
        if buffering.is_some() {
            return Err(ConfError::message(
                "logs to syslog cannot be buffered",
                span,
            ));
        }
        LogPath::File(open_syslog(path_text, span)?)
    } else if path_text.contains('$') {
        if buffering.is_some() {
            return Err(ConfError::message(
                "buffered logs cannot have variables in name",
                span,
            ));
        }
        let full = context.path(path_text);
        let template = context.template(&full.to_string_lossy(), span)?;
        LogPath::Template(template)
    } else {
        LogPath::File(context.open_log(path_text, span)?)
    };
    let targets = scope.access_log.access_log.get_or_insert_with(Vec::new);
    targets.push(AccessLogTarget {
        path,
        format,
        buffering,
        condition,
    });
    Ok(())
}

/// Several `error_log` at one level all apply; a level with its own replaces the
/// enclosing level's logs.
fn set_error_log(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    let sink = parse_error_log(directive, context)?;
    let mut sinks = scope
        .core
        .error_log
        .as_ref()
        .map(|log| log.sinks().to_vec())
        .unwrap_or_default();
    sinks.push(sink);
    scope.core.error_log = Some(Arc::new(ErrorLog::new(sinks)));
    Ok(())
}

/// Parses `error_log FILE [LEVEL]` (shared with the main context's directive).
pub(crate) fn parse_error_log(
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<ErrorSink, ConfError> {
    let span = &directive.span;
    if directive.args.len() > 2 {
        return Err(ConfError::at(
            conf::ConfErrorKind::InvalidArgumentCount {
                name: directive.name.clone(),
            },
            span,
        ));
    }
    let level = match directive.args.get(1) {
        Some(argument) => parse_level(argument.as_str(), span)?,
        None => Level::Error,
    };
    let file = match directive.arg(0) {
        "stderr" => context.open_stderr(span)?,
        target if target.starts_with("syslog:") => open_syslog(target, span)?,
        target if target.starts_with("memory:") => {
            return Err(ConfError::message(
                format!("error_log target \"{target}\" is not supported"),
                span,
            ));
        }
        path => context.open_log(path, span)?,
    };
    Ok(ErrorSink { file, level })
}

/// The log file of a `syslog:` target (`error_log` or `access_log`).
fn open_syslog(target: &str, span: &Span) -> Result<Arc<LogFile>, ConfError> {
    match logging::syslog_target(target) {
        Some(Ok(file)) => Ok(Arc::new(file)),
        Some(Err(error)) => Err(ConfError::message(error.to_string(), span)),
        None => Err(ConfError::message(
            format!("invalid syslog target \"{target}\""),
            span,
        )),
    }
}

fn parse_level(text: &str, span: &Span) -> Result<Level, ConfError> {
    Level::parse(text)
        .ok_or_else(|| ConfError::message(format!("invalid log level \"{text}\""), span))
}
