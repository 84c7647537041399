//! The cache directives of the proxy module, with nginx's errors
//! (`ngx_http_file_cache_set_slot`, `ngx_http_file_cache_valid_set_slot`, the proxy
//! module's `proxy_cache`, `proxy_cache_key` and `proxy_store` setters).

use std::time::Duration;

use conf::{Arity, BlockKind, ConfError, Contexts, Directive};

use crate::kernel::conf::{
    HttpDirective, LoadContext, LocationScope, MainScope, Setter, gateway_directive,
    location_directive,
};
use crate::kernel::core::directives::{flag, size, time};
use crate::modules::proxy::cache::settings::{
    CacheMethods, CachePath, CacheUse, Store, UseStale, ValidRule,
};
use crate::modules::proxy::gateway::settings::Protocol;
use crate::set_once;

const ANY_LEVEL: Contexts = Contexts::HTTP_SERVER_LOCATION;

pub const DIRECTIVES: &[HttpDirective] = &[
    HttpDirective {
        name: "proxy_cache_path",
        contexts: Contexts::HTTP,
        arity: Arity::TWO_OR_MORE,
        block: BlockKind::Simple,
        set: Setter::Main(set_cache_path),
    },
    location_directive("proxy_cache", ANY_LEVEL, Arity::TAKE1, set_cache),
    location_directive("proxy_cache_key", ANY_LEVEL, Arity::TAKE1, set_key),
    location_directive(
        "proxy_cache_valid",
        ANY_LEVEL,
        Arity::ONE_OR_MORE,
        set_valid,
    ),
    location_directive(
        "proxy_cache_min_uses",
        ANY_LEVEL,
        Arity::TAKE1,
        set_min_uses,
    ),
    location_directive(
        "proxy_cache_use_stale",
        ANY_LEVEL,
        Arity::ONE_OR_MORE,
        set_use_stale,
    ),
    location_directive(
        "proxy_cache_background_update",
        ANY_LEVEL,
        Arity::FLAG,
        set_background_update,
    ),
    location_directive("proxy_cache_lock", ANY_LEVEL, Arity::FLAG, set_lock),
    location_directive(
        "proxy_cache_lock_timeout",
        ANY_LEVEL,
        Arity::TAKE1,
        set_lock_timeout,
    ),
    location_directive(
        "proxy_cache_lock_age",
        ANY_LEVEL,
        Arity::TAKE1,
        set_lock_age,
    ),
    location_directive(
        "proxy_cache_lock_stream",
        ANY_LEVEL,
        Arity::FLAG,
        set_lock_stream,
    ),
    location_directive(
        "proxy_cache_revalidate",
        ANY_LEVEL,
        Arity::FLAG,
        set_revalidate,
    ),
    location_directive(
        "proxy_cache_bypass",
        ANY_LEVEL,
        Arity::ONE_OR_MORE,
        set_bypass,
    ),
    location_directive(
        "proxy_no_cache",
        ANY_LEVEL,
        Arity::ONE_OR_MORE,
        set_no_cache,
    ),
    location_directive(
        "proxy_cache_methods",
        ANY_LEVEL,
        Arity::ONE_OR_MORE,
        set_methods,
    ),
    location_directive(
        "proxy_cache_convert_head",
        ANY_LEVEL,
        Arity::FLAG,
        set_convert_head,
    ),
    location_directive(
        "proxy_cache_max_range_offset",
        ANY_LEVEL,
        Arity::TAKE1,
        set_max_range_offset,
    ),
    location_directive(
        "proxy_force_ranges",
        ANY_LEVEL,
        Arity::FLAG,
        set_force_ranges,
    ),
    location_directive("proxy_store", ANY_LEVEL, Arity::TAKE1, set_store),
    location_directive(
        "proxy_store_access",
        ANY_LEVEL,
        Arity::TAKE123,
        set_store_access,
    ),
    location_directive(
        "proxy_cache_purge",
        ANY_LEVEL,
        Arity::ONE_OR_MORE,
        set_purge,
    ),
    // nginx's postpone filter holds small outputs back; Portico writes as soon as a write
    // is due, so the size is checked and has no other effect.
    location_directive("slice", ANY_LEVEL, Arity::TAKE1, set_slice),
    location_directive("postpone_output", ANY_LEVEL, Arity::TAKE1, accept_size),
];

