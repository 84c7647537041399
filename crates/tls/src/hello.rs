//! The session tickets a client offers to resume with, read from the raw bytes of its
//! ClientHello (rustls's `ClientHello` does not show them). OpenSSL, and so nginx, sends one
//! TLS 1.3 ticket after a resumed handshake and two after a full one; the server chooses
//! its configuration before the handshake, so it looks at the offered tickets first.

/// Handshake records, the only kind a ClientHello comes in.
const HANDSHAKE_RECORD: u8 = 0x16;
const CLIENT_HELLO: u8 = 1;
/// The `pre_shared_key` extension (RFC 8446, 4.2.11), always the last one.
const PRE_SHARED_KEY: u16 = 41;
/// A hello longer than this is not looked into (rustls's own limit on a handshake message).
const HELLO_MAX: usize = 0xffff;

/// The ClientHello message carried by the handshake records at the start of `records`
/// (the bytes a server read first), once whole; `None` for anything else.
fn client_hello(records: &[u8]) -> Option<Vec<u8>> {
    let mut message = Vec::new();
    let mut rest = records;
    loop {
        let (header, after) = rest.split_at_checked(5)?;
        if header[0] != HANDSHAKE_RECORD {
            return None;
        }
        let len = usize::from(u16::from_be_bytes([header[3], header[4]]));
        let (fragment, after) = after.split_at_checked(len)?;
        message.extend_from_slice(fragment);
        rest = after;
        if let [kind, a, b, c, ..] = message[..] {
            if kind != CLIENT_HELLO {
                return None;
            }
            let body = usize::from(a) << 16 | usize::from(b) << 8 | usize::from(c);
            if body > HELLO_MAX {
                return None;
            }
            if message.len() >= 4 + body {
                message.truncate(4 + body);
                return Some(message);
            }
        }
    }
}

/// Reads a big-endian length of `width` bytes, then that many bytes.
fn vector<'a>(input: &mut &'a [u8], width: usize) -> Option<&'a [u8]> {
    let (len, rest) = input.split_at_checked(width)?;
    let len = len
        .iter()
        .fold(0usize, |len, &byte| len << 8 | usize::from(byte));
    let (value, rest) = rest.split_at_checked(len)?;
    *input = rest;
    Some(value)
}

/// The identities of the `pre_shared_key` extension of the ClientHello at the start of
/// `records` (the tickets offered, in the client's order): empty when there is none, or
/// when the hello is not whole in `records` or malformed (rustls then decides alone).
pub(crate) fn offered_tickets(records: &[u8]) -> Vec<Vec<u8>> {
    let Some(message) = client_hello(records) else {
        return Vec::new();
    };
    identities(&message[4..]).unwrap_or_default()
}

fn identities(body: &[u8]) -> Option<Vec<Vec<u8>>> {
    // Version and random, then the session id, suites and compression methods.
    let mut input = body.get(2 + 32..)?;
    vector(&mut input, 1)?;
    vector(&mut input, 2)?;
    vector(&mut input, 1)?;
    let mut extensions = vector(&mut input, 2)?;
    while !extensions.is_empty() {
        let (kind, rest) = extensions.split_at_checked(2)?;
        extensions = rest;
        let data = vector(&mut extensions, 2)?;
        if u16::from_be_bytes([kind[0], kind[1]]) != PRE_SHARED_KEY {
            continue;
        }
        let mut data = data;
        let mut list = vector(&mut data, 2)?;
        let mut found = Vec::new();
        while !list.is_empty() {
            found.push(vector(&mut list, 2)?.to_vec());
            // The obfuscated ticket age.
            list = list.get(4..)?;
        }
        return Some(found);
    }
    Some(Vec::new())
}

#[cfg(test)]
mod tests {
    use super::offered_tickets;

    /// A ClientHello with the given extensions (type, data), in one record or split in
    /// records of at most `fragment` bytes.
    fn hello(extensions: &[(u16, Vec<u8>)], fragment: usize) -> Vec<u8> {
        let mut body = vec![3, 3];
        body.extend_from_slice(&[7; 32]);
        body.extend_from_slice(&[32]);
        body.extend_from_slice(&[9; 32]);
        body.extend_from_slice(&[0, 4, 0x13, 1, 0x13, 2]);
        body.extend_from_slice(&[1, 0]);
        let mut all = Vec::new();
        for (kind, data) in extensions {
            all.extend_from_slice(&kind.to_be_bytes());
            all.extend_from_slice(&(data.len() as u16).to_be_bytes());
            all.extend_from_slice(data);
        }
        body.extend_from_slice(&(all.len() as u16).to_be_bytes());
        body.extend_from_slice(&all);
        let mut message = vec![1, 0];
        message.extend_from_slice(&(body.len() as u16).to_be_bytes());
        message.extend_from_slice(&body);
        let mut records = Vec::new();
        for piece in message.chunks(fragment) {
            records.extend_from_slice(&[0x16, 3, 1]);
            records.extend_from_slice(&(piece.len() as u16).to_be_bytes());
            records.extend_from_slice(piece);
        }
        records
    }

    fn psk(identities: &[&[u8]]) -> (u16, Vec<u8>) {
        let mut list = Vec::new();
        for identity in identities {
            list.extend_from_slice(&(identity.len() as u16).to_be_bytes());
            list.extend_from_slice(identity);
            list.extend_from_slice(&[0, 0, 0, 1]);
        }
        let mut data = (list.len() as u16).to_be_bytes().to_vec();
        data.extend_from_slice(&list);
        // The binders, not looked at.
        data.extend_from_slice(&[0, 33, 32]);
        data.extend_from_slice(&[5; 32]);
        (41, data)
    }

    #[test]
    fn the_offered_tickets_are_found_in_whole_or_fragmented_hellos() {
        let extensions = [(0, b"\x00\x05".to_vec()), psk(&[b"first", b"second"])];
        for fragment in [1, 7, 100, 4000] {
            let records = hello(&extensions, fragment);
            assert_eq!(
                offered_tickets(&records),
                vec![b"first".to_vec(), b"second".to_vec()],
                "fragments of {fragment}"
            );
        }
        assert!(offered_tickets(&hello(&[(0, vec![0, 0])], 4000)).is_empty());
    }

    #[test]
    fn a_cut_or_malformed_hello_offers_nothing_and_never_panics() {
        let records = hello(&[psk(&[b"ticket"])], 50);
        for end in 0..records.len() {
            assert!(offered_tickets(&records[..end]).is_empty(), "cut at {end}");
        }
        for index in 0..records.len() {
            for value in [0, 1, 0x7f, 0xff] {
                let mut broken = records.clone();
                broken[index] = value;
                let _ = offered_tickets(&broken);
            }
        }
        let mut alert = records.clone();
        alert[0] = 0x15;
        assert!(offered_tickets(&alert).is_empty());
    }
}
