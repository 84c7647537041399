//! The endpoint: datagrams in and out, connections by handle, HTTP/3 events out.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::router::{Forwarded, TaggedCids};
use bytes::{Bytes, BytesMut};
use http3::HeaderField;
use http3::connection::{CONTROL_STREAM_ID, DECODER_STREAM_ID, ENCODER_STREAM_ID, Output};
use quinn_proto::{
    ConnectionHandle, DatagramEvent, Dir, ReadError, StreamEvent, StreamId, VarInt, WriteError,
};

/// What the endpoint announces and enforces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// The HTTP/3 layer's settings and limits.
    pub http3: http3::Config,
    /// Connections at once; past it a new one is refused (CONNECTION_REFUSED).
    pub max_connections: usize,
    /// Unidirectional streams a client may open: its control and QPACK streams and a few
    /// of the reserved types clients send to exercise servers.
    pub max_uni_streams: u32,
    /// Whether a new client must first prove its address with a Retry round trip (nginx's
    /// `quic_retry`): a spoofed source then gets one small packet and no connection.
    pub retry: bool,
    /// How long a connection may be silent before it is closed (nginx takes the
    /// default server's `keepalive_timeout`).
    pub idle_timeout: Duration,
    /// The endpoint shares its socket through a [`crate::router::Router`]: the connection
    /// IDs it issues begin with this tag, and new clients' Initials read while it shuts
    /// down are handed off ([`Endpoint::take_handoffs`]).
    pub route_tag: Option<u8>,
}

/// After a shutdown began, how long a connection whose requests are answered waits for
/// the client to acknowledge the last bytes before it closes anyway: the client may be
/// gone, or (after a reload) its acknowledgements may reach the new generation's endpoint
/// on the shared `reuseport` socket.
const SHUTDOWN_ACK_WAIT: Duration = Duration::from_secs(2);

/// After a shutdown began, how long every connection stays open at least, so that its
/// GOAWAY goes out (closing at once would drop it unsent: an idle client would see the
/// close without the GOAWAY that names its last request).
const SHUTDOWN_GOAWAY_GRACE: Duration = Duration::from_millis(250);

impl Default for Config {
    fn default() -> Self {
        Self {
            http3: http3::Config::default(),
            max_connections: 1024,
            max_uni_streams: 8,
            retry: false,
            idle_timeout: Duration::from_secs(30),
            route_tag: None,
        }
    }
}

/// A connection of this endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnectionId(usize);

/// What happened on a connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// An HTTP/3 event of the connection.
    Http3 {
        connection: ConnectionId,
        event: http3::Event,
    },
    /// The connection is gone: its requests are over.
    Closed { connection: ConnectionId },
}

/// A datagram to send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Datagram {
    pub destination: SocketAddr,
    /// The local address to send from, when the endpoint listens on a wildcard one.
    pub source: Option<IpAddr>,
    pub data: Vec<u8>,
}

/// Why a response could not be sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendError {
    /// No such connection (it closed).
    ConnectionGone,
    /// The HTTP/3 layer refused it.
    Http3(http3::SendError),
}

/// Bytes for a QUIC stream that its flow control has not taken yet.
#[derive(Clone, Debug, Default)]
struct Unsent {
    data: VecDeque<Bytes>,
    fin: bool,
}

struct Connection {
    quic: quinn_proto::Connection,
    http3: http3::Connection,
    unsent: BTreeMap<u64, Unsent>,
    /// Request streams not read for now ([`Endpoint::pause_reading`]): their data waits in
    /// QUIC, whose flow control then holds the client back.
    paused: std::collections::HashSet<u64>,
    /// The server's unidirectional streams are open.
    streams_open: bool,
    closed_reported: bool,
    /// The client's hello as the certificate resolver noted it.
    hello: Option<tls::QuicHello>,
    /// The client's address before the last datagram was read: what the requests that
    /// datagram started see ([`Endpoint::request_address`]).
    address_before_datagram: SocketAddr,
}

