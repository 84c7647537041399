//! The core module's settings per scope, with nginx's defaults.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use logging::ErrorLog;

use crate::kernel::variables::HttpTemplate;
use crate::settings;
use shared::lookup_hash::LookupHash;

/// `max_ranges`' default: nginx's `NGX_MAX_INT32_VALUE`.
pub const MAX_RANGES_UNLIMITED: u64 = http1::range::MAX_RANGES_UNLIMITED;

/// `keepalive_timeout TIMEOUT [HEADER_TIMEOUT]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeepaliveTimeout {
    pub timeout: Duration,
    /// Sent as `Keep-Alive: timeout=N` when set.
    pub header: Option<Duration>,
}

/// `keepalive_disable none | browser ...`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KeepaliveDisable {
    pub msie6: bool,
    pub safari: bool,
}

/// `lingering_close off | on | always`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LingeringClose {
    Off,
    /// Linger when the client may still be sending (an unread body, or more data already
    /// in flight).
    On,
    Always,
}

/// `server_tokens on | off | build`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerTokens {
    /// `Server: portico/0.1.0`
    On,
    /// `Server: portico`
    Off,
    /// `Server: portico/0.1.0 (BUILD)`, with the build description `-V` prints.
    Build,
}

/// `client_body_temp_path PATH [LEVEL1 [LEVEL2 [LEVEL3]]]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TempPath {
    pub path: PathBuf,
    /// Directory levels: each is the number of hex digits of a subdirectory name (1 or 2).
    pub levels: Vec<u8>,
}

/// `client_body_in_file_only off | on | clean`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyInFileOnly {
    Off,
    /// Always write the body to a file and keep it.
    On,
    /// Always write the body to a file and remove it after the request.
    Clean,
}

/// `satisfy all | any`: whether every access module must allow a request, or one is
/// enough. With `allow`/`deny` as the only access module, both give the same result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Satisfy {
    All,
    Any,
}

/// `root` or `alias`: where a location's files are.
#[derive(Clone, Debug)]
pub enum DocumentRoot {
    /// `root PATH`: the full URI is appended to PATH.
    Root(HttpTemplate),
    /// `alias PATH`: PATH replaces the part of the URI given by [`AliasPart`].
    Alias(HttpTemplate, AliasPart),
}

/// What part of the URI an `alias` replaces. It is fixed by the location that declares
/// it, and nested locations inherit it with the alias, as nginx's alias length is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AliasPart {
    /// The first N bytes: the declaring prefix or exact location's path.
    Prefix(usize),
    /// The whole URI: in a regex location the alias is the whole file name.
    Whole,
}

impl DocumentRoot {
    pub fn template(&self) -> &HttpTemplate {
        match self {
            DocumentRoot::Root(template) | DocumentRoot::Alias(template, _) => template,
        }
    }
}

/// `if_modified_since off | exact | before`: how `If-Modified-Since` is compared with
/// `Last-Modified`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IfModifiedSince {
    /// The header is ignored.
    Off,
    /// Not modified only when the two times are equal.
    Exact,
    /// Not modified when `Last-Modified` is at or before the header's time.
    Before,
}

/// A size that may hold variables (`limit_rate $arg_rate`): parsed at load when it is
/// literal, else evaluated and parsed for each request.
#[derive(Clone, Debug)]
pub enum SizeValue {
    Fixed(u64),
    Variable(HttpTemplate),
}

settings! {
    /// Settings of the `http` block itself.
    pub struct CoreMainConf => CoreMain (env) {
        /// `server_names_hash_bucket_size` (accepted: Portico's server name lookup has no
        /// fixed buckets).
        server_names_hash_bucket_size: u64 = 64,
        /// `server_names_hash_max_size` (accepted, as above).
        server_names_hash_max_size: u64 = 512,
        /// `variables_hash_bucket_size` (accepted).
        variables_hash_bucket_size: u64 = 64,
        /// `variables_hash_max_size` (accepted).
        variables_hash_max_size: u64 = 1024,
    }
}

