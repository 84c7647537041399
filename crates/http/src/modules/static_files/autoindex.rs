//! `autoindex`: a directory listing in nginx's four formats, byte for byte as nginx 1.22
//! writes them. The directory is read on a pool (the listing); rendering is pure.

use logging::time::Civil;

pub use crate::modules::static_files::listing::{Entry, ListFailure, Listing, read_listing};
use crate::modules::static_files::settings::AutoindexFormat;

/// The longest name shown whole in the HTML listing (nginx's `NGX_HTTP_AUTOINDEX_NAME_LEN`).
const NAME_LEN: usize = 50;

/// The `Content-Type` of a format.
pub fn content_type(format: AutoindexFormat) -> &'static [u8] {
    match format {
        AutoindexFormat::Html => b"text/html",
        AutoindexFormat::Xml => b"text/xml; charset=utf-8",
        AutoindexFormat::Json => b"application/json",
        AutoindexFormat::Jsonp => b"application/javascript",
    }
}

/// How the HTML listing shows times and sizes.
#[derive(Clone, Copy, Debug)]
pub struct HtmlOptions {
    pub exact_size: bool,
    /// Seconds added to times (the local offset with `autoindex_localtime on`).
    pub utc_offset_seconds: i64,
    /// The listing goes out as UTF-8 (`charset utf-8`): names are measured and cut in
    /// characters, as nginx does then.
    pub utf8: bool,
}

/// The HTML listing of `entries` for `uri`.
pub fn html(uri: &[u8], entries: &[Entry], options: HtmlOptions) -> Vec<u8> {
    let mut out = Vec::with_capacity(256 + entries.len() * 120);
    out.extend_from_slice(b"<html>\r\n<head><title>Index of ");
    escape_html(uri, &mut out);
    out.extend_from_slice(b"</title></head>\r\n<body>\r\n<h1>Index of ");
    escape_html(uri, &mut out);
    out.extend_from_slice(b"</h1><hr><pre><a href=\"../\">../</a>\r\n");
    for entry in entries {
        html_entry(entry, options, &mut out);
    }
    out.extend_from_slice(b"</pre><hr></body>\r\n</html>\r\n");
    out
}

fn html_entry(entry: &Entry, options: HtmlOptions, out: &mut Vec<u8>) {
    out.extend_from_slice(b"<a href=\"");
    escape_uri_component(&entry.name, out);
    if entry.is_dir {
        out.push(b'/');
    }
    out.extend_from_slice(b"\">");
    let mut len = shown_len(&entry.name, options.utf8);
    let shown = if len <= NAME_LEN {
        &entry.name[..]
    } else if len == entry.name.len() {
        &entry.name[..NAME_LEN - 3]
    } else {
        // A name with multibyte characters is cut by characters.
        utf8_prefix(&entry.name, NAME_LEN - 3)
    };
    escape_html(shown, out);
    if len > NAME_LEN {
        out.extend_from_slice(b"..&gt;</a>");
    } else {
        if entry.is_dir && len < NAME_LEN {
            out.push(b'/');
            len += 1;
        }
        out.extend_from_slice(b"</a>");
        out.resize(out.len() + (NAME_LEN - len), b' ');
    }
    out.push(b' ');
    let civil = Civil::from_unix(entry.modified + options.utc_offset_seconds);
    out.extend_from_slice(
        format!(
            "{:02}-{}-{} {:02}:{:02} ",
            civil.day,
            civil.month_name(),
            civil.year,
            civil.hour,
            civil.minute
        )
        .as_bytes(),
    );
    if entry.is_dir {
        let dash: &[u8] = if options.exact_size {
            b"                  -"
        } else {
            b"      -"
        };
        out.extend_from_slice(dash);
    } else if options.exact_size {
        out.extend_from_slice(format!("{:>19}", entry.len).as_bytes());
    } else {
        out.extend_from_slice(human_size(entry.len).as_bytes());
    }
    out.extend_from_slice(b"\r\n");
}