/// One UDP endpoint's QUIC connections.
pub struct Endpoint {
    config: Config,
    endpoint: quinn_proto::Endpoint,
    server_config: Arc<quinn_proto::ServerConfig>,
    connections: HashMap<ConnectionHandle, Connection>,
    events: VecDeque<Event>,
    datagrams: VecDeque<Datagram>,
    buffer: Vec<u8>,
    /// [`Endpoint::shutdown`] was called: new connections are turned away and each open
    /// one closes once its requests are done.
    shutting_down: bool,
    /// When a connection whose requests are done closes even without every
    /// acknowledgement ([`SHUTDOWN_ACK_WAIT`] after the shutdown began).
    shutdown_deadline: Option<Instant>,
    /// [`SHUTDOWN_ACK_WAIT`] has passed.
    ack_wait_over: bool,
    /// Until when no connection closes after a shutdown ([`SHUTDOWN_GOAWAY_GRACE`]).
    goaway_grace: Option<Instant>,
    /// New clients' Initials read while shutting down, for the endpoint that now takes
    /// new connections on the socket ([`Config::route_tag`]).
    handoffs: Vec<Forwarded>,
    /// The datagram being received was handed over by another endpoint: it is not
    /// handed off again.
    forwarded: bool,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Endpoint")
            .field("connections", &self.connections.len())
            .finish()
    }
}

/// Why the TLS configuration cannot serve QUIC.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsError(pub String);

impl Endpoint {
    /// An endpoint serving with `tls` (TLS 1.3, ALPN `h3`: QUIC requires the first and
    /// HTTP/3 the second).
    pub fn new(tls: Arc<rustls::ServerConfig>, config: Config) -> Result<Self, TlsError> {
        Self::with_host_key(tls, config, None)
    }

    /// As [`Endpoint::new`], with the keys of stateless resets and Retry tokens made from
    /// `host_key` (nginx's `quic_host_key`) instead of random ones: endpoints given the
    /// same key (every worker, and the next generation after a reload) accept each
    /// other's Retry tokens, and a client believes their resets.
    pub fn with_host_key(
        tls: Arc<rustls::ServerConfig>,
        config: Config,
        host_key: Option<&[u8]>,
    ) -> Result<Self, TlsError> {
        let crypto = quinn_proto::crypto::rustls::QuicServerConfig::try_from(tls)
            .map_err(|error| TlsError(error.to_string()))?;
        let mut server_config = quinn_proto::ServerConfig::with_crypto(Arc::new(crypto));
        let mut transport = quinn_proto::TransportConfig::default();
        let requests = u32::try_from(config.http3.max_request_streams).unwrap_or(u32::MAX);
        transport.max_concurrent_bidi_streams(VarInt::from_u32(requests));
        transport.max_concurrent_uni_streams(VarInt::from_u32(config.max_uni_streams));
        let idle = quinn_proto::IdleTimeout::try_from(config.idle_timeout).ok();
        transport.max_idle_timeout(idle);
        server_config.transport_config(Arc::new(transport));
        let mut tokens = quinn_proto::ValidationTokenConfig::default();
        tokens
            .log(crate::tokens::UsedTokens::shared())
            .sent(crate::tokens::TOKENS_SENT)
            .lifetime(crate::tokens::TOKEN_LIFETIME);
        server_config.validation_token_config(tokens);
        let mut endpoint_config = quinn_proto::EndpointConfig::default();
        if let Some(host_key) = host_key {
            let (reset, token) = host_keys(host_key);
            endpoint_config = quinn_proto::EndpointConfig::new(Arc::new(reset));
            server_config.token_key(Arc::new(token));
        }
        if let Some(tag) = config.route_tag {
            endpoint_config.cid_generator(move || Box::new(TaggedCids { tag }));
        }
        let server_config = Arc::new(server_config);
        let endpoint = quinn_proto::Endpoint::new(
            Arc::new(endpoint_config),
            Some(server_config.clone()),
            true,
            None,
        );
        Ok(Self {
            config,
            endpoint,
            server_config,
            connections: HashMap::new(),
            events: VecDeque::new(),
            datagrams: VecDeque::new(),
            buffer: Vec::new(),
            shutting_down: false,
            shutdown_deadline: None,
            ack_wait_over: false,
            goaway_grace: None,
            handoffs: Vec::new(),
            forwarded: false,
        })
    }

