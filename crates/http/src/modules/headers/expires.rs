//! `expires`: parsing its value and computing the `Expires` and `Cache-Control` headers it
//! gives a response, as nginx's headers filter writes them. Pure: the time is a parameter.

use crate::kernel::response::{Bytes, ResponseHead};
use crate::modules::headers::settings::ExpiresValue;

/// Why an `expires` value is refused; `Display` is nginx's text after `"expires" directive`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExpiresError {
    InvalidValue,
    DailyWithModified,
    DailyTooLate,
}

impl std::fmt::Display for ExpiresError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ExpiresError::InvalidValue => "invalid value",
            ExpiresError::DailyWithModified => {
                "daily time cannot be used with \"modified\" parameter"
            }
            ExpiresError::DailyTooLate => "daily time value must be less than 24 hours",
        })
    }
}

const DAY_SECONDS: i64 = 24 * 60 * 60;

/// What nginx sends for `expires epoch`: one second after the epoch.
const EPOCH_EXPIRES: &[u8] = b"Thu, 01 Jan 1970 00:00:01 GMT";
/// What nginx sends for `expires max`.
const MAX_EXPIRES: &[u8] = b"Thu, 31 Dec 2037 23:55:55 GMT";
const MAX_CACHE_CONTROL: &[u8] = b"max-age=315360000";
const NO_CACHE: &[u8] = b"no-cache";

/// Parses an `expires` value as nginx does: `epoch`, `max` and `off` (not after
/// `modified`), `@TIME` (not after `modified`, at most 24 hours), or a time in seconds'
/// units with an optional `+` or `-`.
pub fn parse_expires(text: &[u8], modified: bool) -> Result<ExpiresValue, ExpiresError> {
    if !modified {
        match text {
            b"epoch" => return Ok(ExpiresValue::Epoch),
            b"max" => return Ok(ExpiresValue::Max),
            b"off" => return Ok(ExpiresValue::Off),
            _ => {}
        }
    }
    let (daily, negative, time) = match text {
        [b'@', ..] if modified => return Err(ExpiresError::DailyWithModified),
        [b'@', rest @ ..] => (true, false, rest),
        [b'+', rest @ ..] => (false, false, rest),
        [b'-', rest @ ..] => (false, true, rest),
        _ => (false, false, text),
    };
    let seconds = std::str::from_utf8(time)
        .ok()
        .and_then(conf::value::parse_time_seconds)
        .ok_or(ExpiresError::InvalidValue)?;
    let seconds = i64::try_from(seconds.as_secs()).map_err(|_| ExpiresError::InvalidValue)?;
    if daily {
        if seconds > DAY_SECONDS {
            return Err(ExpiresError::DailyTooLate);
        }
        return Ok(ExpiresValue::Daily(seconds));
    }
    let seconds = if negative { -seconds } else { seconds };
    Ok(if modified {
        ExpiresValue::Modified(seconds)
    } else {
        ExpiresValue::Access(seconds)
    })
}

/// The header values `expires` gives one response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExpiresHeaders {
    pub expires: Vec<u8>,
    pub cache_control: Vec<u8>,
}

/// The moment a response is sent, as `expires` needs it.
#[derive(Clone, Copy, Debug)]
pub struct SendTime {
    pub unix_seconds: i64,
    /// The local time zone's offset now, for `@TIME`, which nginx reads as local time.
    pub utc_offset_seconds: i64,
}

