//! What the userid directives set.

use std::time::Duration;

use crate::kernel::variables::HttpTemplate;
use crate::settings;

settings! {
    /// The userid module's settings per location.
    pub struct UserIdConf => UserId (env) {
        /// `userid`
        mode: Mode = Mode::Off,
        /// `userid_name`
        name: Box<str> = Box::from("uid"),
        /// `userid_domain`: `None` for `none`.
        domain: Option<Box<str>> = None,
        /// `userid_path`
        path: Box<str> = Box::from("/"),
        /// `userid_expires`
        expires: Expires = Expires::Off,
        /// `userid_p3p`: `None` for `none`.
        p3p: Option<Box<str>> = None,
        /// `userid_mark`: `None` for `off`.
        mark: Option<u8> = None,
        /// `userid_service`: `None` for the default (the server's address in version 2
        /// identifiers, 0 in version 1).
        service: Option<u32> = None,
        /// `userid_flags`
        flags: Flags = Flags::default(),
        /// `$uid_reset`, compiled once (a `map` or `set` may give it a value).
        reset: Option<HttpTemplate> = None,
    }
}

/// `userid on | v1 | log | off`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Off,
    /// Reads the cookie for `$uid_got`, sets none.
    Log,
    /// Sets cookies with version 1 identifiers (numbers in host order).
    V1,
    /// Sets cookies with version 2 identifiers (numbers in network order).
    On,
}

/// `userid_expires time | max | off`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expires {
    Off,
    Max,
    After(Duration),
}

/// `userid_flags`: the cookie's attributes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Flags {
    pub secure: bool,
    pub httponly: bool,
    pub samesite: Option<SameSite>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SameSite {
    Strict,
    Lax,
    None,
}