    /// Connections open now.
    pub fn connections(&self) -> usize {
        self.connections.len()
    }

    /// The ids of the connections open now.
    pub fn connection_ids(&self) -> Vec<ConnectionId> {
        self.connections
            .keys()
            .map(|handle| ConnectionId(handle.0))
            .collect()
    }

    /// Takes a datagram `remote` sent to `local_ip`.
    pub fn receive(
        &mut self,
        now: Instant,
        remote: SocketAddr,
        local_ip: Option<IpAddr>,
        datagram: &[u8],
    ) {
        let data = BytesMut::from(datagram);
        let mut buffer = std::mem::take(&mut self.buffer);
        let event = self
            .endpoint
            .handle(now, remote, local_ip, None, data, &mut buffer);
        match event {
            Some(DatagramEvent::NewConnection(incoming)) => {
                if self.shutting_down {
                    // A new client's Initial after a reload belongs to the new generation
                    // sharing this socket: handed off to it when the socket has a router,
                    // else dropped (the client sends it again, and the next copy may
                    // reach the endpoint that takes it).
                    self.endpoint.ignore(incoming);
                    if self.config.route_tag.is_some() && !self.forwarded {
                        self.handoffs.push(Forwarded {
                            remote,
                            data: datagram.to_vec(),
                        });
                    }
                } else if self.connections.len() >= self.config.max_connections {
                    let transmit = self.endpoint.refuse(incoming, &mut buffer);
                    self.queue_datagram(&transmit, &buffer);
                } else if self.config.retry && !incoming.remote_address_validated() {
                    // An Initial without a valid Retry token: answer with a Retry, or drop it
                    // when it already carried one (a retry of a retry is never sent).
                    match self.endpoint.retry(incoming, &mut buffer) {
                        Ok(transmit) => self.queue_datagram(&transmit, &buffer),
                        Err(error) => self.endpoint.ignore(error.into_incoming()),
                    }
                } else {
                    let server_config = Some(self.server_config.clone());
                    match self
                        .endpoint
                        .accept(incoming, now, &mut buffer, server_config)
                    {
                        Ok((handle, quic)) => {
                            let connection = Connection {
                                quic,
                                http3: http3::Connection::new(self.config.http3),
                                unsent: BTreeMap::new(),
                                paused: std::collections::HashSet::new(),
                                streams_open: false,
                                closed_reported: false,
                                hello: None,
                                address_before_datagram: remote,
                            };
                            self.connections.insert(handle, connection);
                            self.drive(handle, now);
                            self.note_hello(handle);
                        }
                        Err(error) => {
                            if let Some(transmit) = error.response {
                                self.queue_datagram(&transmit, &buffer);
                            }
                        }
                    }
                }
            }
            Some(DatagramEvent::ConnectionEvent(handle, event)) => {
                if let Some(connection) = self.connections.get_mut(&handle) {
                    connection.address_before_datagram = connection.quic.remote_address();
                    connection.quic.handle_event(event);
                    self.drive(handle, now);
                    self.note_hello(handle);
                }
            }
            Some(DatagramEvent::Response(transmit)) => self.queue_datagram(&transmit, &buffer),
            None => {}
        }
        buffer.clear();
        self.buffer = buffer;
    }

    /// Takes a datagram another endpoint on the socket read for this one: as
    /// [`Endpoint::receive`], but never handed off again.
    pub fn receive_forwarded(&mut self, now: Instant, remote: SocketAddr, datagram: &[u8]) {
        self.forwarded = true;
        self.receive(now, remote, None, datagram);
        self.forwarded = false;
    }

