//! Static files: mapping a URI to a file under `root` or `alias`, `index`, and sending the
//! file. Under `aio threads` opening, stat-ing and reading run on a thread pool, never on
//! the worker's loop; under `aio off` they run on the worker, as nginx does them.

pub mod content;
pub mod directives;
pub mod handler;
pub mod io;

use crate::settings;
use crate::variables::HttpTemplate;

/// `aio off | on | threads[=POOL]`.
#[derive(Clone, Debug)]
pub enum Aio {
    /// File system calls and reads run on the worker.
    Off,
    /// `aio threads` (and `aio on`): they run on a thread pool.
    Threads(PoolChoice),
}

/// The pool `aio threads=POOL` names.
#[derive(Clone, Debug)]
pub enum PoolChoice {
    /// A name without variables, checked at load (`default` when none is given).
    Named(String),
    /// A name with variables, rendered per request (`aio threads=pool_$disk`).
    Template(HttpTemplate),
}

/// `output_buffers NUMBER SIZE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutputBuffers {
    pub number: u64,
    pub size: u64,
}

impl OutputBuffers {
    /// How many file bytes one read fills: every buffer at once.
    pub fn read_bytes(self) -> usize {
        usize::try_from(self.number.saturating_mul(self.size)).unwrap_or(usize::MAX)
    }
}

settings! {
    /// Static-file settings per location.
    pub struct StaticConf => Static (env) {
        /// `index`: tried in order for a URI ending in `/`.
        index: Vec<HttpTemplate> = vec![HttpTemplate::from_literal(b"index.html")],
        /// `aio`
        aio: Aio = Aio::Off,
        /// `aio_write`: accepted; applies to temp-file writes (see docs/thread-pools.md).
        aio_write: bool = false,
        /// `aio_nowait`: try a non-blocking read of cached data before offloading.
        aio_nowait: bool = true,
        /// `sendfile`
        sendfile: bool = false,
        /// `sendfile_max_chunk`; 0 means no limit.
        sendfile_max_chunk: u64 = 2 * 1024 * 1024,
        /// `tcp_nopush`: the head goes out with `MSG_MORE` ahead of `sendfile` data.
        tcp_nopush: bool = false,
        /// `output_buffers`
        output_buffers: OutputBuffers = OutputBuffers { number: 2, size: 32 * 1024 },
        /// `directio`: files at least this large are read with `O_DIRECT`; `None` is off.
        directio: Option<u64> = None,
        /// `directio_alignment`
        directio_alignment: u64 = 512,
        /// `read_ahead`: accepted, no effect on Linux (as in nginx).
        read_ahead: u64 = 0,
    }
}
