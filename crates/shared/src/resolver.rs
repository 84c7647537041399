//! `resolver`: names in a `proxy_pass` with variables, looked up over DNS (UDP) when a
//! request needs them, without blocking the worker, and cached per worker for the answer's
//! TTL (or `valid=`).

use std::cell::RefCell;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::{Duration, Instant};

use conf::{ConfError, Directive};

/// `resolver address ... [valid=time] [ipv4=on|off] [ipv6=on|off]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolverConf {
    pub servers: Vec<SocketAddr>,
    pub valid: Option<Duration>,
    pub ipv4: bool,
    pub ipv6: bool,
}

/// Parses the directive's arguments.
pub fn parse(directive: &Directive) -> Result<ResolverConf, ConfError> {
    let mut conf = ResolverConf {
        servers: Vec::new(),
        valid: None,
        ipv4: true,
        ipv6: true,
    };
    for argument in &directive.args {
        let text = argument.as_str();
        let invalid =
            || ConfError::message(format!("invalid parameter \"{text}\""), &directive.span);
        if let Some(value) = text.strip_prefix("valid=") {
            conf.valid = Some(conf::value::parse_time(value).ok_or_else(invalid)?);
        } else if let Some(value) = text.strip_prefix("ipv4=") {
            conf.ipv4 = flag(value).ok_or_else(invalid)?;
        } else if let Some(value) = text.strip_prefix("ipv6=") {
            conf.ipv6 = flag(value).ok_or_else(invalid)?;
        } else if text.starts_with("status_zone=") {
        } else {
            let addresses = server_addresses(text);
            if addresses.is_empty() {
                return Err(ConfError::message(
                    format!("host not found in resolver \"{text}\""),
                    &directive.span,
                ));
            }
            conf.servers.extend(addresses);
        }
    }
    if !conf.ipv4 && !conf.ipv6 {
        return Err(ConfError::message(
            "\"ipv4\" and \"ipv6\" cannot both be \"off\"",
            &directive.span,
        ));
    }
    if conf.servers.is_empty() {
        return Err(ConfError::message(
            "no name servers defined",
            &directive.span,
        ));
    }
    Ok(conf)
}

fn flag(value: &str) -> Option<bool> {
    match value {
        "on" => Some(true),
        "off" => Some(false),
        _ => None,
    }
}

/// `ADDRESS[:PORT]` (port 53 by default); a name is resolved now, at load, as nginx
/// resolves it.
fn server_addresses(text: &str) -> Vec<SocketAddr> {
    use std::net::ToSocketAddrs;
    if let Ok(address) = text.parse::<SocketAddr>() {
        return vec![address];
    }
    let bare = text.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = bare.parse::<IpAddr>() {
        return vec![SocketAddr::new(ip, 53)];
    }
    let (host, port) = match text.rsplit_once(':') {
        Some((host, port)) => match port.parse::<u16>() {
            Ok(port) => (host, port),
            Err(_) => return Vec::new(),
        },
        None => (text, 53),
    };
    (host, port)
        .to_socket_addrs()
        .map(|addresses| addresses.collect())
        .unwrap_or_default()
}

thread_local! {
    /// Answers by name, with when they expire.
    static CACHE: RefCell<HashMap<String, (Vec<IpAddr>, Instant)>> = RefCell::new(HashMap::new());
}

/// Why a name could not be resolved, as nginx words it: `(3: Host not found)`.
#[derive(Debug, PartialEq, Eq)]
pub struct ResolveError {
    pub code: u16,
    pub text: &'static str,
}