    /// New clients' Initials read while shutting down, to hand to the endpoint that
    /// takes new connections on the socket.
    pub fn take_handoffs(&mut self) -> Vec<Forwarded> {
        std::mem::take(&mut self.handoffs)
    }

    fn queue_datagram(&mut self, transmit: &quinn_proto::Transmit, buffer: &[u8]) {
        self.datagrams.push_back(Datagram {
            destination: transmit.destination,
            source: transmit.src_ip,
            data: buffer[..transmit.size].to_vec(),
        });
    }

    /// The next datagram to send.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Datagram> {
        if let Some(datagram) = self.datagrams.pop_front() {
            return Some(datagram);
        }
        let mut buffer = std::mem::take(&mut self.buffer);
        let mut found = None;
        for connection in self.connections.values_mut() {
            buffer.clear();
            if let Some(transmit) = connection.quic.poll_transmit(now, 1, &mut buffer) {
                found = Some(Datagram {
                    destination: transmit.destination,
                    source: transmit.src_ip,
                    data: buffer[..transmit.size].to_vec(),
                });
                break;
            }
        }
        buffer.clear();
        self.buffer = buffer;
        found
    }

    /// When [`Endpoint::handle_timeout`] is next due.
    pub fn poll_timeout(&mut self) -> Option<Instant> {
        let open = !self.connections.is_empty();
        let deadlines = [self.goaway_grace, self.shutdown_deadline];
        let deadlines = deadlines.into_iter().flatten().filter(|_| open);
        self.connections
            .values_mut()
            .filter_map(|connection| connection.quic.poll_timeout())
            .chain(deadlines)
            .min()
    }

    /// Runs the timers that are due: retransmissions, idle timeouts, draining.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.goaway_grace.is_some_and(|at| at <= now) {
            // Connections whose requests are done may close now.
            self.goaway_grace = None;
            let handles: Vec<ConnectionHandle> = self.connections.keys().copied().collect();
            for handle in handles {
                self.drive(handle, now);
            }
        }
        if self.shutdown_deadline.is_some_and(|at| at <= now) {
            // Connections waiting only for acknowledgements close now.
            self.shutdown_deadline = None;
            self.ack_wait_over = true;
            let handles: Vec<ConnectionHandle> = self.connections.keys().copied().collect();
            for handle in handles {
                self.drive(handle, now);
            }
        }
        let due: Vec<ConnectionHandle> = self
            .connections
            .iter_mut()
            .filter_map(|(&handle, connection)| {
                let timeout = connection.quic.poll_timeout();
                timeout.is_some_and(|at| at <= now).then_some(handle)
            })
            .collect();
        for handle in due {
            if let Some(connection) = self.connections.get_mut(&handle) {
                connection.quic.handle_timeout(now);
                self.drive(handle, now);
            }
        }
    }

    /// Starts a graceful shutdown (a reload or `quit`): GOAWAY on every connection, so that
    /// clients send no new request on it; each connection closes with H3_NO_ERROR once its
    /// requests are done, and new connections are refused.
    pub fn shutdown(&mut self, now: Instant) {
        self.shutting_down = true;
        self.shutdown_deadline = Some(now + SHUTDOWN_ACK_WAIT);
        self.goaway_grace = Some(now + SHUTDOWN_GOAWAY_GRACE);
        let handles: Vec<ConnectionHandle> = self.connections.keys().copied().collect();
        for handle in handles {
            if let Some(connection) = self.connections.get_mut(&handle) {
                connection.http3.send_goaway();
            }
            self.drive(handle, now);
        }
    }

    /// Whether a shutdown has ended: no connection is left, not even one draining.
    pub fn is_shut_down(&self) -> bool {
        self.shutting_down && self.connections.is_empty()
    }

    /// The next thing a client did.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// Bytes handed to a connection that QUIC's flow control has not taken yet: a caller
    /// sending a large body waits while this is high.
    pub fn unsent_bytes(&self, connection: ConnectionId) -> usize {
        self.connections
            .get(&ConnectionHandle(connection.0))
            .map_or(0, |state| {
                let queued: usize = state
                    .unsent
                    .values()
                    .flat_map(|unsent| unsent.data.iter())
                    .map(Bytes::len)
                    .sum();
                queued
            })
    }

    /// Bytes of one stream handed over and not taken by QUIC's flow control yet: a
    /// request's writer waits while its own response has this much queued.
    pub fn unsent_stream_bytes(&self, connection: ConnectionId, stream_id: u64) -> usize {
        self.connections
            .get(&ConnectionHandle(connection.0))
            .and_then(|state| state.unsent.get(&stream_id))
            .map_or(0, |unsent| unsent.data.iter().map(Bytes::len).sum())
    }

    /// Whether the connection is still open (not closed nor draining).
    pub fn is_open(&self, connection: ConnectionId) -> bool {
        self.connections
            .get(&ConnectionHandle(connection.0))
            .is_some_and(|state| !state.quic.is_closed())
    }

    /// The client's address as the connection sees it now (it changes with migration).
    pub fn remote_address(&self, connection: ConnectionId) -> Option<SocketAddr> {
        let state = self.connections.get(&ConnectionHandle(connection.0))?;
        Some(state.quic.remote_address())
    }

    /// The client's address for a request that starts now: the address before the last
    /// datagram was read, so a request on the datagram that migrates the connection keeps
    /// the old address and the requests after it have the new one (nginx's behaviour).
    pub fn request_address(&self, connection: ConnectionId) -> Option<SocketAddr> {
        let state = self.connections.get(&ConnectionHandle(connection.0))?;
        Some(state.address_before_datagram)
    }

    /// The TLS facts of the connection's handshake (the variables' `$ssl_*`): the SNI name,
    /// the ALPN protocol, and the suite and the client's offers from its hello.
    pub fn handshake(&self, connection: ConnectionId) -> Option<tls::HandshakeInfo> {
        let state = self.connections.get(&ConnectionHandle(connection.0))?;
        let data = state.quic.crypto_session().handshake_data()?;
        let data = data
            .downcast::<quinn_proto::crypto::rustls::HandshakeData>()
            .ok()?;
        Some(tls::HandshakeInfo::for_quic(
            state.hello.as_ref(),
            data.server_name.as_deref(),
            data.protocol.as_deref(),
        ))
    }

    /// Keeps the hello the certificate resolver noted while `handle`'s packets were read
    /// (this thread feeds one connection at a time, so the hello is that connection's).
    fn note_hello(&mut self, handle: ConnectionHandle) {
        if let Some(hello) = tls::take_quic_hello()
            && let Some(connection) = self.connections.get_mut(&handle)
        {
            connection.hello = Some(hello);
        }
    }

    /// Gives up on a request: its stream is reset both ways with `code`.
    pub fn abort(&mut self, connection: ConnectionId, stream_id: u64, code: http3::Code) {
        let handle = ConnectionHandle(connection.0);
        if let Some(state) = self.connections.get_mut(&handle) {
            state.unsent.remove(&stream_id);
            state.http3.abort(stream_id, code);
            write_output(state);
        }
    }

    /// Stops reading a request stream until [`Endpoint::resume_reading`]: a caller whose
    /// request has enough of its body waiting stops taking more, and QUIC's flow control
    /// (whose credit goes back only as the stream is read) holds the client back.
    pub fn pause_reading(&mut self, connection: ConnectionId, stream_id: u64) {
        if let Some(state) = self.connections.get_mut(&ConnectionHandle(connection.0)) {
            state.paused.insert(stream_id);
        }
    }

    /// Reads a paused stream again, with what arrived meanwhile.
    pub fn resume_reading(&mut self, connection: ConnectionId, stream_id: u64) {
        let handle = ConnectionHandle(connection.0);
        let now = Instant::now();
        let Some(state) = self.connections.get_mut(&handle) else {
            return;
        };
        if state.paused.remove(&stream_id) {
            read_stream(state, stream_id, now);
            self.drive(handle, now);
        }
    }

    /// Sends GOAWAY on one connection: requests already received are served, later ones
    /// refused (the connection's last request was its `keepalive_requests`th).
    pub fn send_goaway(&mut self, connection: ConnectionId) {
        let handle = ConnectionHandle(connection.0);
        if let Some(state) = self.connections.get_mut(&handle) {
            state.http3.send_goaway();
            write_output(state);
        }
    }

    /// Stops reading a request whose response is complete; see
    /// [`http3::Connection::stop_reading`].
    pub fn stop_reading(&mut self, connection: ConnectionId, stream_id: u64) {
        let handle = ConnectionHandle(connection.0);
        if let Some(state) = self.connections.get_mut(&handle) {
            state.http3.stop_reading(stream_id);
            write_output(state);
        }
    }

    /// Sends a response head; see [`http3::Connection::send_headers`].
    pub fn send_headers(
        &mut self,
        connection: ConnectionId,
        stream_id: u64,
        fields: &[HeaderField],
        end: bool,
    ) -> Result<(), SendError> {
        self.with_http3(connection, |http3| {
            http3.send_headers(stream_id, fields, end)
        })
    }

    /// Sends response body bytes; see [`http3::Connection::send_data`].
    pub fn send_data(
        &mut self,
        connection: ConnectionId,
        stream_id: u64,
        data: &[u8],
        end: bool,
    ) -> Result<(), SendError> {
        self.with_http3(connection, |http3| http3.send_data(stream_id, data, end))
    }

    /// Sends trailers, ending the response.
    pub fn send_trailers(
        &mut self,
        connection: ConnectionId,
        stream_id: u64,
        fields: &[HeaderField],
    ) -> Result<(), SendError> {
        self.with_http3(connection, |http3| http3.send_trailers(stream_id, fields))
    }

    fn with_http3(
        &mut self,
        connection: ConnectionId,
        send: impl FnOnce(&mut http3::Connection) -> Result<(), http3::SendError>,
    ) -> Result<(), SendError> {
        let handle = ConnectionHandle(connection.0);
        let state = self
            .connections
            .get_mut(&handle)
            .ok_or(SendError::ConnectionGone)?;
        send(&mut state.http3).map_err(SendError::Http3)?;
        write_output(state);
        Ok(())
    }

    /// Processes everything a connection has to say after an input or a timer.
    fn drive(&mut self, handle: ConnectionHandle, now: Instant) {
        let Some(connection) = self.connections.get_mut(&handle) else {
            return;
        };
        let id = ConnectionId(handle.0);
        loop {
            let mut progressed = false;
            while let Some(event) = connection.quic.poll_endpoint_events() {
                progressed = true;
                if let Some(event) = self.endpoint.handle_event(handle, event) {
                    connection.quic.handle_event(event);
                }
            }
            while let Some(event) = connection.quic.poll() {
                progressed = true;
                quic_event(connection, event, now);
            }
            while let Some(event) = connection.http3.poll_event() {
                self.events.push_back(Event::Http3 {
                    connection: id,
                    event,
                });
            }
            write_output(connection);
            // A connection still in its handshake has no request to finish: its client
            // may have given up, or its packets may now reach another socket of the
            // `reuseport` group, and waiting would hold the worker until the idle timeout.
            let done = connection.quic.is_handshaking()
                || match self.ack_wait_over {
                    true => answered(connection),
                    false => all_delivered(connection),
                };
            let in_grace = self.goaway_grace.is_some_and(|at| now < at);
            if self.shutting_down && done && !in_grace && !connection.quic.is_closed() {
                let code = VarInt::from_u64(http3::Code::NoError.value())
                    .expect("HTTP/3 codes are varints");
                connection.quic.close(now, code, Bytes::new());
                progressed = true;
            }
            if !progressed {
                break;
            }
        }
        if connection.quic.is_drained() {
            if !connection.closed_reported {
                self.events.push_back(Event::Closed { connection: id });
            }
            self.connections.remove(&handle);
        } else if connection.quic.is_closed() && !connection.closed_reported {
            connection.closed_reported = true;
            self.events.push_back(Event::Closed { connection: id });
        }
    }
}