settings! {
    /// Settings nginx keeps per virtual server; they may also be set in `http`.
    pub struct CoreServerConf => CoreServer (env) {
        /// `client_header_buffer_size`
        client_header_buffer_size: u64 = 1024,
        /// `large_client_header_buffers NUMBER SIZE`
        large_client_header_buffers: (u64, u64) = (4, 8 * 1024),
        /// `client_header_timeout`
        client_header_timeout: Duration = Duration::from_secs(60),
        /// `ignore_invalid_headers`
        ignore_invalid_headers: bool = true,
        /// `underscores_in_headers`
        underscores_in_headers: bool = false,
        /// `merge_slashes`
        merge_slashes: bool = true,
        /// `max_headers`
        max_headers: u64 = 1000,
        /// `connection_pool_size` (accepted: Portico allocates per connection as needed).
        connection_pool_size: u64 = 512,
        /// `request_pool_size` (accepted, as above).
        request_pool_size: u64 = 4096,
    }
}

impl CoreServer {
    /// The limits a request head is read with on a connection whose server this is.
    pub fn head_limits(&self) -> http1::request::HeadLimits {
        http1::request::HeadLimits {
            client_header_buffer_size: self.client_header_buffer_size as usize,
            large_client_header_buffers: (
                self.large_client_header_buffers.0 as usize,
                self.large_client_header_buffers.1 as usize,
            ),
            max_headers: Some(self.max_headers as usize),
            ignore_invalid_headers: self.ignore_invalid_headers,
            underscores_in_headers: self.underscores_in_headers,
            merge_slashes: self.merge_slashes,
        }
    }
}

settings! {
    /// Settings nginx keeps per location; they may also be set in `http` and `server`.
    pub struct CoreLocationConf => CoreLocation (env) {
        /// `root` or `alias`.
        document_root: DocumentRoot = DocumentRoot::Root(HttpTemplate::from_literal(
            env.prefix.join("html").to_string_lossy().as_bytes(),
        )),
        /// `client_max_body_size`; 0 disables the check.
        client_max_body_size: u64 = 1024 * 1024,
        /// `client_body_buffer_size`: bodies larger than this go to a temp file.
        client_body_buffer_size: u64 = 16 * 1024,
        /// `client_body_timeout`
        client_body_timeout: Duration = Duration::from_secs(60),
        /// `client_body_temp_path`
        client_body_temp_path: TempPath = TempPath {
            path: env.prefix.join("client_body_temp"),
            levels: Vec::new(),
        },
        /// `client_body_in_file_only`
        client_body_in_file_only: BodyInFileOnly = BodyInFileOnly::Off,
        /// `client_body_in_single_buffer`
        client_body_in_single_buffer: bool = false,
        /// `types_hash_bucket_size` (accepted: the types map has no fixed buckets).
        types_hash_bucket_size: u64 = 64,
        /// `types_hash_max_size` (accepted, as above).
        types_hash_max_size: u64 = 1024,
        /// `send_timeout`
        send_timeout: Duration = Duration::from_secs(60),
        /// `auth_delay`: how long a request the access phase refuses with 401 waits
        /// before its answer, so that a guess takes as long as any other.
        auth_delay: Duration = Duration::ZERO,
        /// `keepalive_timeout`
        keepalive_timeout: KeepaliveTimeout = KeepaliveTimeout {
            timeout: Duration::from_secs(75),
            header: None,
        },
        /// `keepalive_requests`
        keepalive_requests: u64 = 1000,
        /// `max_ranges`: nginx's default is its largest 32-bit number, which also turns on
        /// the check against overlapping ranges that add up to more than the response.
        max_ranges: u64 = MAX_RANGES_UNLIMITED,
        /// `keepalive_time`
        keepalive_time: Duration = Duration::from_secs(3600),
        /// `keepalive_disable`
        keepalive_disable: KeepaliveDisable = KeepaliveDisable { msie6: true, safari: false },
        /// `lingering_close`
        lingering_close: LingeringClose = LingeringClose::On,
        /// `lingering_time`
        lingering_time: Duration = Duration::from_secs(30),
        /// `lingering_timeout`
        lingering_timeout: Duration = Duration::from_secs(5),
        /// `reset_timedout_connection`
        reset_timedout_connection: bool = false,
        /// `default_type`
        default_type: Arc<[u8]> = Arc::from(&b"text/plain"[..]),
        /// `types { ... }`
        types: Arc<MimeTypes> = Arc::new(MimeTypes::builtin()),
        /// `server_tokens`
        server_tokens: ServerTokens = ServerTokens::On,
        /// `early_hints`: when one of these is neither empty nor `0`, an upstream's
        /// `103 Early Hints` goes on to the client.
        early_hints: Vec<HttpTemplate> = Vec::new(),
        /// `chunked_transfer_encoding`
        chunked_transfer_encoding: bool = true,
        /// `etag`: whether the static handler sends `ETag`.
        etag: bool = true,
        /// `if_modified_since`
        if_modified_since: IfModifiedSince = IfModifiedSince::Exact,
        /// `limit_rate`: bytes per second; 0 is no limit.
        limit_rate: SizeValue = SizeValue::Fixed(0),
        /// `limit_rate_after`: bytes sent at full speed before `limit_rate` applies.
        limit_rate_after: SizeValue = SizeValue::Fixed(0),
        /// `log_not_found`
        log_not_found: bool = true,
        /// `error_log` at this level, else the enclosing one's (the main one at the top).
        error_log: Arc<ErrorLog> = env.main_error_log.clone(),
        /// `absolute_redirect`
        absolute_redirect: bool = true,
        /// `port_in_redirect`
        port_in_redirect: bool = true,
        /// `server_name_in_redirect`
        server_name_in_redirect: bool = false,
        /// `msie_padding`
        msie_padding: bool = true,
        /// `msie_refresh`
        msie_refresh: bool = false,
        /// `tcp_nodelay`
        tcp_nodelay: bool = true,
        /// `error_page`: a level with its own list replaces the enclosing level's.
        error_page: Vec<ErrorPage> = Vec::new(),
        /// `recursive_error_pages`
        recursive_error_pages: bool = false,
        /// `internal`: only internal redirects reach this location.
        internal: bool = false,
        /// `satisfy`
        satisfy: Satisfy = Satisfy::All,
        /// `post_action URI`: a request to it once the response is out; `None` is `off`.
        post_action: Option<Box<[u8]>> = None,
    }
}

