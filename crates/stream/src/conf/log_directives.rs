//! The setters of `log_format` and `access_log` in the stream block (their table entries
//! are in `directives.rs`).

use std::sync::Arc;

use conf::{ConfError, ConfErrorKind, Directive};

use super::settings::{AccessLog, Settings};
use super::{AccessLogTarget, Escape, Loader, LogFormat, LogPath};

type Result = std::result::Result<(), ConfError>;

/// `log_format NAME [escape=default|json|none] STRING...`.
pub fn set_log_format(loader: &mut Loader<'_>, directive: &Directive) -> Result {
    let name = directive.arg(0).to_owned();
    if loader.log_formats.iter().any(|format| format.name == name) {
        return Err(ConfError::message(
            format!("duplicate \"log_format\" name \"{name}\""),
            &directive.span,
        ));
    }
    let mut parts = &directive.args[1..];
    let mut escape = Escape::Default;
    if let Some(first) = parts.first()
        && let Some(value) = first.value.strip_prefix("escape=")
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
        parts = &parts[1..];
    }
    if parts.is_empty() {
        return Err(ConfError::at(
            ConfErrorKind::InvalidArgumentCount {
                name: directive.name.clone(),
            },
            &directive.span,
        ));
    }
    let text: String = parts.iter().map(|part| part.value.as_str()).collect();
    let template = loader.template(&text, &directive.span)?;
    loader.log_formats.push(LogFormat {
        name,
        escape,
        template,
    });
    Ok(())
}

/// `access_log PATH FORMAT [buffer=SIZE] [gzip[=LEVEL]] [flush=TIME] [if=CONDITION]` or
/// `access_log off`.
pub fn set_access_log(
    settings: &mut Settings,
    directive: &Directive,
    loader: &mut Loader<'_>,
) -> Result {
    let logs = settings.access_log.get_or_insert_with(Vec::new);
    if directive.arg(0) == "off" {
        if directive.args.len() > 1 {
            return Err(ConfError::at(
                ConfErrorKind::InvalidArgumentCount {
                    name: directive.name.clone(),
                },
                &directive.span,
            ));
        }
        logs.clear();
        return Ok(());
    }
    if directive.args.len() < 2 {
        return Err(ConfError::at(
            ConfErrorKind::InvalidArgumentCount {
                name: directive.name.clone(),
            },
            &directive.span,
        ));
    }
    let format_name = directive.arg(1);
    let format = loader
        .log_formats
        .iter()
        .position(|format| format.name == format_name)
        .ok_or_else(|| {
            ConfError::message(
                format!("unknown log format \"{format_name}\""),
                &directive.span,
            )
        })?;
    let mut buffer = 0;
    let mut flush = None;
    let mut gzip = None;
    let mut condition = None;
    for argument in &directive.args[2..] {
        let text = argument.as_str();
        let invalid =
            || ConfError::message(format!("invalid parameter \"{text}\""), &directive.span);
        if let Some(value) = text.strip_prefix("buffer=") {
            buffer = conf::value::parse_size(value)
                .and_then(|size| usize::try_from(size).ok())
                .ok_or_else(|| {
                    ConfError::message(format!("invalid buffer size \"{value}\""), &directive.span)
                })?;
        } else if let Some(value) = text.strip_prefix("flush=") {
            flush = Some(conf::value::parse_time(value).ok_or_else(|| {
                ConfError::message(format!("invalid flush time \"{value}\""), &directive.span)
            })?);
        } else if text == "gzip" {
            gzip = Some(1);
        } else if let Some(value) = text.strip_prefix("gzip=") {
            gzip = Some(
                value
                    .parse::<u32>()
                    .ok()
                    .filter(|level| (1..=9).contains(level))
                    .ok_or_else(|| {
                        ConfError::message(
                            format!("invalid compression level \"{value}\""),
                            &directive.span,
                        )
                    })?,
            );
        } else if let Some(value) = text.strip_prefix("if=") {
            condition = Some(loader.template(value, &directive.span)?);
        } else {
            return Err(invalid());
        }
    }
    if (flush.is_some() || gzip.is_some()) && buffer == 0 {
        buffer = 64 * 1024;
    }
    if flush.is_some() && buffer == 0 {
        return Err(ConfError::message(
            "no buffer is defined for access_log \"\"",
            &directive.span,
        ));
    }
    let path = if let Some(syslog) = logging::syslog_target(directive.arg(0)) {
        if buffer > 0 {
            return Err(ConfError::message(
                "logs to syslog cannot be buffered",
                &directive.span,
            ));
        }
        LogPath::File(Arc::new(syslog.map_err(|error| {
            ConfError::message(error.to_string(), &directive.span)
        })?))
    } else if directive.arg(0).contains('$') {
        let template = loader.template(directive.arg(0), &directive.span)?;
        LogPath::Template(template)
    } else {
        LogPath::File(loader.open_log(directive.arg(0), &directive.span)?)
    };
    let same = |target: &AccessLogTarget| match (&target.path, &path) {
        (LogPath::File(known), LogPath::File(file)) => {
            Arc::ptr_eq(known, file)
                && target.buffer == buffer
                && target.flush == flush
                && target.gzip == gzip
        }
        _ => false,
    };
    let target = match loader.access_logs.iter().position(same) {
        Some(index) => index,
        None => {
            loader.access_logs.push(AccessLogTarget {
                path,
                buffer,
                flush,
                gzip,
            });
            loader.access_logs.len() - 1
        }
    };
    logs.push(AccessLog {
        target,
        format,
        condition,
    });
    Ok(())
}
