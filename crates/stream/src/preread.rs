//! `ssl_preread`: the server name, the ALPN protocols and the highest protocol version a
//! TLS ClientHello offers, read from the bytes a client sent first without ending TLS
//! (`$ssl_preread_server_name`, `$ssl_preread_alpn_protocols`, `$ssl_preread_protocol`).
//! The hello is parsed here (pure); [`run`] is the preread phase that reads it.

use logging::Level;
use runtime::Stream;

use crate::session::{Session, status};
use crate::variables::Preread;

const HANDSHAKE: u8 = 0x16;
const CLIENT_HELLO: u8 = 1;
const EXTENSION_SERVER_NAME: u16 = 0;
const EXTENSION_ALPN: u16 = 16;
const EXTENSION_SUPPORTED_VERSIONS: u16 = 43;

/// How far the bytes so far go.
#[derive(Debug, PartialEq, Eq)]
pub enum Hello {
    /// More bytes are needed.
    Incomplete,
    /// Not a TLS ClientHello: the variables stay empty.
    NotTls,
    Done(PrereadFields),
}

/// What a ClientHello said.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct PrereadFields {
    pub server_name: Vec<u8>,
    pub alpn_protocols: Vec<u8>,
    pub protocol: Vec<u8>,
}

/// Reads the ClientHello at the start of `bytes`, reassembled from its handshake records.
pub fn parse(bytes: &[u8]) -> Hello {
    let mut message = Vec::new();
    let mut rest = bytes;
    let mut record_version = 0u16;
    loop {
        if rest.is_empty() {
            return Hello::Incomplete;
        }
        if rest[0] & 0x80 != 0 && message.is_empty() {
            return ssl2_hello(rest);
        }
        if rest[0] != HANDSHAKE {
            return Hello::NotTls;
        }
        let Some(header) = rest.get(..5) else {
            return Hello::Incomplete;
        };
        if header[1] != 3 {
            return Hello::NotTls;
        }
        record_version = record_version.max(u16::from_be_bytes([header[1], header[2]]));
        let len = usize::from(u16::from_be_bytes([header[3], header[4]]));
        let Some(fragment) = rest.get(5..5 + len) else {
            return Hello::Incomplete;
        };
        message.extend_from_slice(fragment);
        rest = &rest[5 + len..];
        if message.len() >= 4 {
            if message[0] != CLIENT_HELLO {
                return Hello::NotTls;
            }
            let body_len = usize::from(message[1]) << 16
                | usize::from(message[2]) << 8
                | usize::from(message[3]);
            if message.len() >= 4 + body_len {
                return match parse_body(&message[4..4 + body_len]) {
                    Some(fields) => Hello::Done(fields),
                    None => Hello::NotTls,
                };
            }
        }
    }
}

/// An SSLv2-format ClientHello (a two-byte length with its top bit set): only the
/// version is read.
fn ssl2_hello(bytes: &[u8]) -> Hello {
    let Some(header) = bytes.get(..5) else {
        return Hello::Incomplete;
    };
    if header[2] != CLIENT_HELLO {
        return Hello::NotTls;
    }
    let version = u16::from_be_bytes([header[3], header[4]]);
    let protocol: &[u8] = if version == 0x0002 {
        b"SSLv2"
    } else {
        version_name(version).unwrap_or_default()
    };
    Hello::Done(PrereadFields {
        protocol: protocol.to_vec(),
        ..PrereadFields::default()
    })
}

struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, len: usize) -> Option<&'a [u8]> {
        let (head, rest) = self.bytes.split_at_checked(len)?;
        self.bytes = rest;
        Some(head)
    }

    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|bytes| bytes[0])
    }

    fn u16(&mut self) -> Option<u16> {
        self.take(2)
            .map(|bytes| u16::from_be_bytes([bytes[0], bytes[1]]))
    }

    fn vector8(&mut self) -> Option<&'a [u8]> {
        let len = usize::from(self.u8()?);
        self.take(len)
    }

    fn vector16(&mut self) -> Option<&'a [u8]> {
        let len = usize::from(self.u16()?);
        self.take(len)
    }
}

fn version_name(version: u16) -> Option<&'static [u8]> {
    Some(match version {
        0x0300 => b"SSLv3",
        0x0301 => b"TLSv1",
        0x0302 => b"TLSv1.1",
        0x0303 => b"TLSv1.2",
        0x0304 => b"TLSv1.3",
        // The drafts of TLS 1.3.
        0x7f00..=0x7fff => b"TLSv1.3",
        _ => return None,
    })
}

