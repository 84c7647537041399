//! What the browser directives set.

use crate::settings;

settings! {
    /// The browser module's settings per location.
    pub struct BrowserConf => Browser (env) {
        /// `modern_browser NAME VERSION` lines, sorted so that Opera is looked for first.
        modern: Vec<ModernBrowser> = Vec::new(),
        /// `modern_browser unlisted`
        unlisted_modern: bool = false,
        /// `ancient_browser` substrings (`netscape4` is kept apart).
        ancient: Vec<Box<[u8]>> = Vec::new(),
        /// `ancient_browser netscape4`: a `User-Agent` starting `Mozilla/1` to `Mozilla/4`.
        netscape4: bool = false,
        /// `modern_browser_value`
        modern_value: Box<[u8]> = Box::from(&b"1"[..]),
        /// `ancient_browser_value`
        ancient_value: Box<[u8]> = Box::from(&b"1"[..]),
    }
}

/// A browser `modern_browser` knows: where its version is found in a `User-Agent`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Family {
    /// First: Opera's `User-Agent` also names MSIE.
    Opera,
    Msie,
    Gecko,
    Safari,
    Konqueror,
}

impl Family {
    pub fn from_name(name: &str) -> Option<Family> {
        Some(match name {
            "opera" => Family::Opera,
            "msie" => Family::Msie,
            "gecko" => Family::Gecko,
            "safari" => Family::Safari,
            "konqueror" => Family::Konqueror,
            _ => return None,
        })
    }

    /// The text before the version, and how far into the `User-Agent` it can start.
    pub fn marker(self) -> (&'static [u8], usize) {
        match self {
            Family::Opera => (b"Opera ", 0),
            Family::Msie => (b"MSIE ", "Mozilla/4.0 (compatible; ".len()),
            Family::Gecko => (b"rv:", "Mozilla/5.0 (".len()),
            Family::Safari => (b"Safari/", "Mozilla/5.0 (".len()),
            Family::Konqueror => (b"Konqueror/", "Mozilla/5.0 (compatible; ".len()),
        }
    }
}

/// One `modern_browser NAME VERSION`: the version as one number, each part after the first
/// worth a hundredth of the one before (`5.5` is 5_050_000).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModernBrowser {
    pub family: Family,
    pub version: u64,
}
