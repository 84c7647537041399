//! What the proxy did for a request, as the `$upstream_*` and `$proxy_*` variables and the
//! error log read it: each try of an upstream server, and the last response's head.

use std::ops::Range;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One try of one upstream server, for `$upstream_*`.
#[derive(Clone, Debug)]
pub struct Attempt {
    pub addr: Arc<str>,
    /// The response's status; `None` when none arrived (the log then shows 502 or 504).
    pub status: Option<u16>,
    pub failed_status: u16,
    pub started: Instant,
    pub connect_time: Option<Duration>,
    pub header_time: Option<Duration>,
    pub response_time: Option<Duration>,
    /// Body bytes received (`$upstream_response_length`).
    pub response_length: u64,
    /// Bytes received, head included (`$upstream_bytes_received`).
    pub bytes_received: u64,
    pub bytes_sent: u64,
}

/// What the proxy did for a request.
#[derive(Debug, Default)]
pub struct UpstreamInfo {
    /// `$proxy_host`, `$proxy_port`.
    pub proxy_host: Vec<u8>,
    pub proxy_port: Vec<u8>,
    pub attempts: Vec<Attempt>,
    /// The last response's head as received, and its fields as ranges of it
    /// (`$upstream_http_NAME`, `$upstream_cookie_NAME`).
    pub head: Vec<u8>,
    pub fields: Vec<(Range<usize>, Range<usize>)>,
    /// The URI sent upstream; with the current try's address it makes the error log's
    /// `upstream: "http://ADDR/URI"`.
    pub uri: Vec<u8>,
    /// The protocol's name in that line (`fastcgi`); empty is `http`.
    pub scheme: &'static str,
    /// Whether a try is under way (the error log then names it).
    pub trying: bool,
    /// `$upstream_cache_status`: `HIT`, `MISS`, ..., when a cache was involved.
    pub cache_status: Option<&'static str>,
    /// The zone that answered, for its statistics: its place in the worker's
    /// `generation.cache_zones` (an index, so that a HIT does not count references to a
    /// zone every worker shares).
    pub cache_zone: Option<usize>,
    /// A stale entry was sent and its refresh is due once the response is out
    /// (`proxy_cache_background_update`): the mark that this request updates it.
    /// With the slice it was for, whose range the refresh asks again.
    pub refresh: Option<(cache::UpdateGuard, Option<(u64, u64)>)>,
    /// An unsafe request through a cached location: the zone and key whose entries its
    /// success invalidates.
    pub invalidate: Option<(std::sync::Arc<cache::Zone>, cache::Key, Vec<u8>)>,
    /// The slice being fetched (`slice`): its first and last byte, `$slice_range`.
    pub slice: Option<(u64, u64)>,
    /// An upgraded connection: what the client sent after its request, for the tunnel.
    pub client_early: Vec<u8>,
}

impl UpstreamInfo {
    /// The last response's fields, names and values.
    pub fn fields(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.fields.iter().filter_map(|(name, value)| {
            Some((self.head.get(name.clone())?, self.head.get(value.clone())?))
        })
    }

    /// Keeps a response's head, its first `len` bytes of `raw` with its fields as ranges
    /// of it (the buffers keep their memory for the connection's next request).
    pub(crate) fn keep_head(
        &mut self,
        raw: &[u8],
        len: usize,
        fields: &[(Range<usize>, Range<usize>)],
    ) {
        self.head.clear();
        self.head.extend_from_slice(&raw[..len.min(raw.len())]);
        self.fields.clear();
        self.fields.extend_from_slice(fields);
    }

    pub fn clear(&mut self) {
        self.proxy_host.clear();
        self.proxy_port.clear();
        self.attempts.clear();
        self.head.clear();
        self.fields.clear();
        self.uri.clear();
        self.trying = false;
        self.cache_status = None;
        self.cache_zone = None;
        self.refresh = None;
        self.invalidate = None;
        self.slice = None;
        self.client_early.clear();
    }
}

impl Attempt {
    pub fn new(addr: &Arc<str>, started: Instant, failed_status: u16) -> Attempt {
        Attempt {
            addr: Arc::clone(addr),
            status: None,
            failed_status,
            started,
            connect_time: None,
            header_time: None,
            response_time: None,
            response_length: 0,
            bytes_received: 0,
            bytes_sent: 0,
        }
    }
}
