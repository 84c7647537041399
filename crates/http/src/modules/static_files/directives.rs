//! The static-files module's directive table: nginx's index, try_files, autoindex and
//! static modules, the core module's `disable_symlinks` and `open_file_cache*`, and the
//! core module's file-output directives (`aio`, `sendfile`, `output_buffers`, `directio`,
//! ...), which only the static handler uses.

use std::sync::Arc;
use std::time::Duration;

use conf::{Arity, ConfError, Contexts, Directive};

use crate::kernel::conf::{HttpDirective, LoadContext, LocationScope, location_directive};
use crate::kernel::file::open::Symlinks;
use crate::kernel::file::pin::PinHotFiles;
use crate::modules::static_files::settings::{
    Aio, AutoindexFormat, DisableSymlinks, OpenFileCacheConf, OutputBuffers, PoolChoice, TryFiles,
};
use crate::set_once;

const ANY_LEVEL: Contexts = Contexts::HTTP_SERVER_LOCATION;

pub const DIRECTIVES: &[HttpDirective] = &[
    location_directive("index", ANY_LEVEL, Arity::ONE_OR_MORE, set_index),
    location_directive(
        "try_files",
        Contexts::SERVER.with(Contexts::LOCATION),
        Arity::TWO_OR_MORE,
        set_try_files,
    ),
    location_directive("autoindex", ANY_LEVEL, Arity::FLAG, set_autoindex),
    location_directive(
        "autoindex_format",
        ANY_LEVEL,
        Arity::TAKE1,
        set_autoindex_format,
    ),
    location_directive(
        "autoindex_exact_size",
        ANY_LEVEL,
        Arity::FLAG,
        set_autoindex_exact_size,
    ),
    location_directive(
        "autoindex_localtime",
        ANY_LEVEL,
        Arity::FLAG,
        set_autoindex_localtime,
    ),
    location_directive(
        "disable_symlinks",
        ANY_LEVEL,
        Arity::TAKE12,
        set_disable_symlinks,
    ),
    location_directive(
        "open_file_cache",
        ANY_LEVEL,
        Arity::TAKE12,
        set_open_file_cache,
    ),
    location_directive(
        "open_file_cache_valid",
        ANY_LEVEL,
        Arity::TAKE1,
        set_open_file_cache_valid,
    ),
    location_directive(
        "open_file_cache_min_uses",
        ANY_LEVEL,
        Arity::TAKE1,
        set_open_file_cache_min_uses,
    ),
    location_directive(
        "open_file_cache_errors",
        ANY_LEVEL,
        Arity::FLAG,
        set_open_file_cache_errors,
    ),
    location_directive("aio", ANY_LEVEL, Arity::TAKE1, set_aio),
    location_directive("aio_write", ANY_LEVEL, Arity::FLAG, set_aio_write),
    location_directive("aio_nowait", ANY_LEVEL, Arity::FLAG, set_aio_nowait),
    location_directive(
        "pin_hot_files",
        ANY_LEVEL,
        Arity::TAKE123,
        set_pin_hot_files,
    ),
    location_directive(
        "sendfile",
        ANY_LEVEL.with(Contexts::LOCATION_IF),
        Arity::FLAG,
        set_sendfile,
    ),
    location_directive(
        "sendfile_max_chunk",
        ANY_LEVEL,
        Arity::TAKE1,
        set_sendfile_max_chunk,
    ),
    location_directive("tcp_nopush", ANY_LEVEL, Arity::FLAG, set_tcp_nopush),
    location_directive(
        "output_buffers",
        ANY_LEVEL,
        Arity::TAKE2,
        set_output_buffers,
    ),
    location_directive("directio", ANY_LEVEL, Arity::TAKE1, set_directio),
    location_directive(
        "directio_alignment",
        ANY_LEVEL,
        Arity::TAKE1,
        set_directio_alignment,
    ),
    location_directive("read_ahead", ANY_LEVEL, Arity::TAKE1, set_read_ahead),
];

/// Several `index` directives at one level accumulate, as nginx's do.
fn set_index(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    for argument in &directive.args {
        if argument.as_str().is_empty() {
            return Err(ConfError::message(
                format!(
                    "index \"{}\" in \"index\" directive is invalid",
                    argument.as_str()
                ),
                &directive.span,
            ));
        }
        let template = context.template(argument.as_str(), &directive.span)?;
        scope
            .static_files
            .index
            .get_or_insert_with(Vec::new)
            .push(template);
    }
    Ok(())
}

fn set_try_files(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    if scope.try_files.is_some() {
        return Err(ConfError::directive(
            &directive.name,
            "is duplicate",
            &directive.span,
        ));
    }
    scope.try_files = Some(Arc::new(TryFiles::parse(directive, context)?));
    Ok(())
}

fn flag(directive: &Directive, context: &mut LoadContext<'_>) -> Result<bool, ConfError> {
    context.flag(directive)
}

