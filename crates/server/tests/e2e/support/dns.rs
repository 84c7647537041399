//! DNS for the tests: a scripted name server for `resolver` tests, and a hand-written
//! query and answer reader (RFC 1035 §4) for tests that ask a real one.

use std::net::Ipv4Addr;

/// A name server answering every A question with 127.0.0.1 (twice) and every other one with
/// no record; it counts the questions.
pub fn dns_server(port: u16) -> std::sync::Arc<std::sync::atomic::AtomicUsize> {
    let questions = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = std::sync::Arc::clone(&questions);
    let socket = std::net::UdpSocket::bind(("127.0.0.1", port)).expect("bind the name server");
    std::thread::spawn(move || {
        let mut packet = [0u8; 512];
        while let Ok((length, from)) = socket.recv_from(&mut packet) {
            counted.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
            let question_end = length;
            let kind = u16::from_be_bytes([packet[question_end - 4], packet[question_end - 3]]);
            let mut answer = packet[..question_end].to_vec();
            answer[2] = 0x81;
            answer[3] = 0x80;
            if kind == 1 {
                answer[7] = 2;
                for _ in 0..2 {
                    answer.extend_from_slice(&[
                        0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 127, 0, 0, 1,
                    ]);
                }
            }
            let _ = socket.send_to(&answer, from);
        }
    });
    questions
}

/// A name server answering every A question with `addresses`, in that order (TTL 60 s),
/// and every other one with no record.
pub fn dns_server_answering(port: u16, addresses: &'static [Ipv4Addr]) {
    let socket = std::net::UdpSocket::bind(("127.0.0.1", port)).expect("bind the name server");
    std::thread::spawn(move || {
        let mut packet = [0u8; 512];
        while let Ok((length, from)) = socket.recv_from(&mut packet) {
            let kind = u16::from_be_bytes([packet[length - 4], packet[length - 3]]);
            let mut answer = packet[..length].to_vec();
            answer[2] = 0x81;
            answer[3] = 0x80;
            if kind == TYPE_A {
                answer[7] = addresses.len() as u8;
                for address in addresses {
                    answer.extend_from_slice(&[0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4]);
                    answer.extend_from_slice(&address.octets());
                }
            }
            let _ = socket.send_to(&answer, from);
        }
    });
}

/// Record type A and class IN (RFC 1035 §3.2.2, §3.2.4).
const TYPE_A: u16 = 1;
const CLASS_IN: u16 = 1;

/// A recursive query with id `id` for the A records of `name`.
pub fn query(id: u16, name: &str) -> Vec<u8> {
    let mut packet = Vec::with_capacity(64);
    packet.extend_from_slice(&id.to_be_bytes());
    // Flags: a standard query with recursion desired; one question.
    packet.extend_from_slice(&[0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]);
    for label in name.split('.') {
        let length = u8::try_from(label.len()).expect("a label is at most 63 bytes");
        assert!(length > 0 && length <= 63, "label {label:?} of {name:?}");
        packet.push(length);
        packet.extend_from_slice(label.as_bytes());
    }
    packet.push(0);
    packet.extend_from_slice(&TYPE_A.to_be_bytes());
    packet.extend_from_slice(&CLASS_IN.to_be_bytes());
    packet
}

/// What an answer to [`query`] says.
#[derive(Debug, PartialEq, Eq)]
pub struct Answer {
    pub id: u16,
    /// The response code: 0 no error, 3 no such name.
    pub code: u8,
    /// The addresses of the A records in the answer section, in order.
    pub addresses: Vec<Ipv4Addr>,
}

/// Reads an answer; `None` when it is not a well-formed response.
pub fn answer(packet: &[u8]) -> Option<Answer> {
    let header = packet.get(..12)?;
    let word = |at: usize| u16::from_be_bytes([header[at], header[at + 1]]);
    let is_response = header[2] & 0x80 != 0;
    if !is_response {
        return None;
    }
    let (questions, answers) = (word(4), word(6));
    let mut at = 12;
    for _ in 0..questions {
        at = skip_name(packet, at)? + 4;
    }
    let mut addresses = Vec::new();
    for _ in 0..answers {
        at = skip_name(packet, at)?;
        let fixed = packet.get(at..at + 10)?;
        let kind = u16::from_be_bytes([fixed[0], fixed[1]]);
        let length = usize::from(u16::from_be_bytes([fixed[8], fixed[9]]));
        let data = packet.get(at + 10..at + 10 + length)?;
        if kind == TYPE_A && length == 4 {
            addresses.push(Ipv4Addr::new(data[0], data[1], data[2], data[3]));
        }
        at += 10 + length;
    }
    Some(Answer {
        id: word(0),
        code: header[3] & 0x0f,
        addresses,
    })
}

/// The offset after the name at `at`: labels up to the root, or up to a pointer
/// (RFC 1035 §4.1.4).
fn skip_name(packet: &[u8], mut at: usize) -> Option<usize> {
    loop {
        let length = *packet.get(at)?;
        match length {
            0 => return Some(at + 1),
            pointer if pointer & 0xc0 == 0xc0 => return Some(at + 2),
            label => at += 1 + usize::from(label),
        }
    }
}
