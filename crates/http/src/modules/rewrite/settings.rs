//! What the rewrite module's directives set: each level's script, and the data other
//! modules may read.

use crate::kernel::conf::NamedCaptures;
use crate::kernel::variables::{HttpTemplate, NamedSlot, Variable};
use crate::settings;

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

/// What an `if` tests.
#[derive(Clone, Debug)]
pub enum Condition {
    /// `($var)`: true unless the value is empty or `0`.
    Variable(Variable),
    /// `($var = text)`, `($var != text)`.
    Equal {
        variable: Variable,
        value: HttpTemplate,
        negate: bool,
    },
    /// `($var ~ re)`, `~*`, `!~`, `!~*`. A match sets the captures.
    Match {
        variable: Variable,
        regex: NamedCaptures,
        negate: bool,
    },
    /// `(-f path)`, `-d`, `-e`, `-x`, and the `!` forms.
    File {
        path: HttpTemplate,
        test: FileTest,
        negate: bool,
    },
}

/// The file tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileTest {
    /// `-f`: a regular file.
    Plain,
    /// `-d`: a directory.
    Directory,
    /// `-e`: a file or a directory (symbolic links followed).
    Exists,
    /// `-x`: executable (by its owner, as nginx tests it).
    Executable,
}

/// What a `stat()` of a tested path found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FileKind {
    pub exists: bool,
    pub is_file: bool,
    pub is_dir: bool,
    pub is_exec: bool,
}

/// A compiled replacement.
#[derive(Clone, Debug)]
pub struct Replacement {
    /// The new URI; for a redirect, the whole `Location`.
    pub uri: HttpTemplate,
    /// The text after the first `?` of an internal rewrite: the new arguments.
    pub args: Option<HttpTemplate>,
    /// Keep the request's arguments: the replacement does not end with `?`.
    pub add_args: bool,
    /// A redirect's text has a `?`, so kept arguments follow a `&` rather than a `?`.
    pub has_query: bool,
}
