//! The rewrite module's script: for now `return`; `rewrite`, `if`, `set` and `break` come
//! with the rewrite issue. Scripts are not inherited: each level runs its own, the server
//! level in the server-rewrite phase and a location's in the rewrite phase.

pub mod directives;

use crate::variables::HttpTemplate;

/// nginx's non-standard code: close the connection without a response.
pub const STATUS_CLOSE: u16 = 444;

/// One step of a level's rewrite script.
#[derive(Clone, Debug)]
pub enum RewriteStep {
    /// `return CODE [TEXT]`, `return CODE URL`, `return URL`.
    Return {
        status: u16,
        text: Option<HttpTemplate>,
    },
}

/// The steps of one level, in order.
#[derive(Clone, Debug, Default)]
pub struct RewriteScript {
    pub steps: Vec<RewriteStep>,
}

/// What running a script decided.
#[derive(Clone, Debug)]
pub enum RewriteOutcome<'a> {
    /// Go on to the next phase.
    Continue,
    Return {
        status: u16,
        text: Option<&'a HttpTemplate>,
    },
}

impl RewriteScript {
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    pub fn run(&self) -> RewriteOutcome<'_> {
        match self.steps.first() {
            Some(RewriteStep::Return { status, text }) => RewriteOutcome::Return {
                status: *status,
                text: text.as_ref(),
            },
            None => RewriteOutcome::Continue,
        }
    }
}

/// Whether `return`'s text for `status` is a URL for the Location header.
pub fn status_is_redirect(status: u16) -> bool {
    matches!(status, 301 | 302 | 303 | 307 | 308)
}