/// The cache directives the gateway modules have too, under their own prefix
/// (`fastcgi_cache_valid`); `fastcgi_cache_path` declares zones any module may use.
macro_rules! gateway_directives {
    ($prefix:literal, $protocol:expr) => {
        &[
            HttpDirective {
                name: concat!($prefix, "_cache_path"),
                contexts: Contexts::HTTP,
                arity: Arity::TWO_OR_MORE,
                block: BlockKind::Simple,
                set: Setter::Main(set_cache_path),
            },
            gateway_directive(
                concat!($prefix, "_cache"),
                $protocol,
                Arity::TAKE1,
                set_cache,
            ),
            gateway_directive(
                concat!($prefix, "_cache_key"),
                $protocol,
                Arity::TAKE1,
                set_key,
            ),
            gateway_directive(
                concat!($prefix, "_cache_valid"),
                $protocol,
                Arity::ONE_OR_MORE,
                set_valid,
            ),
            gateway_directive(
                concat!($prefix, "_cache_min_uses"),
                $protocol,
                Arity::TAKE1,
                set_min_uses,
            ),
            gateway_directive(
                concat!($prefix, "_cache_use_stale"),
                $protocol,
                Arity::ONE_OR_MORE,
                set_use_stale,
            ),
            gateway_directive(
                concat!($prefix, "_cache_background_update"),
                $protocol,
                Arity::FLAG,
                set_background_update,
            ),
            gateway_directive(
                concat!($prefix, "_cache_lock"),
                $protocol,
                Arity::FLAG,
                set_lock,
            ),
            gateway_directive(
                concat!($prefix, "_cache_lock_timeout"),
                $protocol,
                Arity::TAKE1,
                set_lock_timeout,
            ),
            gateway_directive(
                concat!($prefix, "_cache_lock_age"),
                $protocol,
                Arity::TAKE1,
                set_lock_age,
            ),
            gateway_directive(
                concat!($prefix, "_cache_lock_stream"),
                $protocol,
                Arity::FLAG,
                set_lock_stream,
            ),
            gateway_directive(
                concat!($prefix, "_cache_revalidate"),
                $protocol,
                Arity::FLAG,
                set_revalidate,
            ),
            gateway_directive(
                concat!($prefix, "_cache_bypass"),
                $protocol,
                Arity::ONE_OR_MORE,
                set_bypass,
            ),
            gateway_directive(
                concat!($prefix, "_no_cache"),
                $protocol,
                Arity::ONE_OR_MORE,
                set_no_cache,
            ),
            gateway_directive(
                concat!($prefix, "_cache_methods"),
                $protocol,
                Arity::ONE_OR_MORE,
                set_methods,
            ),
            gateway_directive(
                concat!($prefix, "_cache_max_range_offset"),
                $protocol,
                Arity::TAKE1,
                set_max_range_offset,
            ),
            gateway_directive(
                concat!($prefix, "_force_ranges"),
                $protocol,
                Arity::FLAG,
                set_force_ranges,
            ),
            gateway_directive(
                concat!($prefix, "_store"),
                $protocol,
                Arity::TAKE1,
                set_store,
            ),
            gateway_directive(
                concat!($prefix, "_store_access"),
                $protocol,
                Arity::TAKE123,
                set_store_access,
            ),
            gateway_directive(
                concat!($prefix, "_cache_purge"),
                $protocol,
                Arity::ONE_OR_MORE,
                set_purge,
            ),
        ]
    };
}

pub const FASTCGI_DIRECTIVES: &[HttpDirective] = gateway_directives!("fastcgi", Protocol::Fastcgi);
pub const UWSGI_DIRECTIVES: &[HttpDirective] = gateway_directives!("uwsgi", Protocol::Uwsgi);
pub const SCGI_DIRECTIVES: &[HttpDirective] = gateway_directives!("scgi", Protocol::Scgi);

fn accept_size(
    _scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    size(directive, context).map(|_| ())
}