set_once!(set_autoindex, LocationScope, static_files.autoindex, flag);
set_once!(
    set_autoindex_exact_size,
    LocationScope,
    static_files.autoindex_exact_size,
    flag
);
set_once!(
    set_autoindex_localtime,
    LocationScope,
    static_files.autoindex_localtime,
    flag
);
set_once!(
    set_autoindex_format,
    LocationScope,
    static_files.autoindex_format,
    autoindex_format
);
set_once!(
    set_disable_symlinks,
    LocationScope,
    static_files.disable_symlinks,
    disable_symlinks
);
set_once!(
    set_open_file_cache,
    LocationScope,
    static_files.open_file_cache,
    open_file_cache
);
set_once!(
    set_open_file_cache_valid,
    LocationScope,
    static_files.open_file_cache_valid,
    seconds
);
set_once!(
    set_open_file_cache_min_uses,
    LocationScope,
    static_files.open_file_cache_min_uses,
    number
);
set_once!(
    set_open_file_cache_errors,
    LocationScope,
    static_files.open_file_cache_errors,
    flag
);

fn autoindex_format(
    directive: &Directive,
    _context: &mut LoadContext<'_>,
) -> Result<AutoindexFormat, ConfError> {
    match directive.arg(0).to_ascii_lowercase().as_str() {
        "html" => Ok(AutoindexFormat::Html),
        "xml" => Ok(AutoindexFormat::Xml),
        "json" => Ok(AutoindexFormat::Json),
        "jsonp" => Ok(AutoindexFormat::Jsonp),
        _ => Err(ConfError::message(
            format!("invalid value \"{}\"", directive.arg(0)),
            &directive.span,
        )),
    }
}

fn seconds(directive: &Directive, _context: &mut LoadContext<'_>) -> Result<Duration, ConfError> {
    conf::value::parse_time_seconds(directive.arg(0))
        .ok_or_else(|| ConfError::directive(&directive.name, "invalid value", &directive.span))
}

fn number(directive: &Directive, _context: &mut LoadContext<'_>) -> Result<u64, ConfError> {
    conf::value::parse_number(directive.arg(0))
        .ok_or_else(|| ConfError::directive(&directive.name, "invalid number", &directive.span))
}

