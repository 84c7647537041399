//! Asking the name servers: UDP first, TCP when the answer was truncated (RFC 7766), the
//! servers taken in turn, a fresh socket (so a fresh source port) for every question, and
//! never past the caller's deadline. The worker's loop is never blocked.

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::Instant;

use super::wire::{self, Question, Reply};
use super::zone::{Answered, ZoneCounters};
use super::{Note, ResolveError, ResolverConf};

/// The longest a question waits on one server before the next one is asked (nginx resends
/// every 5 seconds).
const RESEND_MAX: Duration = Duration::from_secs(5);
/// The shortest: below it a slow server never gets to answer.
const RESEND_MIN: Duration = Duration::from_millis(200);
/// A UDP answer without EDNS is at most 512 bytes; more room costs nothing.
const UDP_ANSWER_MAX: usize = 4096;

/// The answer to `question`, from the first server that gives one before `deadline`,
/// starting with server `first` (modulo their number). What went wrong on the way
/// (forged ids, servers down) is told to `notes`; how the question ended, to the
/// resolver's `status_zone`.
pub async fn exchange(
    conf: &ResolverConf,
    question: &Question,
    deadline: Instant,
    first: usize,
    notes: &mut Vec<Note>,
) -> Result<Reply, ResolveError> {
    let servers = conf.servers.len();
    if servers == 0 {
        return Err(ResolveError::TIMED_OUT);
    }
    let per_server = (conf_timeout(deadline) / u32::try_from(servers).unwrap_or(u32::MAX))
        .clamp(RESEND_MIN, RESEND_MAX);
    let zone = conf.state.zone.as_deref();
    let mut attempt = 0usize;
    while Instant::now() < deadline {
        let server = conf.servers[(first + attempt) % servers];
        attempt += 1;
        let until = deadline.min(Instant::now() + per_server);
        let id = super::query_id();
        let query = wire::encode_query(id, question).ok_or(ResolveError::NOT_FOUND)?;
        match ask_udp(server, &query, id, question, until, zone, notes).await {
            Some(Reply::Truncated) => {
                notes.push(Note::Truncated { server });
                // TCP gets a share of its own: a server that accepts connections and
                // never answers must not keep the next server from being asked.
                let until = deadline.min(Instant::now() + per_server);
                match ask_tcp(server, &query, id, question, until, zone, notes).await {
                    Some(reply) => return Ok(reply),
                    None => continue,
                }
            }
            Some(reply) => return Ok(reply),
            None => continue,
        }
    }
    if let Some(zone) = zone {
        zone.answered(Answered::TimedOut);
    }
    Err(ResolveError::TIMED_OUT)
}

fn conf_timeout(deadline: Instant) -> Duration {
    deadline.saturating_duration_since(Instant::now())
}

/// One question over UDP; `None` when the server said nothing usable before `until`.
async fn ask_udp(
    server: SocketAddr,
    query: &[u8],
    id: u16,
    question: &Question,
    until: Instant,
    zone: Option<&ZoneCounters>,
    notes: &mut Vec<Note>,
) -> Option<Reply> {
    let local: SocketAddr = if server.is_ipv4() {
        (Ipv4Addr::UNSPECIFIED, 0).into()
    } else {
        (Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let socket = match tokio::net::UdpSocket::bind(local).await {
        Ok(socket) => socket,
        Err(error) => {
            notes.push(Note::Unreachable { server, error });
            return None;
        }
    };
    if let Err(error) = socket.connect(server).await {
        notes.push(Note::Unreachable { server, error });
        return None;
    }
    if let Err(error) = socket.send(query).await {
        notes.push(Note::Unreachable { server, error });
        return None;
    }
    let mut buf = vec![0u8; UDP_ANSWER_MAX];
    loop {
        let received = match tokio::time::timeout_at(until, socket.recv(&mut buf)).await {
            Err(_) => {
                notes.push(Note::TimedOut { server });
                return None;
            }
            // Nobody listens there (an ICMP port unreachable): the next server at once.
            Ok(Err(error)) => {
                notes.push(Note::Unreachable { server, error });
                return None;
            }
            Ok(Ok(received)) => received,
        };
        if let Some(reply) = judge(&buf[..received], id, question, server, zone, notes) {
            return Some(reply);
        }
    }
}

/// Keeps a reply to our question, counting its response code in `zone` (a truncated one
/// is counted when its TCP answer comes); tells `notes` about anything else.
fn judge(
    packet: &[u8],
    id: u16,
    question: &Question,
    server: SocketAddr,
    zone: Option<&ZoneCounters>,
    notes: &mut Vec<Note>,
) -> Option<Reply> {
    let reply = wire::decode_reply(packet, id, question);
    if let (Some(zone), Some(Reply::Records { .. } | Reply::Failed(_))) = (zone, &reply) {
        zone.answered(Answered::Code(packet[3] & 0x0f));
    }
    match reply {
        None => {
            notes.push(Note::Malformed { server });
            None
        }
        Some(Reply::WrongId(got)) => {
            notes.push(Note::WrongId {
                server,
                got,
                expected: id,
            });
            None
        }
        Some(Reply::WrongQuestion) => {
            notes.push(Note::WrongQuestion { server });
            None
        }
        Some(reply) => Some(reply),
    }
}

/// The same question over TCP, two length bytes before each message (RFC 1035 §4.2.2).
async fn ask_tcp(
    server: SocketAddr,
    query: &[u8],
    id: u16,
    question: &Question,
    until: Instant,
    zone: Option<&ZoneCounters>,
    notes: &mut Vec<Note>,
) -> Option<Reply> {
    let talk = async {
        let mut stream = tokio::net::TcpStream::connect(server).await?;
        let length = u16::try_from(query.len()).unwrap_or(u16::MAX);
        let mut framed = Vec::with_capacity(query.len() + 2);
        framed.extend_from_slice(&length.to_be_bytes());
        framed.extend_from_slice(query);
        stream.write_all(&framed).await?;
        let mut length = [0u8; 2];
        stream.read_exact(&mut length).await?;
        let mut answer = vec![0u8; usize::from(u16::from_be_bytes(length))];
        stream.read_exact(&mut answer).await?;
        Ok::<_, std::io::Error>(answer)
    };
    match tokio::time::timeout_at(until, talk).await {
        Err(_) => {
            notes.push(Note::TimedOut { server });
            None
        }
        Ok(Err(error)) => {
            notes.push(Note::Unreachable { server, error });
            None
        }
        Ok(Ok(answer)) => match judge(&answer, id, question, server, zone, notes)? {
            // Truncated over TCP too: nothing more can be had from this server.
            Reply::Truncated => {
                notes.push(Note::Malformed { server });
                None
            }
            reply => Some(reply),
        },
    }
}
