//! Static files: mapping a URI to a file under `root` or `alias`, `try_files`, `index`,
//! `autoindex`, `disable_symlinks`, `open_file_cache`, and sending the file. Opening,
//! stat-ing, listing and reading run on a thread pool, never on the worker's loop.

pub mod autoindex;
pub mod content;
pub mod directives;
pub mod file_cache;
pub mod handler;
pub mod listing;
pub mod open;
pub mod try_files;

use std::sync::Arc;
use std::time::Duration;

use crate::settings;
use crate::static_files::open::Symlinks;
use crate::variables::HttpTemplate;

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
    }
}

/// `try_files` of one level: not inherited by nested locations, as in nginx.
pub type TryFilesSetting = Option<Arc<try_files::TryFiles>>;