/// `disable_symlinks off | on | if_not_owner [from=part]`, with nginx's checks.
fn disable_symlinks(
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<DisableSymlinks, ConfError> {
    let mut mode = None;
    let mut from = None;
    for argument in &directive.args {
        let text = argument.as_str();
        match text {
            "off" => mode = Some(Symlinks::Off),
            "on" => mode = Some(Symlinks::On),
            "if_not_owner" => mode = Some(Symlinks::IfNotOwner),
            _ if text.starts_with("from=") => {
                from = Some(context.template(&text[5..], &directive.span)?);
            }
            _ => {
                return Err(ConfError::message(
                    format!("invalid parameter \"{text}\""),
                    &directive.span,
                ));
            }
        }
    }
    let Some(mode) = mode else {
        return Err(ConfError::message(
            "\"disable_symlinks\" must have \"off\", \"on\" or \"if_not_owner\" parameter",
            &directive.span,
        ));
    };
    if directive.args.len() == 2 && from.is_none() {
        return Err(ConfError::message(
            format!(
                "duplicate parameters \"{} {}\"",
                directive.arg(0),
                directive.arg(1)
            ),
            &directive.span,
        ));
    }
    if from.is_some() && mode == Symlinks::Off {
        return Err(ConfError::message(
            "\"from=\" cannot be used with \"off\" parameter",
            &directive.span,
        ));
    }
    Ok(DisableSymlinks { mode, from })
}

/// `open_file_cache off | max=N [inactive=time]`.
fn open_file_cache(
    directive: &Directive,
    _context: &mut LoadContext<'_>,
) -> Result<Option<Arc<OpenFileCacheConf>>, ConfError> {
    let mut max = 0;
    let mut inactive = Duration::from_secs(60);
    let mut off = false;
    for argument in &directive.args {
        let text = argument.as_str();
        let parsed = if let Some(value) = text.strip_prefix("max=") {
            conf::value::parse_number(value)
                .filter(|&max| max > 0)
                .map(|value| max = value as usize)
        } else if let Some(value) = text.strip_prefix("inactive=") {
            conf::value::parse_time_seconds(value).map(|value| inactive = value)
        } else if text == "off" {
            off = true;
            Some(())
        } else {
            None
        };
        if parsed.is_none() {
            return Err(ConfError::message(
                format!("invalid \"open_file_cache\" parameter \"{text}\""),
                &directive.span,
            ));
        }
    }
    if off {
        return Ok(None);
    }
    if max == 0 {
        return Err(ConfError::message(
            "\"open_file_cache\" must have the \"max\" parameter",
            &directive.span,
        ));
    }
    Ok(Some(Arc::new(OpenFileCacheConf { max, inactive })))
}

/// `aio off | on | threads[=POOL]`. A pool name without variables is recorded so that the
/// server can check it against `thread_pool` (nginx's `unknown thread pool` error).
fn set_aio(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    if scope.static_files.aio.is_some() {
        return Err(context.duplicate(directive));
    }
    let value = directive.arg(0);
    let aio = match value {
        "off" => Aio::Off,
        // No kernel AIO backend: `aio on` offloads to the default pool.
        "on" => named_pool("default", directive, context),
        "threads" => named_pool("default", directive, context),
        _ => match value.strip_prefix("threads=") {
            Some(name) => {
                let template = context.template(name, &directive.span)?;
                if template.as_literal().is_some() {
                    named_pool(name, directive, context)
                } else {
                    Aio::Threads(PoolChoice::Template(template))
                }
            }
            None => return Err(invalid_value(directive)),
        },
    };
    scope.static_files.aio = Some(aio);
    Ok(())
}

fn named_pool(name: &str, directive: &Directive, context: &mut LoadContext<'_>) -> Aio {
    context
        .thread_pools_used
        .push((name.to_owned(), directive.span.clone()));
    Aio::Threads(PoolChoice::Named(name.to_owned()))
}

set_once!(set_aio_write, LocationScope, static_files.aio_write, flag);
set_once!(set_aio_nowait, LocationScope, static_files.aio_nowait, flag);
set_once!(set_sendfile, LocationScope, static_files.sendfile, flag);
set_once!(
    set_sendfile_max_chunk,
    LocationScope,
    static_files.sendfile_max_chunk,
    size
);
set_once!(set_tcp_nopush, LocationScope, static_files.tcp_nopush, flag);
set_once!(
    set_output_buffers,
    LocationScope,
    static_files.output_buffers,
    output_buffers
);
set_once!(set_directio, LocationScope, static_files.directio, directio);
set_once!(
    set_directio_alignment,
    LocationScope,
    static_files.directio_alignment,
    offset
);
set_once!(set_read_ahead, LocationScope, static_files.read_ahead, size);
set_once!(
    set_pin_hot_files,
    LocationScope,
    static_files.pin_hot_files,
    pin_hot_files
);

/// `pin_hot_files off | SIZE [uses=N] [inactive=TIME]`.
fn pin_hot_files(
    directive: &Directive,
    _context: &mut LoadContext<'_>,
) -> Result<Option<PinHotFiles>, ConfError> {
    let first = directive.arg(0);
    if first == "off" {
        if directive.args.len() > 1 {
            return Err(invalid_value(directive));
        }
        return Ok(None);
    }
    let budget = conf::value::parse_size(first)
        .filter(|size| *size > 0)
        .ok_or_else(|| invalid_value(directive))?;
    let mut pin = PinHotFiles {
        budget,
        uses: PinHotFiles::DEFAULT_USES,
        inactive: PinHotFiles::DEFAULT_INACTIVE,
    };
    for argument in directive.args.iter().skip(1) {
        let text = argument.as_str();
        let invalid = || {
            ConfError::message(
                format!("invalid \"pin_hot_files\" parameter \"{text}\""),
                &directive.span,
            )
        };
        if let Some(value) = text.strip_prefix("uses=") {
            pin.uses = conf::value::parse_number(value)
                .and_then(|uses| u32::try_from(uses).ok())
                .filter(|uses| *uses > 0)
                .ok_or_else(invalid)?;
        } else if let Some(value) = text.strip_prefix("inactive=") {
            pin.inactive = conf::value::parse_time(value).ok_or_else(invalid)?;
        } else {
            return Err(invalid());
        }
    }
    Ok(Some(pin))
}

fn size(directive: &Directive, _context: &mut LoadContext<'_>) -> Result<u64, ConfError> {
    conf::value::parse_size(directive.arg(0)).ok_or_else(|| invalid_value(directive))
}

fn offset(directive: &Directive, _context: &mut LoadContext<'_>) -> Result<u64, ConfError> {
    conf::value::parse_offset(directive.arg(0)).ok_or_else(|| invalid_value(directive))
}

/// `output_buffers NUMBER SIZE`: both must be positive, as nginx's bufs slot checks.
fn output_buffers(
    directive: &Directive,
    _context: &mut LoadContext<'_>,
) -> Result<OutputBuffers, ConfError> {
    let number = conf::value::parse_number(directive.arg(0)).filter(|number| *number > 0);
    let size = conf::value::parse_size(directive.arg(1)).filter(|size| *size > 0);
    match (number, size) {
        (Some(number), Some(size)) => Ok(OutputBuffers { number, size }),
        _ => Err(invalid_value(directive)),
    }
}

/// `directio SIZE | off`.
fn directio(
    directive: &Directive,
    _context: &mut LoadContext<'_>,
) -> Result<Option<u64>, ConfError> {
    if directive.arg(0) == "off" {
        return Ok(None);
    }
    conf::value::parse_offset(directive.arg(0))
        .map(Some)
        .ok_or_else(|| invalid_value(directive))
}

/// nginx's `"NAME" directive invalid value`.
fn invalid_value(directive: &Directive) -> ConfError {
    ConfError::directive(&directive.name, "invalid value", &directive.span)
}
