//! The nginx configuration language, without meaning.
//!
//! This crate turns configuration text into a tree of [`Directive`]s with file and line spans,
//! expands `include` (with globs, relative to the configuration's directory), parses the value
//! forms every module shares (sizes, times, flags, numbers), checks a directive against its
//! [`DirectiveSpec`] (context and number of arguments), and renders errors exactly as nginx
//! prints them (`unknown directive "x" in /etc/portico/portico.conf:12`).
//!
//! Where Portico differs from nginx here: configuration text must be UTF-8; blocks may nest
//! at most [`parser::BLOCK_DEPTH_MAX`] deep, includes at most [`parser::INCLUDE_DEPTH_MAX`]
//! deep (nginx recurses until it runs out of file descriptors), and one configuration reads
//! at most [`parser::FILES_MAX`] files; a non-ASCII character after a closing quote is
//! printed whole in `unexpected "C"` (nginx prints its first byte). Syntax is checked for
//! the whole tree before any directive's meaning, so where nginx would first report an
//! unknown directive that comes before a syntax error, Portico reports the syntax error.
//!
//! It does not know what any directive means: the feature modules in `http` and `server` own
//! their directive tables and fill typed settings from the tree. It is used by the master only,
//! at startup and on reload; nothing here runs on a worker's loop.

pub mod ast;
pub mod dump;
pub mod error;
mod glob;
pub mod lexer;
pub mod parser;
pub mod sources;
pub mod spec;
pub mod value;

pub use ast::{Argument, ConfigTree, Directive, SourceFile, Span};
pub use error::{ConfError, ConfErrorKind};
pub use parser::{parse_command_line, parse_file};
pub use sources::{DiskSources, MemorySources, Sources};
pub use spec::{Arity, BlockKind, Context, Contexts, DirectiveSpec};
