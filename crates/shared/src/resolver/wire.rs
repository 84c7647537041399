//! The DNS wire format the resolver needs (RFC 1035 §4, RFC 2782 for SRV): queries out,
//! answers in, with nothing trusted that does not match the question asked.

use std::net::IpAddr;

use super::ResolveError;

/// Record types (RFC 1035 §3.2.2, RFC 3596, RFC 2782).
pub const TYPE_A: u16 = 1;
pub const TYPE_CNAME: u16 = 5;
pub const TYPE_AAAA: u16 = 28;
pub const TYPE_SRV: u16 = 33;
const CLASS_IN: u16 = 1;

/// Longest CNAME chain followed (nginx gives up on a loop the same way).
pub const CNAME_CHAIN_MAX: usize = 10;
/// Labels followed through compression pointers before a name counts as malformed.
const NAME_STEPS_MAX: usize = 128;

/// One question: a lower-case name without its final dot, and a record type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Question {
    pub name: String,
    pub kind: u16,
}

/// A query for `question` with recursion desired; `None` for a name that cannot be
/// sent (an empty or over-long label, a name over 255 characters: one a CNAME gave at
/// that length is still asked for, as nginx asks for it).
pub fn encode_query(id: u16, question: &Question) -> Option<Vec<u8>> {
    let name = question.name.trim_end_matches('.');
    if name.is_empty() || name.len() > 255 {
        return None;
    }
    let mut out = Vec::with_capacity(name.len() + 18);
    out.extend_from_slice(&id.to_be_bytes());
    out.extend_from_slice(&[0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]);
    for label in name.split('.') {
        let length = u8::try_from(label.len())
            .ok()
            .filter(|l| (1..=63).contains(l))?;
        out.push(length);
        out.extend_from_slice(label.as_bytes());
    }
    out.push(0);
    out.extend_from_slice(&question.kind.to_be_bytes());
    out.extend_from_slice(&CLASS_IN.to_be_bytes());
    Some(out)
}

/// What a record says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RecordData {
    Address(IpAddr),
    /// A CNAME's target.
    Alias(String),
    Service {
        priority: u16,
        weight: u16,
        port: u16,
        target: String,
    },
    Other,
}

/// One resource record, its owner name lower-cased.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub name: String,
    pub ttl: u32,
    pub data: RecordData,
}

/// How a datagram relates to the question asked.
#[derive(Debug, PartialEq, Eq)]
pub enum Reply {
    /// Another id: a late answer to an earlier query, or a forgery. Ignored.
    WrongId(u16),
    /// Our id but another question, or not a response at all. Ignored.
    WrongQuestion,
    /// Cut short (the TC bit): ask again over TCP.
    Truncated,
    /// An error code from the server (NXDOMAIN is `3: Host not found`).
    Failed(ResolveError),
    Records {
        answers: Vec<Record>,
        additional: Vec<Record>,
    },
}

/// Reads an answer to query `id` for `question`; `None` for a packet too malformed to say
/// anything (it is ignored like a forgery).
pub fn decode_reply(packet: &[u8], id: u16, question: &Question) -> Option<Reply> {
    let header = packet.get(..12)?;
    let word = |at: usize| u16::from_be_bytes([header[at], header[at + 1]]);
    let got = word(0);
    if got != id {
        return Some(Reply::WrongId(got));
    }
    let is_response = header[2] & 0x80 != 0;
    if !is_response || word(4) != 1 {
        return Some(Reply::WrongQuestion);
    }
    let (name, mut at) = read_name(packet, 12)?;
    let fixed = packet.get(at..at + 4)?;
    let (kind, class) = (
        u16::from_be_bytes([fixed[0], fixed[1]]),
        u16::from_be_bytes([fixed[2], fixed[3]]),
    );
    if name != question.name.trim_end_matches('.') || kind != question.kind || class != CLASS_IN {
        return Some(Reply::WrongQuestion);
    }
    at += 4;
    if header[2] & 0x02 != 0 {
        return Some(Reply::Truncated);
    }
    let rcode = header[3] & 0x0f;
    if rcode != 0 {
        return Some(Reply::Failed(ResolveError::from_rcode(rcode)));
    }
    let mut answers = Vec::new();
    for _ in 0..word(6) {
        let (record, next) = read_record(packet, at)?;
        answers.push(record);
        at = next;
    }
    // Authority records are skipped; additional ones may carry SRV targets' addresses.
    for _ in 0..word(8) {
        at = read_record(packet, at)?.1;
    }
    let mut additional = Vec::new();
    for _ in 0..word(10) {
        match read_record(packet, at) {
            Some((record, next)) => {
                additional.push(record);
                at = next;
            }
            // An OPT record or a cut additional section costs only the extras.
            None => break,
        }
    }
    Some(Reply::Records {
        answers,
        additional,
    })
}