set_once!(
    set_min_uses,
    LocationScope,
    proxy_cache.min_uses,
    |d: &Directive, c: &mut LoadContext<'_>| { crate::kernel::core::directives::number(d, c) }
);
set_once!(
    set_background_update,
    LocationScope,
    proxy_cache.background_update,
    flag
);
set_once!(set_lock, LocationScope, proxy_cache.lock, flag);
set_once!(
    set_lock_timeout,
    LocationScope,
    proxy_cache.lock_timeout,
    time
);
set_once!(set_lock_age, LocationScope, proxy_cache.lock_age, time);
set_once!(
    set_lock_stream,
    LocationScope,
    proxy_cache.lock_stream,
    flag
);
set_once!(set_revalidate, LocationScope, proxy_cache.revalidate, flag);
set_once!(
    set_convert_head,
    LocationScope,
    proxy_cache.convert_head,
    flag
);
set_once!(
    set_force_ranges,
    LocationScope,
    proxy_cache.force_ranges,
    flag
);
set_once!(set_slice, LocationScope, proxy_cache.slice, size);
set_once!(
    set_max_range_offset,
    LocationScope,
    proxy_cache.max_range_offset,
    |d: &Directive, _c: &mut LoadContext<'_>| {
        conf::value::parse_offset(d.arg(0))
            .map(Some)
            .ok_or_else(|| crate::kernel::core::directives::invalid_value(d))
    }
);

/// `proxy_cache_path PATH [levels=] [use_temp_path=] keys_zone=NAME:SIZE [inactive=]
/// [max_size=] [min_free=] [manager_*=] [loader_*=] [purger*=] [max_size_slack=]`.
fn set_cache_path(
    main: &mut MainScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    let span = &directive.span;
    let error = |message: String| ConfError::message(message, span);
    let raw = directive.arg(0);
    let trimmed = match raw.trim_end_matches('/') {
        "" => "/",
        trimmed => trimmed,
    };
    let mut path = CachePath {
        name: String::new(),
        path: context.path(trimmed),
        levels: Vec::new(),
        use_temp_path: true,
        keys_zone_size: 0,
        inactive: Duration::from_secs(600),
        max_size: None,
        max_size_slack: None,
        min_free: None,
        manager_files: 100,
        manager_sleep: Duration::from_millis(50),
        manager_threshold: Duration::from_millis(200),
        loader_files: 100,
        loader_sleep: Duration::from_millis(50),
        loader_threshold: Duration::from_millis(200),
        purger: false,
        purger_files: 10,
        purger_sleep: Duration::from_millis(50),
        purger_threshold: Duration::from_millis(50),
        span: span.clone(),
    };
    let mut has_zone = false;
    for argument in &directive.args[1..] {
        let argument = argument.as_str();
        let (name, value) = argument.split_once('=').unwrap_or((argument, ""));
        let invalid = || error(format!("invalid {name} value \"{argument}\""));
        match name {
            "levels" => {
                path.levels = parse_levels(value)
                    .ok_or_else(|| error(format!("invalid \"levels\" \"{argument}\"")))?;
            }
            "use_temp_path" => {
                path.use_temp_path = match value {
                    "on" => true,
                    "off" => false,
                    _ => {
                        return Err(error(format!(
                            "invalid use_temp_path value \"{argument}\", it must be \"on\" or \"off\""
                        )));
                    }
                };
            }
            "keys_zone" => {
                let bad_size = || error(format!("invalid keys zone size \"{argument}\""));
                let (zone, size) = value.split_once(':').ok_or_else(bad_size)?;
                let size = conf::value::parse_size(size).ok_or_else(bad_size)?;
                if zone.is_empty() {
                    return Err(bad_size());
                }
                if size < 2 * 4096 {
                    return Err(error(format!("keys zone \"{argument}\" is too small")));
                }
                path.name = zone.to_owned();
                path.keys_zone_size = size;
                has_zone = true;
            }
            "inactive" => {
                path.inactive = conf::value::parse_time_seconds(value).ok_or_else(invalid)?;
            }
            "max_size" => {
                path.max_size = Some(conf::value::parse_offset(value).ok_or_else(invalid)?);
            }
            "max_size_slack" => {
                path.max_size_slack = Some(conf::value::parse_offset(value).ok_or_else(invalid)?);
            }
            "min_free" => {
                path.min_free = Some(conf::value::parse_offset(value).ok_or_else(invalid)?);
            }
            "manager_files" | "loader_files" | "purger_files" => {
                // 0 is accepted, as nginx's does: a run then stops after one file.
                let files = conf::value::parse_number(value).ok_or_else(invalid)?;
                match name {
                    "manager_files" => path.manager_files = files,
                    "loader_files" => path.loader_files = files,
                    _ => path.purger_files = files,
                }
            }
            "manager_sleep" | "manager_threshold" | "loader_sleep" | "loader_threshold"
            | "purger_sleep" | "purger_threshold" => {
                let time = conf::value::parse_time(value).ok_or_else(invalid)?;
                match name {
                    "manager_sleep" => path.manager_sleep = time,
                    "manager_threshold" => path.manager_threshold = time,
                    "loader_sleep" => path.loader_sleep = time,
                    "loader_threshold" => path.loader_threshold = time,
                    "purger_sleep" => path.purger_sleep = time,
                    _ => path.purger_threshold = time,
                }
            }
            "purger" => {
                path.purger = match value {
                    "on" => true,
                    "off" => false,
                    _ => {
                        return Err(error(format!(
                            "invalid purger value \"{argument}\", it must be \"on\" or \"off\""
                        )));
                    }
                };
            }
            _ => return Err(error(format!("invalid parameter \"{argument}\""))),
        }
    }
    if !has_zone {
        return Err(error(format!(
            "\"{}\" must have \"keys_zone\" parameter",
            directive.name
        )));
    }
    for other in &main.cache_paths {
        if other.name == path.name {
            return Err(error(format!("duplicate zone \"{}\"", path.name)));
        }
        if other.path == path.path {
            let at = other.span.to_string();
            return Err(error(if other.levels == path.levels {
                format!(
                    "the same path name \"{}\" used in {at} and",
                    path.path.display()
                )
            } else {
                format!(
                    "the same path name \"{}\" in {at} has the different levels than",
                    path.path.display()
                )
            }));
        }
    }
    main.cache_paths.push(path);
    Ok(())
}

