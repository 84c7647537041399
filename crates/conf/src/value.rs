//! The value forms nginx modules share: sizes, offsets, times, flags and numbers.
//!
//! Each parser accepts exactly what nginx's function of the same purpose accepts on 64-bit
//! Linux, with the same upper limits (`i64::MAX` in the value's own unit). They return
//! `None` for bad input; the caller turns that into the directive's error, usually
//! `ConfError::directive(name, "invalid value", span)`.

use std::time::Duration;

use crate::ast::Directive;
use crate::error::{ConfError, ConfErrorKind};

/// The largest value any of these parsers returns: nginx's `NGX_MAX_INT_T_VALUE`,
/// `NGX_MAX_SIZE_T_VALUE` and `NGX_MAX_OFF_T_VALUE` are all `i64::MAX` on 64-bit Linux.
pub const VALUE_MAX: u64 = i64::MAX as u64;

const KILOBYTE: u64 = 1024;
const MEGABYTE: u64 = 1024 * KILOBYTE;
const GIGABYTE: u64 = 1024 * MEGABYTE;

/// A size in bytes, as nginx's `ngx_parse_size`: decimal digits with an optional `k`/`K` or
/// `m`/`M` suffix. `"1m"` is 1048576; `"1g"` is not a size (it is an offset).
pub fn parse_size(text: &str) -> Option<u64> {
    let (digits, scale) = match text.as_bytes().last()? {
        b'k' | b'K' => (&text[..text.len() - 1], KILOBYTE),
        b'm' | b'M' => (&text[..text.len() - 1], MEGABYTE),
        _ => (text, 1),
    };
    scale_checked(parse_number(digits)?, scale)
}

/// A file offset or length in bytes, as nginx's `ngx_parse_offset`: like [`parse_size`],
/// and `g`/`G` is allowed too.
pub fn parse_offset(text: &str) -> Option<u64> {
    let (digits, scale) = match text.as_bytes().last()? {
        b'k' | b'K' => (&text[..text.len() - 1], KILOBYTE),
        b'm' | b'M' => (&text[..text.len() - 1], MEGABYTE),
        b'g' | b'G' => (&text[..text.len() - 1], GIGABYTE),
        _ => (text, 1),
    };
    scale_checked(parse_number(digits)?, scale)
}

/// A time in milliseconds, as nginx's `ngx_parse_time(.., 0)` for `NGX_CONF_MSEC` slots
/// (`proxy_read_timeout`, `keepalive_timeout`): units `w d h m s ms`, largest first, written
/// together or separated by spaces (`"1h 30m"`, `"1m30s"`); a bare number is seconds.
/// nginx does not allow years or months here.
pub fn parse_time(text: &str) -> Option<Duration> {
    parse_time_in(text, TimeUnit::Milliseconds).map(Duration::from_millis)
}

/// A time in seconds, as nginx's `ngx_parse_time(.., 1)` for `NGX_CONF_SEC` slots
/// (`proxy_cache_path inactive=`, `expires`): units `y M w d h m s`, no `ms`.
pub fn parse_time_seconds(text: &str) -> Option<Duration> {
    parse_time_in(text, TimeUnit::Seconds).map(Duration::from_secs)
}

/// A plain decimal number, as nginx's `ngx_atoi`: digits only, no sign, at most
/// [`VALUE_MAX`].
pub fn parse_number(text: &str) -> Option<u64> {
    if text.is_empty() {
        return None;
    }
    let mut value: u64 = 0;
    for byte in text.bytes() {
        if !byte.is_ascii_digit() {
            return None;
        }
        value = push_digit(value, byte)?;
    }
    Some(value)
}

/// The value of an `on`/`off` directive, matched without regard to ASCII case as nginx's
/// `ngx_conf_set_flag_slot` does. The caller has checked the argument count.
pub fn parse_flag(directive: &Directive) -> Result<bool, ConfError> {
    let value = directive.arg(0);
    if value.eq_ignore_ascii_case("on") {
        Ok(true)
    } else if value.eq_ignore_ascii_case("off") {
        Ok(false)
    } else {
        let kind = ConfErrorKind::InvalidFlag {
            name: directive.name.clone(),
            value: value.to_owned(),
        };
        Err(ConfError::at(kind, &directive.span))
    }
}