/// Follows `name`'s CNAME chain through `records`: the name the chain ends at, and the
/// chain's smallest TTL. `None` for a chain longer than [`CNAME_CHAIN_MAX`] (a loop).
pub fn chase_alias(records: &[Record], name: &str) -> Option<(String, u32)> {
    let mut current = name.trim_end_matches('.').to_ascii_lowercase();
    let mut ttl = u32::MAX;
    for _ in 0..=CNAME_CHAIN_MAX {
        let alias = records.iter().find_map(|record| match &record.data {
            RecordData::Alias(target) if record.name == current => Some((target, record.ttl)),
            _ => None,
        });
        match alias {
            Some((target, record_ttl)) => {
                current = target.clone();
                ttl = ttl.min(record_ttl);
            }
            None => return Some((current, ttl)),
        }
    }
    None
}

/// The addresses `records` give `name` (after its aliases), in order and repeated as
/// written, and their smallest TTL.
pub fn addresses_of(records: &[Record], name: &str, kind: u16) -> (Vec<IpAddr>, u32) {
    let mut addresses = Vec::new();
    let mut ttl = u32::MAX;
    for record in records.iter().filter(|record| record.name == name) {
        if let RecordData::Address(address) = record.data {
            let fits = match address {
                IpAddr::V4(_) => kind == TYPE_A,
                IpAddr::V6(_) => kind == TYPE_AAAA,
            };
            // Repeated records stay repeated: nginx makes a peer of each.
            if fits {
                addresses.push(address);
                ttl = ttl.min(record.ttl);
            }
        }
    }
    (addresses, ttl)
}

fn read_record(packet: &[u8], at: usize) -> Option<(Record, usize)> {
    let (name, at) = read_name(packet, at)?;
    let fixed = packet.get(at..at + 10)?;
    let kind = u16::from_be_bytes([fixed[0], fixed[1]]);
    let class = u16::from_be_bytes([fixed[2], fixed[3]]);
    let ttl = u32::from_be_bytes([fixed[4], fixed[5], fixed[6], fixed[7]]);
    let length = usize::from(u16::from_be_bytes([fixed[8], fixed[9]]));
    let start = at + 10;
    let data = packet.get(start..start + length)?;
    let data = match (kind, class) {
        (TYPE_A, CLASS_IN) if length == 4 => {
            RecordData::Address(IpAddr::from([data[0], data[1], data[2], data[3]]))
        }
        (TYPE_AAAA, CLASS_IN) if length == 16 => {
            let mut bytes = [0u8; 16];
            bytes.copy_from_slice(data);
            RecordData::Address(IpAddr::from(bytes))
        }
        (TYPE_CNAME, CLASS_IN) => RecordData::Alias(read_name(packet, start)?.0),
        (TYPE_SRV, CLASS_IN) if length >= 7 => RecordData::Service {
            priority: u16::from_be_bytes([data[0], data[1]]),
            weight: u16::from_be_bytes([data[2], data[3]]),
            port: u16::from_be_bytes([data[4], data[5]]),
            target: read_name(packet, start + 6)?.0,
        },
        _ => RecordData::Other,
    };
    // RFC 2181 §8: a TTL with the top bit set counts as 0.
    let ttl = if ttl > i32::MAX as u32 { 0 } else { ttl };
    Some((Record { name, ttl, data }, start + length))
}

/// A (possibly compressed) name at `at`, lower-cased without its final dot, and the offset
/// after it where it is written. Pointer loops and over-long names are malformed.
fn read_name(packet: &[u8], mut at: usize) -> Option<(String, usize)> {
    let mut name = String::new();
    let mut end = None;
    for _ in 0..NAME_STEPS_MAX {
        let length = *packet.get(at)?;
        match length {
            0 => return Some((name, end.unwrap_or(at + 1))),
            pointer if pointer & 0xc0 == 0xc0 => {
                let low = *packet.get(at + 1)?;
                end.get_or_insert(at + 2);
                at = usize::from(pointer & 0x3f) << 8 | usize::from(low);
            }
            label if label & 0xc0 == 0 => {
                let bytes = packet.get(at + 1..at + 1 + usize::from(label))?;
                if !name.is_empty() {
                    name.push('.');
                }
                name.extend(
                    bytes
                        .iter()
                        .map(|byte| char::from(byte.to_ascii_lowercase())),
                );
                if name.len() > 255 {
                    return None;
                }
                at += 1 + usize::from(label);
            }
            _ => return None,
        }
    }
    None
}

#[cfg(test)]
mod tests;
