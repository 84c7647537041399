//! `userid` (nginx's ngx_http_userid_module): a cookie that identifies the client, with
//! `$uid_got`, `$uid_set` and `$uid_reset`.
//!
//! An identifier is 16 bytes, four 32-bit words: the service (the server's IPv4 address,
//! the last four bytes of its IPv6 address, 0 on a Unix socket, or `userid_service`), the
//! time, a per-worker start value and a sequence number; version 2 (`userid on`) keeps the
//! words in network byte order, version 1 (`userid v1`) in the machine's. The cookie's
//! value is the bytes in base64 (24 characters, the 23rd replaced by `userid_mark`); the
//! variables show the words as nginx on a little-endian machine prints them, as 32 hex
//! digits. A request that brings a valid cookie gets none back, unless `$uid_reset` is
//! set (not empty and not `0`; `log` also logs the reset) or its mark differs.

pub mod directives;
pub mod settings;
pub mod variables;

use std::cell::Cell;
use std::net::SocketAddr;

use crate::kernel::request::{ConnectionInfo, Request};
use crate::kernel::response::Bytes;
use crate::kernel::variables::RequestVariables;
use crate::kernel::variables::evaluate::{Reborrow, decode_base64};
pub use crate::kernel::variables::time_format::cookie_time;
use settings::{Expires, Mode, SameSite, UserId};

/// What nginx writes for `userid_expires max`.
const EXPIRES_MAX: &str = "Thu, 31-Dec-37 23:55:55 GMT";

/// The identifier a request brought in its cookie, if the cookie holds a valid one.
pub fn got(settings: &UserId, request: &Request<'_>) -> Option<[u8; 16]> {
    let cookie = cookie_value(request, settings.name.as_bytes())?;
    decode_cookie(cookie)
}

/// The identifier in a cookie value: its first 22 characters in base64, the last word
/// not zero (nginx's test for "no identifier").
pub fn decode_cookie(value: &[u8]) -> Option<[u8; 16]> {
    let text = value.get(..22)?;
    let bytes = decode_base64(text)?;
    let id: [u8; 16] = bytes.get(..16)?.try_into().ok()?;
    (id[12..] != [0, 0, 0, 0]).then_some(id)
}

fn cookie_value<'a>(request: &'a Request<'_>, name: &[u8]) -> Option<&'a [u8]> {
    request.headers(b"cookie").find_map(|header| {
        header.split(|&byte| byte == b';').find_map(|pair| {
            let pair = pair.trim_ascii_start();
            let equals = memchr::memchr(b'=', pair)?;
            pair[..equals]
                .eq_ignore_ascii_case(name)
                .then(|| &pair[equals + 1..])
        })
    })
}

/// The identifier to send in a cookie for this request, decided once: `None` when the
/// module is not setting cookies here or the request's own cookie stands.
pub fn to_set(variables: &RequestVariables<'_>, settings: &UserId) -> Option<[u8; 16]> {
    *variables
        .request
        .userid_set
        .get_or_init(|| decide(variables, settings))
}

fn decide(variables: &RequestVariables<'_>, settings: &UserId) -> Option<[u8; 16]> {
    if !matches!(settings.mode, Mode::On | Mode::V1) || variables.request.is_subrequest() {
        return None;
    }
    let request = variables.request;
    if let Some(got) = got(settings, request) {
        let mut reset = Vec::new();
        if let Some(template) = &settings.reset {
            template.evaluate(&mut Reborrow(variables), &mut reset);
        }
        if reset.is_empty() || reset == b"0" {
            let cookie = cookie_value(request, settings.name.as_bytes()).unwrap_or_default();
            let marked = match settings.mark {
                None => true,
                Some(mark) => cookie.len() > 23 && cookie[22] == mark && cookie[23] == b'=',
            };
            // A cookie without the location's mark is sent again, marked.
            return if marked { None } else { Some(got) };
        }
        if reset == b"log" {
            variables.log(
                logging::Level::Notice,
                format_args!(
                    "userid cookie \"{}={}\" was reset",
                    settings.name,
                    hex_words(&got)
                ),
            );
        }
    }
    Some(new_id(
        variables.connection,
        settings,
        variables.now.unix_seconds,
    ))
}

thread_local! {
    /// This worker's start value and sequence number, as nginx keeps them per process.
    static SEQUENCE: Cell<(u32, u32)> = const { Cell::new((0, 0x0303_0302)) };
}

