//! Whether an upstream response may be stored, and until when it is fresh: nginx's rules
//! (X-Accel-Expires over Cache-Control over Expires over `proxy_cache_valid`, whatever the
//! order of the lines; Set-Cookie and `Vary: *` forbid storing), with Cache-Control read
//! as RFC 9111 tokens rather than by substring.

use std::time::Duration;

use crate::proxy::IgnoreHeaders;
use crate::proxy::cache::settings::ValidRule;

/// The longest `Vary` value an entry keeps (nginx's header field is 128 bytes).
pub const VARY_LEN_MAX: usize = 128;
/// The longest `ETag` an entry keeps for revalidation.
pub const ETAG_LEN_MAX: usize = 128;

/// What a response says about caching it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Freshness {
    /// Fresh until this time (epoch seconds); may be in the past (`X-Accel-Expires: @T`).
    pub valid_sec: i64,
    /// `stale-while-revalidate` seconds.
    pub updating_sec: i64,
    /// `stale-if-error` seconds.
    pub error_sec: i64,
    /// `Last-Modified` of a 200 or 206 (-1 without one): revalidation uses it.
    pub last_modified: i64,
    /// `ETag` of a 200 or 206, when short enough to keep.
    pub etag: Vec<u8>,
    /// The `Vary` lines joined with `", "`.
    pub vary: Vec<u8>,
    /// `must-revalidate` or `proxy-revalidate`: never served stale.
    pub must_revalidate: bool,
    /// Cache-Control allows reuse for a request with `Authorization` (`public`,
    /// `s-maxage`, `must-revalidate`).
    pub shared_ok: bool,
}

/// Why a response is not stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotCacheable {
    /// A header forbids it (`no-cache`, `no-store`, `private`, `max-age=0`,
    /// `X-Accel-Expires: 0`, a past `Expires`, `Set-Cookie`, `Vary: *`, a long `Vary`).
    Forbidden,
    /// No header gave a time and no `proxy_cache_valid` line covers the status.
    NoTime,
}

/// What `judge` needs besides the fields.
pub struct Input<'a> {
    pub status: u16,
    pub ignore: IgnoreHeaders,
    pub valid: &'a [ValidRule],
    /// Now, epoch seconds.
    pub now: i64,
}