/// The stateless-reset key and the Retry token key made from a host key, each with a
/// label of its own so that neither key is the other.
fn host_keys(host_key: &[u8]) -> (aws_lc_rs::hmac::Key, aws_lc_rs::hkdf::Prk) {
    let salt = aws_lc_rs::hkdf::Salt::new(aws_lc_rs::hkdf::HKDF_SHA256, b"portico quic host key");
    let master = salt.extract(host_key);
    let derive = |label: &[u8]| {
        let mut out = [0u8; 32];
        let info = [label];
        master
            .expand(&info, aws_lc_rs::hkdf::HKDF_SHA256)
            .and_then(|okm| okm.fill(&mut out))
            .expect("32 bytes is a valid HKDF-SHA256 output length");
        out
    };
    let reset = aws_lc_rs::hmac::Key::new(aws_lc_rs::hmac::HMAC_SHA256, &derive(b"reset"));
    let token =
        aws_lc_rs::hkdf::Salt::new(aws_lc_rs::hkdf::HKDF_SHA256, &[]).extract(&derive(b"token"));
    (reset, token)
}

/// Whether every request is done and every response byte acknowledged: only the server's
/// three unidirectional streams, never finished, may still be sending. Closing earlier
/// would throw away response bytes QUIC has not delivered yet.
fn all_delivered(connection: &mut Connection) -> bool {
    answered(connection) && connection.quic.streams().send_streams() <= 3
}

