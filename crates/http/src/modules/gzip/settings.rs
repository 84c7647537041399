//! What the gzip directives set.

use std::sync::Arc;

use crate::kernel::core::settings::MimeTypeList;
use crate::settings;

/// `gzip_proxied`: which answers to requests with `Via` are compressed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Proxied(pub u16);

impl Proxied {
    pub const OFF: u16 = 1 << 0;
    pub const EXPIRED: u16 = 1 << 1;
    pub const NO_CACHE: u16 = 1 << 2;
    pub const NO_STORE: u16 = 1 << 3;
    pub const PRIVATE: u16 = 1 << 4;
    pub const NO_LAST_MODIFIED: u16 = 1 << 5;
    pub const NO_ETAG: u16 = 1 << 6;
    pub const AUTH: u16 = 1 << 7;
    pub const ANY: u16 = 1 << 8;

    pub const NAMES: &[(&str, u16)] = &[
        ("off", Self::OFF),
        ("expired", Self::EXPIRED),
        ("no-cache", Self::NO_CACHE),
        ("no-store", Self::NO_STORE),
        ("private", Self::PRIVATE),
        ("no_last_modified", Self::NO_LAST_MODIFIED),
        ("no_etag", Self::NO_ETAG),
        ("auth", Self::AUTH),
        ("any", Self::ANY),
    ];

    pub fn has(self, flag: u16) -> bool {
        self.0 & flag != 0
    }
}

/// `gzip_static`: serve `FILE.gz` in place of `FILE`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum GzipStatic {
    #[default]
    Off,
    /// When the client takes gzip.
    On,
    /// Always (for clients `gunzip` serves, or that all take gzip).
    Always,
}

settings! {
    /// The gzip filter's settings per location.
    pub struct GzipConf => Gzip (env) {
        gzip: bool = false,
        comp_level: u32 = 1,
        min_length: u64 = 20,
        types: Arc<MimeTypeList> = Arc::new(MimeTypeList::default()),
        /// `gzip_http_version 1.1` (the default) or `1.0`.
        http_11: bool = true,
        proxied: Proxied = Proxied(Proxied::OFF),
        /// `gzip_disable` regexes over `User-Agent`.
        disable: Vec<Arc<shared::regex::Regex>> = Vec::new(),
        /// `gzip_disable msie6`.
        disable_msie6: bool = false,
        vary: bool = false,
        /// `gzip_static`.
        static_files: GzipStatic = GzipStatic::Off,
    }
}
