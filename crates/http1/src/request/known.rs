//! Well-known request headers: recognising them, and the checks nginx runs as each one arrives.

pub(super) use crate::ascii::eq_lowercase;
use crate::error::RequestError;
use crate::host::host_len;
use crate::request::{Browser, HeaderField, KnownHeaders};

/// A request header nginx handles by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Known {
    Host,
    Connection,
    ContentLength,
    TransferEncoding,
    Expect,
    UserAgent,
    Referer,
    IfModifiedSince,
    IfNoneMatch,
    IfMatch,
    IfUnmodifiedSince,
    IfRange,
    Range,
    Authorization,
    KeepAlive,
    Upgrade,
    Te,
    Cookie,
    XForwardedFor,
    AcceptEncoding,
    ContentRange,
    ContentType,
    ProxyAuthorization,
}

impl Known {
    /// Recognises `name` case-insensitively. The length and the first byte pick at most
    /// one candidate (two for length 8), so each name costs one comparison.
    pub fn from_name(name: &[u8]) -> Option<Known> {
        let first = name.first()?.to_ascii_lowercase();
        let (known_name, known): (&[u8], Known) = match (name.len(), first) {
            (2, b't') => (b"te", Known::Te),
            (4, b'h') => (b"host", Known::Host),
            (5, b'r') => (b"range", Known::Range),
            (6, b'c') => (b"cookie", Known::Cookie),
            (6, b'e') => (b"expect", Known::Expect),
            (7, b'r') => (b"referer", Known::Referer),
            (7, b'u') => (b"upgrade", Known::Upgrade),
            (8, b'i') if name[3].eq_ignore_ascii_case(&b'm') => (b"if-match", Known::IfMatch),
            (8, b'i') => (b"if-range", Known::IfRange),
            (10, b'c') => (b"connection", Known::Connection),
            (10, b'u') => (b"user-agent", Known::UserAgent),
            (10, b'k') => (b"keep-alive", Known::KeepAlive),
            (12, b'c') => (b"content-type", Known::ContentType),
            (13, b'i') => (b"if-none-match", Known::IfNoneMatch),
            (13, b'a') => (b"authorization", Known::Authorization),
            (13, b'c') => (b"content-range", Known::ContentRange),
            (14, b'c') => (b"content-length", Known::ContentLength),
            (15, b'x') => (b"x-forwarded-for", Known::XForwardedFor),
            (15, b'a') => (b"accept-encoding", Known::AcceptEncoding),
            (17, b'i') => (b"if-modified-since", Known::IfModifiedSince),
            (17, b't') => (b"transfer-encoding", Known::TransferEncoding),
            (19, b'i') => (b"if-unmodified-since", Known::IfUnmodifiedSince),
            (19, b'p') => (b"proxy-authorization", Known::ProxyAuthorization),
            _ => return None,
        };
        eq_lowercase(name, known_name).then_some(known)
    }

    /// nginx rejects a second header of these kinds (`ngx_http_process_unique_header_line`).
    fn is_unique(self) -> bool {
        matches!(
            self,
            Known::IfModifiedSince
                | Known::IfUnmodifiedSince
                | Known::IfMatch
                | Known::IfNoneMatch
                | Known::ContentLength
                | Known::ContentRange
                | Known::IfRange
                | Known::TransferEncoding
                | Known::Expect
                | Known::Authorization
                | Known::ProxyAuthorization
        )
    }
}

impl KnownHeaders {
    fn slot(&mut self, known: Known) -> &mut Option<usize> {
        match known {
            Known::Host => &mut self.host,
            Known::Connection => &mut self.connection,
            Known::ContentLength => &mut self.content_length,
            Known::TransferEncoding => &mut self.transfer_encoding,
            Known::Expect => &mut self.expect,
            Known::UserAgent => &mut self.user_agent,
            Known::Referer => &mut self.referer,
            Known::IfModifiedSince => &mut self.if_modified_since,
            Known::IfNoneMatch => &mut self.if_none_match,
            Known::IfMatch => &mut self.if_match,
            Known::IfUnmodifiedSince => &mut self.if_unmodified_since,
            Known::IfRange => &mut self.if_range,
            Known::Range => &mut self.range,
            Known::Authorization => &mut self.authorization,
            Known::KeepAlive => &mut self.keep_alive,
            Known::Upgrade => &mut self.upgrade,
            Known::Te => &mut self.te,
            Known::Cookie => &mut self.cookie,
            Known::XForwardedFor => &mut self.x_forwarded_for,
            Known::AcceptEncoding => &mut self.accept_encoding,
            Known::ContentRange => &mut self.content_range,
            Known::ContentType => &mut self.content_type,
            Known::ProxyAuthorization => &mut self.proxy_authorization,
        }
    }

