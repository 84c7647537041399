//! Whether an upstream response may be stored, and until when it is fresh: nginx's rules
//! (X-Accel-Expires over Cache-Control over Expires over `proxy_cache_valid`, whatever the
//! order of the lines; Set-Cookie and `Vary: *` forbid storing), with Cache-Control read
//! as RFC 9111 tokens rather than by substring, the upstream's `Age` taken off the
//! lifetime the response gives itself (RFC 9111 section 4.2.3), and `CDN-Cache-Control`
//! (RFC 9213) in place of Cache-Control and Expires when it is there.

use std::time::Duration;

use crate::modules::proxy::IgnoreHeaders;
use crate::modules::proxy::cache::settings::ValidRule;

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
    let mut read = Read::default();
    let keeps_validators = matches!(input.status, 200 | 206);
    for (name, value) in fields {
        let value = value.trim_ascii();
        read.field(input.ignore, name, value, &mut fresh, keeps_validators);
    }
    let Read {
        accel,
        control,
        targeted,
        expires,
        age,
        mut forbidden,
        ..
    } = read;
    if fresh.vary.len() > VARY_LEN_MAX {
        forbidden = true;
    }
    // A `CDN-Cache-Control` that parses is what this cache follows instead of
    // Cache-Control and Expires (RFC 9213 section 2.1); one that does not is ignored.
    let targeted = targeted.and_then(|value| Control::read_targeted(&value));
    let (control, expires) = match targeted {
        Some(targeted) => (Some(targeted), None),
        None => (control, expires),
    };
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
    // The lifetime the response gives itself, less the age it arrived with (RFC 9111
    // section 4.2.3): one that is already used up is not stored, as `max-age=0` is not.
    let age = age.unwrap_or(0);
    if valid.is_none()
        && let Some(control) = &control
    {
        if control.no_cache || control.no_store || control.private || control.malformed {
            return Err(NotCacheable::Forbidden);
        }
        if let Some(lifetime) = control.s_maxage.or(control.max_age) {
            let left = lifetime.saturating_sub(age);
            if left <= 0 {
                return Err(NotCacheable::Forbidden);
            }
            valid = Some(input.now.saturating_add(left));
        }
    }
    if valid.is_none()
        && let Some(value) = expires
    {
        // An invalid date (`0`, say) is in the past (RFC 9111 section 5.3).
        match http1::response::parse_http_date(value) {
            Some(time) if time.saturating_sub(age) >= input.now => {
                valid = Some(time.saturating_sub(age));
            }
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

/// The fields `judge` reads, as they come.
#[derive(Default)]
struct Read<'f> {
    accel: Option<&'f [u8]>,
    control: Option<Control>,
    /// The `CDN-Cache-Control` lines, joined as one list.
    targeted: Option<Vec<u8>>,
    expires: Option<&'f [u8]>,
    /// The first `Age` member, when it is a valid number (`None` without one).
    age: Option<i64>,
    age_seen: bool,
    forbidden: bool,
}

impl<'f> Read<'f> {
    fn field(
        &mut self,
        ignore: IgnoreHeaders,
        name: &[u8],
        value: &'f [u8],
        fresh: &mut Freshness,
        keeps_validators: bool,
    ) {
        if name.eq_ignore_ascii_case(b"x-accel-expires") {
            if !ignore.has(IgnoreHeaders::X_ACCEL_EXPIRES) && self.accel.is_none() {
                self.accel = Some(value);
            }
        } else if name.eq_ignore_ascii_case(b"cache-control") {
            if !ignore.has(IgnoreHeaders::CACHE_CONTROL) {
                self.control
                    .get_or_insert_with(Control::default)
                    .read(value);
            }
        } else if name.eq_ignore_ascii_case(b"cdn-cache-control") {
            if !ignore.has(IgnoreHeaders::CDN_CACHE_CONTROL) {
                let joined = self.targeted.get_or_insert_with(Vec::new);
                if !joined.is_empty() {
                    joined.extend_from_slice(b", ");
                }
                joined.extend_from_slice(value);
            }
        } else if name.eq_ignore_ascii_case(b"expires") {
            if !ignore.has(IgnoreHeaders::EXPIRES) && self.expires.is_none() {
                self.expires = Some(value);
            }
        } else if name.eq_ignore_ascii_case(b"age") {
            // A list takes its first member, the first line's (RFC 9111 section 5.1).
            if !self.age_seen {
                self.age_seen = true;
                self.age = parse_age(value);
            }
        } else if name.eq_ignore_ascii_case(b"set-cookie") {
            if !ignore.has(IgnoreHeaders::SET_COOKIE) {
                self.forbidden = true;
            }
        } else if name.eq_ignore_ascii_case(b"vary") {
            if !ignore.has(IgnoreHeaders::VARY) {
                if value
                    .split(|b| *b == b',')
                    .any(|item| item.trim_ascii() == b"*")
                {
                    self.forbidden = true;
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
}

/// The greatest age a cache must be able to count (RFC 9111 section 1.2.2: a larger
/// `delta-seconds` value counts as 2^31).
const AGE_MAX: i64 = 1 << 31;

/// An `Age` field value: its first member, when that is a non-negative integer (RFC 9111
/// section 5.1); anything else (`-1`, `1.5`, `10s`, `10;x=y`) is ignored (`None`).
pub fn parse_age(value: &[u8]) -> Option<i64> {
    let first = value.split(|b| *b == b',').next()?.trim_ascii();
    if first.is_empty() || !first.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let digits = std::str::from_utf8(first).ok()?;
    Some(
        digits
            .parse::<i64>()
            .map_or(AGE_MAX, |age| age.min(AGE_MAX)),
    )
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
    /// `max-age` and `s-maxage` were met (the first is the one used).
    seen_max_age: bool,
    seen_s_maxage: bool,
}

impl Control {
    /// Reads one Cache-Control line: comma-separated tokens, each `name` or
    /// `name=value` (the value possibly quoted), names without regard to case. A name or
    /// value with white space around its `=` is not the directive (RFC 9111 section 5.2:
    /// `token [ "=" ( token / quoted-string ) ]`), and of a directive given twice the
    /// first is used (section 4.2.1).
    fn read(&mut self, line: &[u8]) {
        for item in split_list(line) {
            let (name, value) = match item.iter().position(|b| *b == b'=') {
                Some(at) => {
                    let (name, value) = (&item[..at], &item[at + 1..]);
                    let spaced =
                        |bytes: Option<&u8>| bytes.is_some_and(|b| *b == b' ' || *b == b'\t');
                    if spaced(name.last()) || spaced(value.first()) {
                        continue;
                    }
                    (name, Some(unquote(value)))
                }
                None => (item, None),
            };
            self.directive(&name.to_ascii_lowercase(), value.map(Value::Text));
        }
    }

    /// `CDN-Cache-Control` (RFC 9213): a Dictionary structured field (RFC 8941); `None`
    /// when it does not parse, and is then ignored as a whole (RFC 9213 section 2.1).
    fn read_targeted(value: &[u8]) -> Option<Control> {
        let mut control = Control::default();
        for (name, value) in super::targeted::parse_dictionary(value)? {
            let value = match value {
                super::targeted::Item::Integer(number) => Some(Value::Number(number)),
                super::targeted::Item::Boolean(false) => continue,
                super::targeted::Item::Boolean(true) => None,
                super::targeted::Item::Other => Some(Value::Other),
            };
            control.directive(&name, value);
        }
        Some(control)
    }

    /// One directive, `name` in lower case.
    fn directive(&mut self, name: &[u8], value: Option<Value<'_>>) {
        let seconds = |malformed: &mut bool| {
            let parsed = match value {
                Some(Value::Text(text)) => delta_seconds(text),
                Some(Value::Number(number)) if number >= 0 => Some(number),
                _ => None,
            };
            if parsed.is_none() {
                *malformed = true;
            }
            parsed
        };
        match name {
            b"no-cache" => self.no_cache = true,
            b"no-store" => self.no_store = true,
            b"private" => self.private = true,
            b"public" => self.public = true,
            b"must-revalidate" | b"proxy-revalidate" => self.must_revalidate = true,
            b"max-age" if !self.seen_max_age => {
                self.seen_max_age = true;
                self.max_age = seconds(&mut self.malformed);
            }
            b"s-maxage" if !self.seen_s_maxage => {
                self.seen_s_maxage = true;
                self.s_maxage = seconds(&mut self.malformed);
            }
            b"stale-while-revalidate" if self.stale_while_revalidate.is_none() => {
                let mut ignored = false;
                self.stale_while_revalidate = seconds(&mut ignored);
            }
            b"stale-if-error" if self.stale_if_error.is_none() => {
                let mut ignored = false;
                self.stale_if_error = seconds(&mut ignored);
            }
            _ => {}
        }
    }
}

/// The longest lifetime a directive gives: RFC 9111 section 1.2.2 has a larger
/// `delta-seconds` taken as 2^31 seconds, rather than refused as an overflow.
const DELTA_SECONDS_MAX: i64 = 1 << 31;

/// A `delta-seconds` value (digits only), at most [`DELTA_SECONDS_MAX`].
fn delta_seconds(text: &[u8]) -> Option<i64> {
    if text.is_empty() || !text.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let seconds = text.iter().fold(0i64, |seconds, digit| {
        seconds
            .saturating_mul(10)
            .saturating_add(i64::from(digit - b'0'))
            .min(DELTA_SECONDS_MAX)
    });
    Some(seconds)
}

/// A directive's value: Cache-Control's text, or a structured field's item.
#[derive(Clone, Copy)]
enum Value<'a> {
    Text(&'a [u8]),
    Number(i64),
    Other,
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
        // RFC 9111 section 1.2.2: a lifetime past 2^31 seconds is 2^31 seconds.
        for huge in [
            "max-age=9223372036854775808",
            "max-age=99999999999999999999999",
        ] {
            let fresh = judge_fields(&[("Cache-Control", huge)], &any(60)).unwrap();
            assert_eq!(fresh.valid_sec, NOW + (1 << 31), "{huge}");
        }
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

    /// RFC 9111 section 4.2.3: the age a response arrives with is taken off the lifetime
    /// it gives itself, `max-age` and `Expires` alike.
    #[test]
    fn the_upstream_s_age_shortens_the_lifetime() {
        let fresh = judge_fields(&[("Cache-Control", "max-age=100"), ("Age", "30")], &[]).unwrap();
        assert_eq!(fresh.valid_sec, NOW + 70);
        let expires = "Mon, 12 Jan 1970 13:48:20 GMT"; // NOW + 100
        assert_eq!(
            http1::response::parse_http_date(expires.as_bytes()),
            Some(NOW + 100)
        );
        let fresh = judge_fields(&[("Age", "40"), ("Expires", expires)], &[]).unwrap();
        assert_eq!(fresh.valid_sec, NOW + 60);
        // Already stale when it arrives: not stored, as `max-age=0` is not.
        assert_eq!(
            judge_fields(
                &[("Cache-Control", "max-age=3600"), ("Age", "7200")],
                &any(60)
            ),
            Err(NotCacheable::Forbidden)
        );
        assert_eq!(
            judge_fields(&[("Expires", expires), ("Age", "100")], &any(60)),
            Ok(Freshness {
                valid_sec: NOW,
                last_modified: -1,
                ..Freshness::default()
            }),
            "fresh through the second it ends in"
        );
        assert_eq!(
            judge_fields(&[("Expires", expires), ("Age", "101")], &any(60)),
            Err(NotCacheable::Forbidden)
        );
        // nginx's own X-Accel-Expires and proxy_cache_valid are this cache's times: kept.
        let fresh = judge_fields(&[("X-Accel-Expires", "10"), ("Age", "5")], &[]).unwrap();
        assert_eq!(fresh.valid_sec, NOW + 10);
        let fresh = judge_fields(&[("Age", "5")], &any(60)).unwrap();
        assert_eq!(fresh.valid_sec, NOW + 60);
    }

    /// RFC 9111 section 5.1 (the first member of a list, anything but a non-negative
    /// integer ignored) and section 1.2.2 (a value too large counts as 2^31).
    #[test]
    fn age_values_are_read_strictly() {
        assert_eq!(parse_age(b"60"), Some(60));
        assert_eq!(parse_age(b"7200, 0"), Some(7200));
        assert_eq!(parse_age(b"0,7200"), Some(0));
        assert_eq!(parse_age(b"99999999999999999999999"), Some(AGE_MAX));
        assert_eq!(parse_age(b"3000000000"), Some(AGE_MAX));
        for ignored in ["-7200", "7200.0", "abc", "10s", "10;x=y", "", " , 5"] {
            assert_eq!(parse_age(ignored.as_bytes()), None, "{ignored:?}");
        }
        // A huge age uses up any lifetime; an ignored one takes nothing off.
        assert_eq!(
            judge_fields(
                &[("Cache-Control", "max-age=3600"), ("Age", "9999999999999")],
                &[]
            ),
            Err(NotCacheable::Forbidden)
        );
        let fresh = judge_fields(&[("Cache-Control", "max-age=100"), ("Age", "-50")], &[]).unwrap();
        assert_eq!(fresh.valid_sec, NOW + 100);
        // Two lines: the first line's value.
        let fresh = judge_fields(
            &[
                ("Age", "10"),
                ("Age", "90"),
                ("Cache-Control", "max-age=100"),
            ],
            &[],
        )
        .unwrap();
        assert_eq!(fresh.valid_sec, NOW + 90);
    }

    /// RFC 9111 section 5.2: `max-age` is `token "=" ...` without white space; section
    /// 4.2.1: of two `max-age` directives the first is used.
    #[test]
    fn cache_control_directives_are_parsed_strictly() {
        for spaced in ["max-age =3600", "max-age= 3600", "max-age = 3600"] {
            assert_eq!(
                judge_fields(&[("Cache-Control", spaced)], &[]),
                Err(NotCacheable::NoTime),
                "{spaced:?} is no max-age"
            );
        }
        let fresh = judge_fields(&[("Cache-Control", "max-age=1800, max-age=1")], &[]).unwrap();
        assert_eq!(fresh.valid_sec, NOW + 1800);
        let fresh = judge_fields(&[("Cache-Control", "max-age=1, max-age=1800")], &[]).unwrap();
        assert_eq!(fresh.valid_sec, NOW + 1);
        let fresh = judge_fields(
            &[
                ("Cache-Control", "max-age=1"),
                ("Cache-Control", "max-age=1800"),
            ],
            &[],
        )
        .unwrap();
        assert_eq!(fresh.valid_sec, NOW + 1, "the first line's");
        let fresh = judge_fields(&[("Cache-Control", "max-age=\"3600\"")], &[]).unwrap();
        assert_eq!(fresh.valid_sec, NOW + 3600, "a quoted value");
        let fresh = judge_fields(&[("Cache-Control", "max-age=003600")], &[]).unwrap();
        assert_eq!(fresh.valid_sec, NOW + 3600);
        assert_eq!(
            judge_fields(&[("Cache-Control", "max-age='3600'")], &any(60)),
            Err(NotCacheable::Forbidden),
            "single quotes are no quotes"
        );
        assert_eq!(
            judge_fields(
                &[("Cache-Control", "extension=\"max-age=3600\", max-age=0")],
                &any(60)
            ),
            Err(NotCacheable::Forbidden),
            "max-age inside a quoted string is not a directive"
        );
    }

    /// RFC 9111 section 5.3: an invalid `Expires`, `0` especially, is a time in the past.
    #[test]
    fn invalid_expires_is_stale() {
        for value in ["0", "-1", "Tomorrow", ""] {
            assert_eq!(
                judge_fields(&[("Expires", value)], &any(60)),
                Err(NotCacheable::Forbidden),
                "{value:?}"
            );
        }
    }

    /// RFC 9213 section 2.1: a reverse-proxy cache follows `CDN-Cache-Control` and
    /// ignores Cache-Control and Expires when it is there; one that does not parse is
    /// ignored and Cache-Control applies. `proxy_ignore_headers CDN-Cache-Control` turns
    /// it off.
    #[test]
    fn cdn_cache_control_targets_this_cache() {
        let fields = [
            ("Cache-Control", "no-store, max-age=5"),
            ("CDN-Cache-Control", "max-age=100"),
            ("Expires", "Thu, 01 Jan 1970 00:00:01 GMT"),
        ];
        let fresh = judge_fields(&fields, &[]).unwrap();
        assert_eq!(fresh.valid_sec, NOW + 100);
        assert_eq!(
            judge_fields(
                &[
                    ("Cache-Control", "max-age=100"),
                    ("CDN-Cache-Control", "no-store")
                ],
                &any(60)
            ),
            Err(NotCacheable::Forbidden)
        );
        assert_eq!(
            judge_fields(
                &[
                    ("Cache-Control", "max-age=100"),
                    ("CDN-Cache-Control", "private")
                ],
                &any(60)
            ),
            Err(NotCacheable::Forbidden)
        );
        let invalid = [
            ("Cache-Control", "max-age=5"),
            ("CDN-Cache-Control", "max-age =100"),
        ];
        assert_eq!(judge_fields(&invalid, &[]).unwrap().valid_sec, NOW + 5);
        let two_lines = [
            ("CDN-Cache-Control", "max-age=7"),
            ("CDN-Cache-Control", "s-maxage=9"),
        ];
        assert_eq!(judge_fields(&two_lines, &[]).unwrap().valid_sec, NOW + 9);
        let aged = [("CDN-Cache-Control", "max-age=100"), ("Age", "25")];
        assert_eq!(judge_fields(&aged, &[]).unwrap().valid_sec, NOW + 75);
        let input = Input {
            status: 200,
            ignore: IgnoreHeaders(IgnoreHeaders::CDN_CACHE_CONTROL),
            valid: &[],
            now: NOW,
        };
        assert_eq!(
            judge(
                &input,
                fields
                    .iter()
                    .map(|(name, value)| (name.as_bytes(), value.as_bytes()))
            ),
            Err(NotCacheable::Forbidden),
            "ignored: Cache-Control's no-store applies"
        );
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