/// A name's length as the listing counts it: characters of a valid UTF-8 name in a
/// UTF-8 listing, else bytes (nginx's `ngx_utf8_length`).
fn shown_len(name: &[u8], utf8: bool) -> usize {
    match std::str::from_utf8(name) {
        Ok(text) if utf8 => text.chars().count(),
        _ => name.len(),
    }
}

/// The first `chars` characters of valid UTF-8 `name`.
fn utf8_prefix(name: &[u8], chars: usize) -> &[u8] {
    let text = std::str::from_utf8(name).unwrap_or_default();
    let end = text
        .char_indices()
        .nth(chars)
        .map_or(text.len(), |(at, _)| at);
    &name[..end]
}

/// nginx's rounded sizes: bytes up to 9999, then K, M and G, rounding halves up.
fn human_size(len: u64) -> String {
    const K: u64 = 1024;
    const M: u64 = 1024 * 1024;
    const G: u64 = 1024 * 1024 * 1024;
    let scaled = |unit: u64| len / unit + u64::from(len % unit > unit / 2 - 1);
    if len > G - 1 {
        format!("{:>6}G", scaled(G))
    } else if len > M - 1 {
        format!("{:>6}M", scaled(M))
    } else if len > 9999 {
        format!("{:>6}K", scaled(K))
    } else {
        format!(" {len:>6}")
    }
}

/// The JSON listing; with a callback, JSONP.
pub fn json(entries: &[Entry], callback: Option<&[u8]>) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + entries.len() * 100);
    if let Some(callback) = callback {
        out.extend_from_slice(b"/* callback */\r\n");
        out.extend_from_slice(callback);
        out.push(b'(');
    }
    out.push(b'[');
    for entry in entries {
        out.extend_from_slice(b"\r\n{ \"name\":\"");
        escape_json(&entry.name, &mut out);
        out.extend_from_slice(b"\", \"type\":\"");
        out.extend_from_slice(kind(entry));
        out.extend_from_slice(b"\", \"mtime\":\"");
        http1::response::write_http_date(&mut out, entry.modified);
        if entry.is_file {
            out.extend_from_slice(b"\", \"size\":");
            out.extend_from_slice(entry.len.to_string().as_bytes());
        } else {
            out.push(b'"');
        }
        out.extend_from_slice(b" },");
    }
    if !entries.is_empty() {
        out.pop();
    }
    out.extend_from_slice(b"\r\n]");
    if callback.is_some() {
        out.extend_from_slice(b");");
    }
    out
}

/// The XML listing.
pub fn xml(entries: &[Entry]) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 + entries.len() * 100);
    out.extend_from_slice(b"<?xml version=\"1.0\"?>\r\n<list>\r\n");
    for entry in entries {
        let kind = kind(entry);
        out.push(b'<');
        out.extend_from_slice(kind);
        let civil = Civil::from_unix(entry.modified);
        out.extend_from_slice(
            format!(
                " mtime=\"{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
                civil.year, civil.month, civil.day, civil.hour, civil.minute, civil.second
            )
            .as_bytes(),
        );
        if entry.is_file {
            out.extend_from_slice(format!("\" size=\"{}", entry.len).as_bytes());
        }
        out.extend_from_slice(b"\">");
        escape_html(&entry.name, &mut out);
        out.extend_from_slice(b"</");
        out.extend_from_slice(kind);
        out.extend_from_slice(b">\r\n");
    }
    out.extend_from_slice(b"</list>\r\n");
    out
}

fn kind(entry: &Entry) -> &'static [u8] {
    if entry.is_dir {
        b"directory"
    } else if entry.is_file {
        b"file"
    } else {
        b"other"
    }
}