/// The addresses of `name`, from the cache or the name servers.
pub async fn resolve(
    conf: &ResolverConf,
    timeout: Duration,
    name: &str,
) -> Result<Vec<IpAddr>, ResolveError> {
    let key = name.to_ascii_lowercase();
    let now = Instant::now();
    if let Some(addresses) = CACHE.with(|cache| {
        cache
            .borrow()
            .get(&key)
            .filter(|(_, expires)| *expires > now)
            .map(|(addresses, _)| addresses.clone())
    }) {
        return Ok(addresses);
    }
    let deadline = tokio::time::Instant::now() + timeout;
    let mut addresses = Vec::new();
    let mut ttl = u32::MAX;
    let mut last_error = None;
    let kinds: Vec<u16> = [(conf.ipv4, 1u16), (conf.ipv6, 28u16)]
        .iter()
        .filter(|(wanted, _)| *wanted)
        .map(|(_, kind)| *kind)
        .collect();
    for kind in kinds {
        match query(conf, deadline, &key, kind).await {
            Ok((found, found_ttl)) => {
                ttl = ttl.min(found_ttl);
                addresses.extend(found);
            }
            Err(error) => last_error = Some(error),
        }
    }
    if addresses.is_empty() {
        return Err(last_error.unwrap_or(ResolveError {
            code: 3,
            text: "Host not found",
        }));
    }
    let valid = conf
        .valid
        .unwrap_or(Duration::from_secs(u64::from(if ttl == u32::MAX {
            0
        } else {
            ttl
        })));
    CACHE.with(|cache| {
        cache
            .borrow_mut()
            .insert(key, (addresses.clone(), Instant::now() + valid))
    });
    Ok(addresses)
}

/// One question to the name servers in turn.
async fn query(
    conf: &ResolverConf,
    deadline: tokio::time::Instant,
    name: &str,
    kind: u16,
) -> Result<(Vec<IpAddr>, u32), ResolveError> {
    let timed_out = ResolveError {
        code: 110,
        text: "Operation timed out",
    };
    let id = query_id();
    let question = encode(id, name, kind).ok_or(ResolveError {
        code: 3,
        text: "Host not found",
    })?;
    for server in &conf.servers {
        let local: SocketAddr = if server.is_ipv4() {
            (Ipv4Addr::UNSPECIFIED, 0).into()
        } else {
            (Ipv6Addr::UNSPECIFIED, 0).into()
        };
        let Ok(socket) = tokio::net::UdpSocket::bind(local).await else {
            continue;
        };
        if socket.connect(server).await.is_err() || socket.send(&question).await.is_err() {
            continue;
        }
        let mut answer = vec![0u8; 4096];
        loop {
            let received = match tokio::time::timeout_at(deadline, socket.recv(&mut answer)).await {
                Err(_) => return Err(timed_out),
                Ok(Err(_)) => break,
                Ok(Ok(received)) => received,
            };
            if let Some(result) = decode(&answer[..received], id, kind) {
                return result;
            }
        }
    }
    Err(timed_out)
}

/// An unpredictable query id (answers with another id are ignored).
fn query_id() -> u16 {
    use std::hash::BuildHasher;
    thread_local! {
        static IDS: (std::collections::hash_map::RandomState, std::cell::Cell<u64>) =
            (std::collections::hash_map::RandomState::new(), std::cell::Cell::new(0));
    }
    IDS.with(|(key, counter)| {
        counter.set(counter.get().wrapping_add(1));
        key.hash_one(counter.get()) as u16
    })
}

/// A query for `name`, recursion desired.
fn encode(id: u16, name: &str, kind: u16) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(name.len() + 18);
    out.extend_from_slice(&id.to_be_bytes());
    out.extend_from_slice(&[0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]);
    for label in name.trim_end_matches('.').split('.') {
        if label.is_empty() || label.len() > 63 {
            return None;
        }
        out.push(label.len() as u8);
        out.extend_from_slice(label.as_bytes());
    }
    out.push(0);
    out.extend_from_slice(&kind.to_be_bytes());
    out.extend_from_slice(&1u16.to_be_bytes());
    Some(out)
}

