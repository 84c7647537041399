//! The PROXY protocol header (versions 1 and 2) read from the bytes that have arrived.
//! Pure: no I/O, no logging; the caller decides what an error costs the connection.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The longest version 1 line, CRLF included (the protocol's own limit, nginx's too).
pub const V1_MAX_HEADER: usize = 107;
/// The longest header nginx reads: a version 2 header with its TLVs beyond this is refused.
pub const MAX_HEADER: usize = 4096;

const V2_SIGNATURE: &[u8; 12] = b"\r\n\r\n\0\r\nQUIT\n";
/// Signature, version and command, family and transport, length.
const V2_FIXED: usize = 16;

/// What a PROXY header said about the connection it came on.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProxyHeader {
    /// `$proxy_protocol_addr`: as written in a version 1 line, formatted for version 2.
    pub source_addr: Box<[u8]>,
    pub source_port: u16,
    /// `$proxy_protocol_server_addr`.
    pub destination_addr: Box<[u8]>,
    pub destination_port: u16,
    /// A version 2 header's TLVs, unparsed (`$proxy_protocol_tlv_*` looks them up).
    pub tlvs: Box<[u8]>,
}

/// How far the bytes so far go.
#[derive(Debug, PartialEq, Eq)]
pub enum Parsed {
    /// More bytes are needed to judge.
    Incomplete,
    /// A whole header of `len` bytes; `None` for `UNKNOWN`, `LOCAL` and the address
    /// families and transports nginx ignores (the connection's own addresses stand).
    Done {
        len: usize,
        header: Option<ProxyHeader>,
    },
    Invalid(Broken),
}

/// Why a header was refused, with nginx's error-log wording.
#[derive(Debug, PartialEq, Eq)]
pub enum Broken {
    /// Not a PROXY header, or a version 1 line nginx cannot read: the text up to the
    /// first CR or LF.
    Header(Vec<u8>),
    /// A version 2 header whose version nibble is not 2.
    Version(u8),
    /// A version 2 header longer than [`MAX_HEADER`].
    TooLarge,
    /// A version 2 header too short for the addresses its family needs.
    Addresses,
}

impl std::fmt::Display for Broken {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Broken::Header(text) => {
                write!(formatter, "broken header: \"{}\"", text.escape_ascii())
            }
            Broken::Version(version) => {
                write!(formatter, "unknown PROXY protocol version: {version}")
            }
            Broken::TooLarge => formatter.write_str("header is too large"),
            Broken::Addresses => formatter.write_str("broken PROXY protocol v2 addresses"),
        }
    }
}

/// Reads a header from the start of `buf`. `complete` says no more bytes will come (the
/// client closed): what is there is judged as it is, as nginx judges its one read.
pub fn parse(buf: &[u8], complete: bool) -> Parsed {
    if buf.starts_with(V2_SIGNATURE) || V2_SIGNATURE.starts_with(buf) && !buf.is_empty() {
        if buf.len() < V2_FIXED {
            return incomplete_or(complete, Broken::Header(line_of(buf)));
        }
        return parse_v2(buf, complete);
    }
    let prefix = &buf[..buf.len().min(6)];
    if !b"PROXY ".starts_with(prefix) {
        return Parsed::Invalid(Broken::Header(line_of(buf)));
    }
    let window = &buf[..buf.len().min(V1_MAX_HEADER)];
    match window.iter().position(|&byte| byte == b'\n') {
        Some(end) => match parse_v1(&buf[..=end]) {
            Some(header) => Parsed::Done {
                len: end + 1,
                header,
            },
            None => Parsed::Invalid(Broken::Header(line_of(buf))),
        },
        None if buf.len() >= V1_MAX_HEADER => Parsed::Invalid(Broken::Header(line_of(buf))),
        None => incomplete_or(complete, Broken::Header(line_of(buf))),
    }
}

fn incomplete_or(complete: bool, broken: Broken) -> Parsed {
    if complete {
        Parsed::Invalid(broken)
    } else {
        Parsed::Incomplete
    }
}

