//! Configuration errors, rendered in nginx's words.

use std::fmt;
use std::path::PathBuf;

use crate::ast::Span;

/// A configuration error and where it happened. `Display` prints nginx's text, including the
/// ` in FILE:LINE` suffix when a span is known, e.g.
/// `unknown directive "foo" in /etc/portico/portico.conf:3`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfError {
    pub kind: ConfErrorKind,
    pub span: Option<Span>,
}

/// What went wrong. Each variant prints exactly nginx's message for the same mistake.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConfErrorKind {
    /// `unknown directive "NAME"`
    UnknownDirective { name: String },
    /// `"NAME" directive is not allowed here`
    NotAllowedHere { name: String },
    /// `invalid number of arguments in "NAME" directive`
    InvalidArgumentCount { name: String },
    /// `"NAME" directive is duplicate`
    Duplicate { name: String },
    /// `directive "NAME" has no opening "{"`
    NoOpeningBrace { name: String },
    /// `directive "NAME" is not terminated by ";"`
    NotTerminated { name: String },
    /// `unexpected "C"`: a stray `;`, `{` or `}`, or a character other than whitespace, `;`,
    /// `{` or `)` right after a closing quote. nginx prints the byte; a character outside
    /// ASCII is printed whole here.
    UnexpectedCharacter { found: char },
    /// `unexpected end of file, expecting ";" or "}"`
    UnexpectedEndOfFile,
    /// `unexpected end of file, expecting "}"`: a file ended inside a block. The field holds
    /// what nginx names as expected, quotes included (`"}"`).
    UnexpectedEndOfFileExpecting { expected: &'static str },
    /// `unexpected end of parameter, expecting ";"`: the `-g` text ended inside a directive.
    UnexpectedEndOfParameter,
    /// `block directives are not supported in -g option`
    BlockInCommandLine,
    /// `too long parameter "START..." started`: a word (or comment) reached nginx's 4096-byte
    /// read buffer; `start` is its first 10 bytes.
    TooLongParameter { start: String },
    /// `too long parameter, probably missing terminating "Q" character`: as above, inside
    /// quotes.
    TooLongQuotedParameter { quote: char },
    /// Blocks nested deeper than Portico's limit; nginx has none, but recursion needs one.
    BlockTooDeep { limit: usize },
    /// An `include` nested deeper than Portico's limit, usually an include cycle (nginx
    /// recurses until it runs out of file descriptors).
    IncludeTooDeep { path: PathBuf, limit: usize },
    /// More files read for one configuration than Portico's limit.
    TooManyFiles { limit: usize },
    /// `invalid value "VALUE" in "NAME" directive, it must be "on" or "off"`
    InvalidFlag { name: String, value: String },
    /// `"NAME" directive MESSAGE`, the form nginx uses for a setter's complaint, e.g.
    /// `"client_max_body_size" directive invalid value`.
    Directive { name: String, message: String },
    /// A message nginx prints without the directive-name prefix, e.g.
    /// `invalid port in "x" of the "listen" directive` or `unknown "foo" variable`.
    Message(String),
    /// `open() "PATH" failed (ERRNO: STRERROR)` for a file that could not be read, and the
    /// other system-call failures nginx reports the same way (`pread()`, `glob()`). An
    /// `errno` of 0 means the failure had no system error number; only the text is printed.
    Io {
        call: &'static str,
        path: PathBuf,
        errno: i32,
        text: String,
    },
    /// The configuration file is not valid UTF-8; Portico's configuration is text.
    InvalidUtf8 { path: PathBuf },
}

impl ConfError {
    pub fn new(kind: ConfErrorKind, span: Option<Span>) -> ConfError {
        ConfError { kind, span }
    }

    /// An error at `span`.
    pub fn at(kind: ConfErrorKind, span: &Span) -> ConfError {
        ConfError {
            kind,
            span: Some(span.clone()),
        }
    }

    /// `"NAME" directive MESSAGE` at `span`.
    pub fn directive(name: &str, message: impl Into<String>, span: &Span) -> ConfError {
        ConfError::at(
            ConfErrorKind::Directive {
                name: name.to_owned(),
                message: message.into(),
            },
            span,
        )
    }

    /// A free-form nginx message at `span`.
    pub fn message(message: impl Into<String>, span: &Span) -> ConfError {
        ConfError::at(ConfErrorKind::Message(message.into()), span)
    }
}

impl fmt::Display for ConfErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfErrorKind::UnknownDirective { name } => write!(f, "unknown directive \"{name}\""),
            ConfErrorKind::NotAllowedHere { name } => {
                write!(f, "\"{name}\" directive is not allowed here")
            }
            ConfErrorKind::InvalidArgumentCount { name } => {
                write!(f, "invalid number of arguments in \"{name}\" directive")
            }
            ConfErrorKind::Duplicate { name } => write!(f, "\"{name}\" directive is duplicate"),
            ConfErrorKind::NoOpeningBrace { name } => {
                write!(f, "directive \"{name}\" has no opening \"{{\"")
            }
            ConfErrorKind::NotTerminated { name } => {
                write!(f, "directive \"{name}\" is not terminated by \";\"")
            }
            ConfErrorKind::UnexpectedCharacter { found } => write!(f, "unexpected \"{found}\""),
            ConfErrorKind::UnexpectedEndOfFile => {
                f.write_str("unexpected end of file, expecting \";\" or \"}\"")
            }
            ConfErrorKind::UnexpectedEndOfFileExpecting { expected } => {
                write!(f, "unexpected end of file, expecting {expected}")
            }
            ConfErrorKind::UnexpectedEndOfParameter => {
                f.write_str("unexpected end of parameter, expecting \";\"")
            }
            ConfErrorKind::BlockInCommandLine => {
                f.write_str("block directives are not supported in -g option")
            }
            ConfErrorKind::TooLongParameter { start } => {
                write!(f, "too long parameter \"{start}...\" started")
            }
            ConfErrorKind::TooLongQuotedParameter { quote } => write!(
                f,
                "too long parameter, probably missing terminating \"{quote}\" character"
            ),
            ConfErrorKind::BlockTooDeep { limit } => {
                write!(f, "blocks are nested too deeply (more than {limit} levels)")
            }
            ConfErrorKind::IncludeTooDeep { path, limit } => write!(
                f,
                "include of \"{}\" is nested too deeply (more than {limit} levels), \
                 probably an include cycle",
                path.display()
            ),
            ConfErrorKind::TooManyFiles { limit } => {
                write!(f, "too many configuration files (more than {limit})")
            }
            ConfErrorKind::InvalidFlag { name, value } => write!(
                f,
                "invalid value \"{value}\" in \"{name}\" directive, it must be \"on\" or \"off\""
            ),
            ConfErrorKind::Directive { name, message } => {
                write!(f, "\"{name}\" directive {message}")
            }
            ConfErrorKind::Message(message) => f.write_str(message),
            ConfErrorKind::Io {
                call,
                path,
                errno: 0,
                text,
            } => {
                write!(f, "{call}() \"{}\" failed ({text})", path.display())
            }
            ConfErrorKind::Io {
                call,
                path,
                errno,
                text,
            } => {
                write!(
                    f,
                    "{call}() \"{}\" failed ({errno}: {text})",
                    path.display()
                )
            }
            ConfErrorKind::InvalidUtf8 { path } => {
                write!(
                    f,
                    "configuration file \"{}\" is not valid UTF-8",
                    path.display()
                )
            }
        }
    }
}

impl fmt::Display for ConfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.kind)?;
        if let Some(span) = &self.span {
            write!(f, " in {span}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfError {}
