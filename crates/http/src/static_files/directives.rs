//! The static-files module's directive table: `index`, and the core module's file-output
//! directives (`aio`, `sendfile`, `output_buffers`, `directio`, ...), which only the static
//! handler uses.

use conf::{Arity, BlockKind, ConfError, Contexts, Directive};

use crate::conf::{HttpDirective, LoadContext, LocationScope, Setter};
use crate::static_files::{Aio, OutputBuffers, PoolChoice};

const ANY_LEVEL: Contexts = Contexts::HTTP_SERVER_LOCATION;

const fn entry(
    name: &'static str,
    contexts: Contexts,
    arity: Arity,
    set: fn(&mut LocationScope, &Directive, &mut LoadContext<'_>) -> Result<(), ConfError>,
) -> HttpDirective {
    HttpDirective {
        name,
        contexts,
        arity,
        block: BlockKind::Simple,
        set: Setter::Location(set),
    }
}

pub const DIRECTIVES: &[HttpDirective] = &[
    entry("index", ANY_LEVEL, Arity::ONE_OR_MORE, set_index),
    entry("aio", ANY_LEVEL, Arity::TAKE1, set_aio),
    entry("aio_write", ANY_LEVEL, Arity::FLAG, set_aio_write),
    entry("aio_nowait", ANY_LEVEL, Arity::FLAG, set_aio_nowait),
    entry(
        "sendfile",
        ANY_LEVEL.with(Contexts::LOCATION_IF),
        Arity::FLAG,
        set_sendfile,
    ),
    entry(
        "sendfile_max_chunk",
        ANY_LEVEL,
        Arity::TAKE1,
        set_sendfile_max_chunk,
    ),
    entry("tcp_nopush", ANY_LEVEL, Arity::FLAG, set_tcp_nopush),
    entry(
        "output_buffers",
        ANY_LEVEL,
        Arity::TAKE2,
        set_output_buffers,
    ),
    entry("directio", ANY_LEVEL, Arity::TAKE1, set_directio),
    entry(
        "directio_alignment",
        ANY_LEVEL,
        Arity::TAKE1,
        set_directio_alignment,
    ),
    entry("read_ahead", ANY_LEVEL, Arity::TAKE1, set_read_ahead),
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

/// Generates a setter that fills one `static_files` field once.
macro_rules! setter {
    ($name:ident, $field:ident, $parse:expr) => {
        fn $name(
            scope: &mut LocationScope,
            directive: &Directive,
            context: &mut LoadContext<'_>,
        ) -> Result<(), ConfError> {
            if scope.static_files.$field.is_some() {
                return Err(context.duplicate(directive));
            }
            scope.static_files.$field = Some($parse(directive, context)?);
            Ok(())
        }
    };
}

setter!(set_aio_write, aio_write, flag);
setter!(set_aio_nowait, aio_nowait, flag);
setter!(set_sendfile, sendfile, flag);
setter!(set_sendfile_max_chunk, sendfile_max_chunk, size);
setter!(set_tcp_nopush, tcp_nopush, flag);
setter!(set_output_buffers, output_buffers, output_buffers);
setter!(set_directio, directio, directio);
setter!(set_directio_alignment, directio_alignment, offset);
setter!(set_read_ahead, read_ahead, size);

fn flag(directive: &Directive, context: &mut LoadContext<'_>) -> Result<bool, ConfError> {
    context.flag(directive)
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