/// The addresses of one answer and their smallest TTL; `None` when the packet is not the
/// answer to our question (another id, malformed).
fn decode(packet: &[u8], id: u16, kind: u16) -> Option<Result<(Vec<IpAddr>, u32), ResolveError>> {
    if packet.len() < 12 || u16::from_be_bytes([packet[0], packet[1]]) != id {
        return None;
    }
    let rcode = packet[3] & 0x0f;
    if rcode != 0 {
        return Some(Err(match rcode {
            1 => ResolveError {
                code: 1,
                text: "Format error",
            },
            2 => ResolveError {
                code: 2,
                text: "Server failure",
            },
            3 => ResolveError {
                code: 3,
                text: "Host not found",
            },
            4 => ResolveError {
                code: 4,
                text: "Unimplemented",
            },
            5 => ResolveError {
                code: 5,
                text: "Operation refused",
            },
            _ => ResolveError {
                code: 2,
                text: "Server failure",
            },
        }));
    }
    let questions = u16::from_be_bytes([packet[4], packet[5]]);
    let answers = u16::from_be_bytes([packet[6], packet[7]]);
    let mut at = 12;
    for _ in 0..questions {
        at = skip_name(packet, at)? + 4;
    }
    let mut addresses = Vec::new();
    let mut ttl = u32::MAX;
    for _ in 0..answers {
        at = skip_name(packet, at)?;
        let field = packet.get(at..at + 10)?;
        let record_kind = u16::from_be_bytes([field[0], field[1]]);
        let record_ttl = u32::from_be_bytes([field[4], field[5], field[6], field[7]]);
        let length = usize::from(u16::from_be_bytes([field[8], field[9]]));
        let data = packet.get(at + 10..at + 10 + length)?;
        at += 10 + length;
        let address = match (record_kind, data.len()) {
            (1, 4) if kind == 1 => IpAddr::from([data[0], data[1], data[2], data[3]]),
            (28, 16) if kind == 28 => {
                let mut bytes = [0u8; 16];
                bytes.copy_from_slice(data);
                IpAddr::from(bytes)
            }
            _ => continue,
        };
        addresses.push(address);
        ttl = ttl.min(record_ttl);
    }
    if addresses.is_empty() {
        return Some(Err(ResolveError {
            code: 3,
            text: "Host not found",
        }));
    }
    Some(Ok((addresses, ttl)))
}

/// The offset after a (possibly compressed) name.
fn skip_name(packet: &[u8], mut at: usize) -> Option<usize> {
    loop {
        let length = *packet.get(at)?;
        if length & 0xc0 == 0xc0 {
            return Some(at + 2);
        }
        if length == 0 {
            return Some(at + 1);
        }
        at += 1 + usize::from(length);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_and_answers_round_trip() {
        let question = encode(0x1234, "example.com", 1).unwrap();
        assert_eq!(&question[..2], &[0x12, 0x34]);
        assert_eq!(&question[12..25], b"\x07example\x03com\x00");
        // An answer: the question, then two A records with compressed names.
        let mut answer = question.clone();
        answer[2] = 0x81;
        answer[3] = 0x80;
        answer[7] = 2;
        for (last, ttl) in [(1u8, 300u32), (2, 60)] {
            answer.extend_from_slice(&[0xc0, 12, 0, 1, 0, 1]);
            answer.extend_from_slice(&ttl.to_be_bytes());
            answer.extend_from_slice(&[0, 4, 10, 0, 0, last]);
        }
        let (addresses, ttl) = decode(&answer, 0x1234, 1).unwrap().unwrap();
        assert_eq!(
            addresses,
            vec![IpAddr::from([10, 0, 0, 1]), IpAddr::from([10, 0, 0, 2])]
        );
        assert_eq!(ttl, 60);
        assert!(
            decode(&answer, 0x9999, 1).is_none(),
            "another query's answer"
        );
        answer[3] = 0x83;
        assert_eq!(
            decode(&answer, 0x1234, 1).unwrap().unwrap_err(),
            ResolveError {
                code: 3,
                text: "Host not found"
            }
        );
    }
}
