//! The uwsgi request packet: a 4-byte header (modifier1, the vars' size as 16 bits
//! little-endian, modifier2), then the vars, each key and value with a 16-bit
//! little-endian length. The request body follows raw; the answer is an HTTP status line
//! or a CGI head ([`crate::head::HeadStyle::StatusLineOrCgi`]) and a body that ends when
//! uWSGI closes the connection.

use crate::error::RequestError;

/// The largest vars block the header's size can say (nginx's limit too).
pub const VARS_LEN_MAX: usize = u16::MAX as usize;

/// Bytes of the packet header.
pub const HEADER_LEN: usize = 4;

/// The two modifiers (`uwsgi_modifier1`, `uwsgi_modifier2`), which tell uWSGI what the
/// packet is for: modifier1 0 (nginx's default) is a WSGI request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Modifiers {
    pub modifier1: u8,
    pub modifier2: u8,
}

/// Appends the packet for `vars`. Vars over [`VARS_LEN_MAX`] bytes in all are refused, as
/// nginx refuses them, and `out` is left as it was.
pub fn encode_request<I, N, V>(
    out: &mut Vec<u8>,
    modifiers: Modifiers,
    vars: I,
) -> Result<(), RequestError>
where
    I: IntoIterator<Item = (N, V)>,
    N: AsRef<[u8]>,
    V: AsRef<[u8]>,
{
    let start = out.len();
    out.extend_from_slice(&[modifiers.modifier1, 0, 0, modifiers.modifier2]);
    let mut len = 0usize;
    for (key, value) in vars {
        let (key, value) = (key.as_ref(), value.as_ref());
        len = len.saturating_add(4 + key.len() + value.len());
        if len > VARS_LEN_MAX {
            // The total so far, past the limit; nginx adds up every var before it looks.
            out.truncate(start);
            return Err(RequestError::UwsgiTooBig { len });
        }
        for part in [key, value] {
            let part_len = u16::try_from(part.len()).expect("within VARS_LEN_MAX");
            out.extend_from_slice(&part_len.to_le_bytes());
            out.extend_from_slice(part);
        }
    }
    let size = u16::try_from(len).expect("checked against VARS_LEN_MAX");
    out[start + 1..start + 3].copy_from_slice(&size.to_le_bytes());
    Ok(())
}

/// A uwsgi packet as uWSGI reads it (for peers written in tests and round-trip checks).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packet<'a> {
    pub modifiers: Modifiers,
    vars: &'a [u8],
}

impl<'a> Packet<'a> {
    /// The packet at the start of `buf`, or `None` while its header or vars have not all
    /// arrived.
    pub fn parse(buf: &'a [u8]) -> Option<Packet<'a>> {
        let header = buf.get(..HEADER_LEN)?;
        let size = usize::from(u16::from_le_bytes([header[1], header[2]]));
        Some(Packet {
            modifiers: Modifiers {
                modifier1: header[0],
                modifier2: header[3],
            },
            vars: buf.get(HEADER_LEN..HEADER_LEN + size)?,
        })
    }

    /// Bytes the packet takes; the body starts after them.
    pub fn byte_len(&self) -> usize {
        HEADER_LEN + self.vars.len()
    }

    /// The vars in order. Iteration stops at the first var that is not whole;
    /// [`Vars::rest`] then holds its bytes.
    pub fn vars(&self) -> Vars<'a> {
        Vars { rest: self.vars }
    }
}

/// The key-value pairs of a packet.
#[derive(Clone, Debug)]
pub struct Vars<'a> {
    rest: &'a [u8],
}

impl<'a> Vars<'a> {
    /// What follows the last whole var: empty when the block was all vars.
    pub fn rest(&self) -> &'a [u8] {
        self.rest
    }
}

impl<'a> Iterator for Vars<'a> {
    type Item = (&'a [u8], &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        let (key, after_key) = length_prefixed(self.rest)?;
        let (value, after_value) = length_prefixed(after_key)?;
        self.rest = after_value;
        Some((key, value))
    }
}

fn length_prefixed(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
    let len = usize::from(u16::from_le_bytes([*bytes.first()?, *bytes.get(1)?]));
    let part = bytes.get(2..2 + len)?;
    Some((part, &bytes[2 + len..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode<'a>(vars: &[(&'a [u8], &'a [u8])]) -> Result<Vec<u8>, RequestError> {
        let mut out = Vec::new();
        encode_request(&mut out, Modifiers::default(), vars.iter().copied())?;
        Ok(out)
    }

    #[test]
    fn a_packet_as_uwsgi_documents_it() {
        let modifiers = Modifiers {
            modifier1: 5,
            modifier2: 9,
        };
        let mut out = Vec::new();
        encode_request(
            &mut out,
            modifiers,
            [("REQUEST_METHOD", "GET"), ("QUERY_STRING", "")],
        )
        .expect("small vars fit");
        let mut expected = vec![5, 37, 0, 9];
        expected
            .extend_from_slice(b"\x0e\x00REQUEST_METHOD\x03\x00GET\x0c\x00QUERY_STRING\x00\x00");
        assert_eq!(out, expected);
        let packet = Packet::parse(&out).expect("whole");
        assert_eq!(
            (packet.modifiers, packet.byte_len()),
            (modifiers, out.len())
        );
        let vars: Vec<_> = packet.vars().collect();
        assert_eq!(
            vars,
            [
                (&b"REQUEST_METHOD"[..], &b"GET"[..]),
                (b"QUERY_STRING", b"")
            ]
        );
    }

    #[test]
    fn no_vars_is_a_bare_header() {
        assert_eq!(encode(&[]), Ok(vec![0, 0, 0, 0]));
    }

    #[test]
    fn vars_of_exactly_the_maximum_fit_and_one_byte_more_does_not() {
        let value = vec![b'v'; VARS_LEN_MAX - 4 - 3];
        let out = encode(&[(b"KEY", &value)]).expect("65535 bytes of vars fit");
        assert_eq!(out[1..3], [0xff, 0xff]);
        let packet = Packet::parse(&out).expect("whole");
        assert_eq!(
            packet.vars().collect::<Vec<_>>(),
            [(&b"KEY"[..], &value[..])]
        );

        let value = vec![b'v'; value.len() + 1];
        let mut out = b"kept".to_vec();
        let refused = encode_request(
            &mut out,
            Modifiers::default(),
            [("A", "b".as_bytes()), ("KEY", &value)],
        );
        assert_eq!(refused, Err(RequestError::UwsgiTooBig { len: 65536 + 6 }));
        assert_eq!(
            refused.expect_err("refused").to_string(),
            "uwsgi request is too big: 65542"
        );
        assert_eq!(out, b"kept");
    }

    #[test]
    fn a_packet_is_not_parsed_before_it_has_all_arrived() {
        let out = encode(&[(b"A", b"1"), (b"B", b"22")]).expect("fits");
        for len in 0..out.len() {
            assert_eq!(Packet::parse(&out[..len]), None, "{len}");
        }
        let mut with_body = out.clone();
        with_body.extend_from_slice(b"body");
        assert_eq!(
            Packet::parse(&with_body).expect("whole").byte_len(),
            out.len()
        );
    }

    #[test]
    fn a_var_cut_short_is_left_in_rest() {
        let block = b"\x01\x00A\x05\x00ab";
        let mut vars = Vars { rest: block };
        assert_eq!(vars.next(), None);
        assert_eq!(vars.rest(), block);
    }
}
