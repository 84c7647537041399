//! Directive specifications: where a directive may appear and how many arguments it takes.
//!
//! A feature module declares a table of [`DirectiveSpec`]s next to its handler, as nginx's
//! modules declare their command tables. The setter type `S` belongs to the module that owns
//! the table; this crate only checks the shape of a directive against its spec.

use crate::ast::Directive;
use crate::error::{ConfError, ConfErrorKind};

/// A configuration context, named as in nginx's documentation ("Context: http, server").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u16)]
pub enum Context {
    Main = 1 << 0,
    Events = 1 << 1,
    Http = 1 << 2,
    Server = 1 << 3,
    Location = 1 << 4,
    Upstream = 1 << 5,
    /// `if` inside `server`.
    ServerIf = 1 << 6,
    /// `if` inside `location`.
    LocationIf = 1 << 7,
    /// `limit_except` inside `location`.
    LimitExcept = 1 << 8,
    /// The `stream` block itself.
    Stream = 1 << 9,
    /// `server` inside `stream`.
    StreamServer = 1 << 10,
    /// `upstream` inside `stream`.
    StreamUpstream = 1 << 11,
}

/// A set of contexts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Contexts(u16);

impl Contexts {
    pub const MAIN: Contexts = Contexts(Context::Main as u16);
    pub const EVENTS: Contexts = Contexts(Context::Events as u16);
    pub const HTTP: Contexts = Contexts(Context::Http as u16);
    pub const SERVER: Contexts = Contexts(Context::Server as u16);
    pub const LOCATION: Contexts = Contexts(Context::Location as u16);
    pub const UPSTREAM: Contexts = Contexts(Context::Upstream as u16);
    pub const SERVER_IF: Contexts = Contexts(Context::ServerIf as u16);
    pub const LOCATION_IF: Contexts = Contexts(Context::LocationIf as u16);
    pub const LIMIT_EXCEPT: Contexts = Contexts(Context::LimitExcept as u16);
    pub const STREAM: Contexts = Contexts(Context::Stream as u16);
    pub const STREAM_SERVER: Contexts = Contexts(Context::StreamServer as u16);
    pub const STREAM_UPSTREAM: Contexts = Contexts(Context::StreamUpstream as u16);
    /// `stream, server`: most stream directives.
    pub const STREAM_AND_SERVER: Contexts = Contexts::STREAM.with(Contexts::STREAM_SERVER);
    /// `http, server, location`: the most common set.
    pub const HTTP_SERVER_LOCATION: Contexts = Contexts::HTTP
        .with(Contexts::SERVER)
        .with(Contexts::LOCATION);

    pub const fn with(self, other: Contexts) -> Contexts {
        Contexts(self.0 | other.0)
    }

    pub const fn contains(self, context: Context) -> bool {
        self.0 & context as u16 != 0
    }
}

/// How many arguments a directive takes, as nginx's `NGX_CONF_TAKE*` flags say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arity {
    /// Bit `n` set: exactly `n` arguments are accepted (n <= 7).
    counts: u8,
    /// `Some(n)`: `n` or more arguments are accepted.
    at_least: Option<u8>,
}

impl Arity {
    pub const NONE: Arity = Arity::counts(&[0]);
    pub const TAKE1: Arity = Arity::counts(&[1]);
    pub const TAKE2: Arity = Arity::counts(&[2]);
    pub const TAKE3: Arity = Arity::counts(&[3]);
    pub const TAKE12: Arity = Arity::counts(&[1, 2]);
    pub const TAKE13: Arity = Arity::counts(&[1, 3]);
    pub const TAKE23: Arity = Arity::counts(&[2, 3]);
    pub const TAKE123: Arity = Arity::counts(&[1, 2, 3]);
    pub const TAKE1234: Arity = Arity::counts(&[1, 2, 3, 4]);
    /// `on` or `off`; the value itself is checked by [`crate::value::parse_flag`].
    pub const FLAG: Arity = Arity::TAKE1;
    pub const ONE_OR_MORE: Arity = Arity {
        counts: 0,
        at_least: Some(1),
    };
    pub const TWO_OR_MORE: Arity = Arity {
        counts: 0,
        at_least: Some(2),
    };
    pub const ANY: Arity = Arity {
        counts: 0,
        at_least: Some(0),
    };

    /// Exactly one of `allowed` argument counts (each at most 7).
    pub const fn counts(allowed: &[u8]) -> Arity {
        let mut counts = 0u8;
        let mut index = 0;
        while index < allowed.len() {
            assert!(
                allowed[index] < 8,
                "nginx directives take at most 7 fixed arguments"
            );
            counts |= 1 << allowed[index];
            index += 1;
        }
        Arity {
            counts,
            at_least: None,
        }
    }

    pub fn accepts(self, count: usize) -> bool {
        if let Some(minimum) = self.at_least
            && count >= minimum as usize
        {
            return true;
        }
        count < 8 && self.counts & (1 << count) != 0
    }
}

/// Whether a directive opens a block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockKind {
    /// Ends with `;`.
    Simple,
    /// Must be followed by `{ ... }`.
    Block,
}