/// The text nginx quotes in `broken header`: up to the first CR or LF.
fn line_of(buf: &[u8]) -> Vec<u8> {
    let end = buf
        .iter()
        .position(|&byte| byte == b'\r' || byte == b'\n')
        .unwrap_or(buf.len());
    buf[..end].to_vec()
}

/// One version 1 line, LF included: `PROXY TCP4|TCP6 SRC DST SPORT DPORT\r\n` or
/// `PROXY UNKNOWN ...\r\n`. `None` when nginx would call it broken. As in nginx, the
/// addresses are checked for their characters only, not parsed.
fn parse_v1(line: &[u8]) -> Option<Option<ProxyHeader>> {
    let rest = line.strip_prefix(b"PROXY ")?;
    if rest.starts_with(b"UNKNOWN") {
        // Anything may follow up to the CRLF.
        return line.ends_with(b"\r\n").then_some(None);
    }
    let rest = rest
        .strip_prefix(b"TCP4 ")
        .or_else(|| rest.strip_prefix(b"TCP6 "))?;
    let rest = rest.strip_suffix(b"\r\n")?;
    let mut fields = rest.split(|&byte| byte == b' ');
    let source_addr = v1_address(fields.next()?)?;
    let destination_addr = v1_address(fields.next()?)?;
    let source_port = v1_port(fields.next()?)?;
    let destination_port = v1_port(fields.next()?)?;
    if fields.next().is_some() {
        return None;
    }
    Some(Some(ProxyHeader {
        source_addr: source_addr.into(),
        source_port,
        destination_addr: destination_addr.into(),
        destination_port,
        tlvs: Box::default(),
    }))
}

fn v1_address(text: &[u8]) -> Option<&[u8]> {
    let allowed = |byte: &u8| byte.is_ascii_hexdigit() || *byte == b':' || *byte == b'.';
    text.iter().all(allowed).then_some(text)
}

fn v1_port(text: &[u8]) -> Option<u16> {
    if text.is_empty() || text.len() > 5 || !text.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(text).ok()?.parse().ok()
}

fn parse_v2(buf: &[u8], complete: bool) -> Parsed {
    let version = buf[12] >> 4;
    if version != 2 {
        return Parsed::Invalid(Broken::Version(version));
    }
    let body_len = usize::from(u16::from_be_bytes([buf[14], buf[15]]));
    let len = V2_FIXED + body_len;
    if len > MAX_HEADER {
        return Parsed::Invalid(Broken::TooLarge);
    }
    if buf.len() < len {
        return incomplete_or(complete, Broken::TooLarge);
    }
    let body = &buf[V2_FIXED..len];
    let command = buf[12] & 0x0f;
    let transport = buf[13] & 0x0f;
    // Only PROXY over STREAM carries addresses nginx uses; LOCAL and the rest are skipped.
    if command != 1 || transport != 1 {
        return Parsed::Done { len, header: None };
    }
    let (source, destination, ports_at) = match buf[13] >> 4 {
        1 if body.len() >= 12 => {
            let source: [u8; 4] = body[0..4].try_into().unwrap_or_default();
            let destination: [u8; 4] = body[4..8].try_into().unwrap_or_default();
            (
                IpAddr::V4(Ipv4Addr::from(source)),
                IpAddr::V4(Ipv4Addr::from(destination)),
                8,
            )
        }
        2 if body.len() >= 36 => {
            let source: [u8; 16] = body[0..16].try_into().unwrap_or_default();
            let destination: [u8; 16] = body[16..32].try_into().unwrap_or_default();
            (
                IpAddr::V6(Ipv6Addr::from(source)),
                IpAddr::V6(Ipv6Addr::from(destination)),
                32,
            )
        }
        1 | 2 => return Parsed::Invalid(Broken::Addresses),
        _ => return Parsed::Done { len, header: None },
    };
    let port = |at: usize| u16::from_be_bytes([body[at], body[at + 1]]);
    let header = ProxyHeader {
        source_addr: source.to_string().into_bytes().into(),
        source_port: port(ports_at),
        destination_addr: destination.to_string().into_bytes().into(),
        destination_port: port(ports_at + 2),
        tlvs: body[ports_at + 4..].into(),
    };
    Parsed::Done {
        len,
        header: Some(header),
    }
}

