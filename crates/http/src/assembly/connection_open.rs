//! The start of a client connection, before its first request: the PROXY protocol header,
//! the TLS handshake, HTTP/2 detection.

use std::time::Instant;

use runtime::{PeerAddress, Stream};

use crate::assembly::connection::Connection;
use crate::kernel::conf::AddressConf;
use crate::kernel::request::ConnectionInfo;
use crate::kernel::ssl::handshake::Start;
use crate::kernel::worker::HttpWorker;

/// The start of a connection: the PROXY protocol header, the TLS handshake on an `ssl`
/// address, and HTTP/2 detection. `None`: the connection ended there (an HTTP/2 connection
/// is served to its end by the detection).
pub(crate) async fn open(
    worker: &HttpWorker,
    address: &AddressConf,
    stream: Stream,
    peer: PeerAddress,
) -> Option<Connection> {
    let local = stream.local_address();
    let default_server = worker.conf().server(address.default_server);
    let _ = stream.set_nodelay(default_core(worker, address).tcp_nodelay);
    let mut info = ConnectionInfo {
        id: worker.next_connection_id(),
        peer: std::cell::Cell::new(peer),
        socket_peer: peer,
        proxy_protocol: None,
        local,
        accepted: Instant::now(),
        requests: 0,
        tls: None,
        debug: worker.generation.debug_connection(&peer),
    };
    if !crate::kernel::proxy_protocol::start(worker, address, &stream, &mut info).await {
        return None;
    }
    let mut plain_on_tls_port = false;
    let stream = if address.ssl {
        match crate::kernel::ssl::handshake::start(worker, address, stream, &info).await {
            Start::Tls(stream, handshake) => {
                info.tls = Some(handshake);
                stream
            }
            Start::Plain(stream) => {
                plain_on_tls_port = true;
                stream
            }
            Start::End => return None,
        }
    } else {
        stream
    };
    let mut connection = Connection::new(
        stream,
        info,
        default_server.core.client_header_buffer_size as usize,
    );
    connection.plain_on_tls_port = plain_on_tls_port;
    crate::assembly::v2::connection::detect(worker, address, connection).await
}

/// The core settings of the address's default server (its own location's): what applies
/// to a connection before a request names its server.
pub(crate) fn default_core<'w>(
    worker: &'w HttpWorker,
    address: &AddressConf,
) -> &'w crate::kernel::core::CoreLocation {
    let conf = worker.conf();
    &conf
        .location(conf.server(address.default_server).location)
        .settings
        .core
}
