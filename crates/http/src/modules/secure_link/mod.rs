//! `secure_link`, `secure_link_md5`, `secure_link_secret`, `$secure_link` and
//! `$secure_link_expires` (nginx's ngx_http_secure_link_module): links that carry an MD5
//! of what the server knows, and optionally an expiry time.
//!
//! Two modes, as in nginx. With `secure_link` and `secure_link_md5`, the first gives
//! `CHECKSUM[,EXPIRES]` (the checksum in URL-safe base64, the expiry in Unix seconds) and
//! the second the text whose MD5 the checksum must be; `$secure_link` is `1` for a match,
//! `0` for a match whose time has passed, and not found otherwise. With
//! `secure_link_secret WORD`, the request URI is `/PREFIX/HASH/LINK` with `HASH` the hex
//! MD5 of `LINK` followed by `WORD`; `$secure_link` is then `LINK`, or not found.

pub mod directives;
pub mod settings;
pub mod variables;

use md5::{Digest, Md5};

/// The most base64 characters of a checksum nginx reads (16 bytes, padded).
const CHECKSUM_TEXT_MAX: usize = 24;

/// What the MD5 mode finds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The checksum matches and the link has no expiry or it is still ahead.
    Valid,
    /// The checksum matches but the expiry time has passed.
    Expired,
    /// No checksum, a malformed one, a bad expiry or a mismatch.
    Invalid,
}

/// The MD5 mode's check of `link` (the value of `secure_link`) against the MD5 of `text`
/// (the value of `secure_link_md5`) at `now_seconds`.
pub fn check_md5(link: &[u8], text: &[u8], now_seconds: i64) -> Verdict {
    let (checksum, expires) = split_expires(link);
    let expires = match expires {
        Some(digits) => match parse_expires(digits) {
            Some(seconds) => Some(seconds),
            None => return Verdict::Invalid,
        },
        None => None,
    };
    if checksum.len() > CHECKSUM_TEXT_MAX {
        return Verdict::Invalid;
    }
    let Some(wanted) = decode_base64url(checksum) else {
        return Verdict::Invalid;
    };
    if wanted.len() != 16 || wanted[..] != Md5::digest(text)[..] {
        return Verdict::Invalid;
    }
    match expires {
        Some(seconds) if seconds < now_seconds => Verdict::Expired,
        _ => Verdict::Valid,
    }
}

/// `CHECKSUM[,EXPIRES]` split at the first comma.
pub fn split_expires(link: &[u8]) -> (&[u8], Option<&[u8]>) {
    match link.iter().position(|&byte| byte == b',') {
        Some(at) => (&link[..at], Some(&link[at + 1..])),
        None => (link, None),
    }
}

/// An expiry time: decimal digits only, above zero, as nginx's `ngx_atotm` and its check.
pub(crate) fn parse_expires(digits: &[u8]) -> Option<i64> {
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let seconds = std::str::from_utf8(digits).ok()?.parse::<i64>().ok()?;
    (seconds > 0).then_some(seconds)
}

/// URL-safe base64 (`-` and `_`) as nginx decodes it: up to the first `=`, any other
/// character outside the alphabet an error, a lone last character an error, leftover
/// bits dropped.
pub fn decode_base64url(text: &[u8]) -> Option<Vec<u8>> {
    let end = text
        .iter()
        .position(|&byte| byte == b'=')
        .unwrap_or(text.len());
    let text = &text[..end];
    if text.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let mut bits: u32 = 0;
    let mut count = 0;
    for &byte in text {
        let value = match byte {
            b'A'..=b'Z' => byte - b'A',
            b'a'..=b'z' => byte - b'a' + 26,
            b'0'..=b'9' => byte - b'0' + 52,
            b'-' => 62,
            b'_' => 63,
            _ => return None,
        };
        bits = (bits << 6) | u32::from(value);
        count += 6;
        if count >= 8 {
            count -= 8;
            out.push((bits >> count) as u8);
            bits &= (1 << count) - 1;
        }
    }
    Some(out)
}

