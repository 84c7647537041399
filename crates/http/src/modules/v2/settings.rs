//! What the `http2_*` directives set.

use crate::kernel::core::CoreServer;
use crate::settings;

settings! {
    /// The HTTP/2 settings of the `http` block alone.
    pub struct Http2MainConf => Http2Main (env) {
        /// `http2_recv_buffer_size`: the per-worker buffer nginx reads frames into.
        recv_buffer_size: u64 = 256 * 1024,
    }
}

settings! {
    /// The HTTP/2 settings of a virtual server.
    pub struct Http2ServerConf => Http2Server (env) {
        /// `http2`: a cleartext connection that starts with the client preface speaks
        /// HTTP/2 (and, over TLS, ALPN may choose `h2`).
        enable: bool = false,
        /// `http2_max_concurrent_streams`
        max_concurrent_streams: u32 = 128,
        /// `http2_body_preread_size`: the stream window announced in SETTINGS.
        body_preread_size: u32 = 64 * 1024,
    }
}

settings! {
    /// The HTTP/2 settings of a location.
    pub struct Http2LocationConf => Http2Location (env) {
        /// `http2_chunk_size`: the largest DATA frame sent.
        chunk_size: u32 = 8 * 1024,
    }
}

impl Http2Server {
    /// The protocol's configuration for a connection whose default server is `self`:
    /// `large_client_header_buffers` bounds one field (its size) and the header list
    /// (number times size), as nginx's HTTP/2 module has done since 1.19.7. `chunk_size`
    /// is the default server's; a stream's own location may lower it later.
    pub fn connection_config(
        &self,
        core: &CoreServer,
        chunk_size: u32,
    ) -> http2::connection::Config {
        let (number, size) = core.large_client_header_buffers;
        let field_max = usize::try_from(size).unwrap_or(usize::MAX);
        let header_list_max = usize::try_from(number.saturating_mul(size)).unwrap_or(usize::MAX);
        // nginx announces the largest frame size; frames that could never be accepted are
        // still refused on their header (see `http2::connection`).
        let mut config = http2::connection::Config {
            stream_window: self.body_preread_size,
            chunk_size,
            max_frame_size: http2::frame::MAX_FRAME_SIZE_LIMIT,
            output_high_water: 256 * 1024,
            ..Default::default()
        };
        config.limits.max_concurrent_streams = self.max_concurrent_streams;
        config.limits.new_streams_per_receive = self.max_concurrent_streams.saturating_mul(2);
        config.limits.field_max = field_max;
        config.limits.header_list_max = header_list_max;
        config
    }
}