fn parse_body(body: &[u8]) -> Option<PrereadFields> {
    let mut reader = Reader { bytes: body };
    let client_version = reader.u16()?;
    reader.take(32)?;
    reader.vector8()?;
    reader.vector16()?;
    reader.vector8()?;
    let mut fields = PrereadFields::default();
    let mut highest = client_version;
    if reader.bytes.is_empty() {
        fields.protocol = version_name(highest).unwrap_or_default().to_vec();
        return Some(fields);
    }
    // Lengths that say more than arrived are read as far as the bytes go, as nginx's
    // parser reads them.
    let extensions_bytes = reader
        .vector16()
        .unwrap_or(&reader.bytes[2.min(reader.bytes.len())..]);
    let mut extensions = Reader {
        bytes: extensions_bytes,
    };
    while extensions.bytes.len() >= 4 {
        let kind = extensions.u16()?;
        let declared = usize::from(extensions.u16()?);
        let len = declared.min(extensions.bytes.len());
        let mut data = Reader {
            bytes: extensions.take(len)?,
        };
        match kind {
            EXTENSION_SERVER_NAME => {
                let mut names = Reader {
                    bytes: data.vector16()?,
                };
                while !names.bytes.is_empty() {
                    let name_type = names.u8()?;
                    let name = names.vector16()?;
                    if name_type == 0 && fields.server_name.is_empty() {
                        fields.server_name = name.to_vec();
                    }
                }
            }
            EXTENSION_ALPN => {
                let mut protocols = Reader {
                    bytes: data.vector16()?,
                };
                while !protocols.bytes.is_empty() {
                    let protocol = protocols.vector8()?;
                    if !fields.alpn_protocols.is_empty() {
                        fields.alpn_protocols.push(b',');
                    }
                    fields.alpn_protocols.extend_from_slice(protocol);
                }
            }
            EXTENSION_SUPPORTED_VERSIONS => {
                let mut versions = Reader {
                    bytes: data.vector8()?,
                };
                while !versions.bytes.is_empty() {
                    let version = versions.u16()?;
                    let version = if version >> 8 == 0x7f {
                        0x0304
                    } else {
                        version
                    };
                    if version_name(version).is_some() && version > highest {
                        highest = version;
                    }
                }
            }
            _ => {}
        }
    }
    fields.protocol = version_name(highest).unwrap_or_default().to_vec();
    Some(fields)
}

/// The preread phase of `ssl_preread`: reads until the ClientHello is whole (within
/// `preread_buffer_size` and `preread_timeout`), then picks the server by name.
pub async fn run(session: &mut Session<'_>, stream: &Stream) -> Result<(), u16> {
    session.action = Some("prereading client data");
    let settings = &session.server.settings;
    let limit = settings.preread_buffer_size;
    let timeout = settings.preread_timeout;
    let before = session.preread.len();
    let reading = async {
        if stream.is_tls() {
            read_hello(stream, &mut session.preread, limit).await
        } else {
            peek_hello(stream, limit).await
        }
    };
    let outcome = match tokio::time::timeout(timeout, reading).await {
        Ok(outcome) => outcome,
        Err(_) => {
            session.log(Level::Info, format_args!("preread timed out"));
            return Err(status::OK);
        }
    };
    session.vars.bytes_received += (session.preread.len() - before) as u64;
    match outcome {
        Ok(Some(fields)) => {
            session.vars.preread = Preread {
                server_name: fields.server_name,
                alpn_protocols: fields.alpn_protocols,
                protocol: fields.protocol,
            };
            select_server(session);
            Ok(())
        }
        Ok(None) => Ok(()),
        Err(code) => {
            session.log(Level::Error, format_args!("preread buffer full"));
            Err(code)
        }
    }
}

/// Peeks at a plain connection until the hello is whole: its bytes stay in the socket
/// for whatever serves the session next (a proxy, or another socket by `pass`).
async fn peek_hello(stream: &Stream, limit: usize) -> Result<Option<PrereadFields>, u16> {
    let mut buf = vec![0u8; limit.max(1)];
    // The client closed its side: what is queued is all there will be.
    let mut closed = false;
    loop {
        let peeked = match stream.try_peek(&mut buf) {
            Ok(0) => return Ok(None),
            Ok(peeked) => peeked,
            Err(error) if error.kind() == std::io::ErrorKind::WouldBlock && !closed => {
                closed = stream.readable_or_closed().await.unwrap_or(true);
                continue;
            }
            Err(_) => return Ok(None),
        };
        match parse(&buf[..peeked]) {
            Hello::Done(fields) => return Ok(Some(fields)),
            Hello::NotTls => return Ok(None),
            Hello::Incomplete if peeked >= limit => return Err(status::BAD_REQUEST),
            Hello::Incomplete if closed => return Ok(None),
            Hello::Incomplete => {
                stream.clear_readable();
                closed = stream.readable_or_closed().await.unwrap_or(true);
            }
        }
    }
}