/// The module a directive belongs to: `proxy` of `proxy_cache`, `fastcgi` of
/// `fastcgi_store`.
fn module_prefix(directive: &Directive) -> &str {
    directive.name.split('_').next().unwrap_or("proxy")
}

/// `levels=1:2`: one to three levels of one or two hex digits.
fn parse_levels(text: &str) -> Option<Vec<u8>> {
    let levels: Vec<u8> = text
        .split(':')
        .map(|level| match level {
            "1" => Some(1),
            "2" => Some(2),
            _ => None,
        })
        .collect::<Option<_>>()?;
    (1..=3).contains(&levels.len()).then_some(levels)
}

fn set_cache(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    if scope.proxy_cache.cache.is_some() {
        return Err(context.duplicate(directive));
    }
    let value = directive.arg(0);
    if value == "off" {
        scope.proxy_cache.cache = Some(CacheUse::Off);
        return Ok(());
    }
    if matches!(scope.proxy_cache.store, Some(Store::Path(_))) {
        return Err(ConfError::directive(
            &directive.name,
            format!(
                "is incompatible with \"{}_store\"",
                module_prefix(directive)
            ),
            &directive.span,
        ));
    }
    let template = context.template(value, &directive.span)?;
    scope.proxy_cache.cache = Some(if template.as_literal().is_some() {
        CacheUse::Named {
            name: value.to_owned(),
            span: directive.span.clone(),
        }
    } else {
        CacheUse::Variable(template)
    });
    Ok(())
}

fn set_store(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    if scope.proxy_cache.store.is_some() {
        return Err(context.duplicate(directive));
    }
    let value = directive.arg(0);
    if value == "off" {
        scope.proxy_cache.store = Some(Store::Off);
        return Ok(());
    }
    if matches!(
        scope.proxy_cache.cache,
        Some(CacheUse::Named { .. } | CacheUse::Variable(_) | CacheUse::Zone(_))
    ) {
        return Err(ConfError::directive(
            &directive.name,
            format!(
                "is incompatible with \"{}_cache\"",
                module_prefix(directive)
            ),
            &directive.span,
        ));
    }
    scope.proxy_cache.store = Some(match value {
        // `root` or `alias` plus the URI: nginx's `$request_filename`.
        "on" => Store::Path(context.template("$request_filename", &directive.span)?),
        "" => {
            return Err(ConfError::directive(
                &directive.name,
                "empty path",
                &directive.span,
            ));
        }
        path => Store::Path(context.template(path, &directive.span)?),
    });
    Ok(())
}