    /// Records header number `index` and runs the check nginx runs when it arrives: a
    /// second `Host` or unique header is rejected, and `Host` must validate.
    pub(super) fn record(
        &mut self,
        buf: &[u8],
        headers: &[HeaderField],
        index: usize,
        field: &HeaderField,
    ) -> Result<(), RequestError> {
        let Some(known) = Known::from_name(&buf[field.name.clone()]) else {
            return Ok(());
        };
        let slot = self.slot(known);
        if let Some(previous) = *slot {
            let previous = headers[previous].clone();
            let duplicate = field.clone();
            return match known {
                Known::Host => Err(RequestError::DuplicateHost {
                    previous,
                    duplicate,
                }),
                _ if known.is_unique() => Err(RequestError::DuplicateHeader {
                    previous,
                    duplicate,
                }),
                _ => Ok(()),
            };
        }
        *slot = Some(index);
        if known == Known::Host && host_len(&buf[field.value.clone()]).is_none() {
            return Err(RequestError::InvalidHost);
        }
        Ok(())
    }
}

impl Browser {
    /// Updates the flags from one `User-Agent` value as nginx's
    /// `ngx_http_process_user_agent` does; several headers accumulate.
    pub(super) fn detect(&mut self, user_agent: &[u8]) {
        let found = Markers::find(user_agent);
        if let Some(at) = found.msie
            && at + 7 < user_agent.len()
        {
            self.msie = true;
            if user_agent[at + 6] == b'.' {
                match user_agent[at + 5] {
                    b'4' | b'5' => self.msie6 = true,
                    // MSIE 6 with SP2 ("SV1") handles gzip and keepalive.
                    b'6' if find(&user_agent[at + 8..], b"SV1").is_none() => {
                        self.msie6 = true;
                    }
                    _ => {}
                }
            }
        }
        if found.opera {
            self.opera = true;
            self.msie = false;
            self.msie6 = false;
        }
        if self.msie || self.opera {
            return;
        }
        if found.gecko {
            self.gecko = true;
        } else if found.chrome {
            self.chrome = true;
        } else if found.safari && found.mac_os_x {
            self.safari = true;
        } else if found.konqueror {
            self.konqueror = true;
        }
    }
}

/// Where the words browser detection looks for occur in a `User-Agent`, found in two
/// passes over it (the first letters `M`, `O`, `G`, then `C`, `S`, `K`) instead of one
/// search per word: six searches cost about 700 instructions per request even when the
/// value is a short non-browser one (`bench/instructions.sh return200`).
#[derive(Default)]
struct Markers {
    /// The first `MSIE `.
    msie: Option<usize>,
    opera: bool,
    gecko: bool,
    chrome: bool,
    safari: bool,
    mac_os_x: bool,
    konqueror: bool,
}

impl Markers {
    fn find(user_agent: &[u8]) -> Markers {
        let mut found = Markers::default();
        // A short value (`curl/8.5.0`, a load generator's) is read once, eight bytes at a
        // time, for its capital letters: two `memchr3` passes cost more to set up than that.
        if user_agent.len() <= SHORT_USER_AGENT_LEN_MAX {
            let mut offset = 0;
            while let Some(word) = user_agent[offset..].first_chunk::<8>() {
                let mut capitals = crate::ascii::uppercase_bits(u64::from_le_bytes(*word));
                while capitals != 0 {
                    let at = offset + (capitals.trailing_zeros() / 8) as usize;
                    found.note(&user_agent[at..], at);
                    capitals &= capitals - 1;
                }
                offset += 8;
            }
            for (at, byte) in user_agent.iter().enumerate().skip(offset) {
                if byte.is_ascii_uppercase() {
                    found.note(&user_agent[at..], at);
                }
            }
            return found;
        }
        for at in memchr::memchr3_iter(b'M', b'O', b'G', user_agent) {
            found.note(&user_agent[at..], at);
        }
        for at in memchr::memchr3_iter(b'C', b'S', b'K', user_agent) {
            found.note(&user_agent[at..], at);
        }
        found
    }

    /// The word that may start at `rest` (at offset `at` of the value), by its first letter.
    fn note(&mut self, rest: &[u8], at: usize) {
        match rest[0] {
            b'M' if rest.starts_with(b"MSIE ") => {
                self.msie.get_or_insert(at);
            }
            b'M' => self.mac_os_x |= rest.starts_with(b"Mac OS X"),
            b'O' => self.opera |= rest.starts_with(b"Opera"),
            b'G' => self.gecko |= rest.starts_with(b"Gecko/"),
            b'C' => self.chrome |= rest.starts_with(b"Chrome/"),
            b'S' => self.safari |= rest.starts_with(b"Safari/"),
            b'K' => self.konqueror |= rest.starts_with(b"Konqueror"),
            _ => {}
        }
    }
}

/// Up to this length a `User-Agent` is searched a byte at a time.
const SHORT_USER_AGENT_LEN_MAX: usize = 48;

/// Substring search for short needles in short values: cheaper than building a
/// `memmem::Finder` per call, which showed up as the top cost of `analyze` in the bench.
fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    let (&first, rest) = needle.split_first()?;
    memchr::memchr_iter(first, haystack).find(|&at| haystack[at + 1..].starts_with(rest))
}

/// Case-insensitive substring search, as nginx's `ngx_strcasestrn`.
pub(super) fn contains_ignore_case(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window.eq_ignore_ascii_case(needle))
}