/// Whether every request is done and every response byte handed to QUIC.
fn answered(connection: &Connection) -> bool {
    connection.http3.is_idle() && connection.unsent.is_empty()
}

fn stream_id(id: u64) -> StreamId {
    StreamId::from(VarInt::from_u64(id).expect("QUIC stream ids are varints"))
}

fn quic_event(connection: &mut Connection, event: quinn_proto::Event, now: Instant) {
    match event {
        quinn_proto::Event::Connected => open_streams(connection),
        quinn_proto::Event::Stream(StreamEvent::Opened { dir }) => {
            while let Some(id) = connection.quic.streams().accept(dir) {
                read_stream(connection, u64::from(id), now);
            }
        }
        quinn_proto::Event::Stream(StreamEvent::Readable { id }) => {
            read_stream(connection, u64::from(id), now);
        }
        quinn_proto::Event::Stream(StreamEvent::Stopped { id, error_code }) => {
            // The client wants no more of this stream: RESET_STREAM answers STOP_SENDING
            // (RFC 9000 §3.5), and what was waiting for flow control is dropped.
            connection.unsent.remove(&u64::from(id));
            let _ = connection.quic.send_stream(id).reset(error_code);
            let result = connection
                .http3
                .stream_reset(u64::from(id), error_code.into_inner());
            fail_on_error(connection, result, now);
        }
        _ => {}
    }
}