/// nginx's cacheability of a response head, given its fields in arrival order.
pub fn judge<'f>(
    input: &Input<'_>,
    fields: impl Iterator<Item = (&'f [u8], &'f [u8])>,
) -> Result<Freshness, NotCacheable> {
    let mut fresh = Freshness {
        last_modified: -1,
        ..Freshness::default()
    };
    let mut accel: Option<&[u8]> = None;
    let mut control: Option<Control> = None;
    let mut expires: Option<&[u8]> = None;
    let mut forbidden = false;
    let keeps_validators = matches!(input.status, 200 | 206);
    for (name, value) in fields {
        let value = value.trim_ascii();
        if name.eq_ignore_ascii_case(b"x-accel-expires") {
            if !input.ignore.has(IgnoreHeaders::X_ACCEL_EXPIRES) && accel.is_none() {
                accel = Some(value);
            }
        } else if name.eq_ignore_ascii_case(b"cache-control") {
            if !input.ignore.has(IgnoreHeaders::CACHE_CONTROL) {
                control.get_or_insert_with(Control::default).read(value);
            }
        } else if name.eq_ignore_ascii_case(b"expires") {
            if !input.ignore.has(IgnoreHeaders::EXPIRES) && expires.is_none() {
                expires = Some(value);
            }
        } else if name.eq_ignore_ascii_case(b"set-cookie") {
            if !input.ignore.has(IgnoreHeaders::SET_COOKIE) {
                forbidden = true;
            }
        } else if name.eq_ignore_ascii_case(b"vary") {
            if !input.ignore.has(IgnoreHeaders::VARY) {
                if value
                    .split(|b| *b == b',')
                    .any(|item| item.trim_ascii() == b"*")
                {
                    forbidden = true;
                }
                if !fresh.vary.is_empty() {
                    fresh.vary.extend_from_slice(b", ");
                }
                fresh.vary.extend_from_slice(value);
            }
        } else if keeps_validators && name.eq_ignore_ascii_case(b"last-modified") {
            if let Some(time) = http1::response::parse_http_date(value) {
                fresh.last_modified = time;
            }
        } else if keeps_validators
            && name.eq_ignore_ascii_case(b"etag")
            && value.len() <= ETAG_LEN_MAX
        {
            fresh.etag = value.to_vec();
        }
    }
    if fresh.vary.len() > VARY_LEN_MAX {
        forbidden = true;
    }
    if let Some(control) = &control {
        fresh.updating_sec = control.stale_while_revalidate.unwrap_or(0);
        fresh.error_sec = control
            .stale_if_error
            .or(control.stale_while_revalidate)
            .unwrap_or(0);
        fresh.must_revalidate = control.must_revalidate;
        fresh.shared_ok = control.public || control.s_maxage.is_some() || control.must_revalidate;
    }
    let mut valid = None;
    if let Some(value) = accel {
        match parse_accel_expires(value, input.now) {
            Some(Some(time)) => valid = Some(time),
            Some(None) => return Err(NotCacheable::Forbidden),
            None => {}
        }
    }
    if valid.is_none()
        && let Some(control) = &control
    {
        if control.no_cache || control.no_store || control.private || control.malformed {
            return Err(NotCacheable::Forbidden);
        }
        if let Some(age) = control.s_maxage.or(control.max_age) {
            if age == 0 {
                return Err(NotCacheable::Forbidden);
            }
            valid = Some(input.now.saturating_add(age));
        }
    }
    if valid.is_none()
        && let Some(value) = expires
    {
        match http1::response::parse_http_date(value) {
            Some(time) if time >= input.now => valid = Some(time),
            _ => return Err(NotCacheable::Forbidden),
        }
    }
    if forbidden {
        return Err(NotCacheable::Forbidden);
    }
    let valid = match valid {
        Some(valid) => valid,
        None => {
            let time = valid_for(input.valid, input.status).ok_or(NotCacheable::NoTime)?;
            if time.is_zero() {
                return Err(NotCacheable::NoTime);
            }
            input.now.saturating_add(time.as_secs() as i64)
        }
    };
    fresh.valid_sec = valid;
    Ok(fresh)
}

/// `proxy_cache_valid`: the first line that names the status, or `any`.
pub fn valid_for(rules: &[ValidRule], status: u16) -> Option<Duration> {
    rules
        .iter()
        .find(|rule| rule.status.is_none_or(|covered| covered == status))
        .map(|rule| rule.time)
}

/// `X-Accel-Expires`: `Some(Some(time))` fresh until then, `Some(None)` not cacheable
/// (`0`), `None` a value that is not a number (ignored).
fn parse_accel_expires(value: &[u8], now: i64) -> Option<Option<i64>> {
    if let Some(absolute) = value.strip_prefix(b"@") {
        let time = parse_seconds(absolute)?;
        return Some(Some(time));
    }
    let delta = parse_seconds(value)?;
    if delta == 0 {
        return Some(None);
    }
    Some(Some(now.saturating_add(delta)))
}

fn parse_seconds(text: &[u8]) -> Option<i64> {
    let text = std::str::from_utf8(text).ok()?;
    let value = conf::value::parse_number(text)?;
    i64::try_from(value).ok()
}

/// The Cache-Control directives that matter to a shared cache.
#[derive(Clone, Debug, Default)]
struct Control {
    no_cache: bool,
    no_store: bool,
    private: bool,
    public: bool,
    must_revalidate: bool,
    max_age: Option<i64>,
    s_maxage: Option<i64>,
    stale_while_revalidate: Option<i64>,
    stale_if_error: Option<i64>,
    /// A time that is not a number: nginx does not cache such a response.
    malformed: bool,
}

