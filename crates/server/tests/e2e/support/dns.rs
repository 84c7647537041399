//! A scripted name server for `resolver` tests.

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