set_once!(
    set_store_access,
    LocationScope,
    proxy_cache.store_access,
    crate::kernel::core::directives::access
);

fn set_key(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    if scope.proxy_cache.key.is_some() {
        return Err(context.duplicate(directive));
    }
    let template = context.template(directive.arg(0), &directive.span)?;
    scope.proxy_cache.key = Some(Some(template));
    Ok(())
}

/// `proxy_cache_valid [CODE ...] TIME`; lines at one level accumulate.
fn set_valid(
    scope: &mut LocationScope,
    directive: &Directive,
    _context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    let (codes, time) = directive.args.split_at(directive.args.len() - 1);
    let time = time[0].as_str();
    let time = conf::value::parse_time_seconds(time).ok_or_else(|| {
        ConfError::message(format!("invalid time value \"{time}\""), &directive.span)
    })?;
    let rules = scope.proxy_cache.valid.get_or_insert_with(Vec::new);
    if codes.is_empty() {
        for status in [200, 301, 302] {
            rules.push(ValidRule {
                status: Some(status),
                time,
            });
        }
        return Ok(());
    }
    for code in codes {
        let code = code.as_str();
        let status = if code == "any" {
            None
        } else {
            let status = conf::value::parse_number(code)
                .filter(|status| (100..=599).contains(status))
                .ok_or_else(|| {
                    ConfError::message(format!("invalid status \"{code}\""), &directive.span)
                })?;
            Some(status as u16)
        };
        rules.push(ValidRule { status, time });
    }
    Ok(())
}

fn set_use_stale(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    // A bitmask: lines at one level add up, as nginx's bitmask slots do.
    let _ = context;
    let mut mask = scope.proxy_cache.use_stale.map_or(0, |mask| mask.0);
    for argument in &directive.args {
        let argument = argument.as_str();
        let (_, flag) = UseStale::NAMES
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(argument))
            .ok_or_else(|| {
                ConfError::message(format!("invalid value \"{argument}\""), &directive.span)
            })?;
        mask |= flag;
    }
    scope.proxy_cache.use_stale = Some(UseStale(mask));
    Ok(())
}

fn set_methods(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    let _ = context;
    let mut mask = scope
        .proxy_cache
        .methods
        .map_or(CacheMethods::GET | CacheMethods::HEAD, |mask| mask.0);
    for argument in &directive.args {
        let argument = argument.as_str();
        mask |= match argument.to_ascii_uppercase().as_str() {
            "GET" => CacheMethods::GET,
            "HEAD" => CacheMethods::HEAD,
            "POST" => CacheMethods::POST,
            _ => {
                return Err(ConfError::message(
                    format!("invalid value \"{argument}\""),
                    &directive.span,
                ));
            }
        };
    }
    scope.proxy_cache.methods = Some(CacheMethods(mask));
    Ok(())
}

/// Predicates (`proxy_cache_bypass`, `proxy_no_cache`, `proxy_cache_purge`) accumulate.
fn predicates(
    list: &mut Option<Vec<crate::kernel::variables::HttpTemplate>>,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    let list = list.get_or_insert_with(Vec::new);
    for argument in &directive.args {
        list.push(context.template(argument.as_str(), &directive.span)?);
    }
    Ok(())
}

fn set_bypass(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    predicates(&mut scope.proxy_cache.bypass, directive, context)
}

fn set_no_cache(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    predicates(&mut scope.proxy_cache.no_cache, directive, context)
}

fn set_purge(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    predicates(&mut scope.proxy_cache.purge, directive, context)
}

#[cfg(test)]
mod tests {
    use super::parse_levels;

    #[test]
    fn levels_are_one_to_three_of_one_or_two() {
        assert_eq!(parse_levels("1:2"), Some(vec![1, 2]));
        assert_eq!(parse_levels("2"), Some(vec![2]));
        assert_eq!(parse_levels("1:1:2"), Some(vec![1, 1, 2]));
        assert_eq!(parse_levels("1:2:2:1"), None);
        assert_eq!(parse_levels("3"), None);
        assert_eq!(parse_levels(""), None);
    }
}