/// The older mode's check: in `request_uri` (`/PREFIX/HASH/LINK`, the URI as the client
/// sent it), `HASH` must be 32 hex digits spelling the MD5 of `LINK` then `secret`; the
/// answer is `LINK`.
pub fn check_secret<'a>(request_uri: &'a [u8], secret: &[u8]) -> Option<&'a [u8]> {
    let after_prefix = request_uri.get(1..)?;
    let hash_start = after_prefix.iter().position(|&byte| byte == b'/')? + 1;
    let rest = &after_prefix[hash_start..];
    let hash_len = rest.iter().position(|&byte| byte == b'/')?;
    let (hash, link) = (&rest[..hash_len], &rest[hash_len + 1..]);
    if hash.len() != 32 || link.is_empty() {
        return None;
    }
    let mut digest = Md5::new();
    digest.update(link);
    digest.update(secret);
    let digest = digest.finalize();
    for (pair, byte) in hash.chunks(2).zip(digest.iter()) {
        let high = (pair[0] as char).to_digit(16)?;
        let low = (pair[1] as char).to_digit(16)?;
        if high * 16 + low != u32::from(*byte) {
            return None;
        }
    }
    Some(link)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a client computes for a link: URL-safe base64 of the MD5, without padding.
    fn checksum(text: &str) -> String {
        const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        let digest = Md5::digest(text.as_bytes());
        let mut out = String::new();
        for chunk in digest.chunks(3) {
            let mut block = [0u8; 3];
            block[..chunk.len()].copy_from_slice(chunk);
            let value = u32::from_be_bytes([0, block[0], block[1], block[2]]);
            for index in 0..=chunk.len() {
                out.push(ALPHABET[(value >> (18 - 6 * index) & 63) as usize] as char);
            }
        }
        out
    }

    #[test]
    fn the_md5_mode_matches_with_or_without_padding() {
        let sum = checksum("secret/test.html");
        assert_eq!(sum.len(), 22);
        assert_eq!(
            check_md5(sum.as_bytes(), b"secret/test.html", 0),
            Verdict::Valid
        );
        let padded = format!("{sum}==");
        assert_eq!(
            check_md5(padded.as_bytes(), b"secret/test.html", 0),
            Verdict::Valid
        );
        assert_eq!(
            check_md5(sum.as_bytes(), b"secret/other.html", 0),
            Verdict::Invalid
        );
    }

    #[test]
    fn malformed_checksums_are_invalid() {
        let text = b"secret/test.html";
        let sum = checksum("secret/test.html");
        for bad in [
            format!("{sum}QQ"),
            format!("{sum}-TOOLONG"),
            "BADHASHLENGTH".to_owned(),
            String::new(),
            format!("{}+/", &sum[..20]),
        ] {
            assert_eq!(
                check_md5(bad.as_bytes(), text, 0),
                Verdict::Invalid,
                "{bad}"
            );
        }
    }

    #[test]
    fn expiry_times() {
        let now = 1_800_000_000;
        let at = |expires: i64| {
            let text = format!("secret/e.html{expires}");
            let link = format!("{},{expires}", checksum(&text));
            check_md5(link.as_bytes(), text.as_bytes(), now)
        };
        assert_eq!(at(now + 86400), Verdict::Valid);
        assert_eq!(at(now), Verdict::Valid);
        assert_eq!(at(now - 1), Verdict::Expired);
        assert_eq!(at(0), Verdict::Invalid);
        let text = "secret/e.html";
        for expires in ["", "12x", "-5", "99999999999999999999999"] {
            let link = format!("{},{expires}", checksum(text));
            assert_eq!(
                check_md5(link.as_bytes(), text.as_bytes(), now),
                Verdict::Invalid,
                "{expires}"
            );
        }
        assert_eq!(split_expires(b"abc,123"), (&b"abc"[..], Some(&b"123"[..])));
        assert_eq!(split_expires(b"abc"), (&b"abc"[..], None));
    }

    #[test]
    fn base64url_decodes_as_nginx() {
        assert_eq!(decode_base64url(b"aGVsbG8").unwrap(), b"hello");
        assert_eq!(decode_base64url(b"aGVsbG8=").unwrap(), b"hello");
        assert_eq!(decode_base64url(b"-_8").unwrap(), [0xfb, 0xff]);
        assert!(decode_base64url(b"aGVsb").is_none());
        assert!(decode_base64url(b"aGV+").is_none());
        assert_eq!(decode_base64url(b"").unwrap(), b"");
    }

    #[test]
    fn the_secret_mode_reads_prefix_hash_link() {
        let hex: String = Md5::digest(b"test.htmlsecret")
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect();
        let uri = format!("/p/{hex}/test.html");
        assert_eq!(
            check_secret(uri.as_bytes(), b"secret"),
            Some(&b"test.html"[..])
        );
        let upper = format!("/p/{}/test.html", hex.to_uppercase());
        assert_eq!(
            check_secret(upper.as_bytes(), b"secret"),
            Some(&b"test.html"[..])
        );
        assert_eq!(check_secret(uri.as_bytes(), b"other"), None);
        let fake = format!("/p/{}/test.html", "x".repeat(32));
        assert_eq!(check_secret(fake.as_bytes(), b"secret"), None);
        for bad in ["/p/foo/test.html", "/p%2f", "/p/test.html", "/", "", "/p/"] {
            assert_eq!(check_secret(bad.as_bytes(), b"secret"), None, "{bad}");
        }
        let empty_link = format!("/p/{hex}/");
        assert_eq!(check_secret(empty_link.as_bytes(), b"secret"), None);
    }
}