/// Reads a TLS connection's first bytes into `buf` (they cannot be peeked at) until
/// they are a whole hello or not one.
async fn read_hello(
    stream: &Stream,
    buf: &mut Vec<u8>,
    limit: usize,
) -> Result<Option<PrereadFields>, u16> {
    loop {
        match parse(buf) {
            Hello::Done(fields) => return Ok(Some(fields)),
            Hello::NotTls => return Ok(None),
            Hello::Incomplete => {}
        }
        if buf.len() >= limit {
            return Err(status::BAD_REQUEST);
        }
        let start = buf.len();
        buf.resize(limit, 0);
        let read = stream.read(&mut buf[start..]).await;
        match read {
            Ok(0) | Err(_) => {
                buf.truncate(start);
                return Ok(None);
            }
            Ok(read) => buf.truncate(start + read),
        }
    }
}

/// Picks the server of the address whose `server_name` matches the preread name.
fn select_server(session: &mut Session<'_>) {
    let name = session.vars.preread.server_name.to_ascii_lowercase();
    if name.is_empty() || session.entry.servers.len() < 2 {
        return;
    }
    let conf = session.conf;
    if let Some(index) =
        crate::server_name::find(conf, &session.entry.servers, &name, &mut session.vars)
    {
        session.switch_server(index);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ClientHello with the given extensions, in one record.
    fn hello(extensions: &[(u16, Vec<u8>)], client_version: u16) -> Vec<u8> {
        let mut body = Vec::new();
        body.extend_from_slice(&client_version.to_be_bytes());
        body.extend_from_slice(&[0u8; 32]);
        body.push(0);
        body.extend_from_slice(&[0, 2, 0x13, 0x01]);
        body.extend_from_slice(&[1, 0]);
        let mut list = Vec::new();
        for (kind, data) in extensions {
            list.extend_from_slice(&kind.to_be_bytes());
            list.extend_from_slice(&(data.len() as u16).to_be_bytes());
            list.extend_from_slice(data);
        }
        body.extend_from_slice(&(list.len() as u16).to_be_bytes());
        body.extend_from_slice(&list);
        let mut message = vec![CLIENT_HELLO, 0, 0, 0];
        message[2] = (body.len() >> 8) as u8;
        message[3] = body.len() as u8;
        message.extend_from_slice(&body);
        let mut record = vec![HANDSHAKE, 3, 1];
        record.extend_from_slice(&(message.len() as u16).to_be_bytes());
        record.extend_from_slice(&message);
        record
    }

    fn sni(name: &[u8]) -> Vec<u8> {
        let mut entry = vec![0];
        entry.extend_from_slice(&(name.len() as u16).to_be_bytes());
        entry.extend_from_slice(name);
        let mut data = (entry.len() as u16).to_be_bytes().to_vec();
        data.extend_from_slice(&entry);
        data
    }

    #[test]
    fn reads_the_name_the_protocols_and_the_highest_version() {
        let alpn = {
            let list = b"\x02h2\x08http/1.1";
            let mut data = (list.len() as u16).to_be_bytes().to_vec();
            data.extend_from_slice(list);
            data
        };
        let versions = vec![4, 0x03, 0x04, 0x03, 0x03];
        let bytes = hello(
            &[(0, sni(b"example.com")), (16, alpn), (43, versions)],
            0x0303,
        );
        let Hello::Done(fields) = parse(&bytes) else {
            panic!("a whole hello");
        };
        assert_eq!(fields.server_name, b"example.com");
        assert_eq!(fields.alpn_protocols, b"h2,http/1.1");
        assert_eq!(fields.protocol, b"TLSv1.3");
    }

    #[test]
    fn a_hello_in_pieces_is_incomplete_until_whole_and_other_bytes_are_not_tls() {
        let bytes = hello(&[(0, sni(b"a"))], 0x0303);
        for cut in 0..bytes.len() {
            assert_eq!(parse(&bytes[..cut]), Hello::Incomplete, "cut at {cut}");
        }
        let Hello::Done(fields) = parse(&bytes) else {
            panic!("a whole hello");
        };
        assert_eq!(fields.protocol, b"TLSv1.2");
        assert_eq!(parse(b"GET / HTTP/1.0\r\n"), Hello::NotTls);
    }

    #[test]
    fn a_hello_split_across_records_is_reassembled() {
        let bytes = hello(&[(0, sni(b"split.example"))], 0x0303);
        let message = &bytes[5..];
        let (first, second) = message.split_at(10);
        let mut records = vec![HANDSHAKE, 3, 1, 0, first.len() as u8];
        records.extend_from_slice(first);
        records.extend_from_slice(&[HANDSHAKE, 3, 1]);
        records.extend_from_slice(&(second.len() as u16).to_be_bytes());
        records.extend_from_slice(second);
        let Hello::Done(fields) = parse(&records) else {
            panic!("a whole hello");
        };
        assert_eq!(fields.server_name, b"split.example");
    }
}
