//! What the static-file directives set: the data other modules may read.

use std::sync::Arc;
use std::time::Duration;

use crate::kernel::file::open::Symlinks;
use crate::kernel::file::pin::PinHotFiles;
use crate::kernel::variables::HttpTemplate;
use crate::settings;

/// `autoindex_format html | xml | json | jsonp`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AutoindexFormat {
    Html,
    Xml,
    Json,
    Jsonp,
}

/// `disable_symlinks off | on | if_not_owner [from=part]`.
#[derive(Clone, Debug)]
pub struct DisableSymlinks {
    pub mode: Symlinks,
    /// `from=`: the leading part of a path whose links are not checked.
    pub from: Option<HttpTemplate>,
}

/// `open_file_cache max=N [inactive=time]`: one cache per directive, kept per worker and
/// told apart by the address of this shared value (levels that inherit it share it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpenFileCacheConf {
    pub max: usize,
    pub inactive: Duration,
}

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
    pub(crate) fn read_bytes(self) -> usize {
        usize::try_from(self.number.saturating_mul(self.size)).unwrap_or(usize::MAX)
    }
}

settings! {
    /// Static-file settings per location.
    pub struct StaticConf => Static (env) {
        /// `index`: tried in order for a URI ending in `/`.
        index: Vec<HttpTemplate> = vec![HttpTemplate::from_literal(b"index.html")],
        /// `autoindex`
        autoindex: bool = false,
        /// `autoindex_format`
        autoindex_format: AutoindexFormat = AutoindexFormat::Html,
        /// `autoindex_exact_size`
        autoindex_exact_size: bool = true,
        /// `autoindex_localtime`
        autoindex_localtime: bool = false,
        /// `disable_symlinks`
        disable_symlinks: DisableSymlinks = DisableSymlinks { mode: Symlinks::Off, from: None },
        /// `open_file_cache`; `None` is `off`.
        open_file_cache: Option<Arc<OpenFileCacheConf>> = None,
        /// `open_file_cache_valid`
        open_file_cache_valid: Duration = Duration::from_secs(60),
        /// `open_file_cache_min_uses`
        open_file_cache_min_uses: u64 = 1,
        /// `open_file_cache_errors`
        open_file_cache_errors: bool = false,
        /// `aio`
        aio: Aio = Aio::Off,
        /// `aio_write`: accepted, no effect (see docs/static-files.md).
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
        /// `pin_hot_files`; `None` is `off`.
        pin_hot_files: Option<PinHotFiles> = None,
    }
}

/// `try_files` of one level: not inherited by nested locations, as in nginx.
pub(crate) type TryFilesSetting = Option<Arc<TryFiles>>;

/// One level's `try_files`.
#[derive(Debug)]
pub struct TryFiles {
    pub candidates: Vec<Candidate>,
    pub fallback: Fallback,
}

/// A file (or, written with a trailing `/`, a directory) to look for.
#[derive(Debug)]
pub struct Candidate {
    /// The name below the root, without the trailing `/` of a directory.
    pub name: HttpTemplate,
    pub test_dir: bool,
}

/// The last parameter.
#[derive(Debug)]
pub enum Fallback {
    /// A URI (with `?args`) or `@name`.
    Uri(HttpTemplate),
    /// `=code`.
    Code(u16),
}
