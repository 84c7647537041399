//! The rewrite module: `rewrite`, `return`, `set`, `break` and `if`, compiled at config
//! load into a [`Script`] per level and run per request by [`run()`].
//!
//! A level's directives become one flat list of [`Op`]s in configuration order. An `if`
//! block's own rewrite directives are placed inline after its [`If`] op, which jumps past
//! them when the condition is false; the block's other directives (`root`, `add_header`,
//! ...) make a pseudo-location the request switches to when the condition is true, as in
//! nginx. Scripts are not inherited: each level runs its own, the server level in the
//! server-rewrite phase and a location's in the rewrite phase.

pub mod condition;
pub mod directives;
pub mod replacement;
pub mod run;

pub use condition::{Condition, FileTest};
pub use replacement::Replacement;
pub use run::{ScriptOutcome, run};

use crate::conf::NamedCaptures;
use crate::settings;
use crate::variables::{HttpTemplate, NamedSlot};

/// nginx's non-standard code: close the connection without a response.
pub const STATUS_CLOSE: u16 = 444;

/// One step of a level's script.
#[derive(Clone, Debug)]
pub enum Op {
    Rewrite(Box<Rewrite>),
    /// `return CODE [TEXT]`, `return CODE URL`, `return URL`.
    Return {
        status: u16,
        text: Option<HttpTemplate>,
    },
    /// `set $name value`.
    Set {
        target: SetTarget,
        value: HttpTemplate,
    },
    /// `break`: stop the script; a URI changed so far is not searched for again.
    Break,
    If(Box<If>),
}

/// `rewrite REGEX REPLACEMENT [FLAG]`.
#[derive(Clone, Debug)]
pub struct Rewrite {
    pub regex: NamedCaptures,
    pub replacement: Replacement,
    pub flag: Flag,
}

/// What a matching `rewrite` does after changing the URI.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flag {
    /// No flag: go on with the script; the new URI is searched for at its end.
    Continue,
    /// `last`: stop the script and search for the new URI.
    Last,
    /// `break`: stop the script and serve the new URI in the current location.
    Break,
    /// `redirect` (302), `permanent` (301), or a replacement that starts with `http://`,
    /// `https://` or `$scheme` (302): answer with a redirect.
    Redirect(u16),
}

/// What `set` writes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetTarget {
    /// A variable of the configuration's own (`set $name`, or a named capture).
    Named(NamedSlot),
    /// `$args`: the request's arguments.
    Args,
    /// `$limit_rate`: the response's rate limit.
    LimitRate,
}

/// `if (CONDITION) { ... }`.
#[derive(Clone, Debug)]
pub struct If {
    pub condition: Condition,
    /// For an `if` in a location, the block's pseudo-location, by its index in the owning
    /// location's `if_blocks`; `if` at the server level changes no settings.
    pub block: Option<u32>,
    /// The op after the block's own ops: where a false condition jumps.
    pub end: u32,
}

/// The ops of one level, in order.
#[derive(Clone, Debug, Default)]
pub struct Script {
    pub ops: Vec<Op>,
}

impl Script {
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }
}

settings! {
    /// The rewrite module's inherited settings.
    pub struct RewriteConf => RewriteSettings (env) {
        /// `rewrite_log`: log each match and its result at `notice`.
        log: bool = false,
        /// `uninitialized_variable_warn`
        uninitialized_variable_warn: bool = true,
    }
}

/// Whether `return`'s text for `status` is a URL for the Location header.
pub fn status_is_redirect(status: u16) -> bool {
    matches!(status, 301 | 302 | 303 | 307 | 308)
}