/// A TLV that `$proxy_protocol_tlv_NAME` names: a type at the top level, or one inside the
/// `PP2_TYPE_SSL` TLV; `ssl_verify` is that TLV's verify field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TlvName {
    Top(u8),
    Ssl(u8),
    SslVerify,
}

const TYPE_SSL: u8 = 0x20;

impl TlvName {
    /// The name after `proxy_protocol_tlv_`, as nginx knows them: `alpn`, `authority`,
    /// `unique_id`, `ssl`, `netns`, `ssl_verify`, `ssl_version`, `ssl_cn`, `ssl_cipher`,
    /// `ssl_sig_alg`, `ssl_key_alg`, `0xHH` and `ssl_0xHH`.
    pub fn parse(name: &str) -> Option<TlvName> {
        Some(match name {
            "alpn" => TlvName::Top(0x01),
            "authority" => TlvName::Top(0x02),
            "unique_id" => TlvName::Top(0x05),
            "ssl" => TlvName::Top(TYPE_SSL),
            "netns" => TlvName::Top(0x30),
            "ssl_verify" => TlvName::SslVerify,
            "ssl_version" => TlvName::Ssl(0x21),
            "ssl_cn" => TlvName::Ssl(0x22),
            "ssl_cipher" => TlvName::Ssl(0x23),
            "ssl_sig_alg" => TlvName::Ssl(0x24),
            "ssl_key_alg" => TlvName::Ssl(0x25),
            _ => {
                if let Some(hex) = name.strip_prefix("ssl_0x") {
                    return hex_type(hex).map(TlvName::Ssl);
                }
                return name.strip_prefix("0x").and_then(hex_type).map(TlvName::Top);
            }
        })
    }

    /// The value this TLV has in `tlvs`, if present; `ssl_verify` is written in decimal.
    pub fn find(self, tlvs: &[u8], out: &mut Vec<u8>) {
        match self {
            TlvName::Top(kind) => {
                if let Some(value) = find_tlv(tlvs, kind) {
                    out.extend_from_slice(value);
                }
            }
            TlvName::Ssl(kind) => {
                if let Some(ssl) = find_tlv(tlvs, TYPE_SSL).and_then(|ssl| ssl.get(5..))
                    && let Some(value) = find_tlv(ssl, kind)
                {
                    out.extend_from_slice(value);
                }
            }
            TlvName::SslVerify => {
                if let Some(ssl) = find_tlv(tlvs, TYPE_SSL)
                    && let Some(verify) = ssl.get(1..5)
                {
                    let verify = u32::from_be_bytes([verify[0], verify[1], verify[2], verify[3]]);
                    out.extend_from_slice(verify.to_string().as_bytes());
                }
            }
        }
    }
}

fn hex_type(hex: &str) -> Option<u8> {
    if hex.is_empty() || !hex.bytes().all(|byte| byte.is_ascii_hexdigit()) {
        return None;
    }
    let digits = hex.trim_start_matches('0');
    if digits.len() > 2 {
        return None;
    }
    Some(u8::from_str_radix(digits, 16).unwrap_or(0))
}

/// The value of the first TLV of type `kind`; a list that breaks off ends the search.
fn find_tlv(mut tlvs: &[u8], kind: u8) -> Option<&[u8]> {
    while tlvs.len() >= 3 {
        let len = usize::from(u16::from_be_bytes([tlvs[1], tlvs[2]]));
        let value = tlvs.get(3..3 + len)?;
        if tlvs[0] == kind {
            return Some(value);
        }
        tlvs = &tlvs[3 + len..];
    }
    None
}

#[cfg(test)]
mod tests;