impl Control {
    /// Reads one Cache-Control line: comma-separated tokens, each `name` or
    /// `name=value` (the value possibly quoted), names without regard to case.
    fn read(&mut self, line: &[u8]) {
        for item in split_list(line) {
            let (name, value) = match item.iter().position(|b| *b == b'=') {
                Some(at) => (
                    item[..at].trim_ascii(),
                    Some(unquote(item[at + 1..].trim_ascii())),
                ),
                None => (item, None),
            };
            let seconds = |malformed: &mut bool| {
                let parsed = value.and_then(|value| {
                    std::str::from_utf8(value)
                        .ok()
                        .and_then(conf::value::parse_number)
                        .map(|seconds| i64::try_from(seconds).unwrap_or(i64::MAX))
                });
                if parsed.is_none() {
                    *malformed = true;
                }
                parsed
            };
            let lower = name.to_ascii_lowercase();
            match lower.as_slice() {
                b"no-cache" => self.no_cache = true,
                b"no-store" => self.no_store = true,
                b"private" => self.private = true,
                b"public" => self.public = true,
                b"must-revalidate" | b"proxy-revalidate" => self.must_revalidate = true,
                b"max-age" => self.max_age = seconds(&mut self.malformed).or(self.max_age),
                b"s-maxage" => self.s_maxage = seconds(&mut self.malformed).or(self.s_maxage),
                b"stale-while-revalidate" => {
                    let mut ignored = false;
                    self.stale_while_revalidate = seconds(&mut ignored);
                }
                b"stale-if-error" => {
                    let mut ignored = false;
                    self.stale_if_error = seconds(&mut ignored);
                }
                _ => {}
            }
        }
    }
}

/// The non-empty items of a comma-separated list, trimmed; commas inside quotes do not
/// split.
fn split_list(line: &[u8]) -> Vec<&[u8]> {
    let mut items = Vec::new();
    let mut quoted = false;
    let mut start = 0;
    for (at, byte) in line.iter().enumerate() {
        match byte {
            b'"' => quoted = !quoted,
            b',' if !quoted => {
                items.push(line[start..at].trim_ascii());
                start = at + 1;
            }
            _ => {}
        }
    }
    items.push(line[start..].trim_ascii());
    items.retain(|item| !item.is_empty());
    items
}

