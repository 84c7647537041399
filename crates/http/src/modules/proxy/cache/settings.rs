//! What the cache directives set: the cache paths the `http` block declares
//! (`proxy_cache_path`) and each location's use of them (`proxy_cache` and its companions).

use std::path::PathBuf;
use std::time::Duration;

use conf::Span;

use crate::kernel::variables::HttpTemplate;
use crate::settings;

/// A cache declared by `proxy_cache_path`, in declaration order; its place in
/// `HttpConf::cache_paths` is its [`CacheZoneId`].
#[derive(Clone, Debug)]
pub struct CachePath {
    /// The `keys_zone` name.
    pub name: String,
    /// Where entries live, the trailing `/` stripped, relative paths under the prefix.
    pub path: PathBuf,
    /// `levels=`: the length (1 or 2) of each subdirectory level, outermost first.
    pub levels: Vec<u8>,
    /// `use_temp_path=`: temporary files under `proxy_temp_path` (on) or next to the entry.
    pub use_temp_path: bool,
    /// The `keys_zone` size in bytes: how many keys the zone may hold.
    pub keys_zone_size: u64,
    pub inactive: Duration,
    pub max_size: Option<u64>,
    /// Portico's `max_size_slack=`: how far a store may take the cache past `max_size`
    /// before the manager has trimmed it (default max(1% of `max_size`, 64 MiB)).
    pub max_size_slack: Option<u64>,
    pub min_free: Option<u64>,
    pub manager_files: u64,
    pub manager_sleep: Duration,
    pub manager_threshold: Duration,
    pub loader_files: u64,
    pub loader_sleep: Duration,
    pub loader_threshold: Duration,
    /// `purger=on` (NGINX Plus syntax): wildcard purge rules are applied by a walk of the
    /// index, not only lazily.
    pub purger: bool,
    /// `purger_files=`: files the purger reads per run (10).
    pub purger_files: u64,
    /// `purger_sleep=`: the purger's rest between runs (50 ms).
    pub purger_sleep: Duration,
    /// `purger_threshold=`: the longest run of the purger (50 ms).
    pub purger_threshold: Duration,
    pub span: Span,
}

/// A cache's index in `HttpConf::cache_paths` (and in the generation's zones).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CacheZoneId(pub u32);

/// `proxy_cache`.
#[derive(Clone, Debug, Default)]
pub enum CacheUse {
    #[default]
    Off,
    /// A literal zone name, checked once the whole `http` block is read.
    Named {
        name: String,
        span: Span,
    },
    Zone(CacheZoneId),
    /// A name evaluated per request: empty or `off` means no cache; an unknown name is an
    /// error and a 500, as nginx answers.
    Variable(HttpTemplate),
}

/// One `proxy_cache_valid` line: the statuses it covers (`None` = `any`) and for how long.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValidRule {
    pub status: Option<u16>,
    pub time: Duration,
}

/// The conditions of `proxy_cache_use_stale` (the same names as `proxy_next_upstream`'s).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UseStale(pub u16);

impl UseStale {
    pub const ERROR: u16 = 1 << 0;
    pub const TIMEOUT: u16 = 1 << 1;
    pub const INVALID_HEADER: u16 = 1 << 2;
    pub const UPDATING: u16 = 1 << 3;
    pub const HTTP_500: u16 = 1 << 4;
    pub const HTTP_502: u16 = 1 << 5;
    pub const HTTP_503: u16 = 1 << 6;
    pub const HTTP_504: u16 = 1 << 7;
    pub const HTTP_403: u16 = 1 << 8;
    pub const HTTP_404: u16 = 1 << 9;
    pub const HTTP_429: u16 = 1 << 10;
    pub const OFF: u16 = 1 << 11;

    pub const NAMES: &[(&str, u16)] = &[
        ("error", Self::ERROR),
        ("timeout", Self::TIMEOUT),
        ("invalid_header", Self::INVALID_HEADER),
        ("updating", Self::UPDATING),
        ("http_500", Self::HTTP_500),
        ("http_502", Self::HTTP_502),
        ("http_503", Self::HTTP_503),
        ("http_504", Self::HTTP_504),
        ("http_403", Self::HTTP_403),
        ("http_404", Self::HTTP_404),
        ("http_429", Self::HTTP_429),
        ("off", Self::OFF),
    ];

    pub fn has(self, flag: u16) -> bool {
        self.0 & Self::OFF == 0 && self.0 & flag != 0
    }

    /// The flag an upstream status selects for a stale answer, if any.
    pub fn for_status(status: u16) -> Option<u16> {
        Some(match status {
            500 => Self::HTTP_500,
            502 => Self::HTTP_502,
            503 => Self::HTTP_503,
            504 => Self::HTTP_504,
            403 => Self::HTTP_403,
            404 => Self::HTTP_404,
            429 => Self::HTTP_429,
            _ => return None,
        })
    }
}

/// `proxy_cache_methods`: GET and HEAD are always in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheMethods(pub u8);

impl CacheMethods {
    pub const GET: u8 = 1 << 0;
    pub const HEAD: u8 = 1 << 1;
    pub const POST: u8 = 1 << 2;

    pub fn allows(self, method: &[u8]) -> bool {
        match method {
            b"GET" => true,
            b"HEAD" => true,
            b"POST" => self.0 & Self::POST != 0,
            _ => false,
        }
    }
}

/// `proxy_store`.
#[derive(Clone, Debug, Default)]
pub enum Store {
    #[default]
    Off,
    /// The file's path: `$request_filename` for `on` (`root` or `alias` plus the URI),
    /// else the template given.
    Path(HttpTemplate),
}

settings! {
    /// The proxy cache's settings per location.
    pub struct ProxyCacheConf => ProxyCache (env) {
        /// `proxy_cache`.
        cache: CacheUse = CacheUse::Off,
        /// `proxy_cache_key`; `None` is the default key (`http://` + `$proxy_host` + the
        /// URI nginx would send upstream).
        key: Option<HttpTemplate> = None,
        /// `proxy_cache_valid`, in order; the first match wins.
        valid: Vec<ValidRule> = Vec::new(),
        min_uses: u64 = 1,
        use_stale: UseStale = UseStale(UseStale::OFF),
        background_update: bool = false,
        lock: bool = false,
        lock_timeout: Duration = Duration::from_secs(5),
        lock_age: Duration = Duration::from_secs(5),
        /// Portico's `proxy_cache_lock_stream`: waiters of a fill with a known length read
        /// it while it is written.
        lock_stream: bool = true,
        revalidate: bool = false,
        bypass: Vec<HttpTemplate> = Vec::new(),
        no_cache: Vec<HttpTemplate> = Vec::new(),
        methods: CacheMethods = CacheMethods(CacheMethods::GET | CacheMethods::HEAD),
        convert_head: bool = true,
        max_range_offset: Option<u64> = None,
        /// `proxy_force_ranges`.
        force_ranges: bool = false,
        store: Store = Store::Off,
        /// `proxy_store_access`, as a file mode.
        store_access: u32 = 0o600,
        /// `proxy_cache_purge` predicates (NGINX Plus syntax).
        purge: Vec<HttpTemplate> = Vec::new(),
        /// `slice`: the size of the ranges a response is fetched in; 0 is off.
        slice: u64 = 0,
    }
}
