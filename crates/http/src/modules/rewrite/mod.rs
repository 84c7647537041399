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
pub mod settings;

pub use run::{ScriptOutcome, run};
pub use settings::Replacement;
pub use settings::{Condition, FileTest};
pub use settings::{Flag, If, Op, Rewrite, RewriteConf, RewriteSettings, Script, SetTarget};

/// Whether `return`'s text for `status` is a URL for the Location header.
pub(crate) fn status_is_redirect(status: u16) -> bool {
    matches!(status, 301 | 302 | 303 | 307 | 308)
}