fn unquote(value: &[u8]) -> &[u8] {
    value
        .strip_prefix(b"\"")
        .and_then(|value| value.strip_suffix(b"\""))
        .unwrap_or(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_000_000;

    fn judge_fields(
        fields: &[(&str, &str)],
        valid: &[ValidRule],
    ) -> Result<Freshness, NotCacheable> {
        let input = Input {
            status: 200,
            ignore: IgnoreHeaders::default(),
            valid,
            now: NOW,
        };
        judge(
            &input,
            fields
                .iter()
                .map(|(name, value)| (name.as_bytes(), value.as_bytes())),
        )
    }

    fn any(seconds: u64) -> Vec<ValidRule> {
        vec![ValidRule {
            status: None,
            time: Duration::from_secs(seconds),
        }]
    }

    #[test]
    fn accel_expires_wins_in_any_order() {
        let fresh = judge_fields(
            &[("Cache-Control", "no-cache"), ("X-Accel-Expires", "100")],
            &[],
        )
        .unwrap();
        assert_eq!(fresh.valid_sec, NOW + 100);
        let fresh = judge_fields(
            &[
                ("X-Accel-Expires", "@60"),
                ("Expires", "Thu, 01 Jan 1970 00:00:01 GMT"),
            ],
            &[],
        )
        .unwrap();
        assert_eq!(
            fresh.valid_sec, 60,
            "an absolute time in the past is still stored"
        );
        assert_eq!(
            judge_fields(
                &[("X-Accel-Expires", "0"), ("Cache-Control", "max-age=10")],
                &any(60)
            ),
            Err(NotCacheable::Forbidden)
        );
    }

    #[test]
    fn duplicate_accel_expires_is_ignored() {
        let fresh =
            judge_fields(&[("X-Accel-Expires", "10"), ("X-Accel-Expires", "0")], &[]).unwrap();
        assert_eq!(fresh.valid_sec, NOW + 10);
    }

    #[test]
    fn cache_control_over_expires_and_valid() {
        let fresh = judge_fields(
            &[
                ("Expires", "Thu, 01 Jan 1970 00:00:01 GMT"),
                ("Cache-Control", "max-age=5"),
            ],
            &any(60),
        )
        .unwrap();
        assert_eq!(fresh.valid_sec, NOW + 5);
        let fresh = judge_fields(&[("Cache-Control", "max-age=5, s-maxage=7")], &[]).unwrap();
        assert_eq!(fresh.valid_sec, NOW + 7, "s-maxage is preferred");
        assert_eq!(
            judge_fields(&[("Cache-Control", "max-age=100, no-cache")], &any(60)),
            Err(NotCacheable::Forbidden)
        );
        assert_eq!(
            judge_fields(&[("Cache-Control", "max-age=x")], &any(60)),
            Err(NotCacheable::Forbidden)
        );
        assert_eq!(
            judge_fields(&[("Cache-Control", "max-age=0")], &any(60)),
            Err(NotCacheable::Forbidden)
        );
    }

    #[test]
    fn stale_extensions_survive_accel_expires() {
        let fresh = judge_fields(
            &[
                ("X-Accel-Expires", "1"),
                ("Cache-Control", "max-age=100, stale-while-revalidate=10"),
            ],
            &[],
        )
        .unwrap();
        assert_eq!(fresh.valid_sec, NOW + 1);
        assert_eq!((fresh.updating_sec, fresh.error_sec), (10, 10));
    }

    #[test]
    fn expires_in_the_past_is_not_stored() {
        assert_eq!(
            judge_fields(&[("Expires", "Thu, 01 Jan 1970 00:00:01 GMT")], &any(60)),
            Err(NotCacheable::Forbidden)
        );
        assert_eq!(
            judge_fields(&[("Expires", "garbage")], &any(60)),
            Err(NotCacheable::Forbidden)
        );
    }

    #[test]
    fn set_cookie_and_vary_star_forbid() {
        assert_eq!(
            judge_fields(&[("Set-Cookie", "a=b"), ("X-Accel-Expires", "10")], &[]),
            Err(NotCacheable::Forbidden)
        );
        assert_eq!(
            judge_fields(&[("Vary", "Accept, *")], &any(60)),
            Err(NotCacheable::Forbidden)
        );
        let fresh = judge_fields(&[("Vary", "Accept"), ("Vary", "Cookie")], &any(60)).unwrap();
        assert_eq!(fresh.vary, b"Accept, Cookie");
    }

    #[test]
    fn valid_rules_by_status() {
        let rules = vec![
            ValidRule {
                status: Some(404),
                time: Duration::from_secs(1),
            },
            ValidRule {
                status: None,
                time: Duration::from_secs(9),
            },
        ];
        assert_eq!(valid_for(&rules, 404), Some(Duration::from_secs(1)));
        assert_eq!(valid_for(&rules, 200), Some(Duration::from_secs(9)));
        assert_eq!(valid_for(&rules[..1], 200), None);
        assert_eq!(judge_fields(&[], &[]), Err(NotCacheable::NoTime));
    }

    #[test]
    fn validators_only_for_200_and_206() {
        let fields = [
            ("ETag", "\"x\""),
            ("Last-Modified", "Thu, 01 Jan 1970 00:01:00 GMT"),
        ];
        let fresh = judge_fields(&fields, &any(60)).unwrap();
        assert_eq!(
            (fresh.etag.as_slice(), fresh.last_modified),
            (&b"\"x\""[..], 60)
        );
        let input = Input {
            status: 301,
            ignore: IgnoreHeaders::default(),
            valid: &any(60),
            now: NOW,
        };
        let fresh = judge(
            &input,
            fields
                .iter()
                .map(|(name, value)| (name.as_bytes(), value.as_bytes())),
        )
        .unwrap();
        assert_eq!((fresh.etag.len(), fresh.last_modified), (0, -1));
    }
}