/// One entry of a module's directive table.
#[derive(Debug)]
pub struct DirectiveSpec<S> {
    /// The name exactly as nginx spells it.
    pub name: &'static str,
    pub contexts: Contexts,
    pub arity: Arity,
    pub block: BlockKind,
    /// What the owning module does with it; the type is the module's own.
    pub set: S,
}

/// Checks `directive` against the specs that share its name, in nginx's order, and returns
/// the spec that accepts it in `context`.
///
/// nginx looks for a spec allowed in the current context first; only then does it complain
/// about a missing `{` or `;` and, last, about the number of arguments. A name that no
/// spec knows is `unknown directive`; a known name that no spec allows here is `is not
/// allowed here`.
pub fn check<'a, S>(
    specs: impl IntoIterator<Item = &'a DirectiveSpec<S>>,
    directive: &Directive,
    context: Context,
) -> Result<&'a DirectiveSpec<S>, ConfError>
where
    S: 'a,
{
    let mut known = false;
    for spec in specs {
        if spec.name != directive.name {
            continue;
        }
        known = true;
        if !spec.contexts.contains(context) {
            continue;
        }
        let name = || directive.name.clone();
        match (spec.block, directive.block.is_some()) {
            (BlockKind::Simple, true) => {
                return Err(ConfError::at(
                    ConfErrorKind::NotTerminated { name: name() },
                    &directive.span,
                ));
            }
            (BlockKind::Block, false) => {
                return Err(ConfError::at(
                    ConfErrorKind::NoOpeningBrace { name: name() },
                    &directive.span,
                ));
            }
            _ => {}
        }
        if !spec.arity.accepts(directive.args.len()) {
            return Err(ConfError::at(
                ConfErrorKind::InvalidArgumentCount { name: name() },
                &directive.span,
            ));
        }
        return Ok(spec);
    }
    let name = directive.name.clone();
    let kind = if known {
        ConfErrorKind::NotAllowedHere { name }
    } else {
        ConfErrorKind::UnknownDirective { name }
    };
    Err(ConfError::at(kind, &directive.span))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ast::{Argument, Span};

    fn directive(name: &str, args: usize, block: bool) -> Directive {
        Directive {
            name: name.to_owned(),
            args: (0..args)
                .map(|i| Argument {
                    value: i.to_string(),
                    quoted: false,
                })
                .collect(),
            block: block.then(Vec::new),
            span: Span::CommandLine,
        }
    }

    const SPECS: &[DirectiveSpec<u8>] = &[
        DirectiveSpec {
            name: "root",
            contexts: Contexts::HTTP_SERVER_LOCATION,
            arity: Arity::TAKE1,
            block: BlockKind::Simple,
            set: 1,
        },
        DirectiveSpec {
            name: "server",
            contexts: Contexts::HTTP,
            arity: Arity::NONE,
            block: BlockKind::Block,
            set: 2,
        },
        DirectiveSpec {
            name: "server",
            contexts: Contexts::UPSTREAM,
            arity: Arity::ONE_OR_MORE,
            block: BlockKind::Simple,
            set: 3,
        },
    ];

    fn message(result: Result<&DirectiveSpec<u8>, ConfError>) -> String {
        result
            .map(|spec| spec.set.to_string())
            .unwrap_or_else(|error| error.to_string())
    }

    #[test]
    fn arity_counts_and_minimums() {
        assert!(Arity::TAKE12.accepts(1));
        assert!(Arity::TAKE12.accepts(2));
        assert!(!Arity::TAKE12.accepts(0));
        assert!(!Arity::TAKE12.accepts(3));
        assert!(Arity::TAKE13.accepts(3));
        assert!(!Arity::TAKE13.accepts(2));
        assert!(Arity::ONE_OR_MORE.accepts(100));
        assert!(!Arity::ONE_OR_MORE.accepts(0));
        assert!(Arity::NONE.accepts(0));
        assert!(!Arity::NONE.accepts(1));
        assert!(!Arity::TAKE1.accepts(9));
    }

    #[test]
    fn check_follows_nginx_order() {
        let check_one = |d: &Directive, c| message(check(SPECS, d, c));
        assert_eq!(
            check_one(&directive("root", 1, false), Context::Location),
            "1"
        );
        assert_eq!(
            check_one(&directive("nope", 1, false), Context::Location),
            "unknown directive \"nope\" in command line"
        );
        assert_eq!(
            check_one(&directive("root", 1, false), Context::Main),
            "\"root\" directive is not allowed here in command line"
        );
        assert_eq!(
            check_one(&directive("root", 2, false), Context::Server),
            "invalid number of arguments in \"root\" directive in command line"
        );
        assert_eq!(
            check_one(&directive("root", 1, true), Context::Server),
            "directive \"root\" is not terminated by \";\" in command line"
        );
        assert_eq!(
            check_one(&directive("server", 0, false), Context::Http),
            "directive \"server\" has no opening \"{\" in command line"
        );
        assert_eq!(check_one(&directive("server", 0, true), Context::Http), "2");
        assert_eq!(
            check_one(&directive("server", 1, false), Context::Upstream),
            "3"
        );
    }
}
