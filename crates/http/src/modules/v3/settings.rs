//! What the `http3*` and `quic_*` directives set.

use std::sync::Arc;

use crate::settings;

settings! {
    /// The HTTP/3 and QUIC settings of a virtual server (nginx keeps them per server; the
    /// default server of a `listen ... quic` address decides for its socket).
    pub struct Http3ServerConf => Http3Server (env) {
        /// `http3`: ALPN offers `h3`.
        enable: bool = true,
        /// `http3_hq`: ALPN offers `hq-interop` (HTTP/0.9 over QUIC, for interop tests).
        hq: bool = false,
        /// `http3_max_concurrent_streams`: request streams a connection may open at once.
        max_concurrent_streams: u32 = 128,
        /// `http3_stream_buffer_size`: what one request stream may hold unread.
        stream_buffer_size: u64 = 64 * 1024,
        /// `quic_retry`: a new client proves its address with a Retry round trip first.
        retry: bool = false,
        /// `quic_gso`: accepted; datagrams are sent one by one (see docs/http3.md).
        gso: bool = false,
        /// `quic_host_key`: the key stateless resets and Retry tokens are made with, so
        /// that they stay valid across reloads and workers; random per start without it.
        host_key: Option<Arc<[u8]>> = None,
        /// `quic_active_connection_id_limit`: accepted; QUIC's transport announces 8
        /// (see docs/http3.md).
        active_connection_id_limit: u32 = 2,
    }
}

impl Http3Server {
    /// The ALPN names a QUIC handshake may choose, in the order offered.
    pub fn alpn(&self) -> Vec<Vec<u8>> {
        let mut alpn = Vec::new();
        if self.enable {
            alpn.push(b"h3".to_vec());
        }
        if self.hq {
            alpn.push(b"hq-interop".to_vec());
        }
        alpn
    }

    /// The HTTP/3 codec's limits: `large_client_header_buffers` bounds a request head, as
    /// it does over HTTP/2.
    pub fn codec_config(&self, head_max: u64) -> http3::Config {
        http3::Config {
            max_field_section_size: head_max,
            max_request_streams: self.max_concurrent_streams as usize,
            stream_buffer_size: usize::try_from(self.stream_buffer_size).unwrap_or(usize::MAX),
            ..http3::Config::default()
        }
    }
}