/// `value * scale`, refused (as nginx refuses it) when it would pass [`VALUE_MAX`].
fn scale_checked(value: u64, scale: u64) -> Option<u64> {
    if value > VALUE_MAX / scale {
        return None;
    }
    Some(value * scale)
}

/// `value * 10 + digit`, or `None` past [`VALUE_MAX`].
fn push_digit(value: u64, digit: u8) -> Option<u64> {
    let value = value
        .checked_mul(10)?
        .checked_add(u64::from(digit - b'0'))?;
    (value <= VALUE_MAX).then_some(value)
}

/// The unit a time is returned in; it also decides which suffixes are allowed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TimeUnit {
    Milliseconds,
    Seconds,
}

/// How far a time has got: each unit must come after the ones before it, largest first.
/// The order of the variants is the order nginx requires.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum TimeStep {
    Start,
    Year,
    Month,
    Week,
    Day,
    Hour,
    Minute,
    Second,
    Millisecond,
    /// A bare number followed by a space: seconds, after which only one more bare number
    /// may come (nginx adds it too, so `"5 5"` is ten seconds).
    Last,
}

/// The suffix at the start of `rest`: the step it moves to, the step it must come before,
/// its length in bytes and its length in seconds (`None` for milliseconds).
fn time_suffix(rest: &[u8]) -> Option<(TimeStep, TimeStep, usize, Option<u64>)> {
    const MINUTE: u64 = 60;
    const HOUR: u64 = 60 * MINUTE;
    const DAY: u64 = 24 * HOUR;
    let suffix = match rest {
        [b'y', ..] => (TimeStep::Year, TimeStep::Year, 1, Some(365 * DAY)),
        [b'M', ..] => (TimeStep::Month, TimeStep::Month, 1, Some(30 * DAY)),
        [b'w', ..] => (TimeStep::Week, TimeStep::Week, 1, Some(7 * DAY)),
        [b'd', ..] => (TimeStep::Day, TimeStep::Day, 1, Some(DAY)),
        [b'h', ..] => (TimeStep::Hour, TimeStep::Hour, 1, Some(HOUR)),
        [b'm', b's', ..] => (TimeStep::Millisecond, TimeStep::Millisecond, 2, None),
        [b'm', ..] => (TimeStep::Minute, TimeStep::Minute, 1, Some(MINUTE)),
        [b's', ..] => (TimeStep::Second, TimeStep::Second, 1, Some(1)),
        [b' ', ..] => (TimeStep::Last, TimeStep::Second, 1, Some(1)),
        _ => return None,
    };
    Some(suffix)
}

/// nginx's `ngx_parse_time`, in `unit`.
fn parse_time_in(text: &str, unit: TimeUnit) -> Option<u64> {
    let bytes = text.as_bytes();
    // In milliseconds nginx starts past months, which rules out `y` and `M`.
    let mut step = match unit {
        TimeUnit::Seconds => TimeStep::Start,
        TimeUnit::Milliseconds => TimeStep::Month,
    };
    let (mut value, mut total, mut saw_digit) = (0u64, 0u64, false);
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index].is_ascii_digit() {
            value = push_digit(value, bytes[index])?;
            saw_digit = true;
            index += 1;
            continue;
        }
        let (next_step, must_precede, width, seconds) = time_suffix(&bytes[index..])?;
        if step >= must_precede || (seconds.is_none() && unit == TimeUnit::Seconds) {
            return None;
        }
        step = next_step;
        index += width;
        let scale = match (seconds, unit) {
            (None, _) => 1,
            (Some(seconds), TimeUnit::Seconds) => seconds,
            (Some(seconds), TimeUnit::Milliseconds) => seconds * 1000,
        };
        total = total.checked_add(scale_checked(value, scale)?)?;
        if total > VALUE_MAX {
            return None;
        }
        value = 0;
        while bytes.get(index) == Some(&b' ') {
            index += 1;
        }
    }
    if !saw_digit {
        return None;
    }
    let last_scale = match unit {
        TimeUnit::Seconds => 1,
        TimeUnit::Milliseconds => 1000,
    };
    let total = total.checked_add(scale_checked(value, last_scale)?)?;
    (total <= VALUE_MAX).then_some(total)
}

#[cfg(test)]
#[path = "value_tests.rs"]
mod tests;