/// The `Expires` and `Cache-Control` values, `None` for `off`. `configured_negative` is
/// whether the configuration itself held a negative time (nginx then says `no-cache` even
/// when the time after `Last-Modified` is still ahead); a value from variables never does.
pub fn expires_headers(
    value: ExpiresValue,
    configured_negative: bool,
    now: SendTime,
    last_modified: Option<i64>,
) -> Option<ExpiresHeaders> {
    let fixed = |expires: &[u8], cache_control: &[u8]| ExpiresHeaders {
        expires: expires.to_vec(),
        cache_control: cache_control.to_vec(),
    };
    let (expires_at, max_age) = match value {
        ExpiresValue::Off => return None,
        ExpiresValue::Epoch => return Some(fixed(EPOCH_EXPIRES, NO_CACHE)),
        ExpiresValue::Max => return Some(fixed(MAX_EXPIRES, MAX_CACHE_CONTROL)),
        ExpiresValue::Access(0) | ExpiresValue::Modified(0) => {
            // nginx sends the `Date` value itself.
            let mut expires = Vec::with_capacity(29);
            http1::response::write_http_date(&mut expires, now.unix_seconds);
            return Some(ExpiresHeaders {
                expires,
                cache_control: b"max-age=0".to_vec(),
            });
        }
        ExpiresValue::Daily(time) => {
            let next = next_daily(now, time);
            (next, next - now.unix_seconds)
        }
        ExpiresValue::Modified(seconds) => match last_modified {
            Some(modified) => {
                let at = modified.saturating_add(seconds);
                (at, at.saturating_sub(now.unix_seconds))
            }
            None => (now.unix_seconds.saturating_add(seconds), seconds),
        },
        ExpiresValue::Access(seconds) => (now.unix_seconds.saturating_add(seconds), seconds),
    };
    let mut expires = Vec::with_capacity(29);
    http1::response::write_http_date(&mut expires, expires_at);
    let cache_control = if configured_negative || max_age < 0 {
        NO_CACHE.to_vec()
    } else {
        format!("max-age={max_age}").into_bytes()
    };
    Some(ExpiresHeaders {
        expires,
        cache_control,
    })
}

/// The next moment, strictly after now, at which local time reads `time` seconds after
/// midnight. Like nginx's `mktime` on today's date it keeps today's UTC offset.
fn next_daily(now: SendTime, time: i64) -> i64 {
    let local = now.unix_seconds + now.utc_offset_seconds;
    let midnight = local - local.rem_euclid(DAY_SECONDS);
    let next = midnight + time - now.utc_offset_seconds;
    if next > now.unix_seconds {
        next
    } else {
        next + DAY_SECONDS
    }
}

/// Puts the headers on the response as nginx does: an `Expires` already there gets the new
/// value; the first `Cache-Control` gets the new value and any others are dropped;
/// missing ones are added, `Expires` first.
pub(crate) fn apply_expires(response: &mut ResponseHead<'_>, headers: ExpiresHeaders) {
    let ExpiresHeaders {
        expires,
        cache_control,
    } = headers;
    match position(response, b"expires") {
        Some(index) => response.headers[index].1 = Bytes::Owned(expires),
        None => response
            .headers
            .push((Bytes::Borrowed(b"Expires"), Bytes::Owned(expires))),
    }
    match position(response, b"cache-control") {
        Some(first) => {
            response.headers[first].1 = Bytes::Owned(cache_control);
            let mut index = 0;
            response.headers.retain(|(name, _)| {
                let keep =
                    index <= first || !name.as_slice().eq_ignore_ascii_case(b"cache-control");
                index += 1;
                keep
            });
        }
        None => response.headers.push((
            Bytes::Borrowed(b"Cache-Control"),
            Bytes::Owned(cache_control),
        )),
    }
}

