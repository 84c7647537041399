//! Scripted upstream servers in the test process: each accepted connection runs the test's
//! script on a thread of its own, which reads requests and writes whatever bytes the test
//! wants (well-formed, malformed, slow, cut short), so the proxy's answers to every kind
//! of upstream misbehaviour can be checked.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// What a script gets for one connection.
pub struct UpstreamConn {
    stream: TcpStream,
    buffer: Vec<u8>,
    requests: Arc<Mutex<Vec<Vec<u8>>>>,
    /// The number of this connection, from 1.
    pub number: usize,
}

impl UpstreamConn {
    /// Reads one request (head, then a `Content-Length` or chunked body); `None` when the
    /// proxy closed the connection first. The request is recorded for the test.
    pub fn read_request(&mut self) -> Option<Vec<u8>> {
        let head_end = self.head_end()?;
        let head = String::from_utf8_lossy(&self.buffer[..head_end]).to_ascii_lowercase();
        let mut end = head_end;
        if let Some(length) = head
            .lines()
            .find_map(|line| line.strip_prefix("content-length:"))
            .and_then(|value| value.trim().parse::<usize>().ok())
        {
            while self.buffer.len() < head_end + length {
                if !self.fill() {
                    return None;
                }
            }
            end = head_end + length;
        } else if head.contains("transfer-encoding: chunked") {
            loop {
                if let Some(last) = find(&self.buffer[head_end..], b"0\r\n\r\n") {
                    end = head_end + last + 5;
                    break;
                }
                if !self.fill() {
                    return None;
                }
            }
        }
        Some(self.take_recorded(end))
    }

    /// Reads one request head only, whatever body it announces; recorded like a request.
    pub fn read_head(&mut self) -> Option<Vec<u8>> {
        let end = self.head_end()?;
        Some(self.take_recorded(end))
    }

    /// Reads one line, ended by `\n` (a text protocol's command, memcached's `get`);
    /// `None` when the proxy closed the connection first. Recorded like a request.
    pub fn read_line(&mut self) -> Option<Vec<u8>> {
        loop {
            if let Some(end) = self.buffer.iter().position(|&byte| byte == b'\n') {
                return Some(self.take_recorded(end + 1));
            }
            if !self.fill() {
                return None;
            }
        }
    }

    /// Every byte after what was read, until the proxy closes (or `limit` passes).
    pub fn read_to_close(&mut self, limit: Duration) -> Vec<u8> {
        let _ = self.stream.set_read_timeout(Some(limit));
        while self.fill() {}
        std::mem::take(&mut self.buffer)
    }

    fn head_end(&mut self) -> Option<usize> {
        loop {
            if let Some(end) = find(&self.buffer, b"\r\n\r\n") {
                return Some(end + 4);
            }
            if !self.fill() {
                return None;
            }
        }
    }

    fn take_recorded(&mut self, end: usize) -> Vec<u8> {
        let request: Vec<u8> = self.buffer.drain(..end).collect();
        self.requests
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .push(request.clone());
        request
    }

    fn fill(&mut self) -> bool {
        let mut chunk = [0u8; 8192];
        match self.stream.read(&mut chunk) {
            Ok(0) | Err(_) => false,
            Ok(count) => {
                self.buffer.extend_from_slice(&chunk[..count]);
                true
            }
        }
    }

    /// The proxy's address on this connection.
    pub fn peer(&self) -> Option<std::net::SocketAddr> {
        self.stream.peer_addr().ok()
    }

    pub fn write(&mut self, bytes: impl AsRef<[u8]>) {
        let _ = self.stream.write_all(bytes.as_ref());
        let _ = self.stream.flush();
    }

    /// Writes `bytes` in pieces with a pause after each.
    pub fn write_slowly(&mut self, bytes: &[u8], piece: usize, pause: Duration) {
        for chunk in bytes.chunks(piece) {
            self.write(chunk);
            std::thread::sleep(pause);
        }
    }

    /// Closes with a reset rather than a FIN.
    pub fn reset(self) {
        // `SO_LINGER` 0: closing sends a reset.
        let _ = rustix::net::sockopt::set_socket_linger(&self.stream, Some(Duration::ZERO));
        drop(self.stream);
    }

    pub fn close(self) {
        let _ = self.stream.shutdown(Shutdown::Both);
    }

