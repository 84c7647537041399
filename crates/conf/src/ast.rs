//! The parsed configuration tree: directives, arguments and where each came from.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where a directive or argument was written: a file and line, or the `-g` command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Span {
    /// A line of a configuration file; the path is as nginx prints it (absolute after
    /// prefix resolution).
    File { path: Arc<Path>, line: u32 },
    /// The directives given with `-g`; nginx prints these as `in command line`.
    CommandLine,
}

impl Span {
    pub fn file(path: Arc<Path>, line: u32) -> Span {
        Span::File { path, line }
    }
}

impl fmt::Display for Span {
    /// Renders the location the way nginx appends it to messages: `/path/conf:12` or
    /// `command line`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Span::File { path, line } => write!(f, "{}:{}", path.display(), line),
            Span::CommandLine => f.write_str("command line"),
        }
    }
}

/// One argument of a directive, after quotes were removed and escapes processed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Argument {
    pub value: String,
    /// Whether the argument was written in single or double quotes. Some directives care
    /// (nginx treats a quoted `"{"` or an empty `""` differently from bare text).
    pub quoted: bool,
}

impl Argument {
    pub fn as_str(&self) -> &str {
        &self.value
    }
}

/// One directive: `name arg...;` or `name arg... { ... }`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Directive {
    pub name: String,
    pub args: Vec<Argument>,
    /// The directives inside `{ ... }`, or `None` when the directive ended with `;`.
    pub block: Option<Vec<Directive>>,
    /// Where nginx reports errors about this directive: the line of its terminating `;` or
    /// `{`, which is not the line of its name when the directive spans lines.
    pub span: Span,
}

impl Directive {
    /// The argument at `index` as text; callers check the count against the spec first.
    pub fn arg(&self, index: usize) -> &str {
        self.args.get(index).map(|a| a.value.as_str()).unwrap_or("")
    }
}

/// A configuration file as it was read, kept for `-T`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceFile {
    pub path: PathBuf,
    pub text: String,
}

/// A whole configuration: the directives of the main context, with every `include` already
/// replaced by the directives of the files it named, and the files in the order they were
/// first read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConfigTree {
    pub directives: Vec<Directive>,
    pub files: Vec<SourceFile>,
}