fn position(response: &ResponseHead<'_>, lowercase_name: &[u8]) -> Option<usize> {
    response
        .headers
        .iter()
        .position(|(name, _)| name.as_slice().eq_ignore_ascii_case(lowercase_name))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sat, 21 Nov 2026 23:29:13 GMT.
    const NOW: i64 = 1_795_303_753;

    fn at(utc_offset_seconds: i64) -> SendTime {
        SendTime {
            unix_seconds: NOW,
            utc_offset_seconds,
        }
    }

    fn text(value: ExpiresValue, negative: bool, modified: Option<i64>) -> (String, String) {
        let headers = expires_headers(value, negative, at(0), modified).unwrap();
        (
            String::from_utf8(headers.expires).unwrap(),
            String::from_utf8(headers.cache_control).unwrap(),
        )
    }

    #[test]
    fn parses_every_form() {
        assert_eq!(parse_expires(b"epoch", false), Ok(ExpiresValue::Epoch));
        assert_eq!(parse_expires(b"max", false), Ok(ExpiresValue::Max));
        assert_eq!(parse_expires(b"off", false), Ok(ExpiresValue::Off));
        assert_eq!(
            parse_expires(b"2048", false),
            Ok(ExpiresValue::Access(2048))
        );
        assert_eq!(parse_expires(b"+1h", false), Ok(ExpiresValue::Access(3600)));
        assert_eq!(
            parse_expires(b"-1h", false),
            Ok(ExpiresValue::Access(-3600))
        );
        assert_eq!(parse_expires(b"-0", false), Ok(ExpiresValue::Access(0)));
        assert_eq!(
            parse_expires(b"1d 2h", false),
            Ok(ExpiresValue::Access(93_600))
        );
        assert_eq!(
            parse_expires(b"@15h30m33s", false),
            Ok(ExpiresValue::Daily(55_833))
        );
        assert_eq!(
            parse_expires(b"@24h", false),
            Ok(ExpiresValue::Daily(86_400))
        );
        assert_eq!(
            parse_expires(b"2048", true),
            Ok(ExpiresValue::Modified(2048))
        );
        assert_eq!(parse_expires(b"-10", true), Ok(ExpiresValue::Modified(-10)));
    }

    #[test]
    fn refuses_what_nginx_refuses() {
        for bad in [&b"foo"[..], b"", b"1ms", b"ms", b"@-1h", b"+-1", b"1 h x"] {
            assert_eq!(
                parse_expires(bad, false),
                Err(ExpiresError::InvalidValue),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
        assert_eq!(
            parse_expires(b"@25h", false),
            Err(ExpiresError::DailyTooLate)
        );
        assert_eq!(
            parse_expires(b"@1h", true),
            Err(ExpiresError::DailyWithModified)
        );
        // After `modified`, the keywords are times, and not valid ones.
        for keyword in [&b"epoch"[..], b"max", b"off"] {
            assert_eq!(
                parse_expires(keyword, true),
                Err(ExpiresError::InvalidValue)
            );
        }
        assert_eq!(
            ExpiresError::DailyTooLate.to_string(),
            "daily time value must be less than 24 hours"
        );
    }

    #[test]
    fn fixed_forms_ignore_the_time() {
        assert_eq!(
            text(ExpiresValue::Epoch, false, None),
            ("Thu, 01 Jan 1970 00:00:01 GMT".into(), "no-cache".into())
        );
        assert_eq!(
            text(ExpiresValue::Max, false, None),
            (
                "Thu, 31 Dec 2037 23:55:55 GMT".into(),
                "max-age=315360000".into()
            )
        );
        assert_eq!(expires_headers(ExpiresValue::Off, false, at(0), None), None);
    }

    #[test]
    fn relative_to_now() {
        assert_eq!(
            text(ExpiresValue::Access(3600), false, None),
            (
                "Sun, 22 Nov 2026 00:29:13 GMT".into(),
                "max-age=3600".into()
            )
        );
        assert_eq!(
            text(ExpiresValue::Access(-3600), true, None),
            ("Sat, 21 Nov 2026 22:29:13 GMT".into(), "no-cache".into())
        );
        assert_eq!(
            text(ExpiresValue::Access(0), false, None),
            ("Sat, 21 Nov 2026 23:29:13 GMT".into(), "max-age=0".into())
        );
    }

    #[test]
    fn relative_to_last_modified() {
        let modified = NOW - 5;
        assert_eq!(
            text(ExpiresValue::Modified(3600), false, Some(modified)),
            (
                "Sun, 22 Nov 2026 00:29:08 GMT".into(),
                "max-age=3595".into()
            )
        );
        // Already past: no-cache.
        assert_eq!(
            text(ExpiresValue::Modified(2), false, Some(modified)).1,
            "no-cache"
        );
        // A negative configured time says no-cache even while the moment is ahead.
        assert_eq!(
            text(ExpiresValue::Modified(-10), true, Some(NOW + 100)).1,
            "no-cache"
        );
        assert_eq!(
            text(ExpiresValue::Modified(-10), false, Some(NOW + 100)).1,
            "max-age=90"
        );
        // Without Last-Modified it counts from now.
        assert_eq!(
            text(ExpiresValue::Modified(60), false, None),
            ("Sat, 21 Nov 2026 23:30:13 GMT".into(), "max-age=60".into())
        );
    }

    #[test]
    fn daily_is_the_next_local_time_of_day() {
        // 15:30 today is still ahead at 23:29? No: tomorrow.
        assert_eq!(
            text(ExpiresValue::Daily(15 * 3600 + 30 * 60), false, None),
            (
                "Sun, 22 Nov 2026 15:30:00 GMT".into(),
                "max-age=57647".into()
            )
        );
        assert_eq!(
            text(ExpiresValue::Daily(23 * 3600 + 30 * 60), false, None),
            ("Sat, 21 Nov 2026 23:30:00 GMT".into(), "max-age=47".into())
        );
        // The very second now is not "after now".
        assert_eq!(
            text(ExpiresValue::Daily(23 * 3600 + 29 * 60 + 13), false, None).1,
            "max-age=86400"
        );
        // @24h is the coming midnight.
        assert_eq!(
            text(ExpiresValue::Daily(86_400), false, None).0,
            "Sun, 22 Nov 2026 00:00:00 GMT"
        );
        // At UTC+1 it is already 00:29 on the 22nd: 15:30 local is 14:30 GMT that day.
        let headers = expires_headers(
            ExpiresValue::Daily(15 * 3600 + 30 * 60),
            false,
            at(3600),
            None,
        )
        .unwrap();
        assert_eq!(headers.expires, b"Sun, 22 Nov 2026 14:30:00 GMT");
        assert_eq!(headers.cache_control, b"max-age=54047");
    }

    #[test]
    fn existing_headers_are_replaced_in_place() {
        let mut response = ResponseHead::default();
        response.headers.push((
            Bytes::Borrowed(b"Cache-Control"),
            Bytes::Borrowed(b"private"),
        ));
        response
            .headers
            .push((Bytes::Borrowed(b"X-A"), Bytes::Borrowed(b"a")));
        response.headers.push((
            Bytes::Borrowed(b"cache-control"),
            Bytes::Borrowed(b"no-store"),
        ));
        response
            .headers
            .push((Bytes::Borrowed(b"Expires"), Bytes::Borrowed(b"yesterday")));
        apply_expires(
            &mut response,
            ExpiresHeaders {
                expires: b"E".to_vec(),
                cache_control: b"C".to_vec(),
            },
        );
        let shown: Vec<(&[u8], &[u8])> = response
            .headers
            .iter()
            .map(|(name, value)| (name.as_slice(), value.as_slice()))
            .collect();
        assert_eq!(
            shown,
            vec![
                (&b"Cache-Control"[..], &b"C"[..]),
                (b"X-A", b"a"),
                (b"Expires", b"E"),
            ]
        );
    }

    #[test]
    fn missing_headers_are_added_expires_first() {
        let mut response = ResponseHead::default();
        apply_expires(
            &mut response,
            ExpiresHeaders {
                expires: b"E".to_vec(),
                cache_control: b"C".to_vec(),
            },
        );
        assert_eq!(response.find(b"expires"), Some(&b"E"[..]));
        assert_eq!(response.headers[1].0.as_slice(), b"Cache-Control");
    }
}