/// A map from lowercase file extension to MIME type.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MimeTypes {
    pub(crate) by_extension: HashMap<Box<[u8]>, Arc<[u8]>, LookupHash>,
}

/// One status of an `error_page` directive.
#[derive(Clone, Debug)]
pub struct ErrorPage {
    pub status: u16,
    /// `None`: the response keeps the error's status; `Some(0)` (a bare `=`): it takes the
    /// status of whatever the URI answers; `Some(code)`: it takes `code`.
    pub overwrite: Option<u16>,
    /// A URI (internal redirect), `@name` (named location) or anything else (a redirect).
    pub uri: HttpTemplate,
    /// The arguments of a literal URI with `?`, split at load as nginx does.
    pub args: Option<Box<[u8]>>,
}

/// A `*_types` list (`gzip_types`, `ssi_types`, `sub_filter_types`, `addition_types`):
/// lower-cased MIME types, `text/html` always among them, or `*` for any (nginx's types
/// slot and its content-type test).
#[derive(Clone, Debug, Default)]
pub struct MimeTypeList {
    pub any: bool,
    pub types: Vec<Box<[u8]>>,
}

impl MimeTypeList {
    /// Whether a response whose media type is `media_type` (as
    /// [`crate::kernel::response::ResponseHead::media_type`] gives it) is in the list.
    pub fn contains(&self, media_type: &[u8]) -> bool {
        self.any
            || media_type.eq_ignore_ascii_case(b"text/html")
            || self
                .types
                .iter()
                .any(|listed| listed.eq_ignore_ascii_case(media_type))
    }

    /// Adds a directive's arguments: `*`, or types.
    pub fn add(&mut self, arguments: &[conf::Argument]) {
        for argument in arguments {
            match argument.as_str() {
                "*" => self.any = true,
                value => self
                    .types
                    .push(value.to_ascii_lowercase().into_bytes().into()),
            }
        }
    }
}