fn new_id(connection: &ConnectionInfo, settings: &UserId, now_seconds: i64) -> [u8; 16] {
    let time = now_seconds as u32;
    let (start, sequence) = SEQUENCE.with(|cell| {
        let (mut start, sequence) = cell.get();
        if start == 0 {
            start = ((time & 0xff) << 24) | (std::process::id() << 8 & 0x00ff_ff00) | 1;
        }
        let next = sequence.wrapping_add(0x100).max(0x0303_0302);
        cell.set((start, next));
        (start, sequence)
    });
    let mut id = [0u8; 16];
    match settings.mode {
        Mode::V1 => {
            let service = settings.service.unwrap_or(0);
            for (index, word) in [service, time, start, sequence].into_iter().enumerate() {
                id[index * 4..index * 4 + 4].copy_from_slice(&word.to_le_bytes());
            }
        }
        _ => {
            let service = match settings.service {
                Some(service) => service.to_be_bytes(),
                None => match connection.local {
                    Some(SocketAddr::V4(address)) => address.ip().octets(),
                    Some(SocketAddr::V6(address)) => {
                        let octets = address.ip().octets();
                        [octets[12], octets[13], octets[14], octets[15]]
                    }
                    None => [0; 4],
                },
            };
            id[..4].copy_from_slice(&service);
            for (index, word) in [time, start, sequence].into_iter().enumerate() {
                id[4 + index * 4..8 + index * 4].copy_from_slice(&word.to_be_bytes());
            }
        }
    }
    id
}

/// The identifier as nginx prints it on a little-endian machine: each word in hex.
pub fn hex_words(id: &[u8; 16]) -> String {
    id.chunks(4)
        .map(|word| {
            format!(
                "{:08X}",
                u32::from_le_bytes([word[0], word[1], word[2], word[3]])
            )
        })
        .collect()
}

/// The cookie's value: the 16 bytes in base64, the mark in the 23rd character.
pub fn cookie_text(id: &[u8; 16], mark: Option<u8>) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = Vec::with_capacity(24);
    for chunk in id.chunks(3) {
        let mut block = [0u8; 3];
        block[..chunk.len()].copy_from_slice(chunk);
        let value = u32::from_be_bytes([0, block[0], block[1], block[2]]);
        for index in 0..4 {
            if index <= chunk.len() {
                out.push(ALPHABET[(value >> (18 - 6 * index) & 63) as usize]);
            } else {
                out.push(b'=');
            }
        }
    }
    if let Some(mark) = mark {
        out[22] = mark;
    }
    String::from_utf8(out).unwrap_or_default()
}

/// The header filter: `Set-Cookie` (and `P3P`) when the request is to get an identifier.
pub fn filter(
    variables: &RequestVariables<'_>,
    settings: &UserId,
) -> Vec<(&'static [u8], Vec<u8>)> {
    let Some(id) = to_set(variables, settings) else {
        return Vec::new();
    };
    let mut cookie = format!("{}={}", settings.name, cookie_text(&id, settings.mark));
    match settings.expires {
        Expires::Off => {}
        Expires::Max => {
            cookie.push_str("; expires=");
            cookie.push_str(EXPIRES_MAX);
        }
        Expires::After(after) => {
            cookie.push_str("; expires=");
            cookie.push_str(&cookie_time(
                variables.now.unix_seconds + after.as_secs() as i64,
            ));
        }
    }
    if let Some(domain) = &settings.domain {
        cookie.push_str("; domain=");
        cookie.push_str(domain);
    }
    cookie.push_str("; path=");
    cookie.push_str(&settings.path);
    if settings.flags.secure {
        cookie.push_str("; secure");
    }
    if settings.flags.httponly {
        cookie.push_str("; httponly");
    }
    match settings.flags.samesite {
        Some(SameSite::Strict) => cookie.push_str("; samesite=strict"),
        Some(SameSite::Lax) => cookie.push_str("; samesite=lax"),
        Some(SameSite::None) => cookie.push_str("; samesite=none"),
        None => {}
    }
    let mut fields = vec![(&b"Set-Cookie"[..], cookie.into_bytes())];
    if let Some(p3p) = &settings.p3p {
        fields.push((&b"P3P"[..], p3p.as_bytes().to_vec()));
    }
    fields
}

/// Adds the filter's fields to the response head.
pub fn apply(request: &mut Request<'_>, fields: Vec<(&'static [u8], Vec<u8>)>) {
    for (name, value) in fields {
        request
            .response
            .headers
            .push((Bytes::Borrowed(name), Bytes::Owned(value)));
    }
}

#[cfg(test)]
mod tests;