/// Opens the server's control and QPACK streams, in the order the codec numbered them.
fn open_streams(connection: &mut Connection) {
    for expected in [CONTROL_STREAM_ID, ENCODER_STREAM_ID, DECODER_STREAM_ID] {
        let opened = connection.quic.streams().open(Dir::Uni).map(u64::from);
        // A new connection may open at least three unidirectional streams: the peer's
        // initial limit for HTTP/3 is at least 3 (RFC 9114 §6.2).
        debug_assert_eq!(opened, Some(expected));
    }
    connection.streams_open = true;
}

/// Reads what a stream has and hands it to the HTTP/3 codec.
fn read_stream(connection: &mut Connection, id: u64, now: Instant) {
    if connection.paused.contains(&id) {
        return;
    }
    let mut pieces: Vec<Bytes> = Vec::new();
    let mut fin = false;
    let mut reset = None;
    {
        let mut recv = connection.quic.recv_stream(stream_id(id));
        let Ok(mut chunks) = recv.read(true) else {
            return;
        };
        loop {
            match chunks.next(usize::MAX) {
                Ok(Some(chunk)) => pieces.push(chunk.bytes),
                Ok(None) => {
                    fin = true;
                    break;
                }
                Err(ReadError::Blocked) => break,
                Err(ReadError::Reset(code)) => {
                    reset = Some(code.into_inner());
                    break;
                }
            }
        }
        let _ = chunks.finalize();
    }
    let count = pieces.len();
    for (index, piece) in pieces.into_iter().enumerate() {
        let last = index + 1 == count;
        let result = connection.http3.receive(id, &piece, fin && last);
        if fail_on_error(connection, result, now) {
            return;
        }
    }
    if count == 0 && fin {
        let result = connection.http3.receive(id, &[], true);
        fail_on_error(connection, result, now);
    }
    if let Some(code) = reset {
        let result = connection.http3.stream_reset(id, code);
        fail_on_error(connection, result, now);
    }
}