    /// Waits until the proxy closes its side (or `limit` passes); whether it did.
    pub fn wait_closed(&mut self, limit: Duration) -> bool {
        let _ = self.stream.set_read_timeout(Some(limit));
        let mut chunk = [0u8; 1024];
        loop {
            match self.stream.read(&mut chunk) {
                Ok(0) => return true,
                Ok(_) => continue,
                Err(error) if error.kind() == ErrorKind::Interrupted => continue,
                Err(_) => return false,
            }
        }
    }
}

pub fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

type Script = dyn Fn(UpstreamConn) + Send + Sync + 'static;

/// A scripted upstream listening on 127.0.0.1.
pub struct MockUpstream {
    pub port: u16,
    stop: Arc<AtomicBool>,
    connections: Arc<AtomicUsize>,
    requests: Arc<Mutex<Vec<Vec<u8>>>>,
    accept: Option<JoinHandle<()>>,
}

impl MockUpstream {
    /// Listens on `port` and runs `script` for every connection.
    pub fn start(port: u16, script: impl Fn(UpstreamConn) + Send + Sync + 'static) -> MockUpstream {
        let listener = bind(port);
        let stop = Arc::new(AtomicBool::new(false));
        let connections = Arc::new(AtomicUsize::new(0));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let script: Arc<Script> = Arc::new(script);
        let accept = {
            let (stop, connections, requests) = (
                Arc::clone(&stop),
                Arc::clone(&connections),
                Arc::clone(&requests),
            );
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::Acquire) {
                        return;
                    }
                    let Ok(stream) = stream else { continue };
                    let number = connections.fetch_add(1, Ordering::AcqRel) + 1;
                    let conn = UpstreamConn {
                        stream,
                        buffer: Vec::new(),
                        requests: Arc::clone(&requests),
                        number,
                    };
                    let script = Arc::clone(&script);
                    std::thread::spawn(move || script(conn));
                }
            })
        };
        MockUpstream {
            port,
            stop,
            connections,
            requests,
            accept: Some(accept),
        }
    }

    /// A server that answers every request on a connection with `response`.
    pub fn answering(port: u16, response: &'static str) -> MockUpstream {
        MockUpstream::start(port, move |mut conn| {
            while conn.read_request().is_some() {
                conn.write(response);
            }
        })
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::Acquire)
    }

    /// The requests read so far, as received.
    pub fn requests(&self) -> Vec<String> {
        self.requests
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .iter()
            .map(|request| String::from_utf8_lossy(request).into_owned())
            .collect()
    }
}

impl Drop for MockUpstream {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        // Wake the accept loop.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
    }
}

/// Binds 127.0.0.1:`port`, trying again for a second while the port is in use: a process
/// that does not take the test ports' claims (see `ports.rs`) may hold it for a moment.
fn bind(port: u16) -> TcpListener {
    let deadline = std::time::Instant::now() + Duration::from_secs(1);
    loop {
        match TcpListener::bind(("127.0.0.1", port)) {
            Ok(listener) => return listener,
            Err(error)
                if error.kind() == ErrorKind::AddrInUse && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(error) => panic!("bind the mock upstream on 127.0.0.1:{port}: {error}"),
        }
    }
}

/// A listener on `port` whose accept queue is full: it never accepts, and one connection
/// already waits in a queue of one, so the kernel drops further SYNs and a connect hangs.
/// Returns the listener and the waiting connection, to be kept open.
pub fn full_listener(port: u16) -> (rustix::fd::OwnedFd, std::net::TcpStream) {
    use rustix::net::{AddressFamily, SocketType};
    let address = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let listener = rustix::net::socket(AddressFamily::INET, SocketType::STREAM, None)
        .expect("a listening socket");
    rustix::net::sockopt::set_socket_reuseaddr(&listener, true).expect("SO_REUSEADDR");
    rustix::net::bind(&listener, &address).expect("bind the full listener");
    rustix::net::listen(&listener, 0).expect("listen with a backlog of 0");
    let waiting = std::net::TcpStream::connect(address).expect("the first connection is queued");
    // The queue is full when a second connect from here gets no answer.
    assert!(
        std::net::TcpStream::connect_timeout(&address, Duration::from_millis(200)).is_err(),
        "the accept queue should be full"
    );
    (listener, waiting)
}