/// The JSONP callback from the `callback` argument: `Ok(None)` without one (or an empty
/// one: the listing is then plain JSON), `Err` with the
/// log line for an invalid one (nginx answers 400).
pub(crate) fn jsonp_callback(args: &[u8]) -> Result<Option<&[u8]>, String> {
    let Some(callback) = argument(args, b"callback").filter(|value| !value.is_empty()) else {
        return Ok(None);
    };
    let shown = || String::from_utf8_lossy(callback).into_owned();
    if callback.len() > 128 {
        return Err(format!(
            "client sent too long callback name: \"{}\"",
            shown()
        ));
    }
    let valid = callback
        .iter()
        .all(|&b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.');
    if !valid {
        return Err(format!(
            "client sent invalid callback name: \"{}\"",
            shown()
        ));
    }
    Ok(Some(callback))
}

/// An argument's raw value, the name compared without case (nginx's `ngx_http_arg`).
fn argument<'a>(args: &'a [u8], name: &[u8]) -> Option<&'a [u8]> {
    args.split(|&b| b == b'&').find_map(|pair| {
        let value = pair.get(name.len()..)?.strip_prefix(b"=")?;
        pair[..name.len()]
            .eq_ignore_ascii_case(name)
            .then_some(value)
    })
}

/// nginx's HTML escaping: `<`, `>`, `&` and `"`.
fn escape_html(bytes: &[u8], out: &mut Vec<u8>) {
    for &byte in bytes {
        match byte {
            b'<' => out.extend_from_slice(b"&lt;"),
            b'>' => out.extend_from_slice(b"&gt;"),
            b'&' => out.extend_from_slice(b"&amp;"),
            b'"' => out.extend_from_slice(b"&quot;"),
            _ => out.push(byte),
        }
    }
}

/// nginx's JSON string escaping.
fn escape_json(bytes: &[u8], out: &mut Vec<u8>) {
    for &byte in bytes {
        match byte {
            b'\\' | b'"' => out.extend_from_slice(&[b'\\', byte]),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            0..=0x1f => out.extend_from_slice(format!("\\u{byte:04X}").as_bytes()),
            _ => out.push(byte),
        }
    }
}

const HEX_UPPER: &[u8; 16] = b"0123456789ABCDEF";

/// Percent-escapes all but ALPHA, DIGIT, `-`, `.`, `_` and `~` (nginx's
/// `NGX_ESCAPE_URI_COMPONENT`).
pub(crate) fn escape_uri_component(bytes: &[u8], out: &mut Vec<u8>) {
    escape_with(bytes, out, |byte| {
        !(byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~'))
    });
}

/// Percent-escapes what may not appear in a URI path (nginx's `NGX_ESCAPE_URI`): controls,
/// space, `"`, `#`, `%`, `<`, `>`, `?`, `\`, `^`, `` ` ``, `{`, `|`, `}`, DEL and bytes
/// above it.
pub fn escape_uri(bytes: &[u8], out: &mut Vec<u8>) {
    escape_with(bytes, out, uri_needs_escape);
}

/// Whether [`escape_uri`] changes anything.
pub fn uri_needs_escaping(bytes: &[u8]) -> bool {
    bytes.iter().any(|&byte| uri_needs_escape(byte))
}

fn uri_needs_escape(byte: u8) -> bool {
    byte <= 0x20
        || byte >= 0x7f
        || matches!(
            byte,
            b'"' | b'#' | b'%' | b'<' | b'>' | b'?' | b'\\' | b'^' | b'`' | b'{' | b'|' | b'}'
        )
}

fn escape_with(bytes: &[u8], out: &mut Vec<u8>, needs: impl Fn(u8) -> bool) {
    for &byte in bytes {
        if needs(byte) {
            out.extend_from_slice(&[
                b'%',
                HEX_UPPER[usize::from(byte >> 4)],
                HEX_UPPER[usize::from(byte & 0xf)],
            ]);
        } else {
            out.push(byte);
        }
    }
}

#[cfg(test)]
mod tests;
