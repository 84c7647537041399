//! A scripted name server for the resolver's tests: UDP and TCP on one 127.0.0.1 port,
//! each question answered by what the test's script says.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, UdpSocket};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::wire::{self, Question};

/// How a question arrived.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proto {
    Udp,
    Tcp,
}

/// What the server does with a question, in order.
pub enum Action {
    Send(Vec<u8>),
    Sleep(Duration),
}

/// A record to put in an answer.
pub enum Fake {
    A(&'static str, u32, Ipv4Addr),
    Aaaa(&'static str, u32, Ipv6Addr),
    Cname(&'static str, u32, &'static str),
    Srv(&'static str, u32, [u16; 3], &'static str),
}

/// An answer to `query` (its id and question copied) with `rcode`, the TC bit as
/// `truncated` says, and the records.
pub fn answer(
    query: &[u8],
    rcode: u8,
    truncated: bool,
    answers: &[Fake],
    extra: &[Fake],
) -> Vec<u8> {
    let question_end = 12 + name_len(query, 12) + 4;
    let mut out = query[..question_end].to_vec();
    out[2] = 0x81 | if truncated { 0x02 } else { 0 };
    out[3] = 0x80 | rcode;
    out[6..8].copy_from_slice(&u16::try_from(answers.len()).expect("few").to_be_bytes());
    out[10..12].copy_from_slice(&u16::try_from(extra.len()).expect("few").to_be_bytes());
    for record in answers.iter().chain(extra) {
        push_record(&mut out, record);
    }
    out
}

/// The question of a query.
pub fn question_of(query: &[u8]) -> Question {
    let mut at = 12;
    let mut labels = Vec::new();
    while query[at] != 0 {
        let length = usize::from(query[at]);
        labels.push(String::from_utf8_lossy(&query[at + 1..at + 1 + length]).into_owned());
        at += 1 + length;
    }
    Question {
        name: labels.join("."),
        kind: u16::from_be_bytes([query[at + 1], query[at + 2]]),
    }
}

fn name_len(packet: &[u8], mut at: usize) -> usize {
    let start = at;
    while packet[at] != 0 {
        at += 1 + usize::from(packet[at]);
    }
    at + 1 - start
}

fn push_name(out: &mut Vec<u8>, name: &str) {
    for label in name.split('.') {
        out.push(u8::try_from(label.len()).expect("short label"));
        out.extend_from_slice(label.as_bytes());
    }
    out.push(0);
}

fn push_record(out: &mut Vec<u8>, record: &Fake) {
    let (name, kind, ttl) = match record {
        Fake::A(name, ttl, _) => (name, wire::TYPE_A, ttl),
        Fake::Aaaa(name, ttl, _) => (name, wire::TYPE_AAAA, ttl),
        Fake::Cname(name, ttl, _) => (name, wire::TYPE_CNAME, ttl),
        Fake::Srv(name, ttl, _, _) => (name, wire::TYPE_SRV, ttl),
    };
    push_name(out, name);
    out.extend_from_slice(&kind.to_be_bytes());
    out.extend_from_slice(&1u16.to_be_bytes());
    out.extend_from_slice(&ttl.to_be_bytes());
    let mut data = Vec::new();
    match record {
        Fake::A(_, _, ip) => data.extend_from_slice(&ip.octets()),
        Fake::Aaaa(_, _, ip) => data.extend_from_slice(&ip.octets()),
        Fake::Cname(_, _, target) => push_name(&mut data, target),
        Fake::Srv(_, _, numbers, target) => {
            for number in numbers {
                data.extend_from_slice(&number.to_be_bytes());
            }
            push_name(&mut data, target);
        }
    }
    out.extend_from_slice(&u16::try_from(data.len()).expect("short").to_be_bytes());
    out.extend_from_slice(&data);
}

type Script = dyn Fn(&[u8], Proto) -> Vec<Action> + Send + Sync;

/// A running scripted server; its threads end with the test process.
pub struct FakeDns {
    pub address: SocketAddr,
    /// Every question asked, in order.
    pub asked: Arc<Mutex<Vec<(Question, Proto)>>>,
}

impl FakeDns {
    pub fn start(script: impl Fn(&[u8], Proto) -> Vec<Action> + Send + Sync + 'static) -> FakeDns {
        let script: Arc<Script> = Arc::new(script);
        // A free UDP port may be taken for TCP: try others.
        let (udp, tcp) = (0..100)
            .find_map(|_| {
                let udp = UdpSocket::bind("127.0.0.1:0").ok()?;
                let tcp = TcpListener::bind(udp.local_addr().ok()?).ok()?;
                Some((udp, tcp))
            })
            .expect("a port free for UDP and TCP");
        let address = udp.local_addr().expect("address");
        let asked = Arc::new(Mutex::new(Vec::new()));
        let (udp_script, udp_asked) = (Arc::clone(&script), Arc::clone(&asked));
        std::thread::spawn(move || {
            let mut buf = [0u8; 512];
            while let Ok((length, from)) = udp.recv_from(&mut buf) {
                let query = buf[..length].to_vec();
                udp_asked
                    .lock()
                    .expect("lock")
                    .push((question_of(&query), Proto::Udp));
                let (socket, script) = (udp.try_clone().expect("clone"), Arc::clone(&udp_script));
                // Each question on its own thread: a slow answer does not hold the next.
                std::thread::spawn(move || {
                    for action in script(&query, Proto::Udp) {
                        match action {
                            Action::Send(bytes) => drop(socket.send_to(&bytes, from)),
                            Action::Sleep(time) => std::thread::sleep(time),
                        }
                    }
                });
            }
        });
        let tcp_asked = Arc::clone(&asked);
        std::thread::spawn(move || {
            for mut stream in tcp.incoming().flatten() {
                let mut length = [0u8; 2];
                if stream.read_exact(&mut length).is_err() {
                    continue;
                }
                let mut query = vec![0u8; usize::from(u16::from_be_bytes(length))];
                if stream.read_exact(&mut query).is_err() {
                    continue;
                }
                tcp_asked
                    .lock()
                    .expect("lock")
                    .push((question_of(&query), Proto::Tcp));
                for action in script(&query, Proto::Tcp) {
                    match action {
                        Action::Send(bytes) => {
                            let length = u16::try_from(bytes.len()).expect("fits");
                            let _ = stream.write_all(&length.to_be_bytes());
                            let _ = stream.write_all(&bytes);
                        }
                        Action::Sleep(time) => std::thread::sleep(time),
                    }
                }
            }
        });
        FakeDns { address, asked }
    }

    pub fn questions(&self) -> usize {
        self.asked.lock().expect("lock").len()
    }
}