/// Closes the connection with an HTTP/3 connection error's code; true when it did.
fn fail_on_error(
    connection: &mut Connection,
    result: Result<(), http3::Error>,
    now: Instant,
) -> bool {
    let Err(error) = result else {
        return false;
    };
    let code = VarInt::from_u64(error.code.value()).expect("HTTP/3 codes are varints");
    let reason = Bytes::from(error.reason.to_string());
    connection.quic.close(now, code, reason);
    true
}

/// Writes what the codec queued, keeping what flow control does not take yet.
fn write_output(connection: &mut Connection) {
    while let Some(output) = connection.http3.poll_output() {
        match output {
            Output::Data {
                stream_id: id,
                data,
                fin,
            } => {
                let unsent = connection.unsent.entry(id).or_default();
                if !data.is_empty() {
                    unsent.data.push_back(Bytes::from(data));
                }
                unsent.fin |= fin;
            }
            Output::Reset {
                stream_id: id,
                code,
            } => {
                connection.unsent.remove(&id);
                let code = VarInt::from_u64(code.value()).expect("HTTP/3 codes are varints");
                let _ = connection.quic.send_stream(stream_id(id)).reset(code);
                let _ = connection.quic.recv_stream(stream_id(id)).stop(code);
            }
            Output::StopSending {
                stream_id: id,
                code,
            } => {
                let code = VarInt::from_u64(code.value()).expect("HTTP/3 codes are varints");
                let _ = connection.quic.recv_stream(stream_id(id)).stop(code);
            }
        }
    }
    if !connection.streams_open {
        return;
    }
    let mut done = Vec::new();
    for (&id, unsent) in &mut connection.unsent {
        let mut send = connection.quic.send_stream(stream_id(id));
        while let Some(front) = unsent.data.front_mut() {
            match send.write(front) {
                Ok(written) if written == front.len() => {
                    unsent.data.pop_front();
                }
                Ok(written) => {
                    let _ = front.split_to(written);
                    break;
                }
                // Flow control is shut for now: the rest waits for the stream to become
                // writable again.
                Err(WriteError::Blocked) => break,
                // The stream was stopped or closed: nobody will read the rest.
                Err(_) => {
                    unsent.data.clear();
                    unsent.fin = false;
                    break;
                }
            }
        }
        if unsent.data.is_empty() {
            if unsent.fin {
                let _ = send.finish();
            }
            done.push(id);
        }
    }
    for id in done {
        connection.unsent.remove(&id);
    }
}
