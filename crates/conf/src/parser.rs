//! Builds the directive tree from tokens and expands `include`.
//!
//! The parser follows nginx's `ngx_conf_parse`: it reads one directive at a time and
//! expands an `include` as soon as its `;` is read, so errors come out in nginx's order
//! and at nginx's lines. Unlike nginx it knows no directive but `include`: checking names,
//! contexts and arguments is left to the directive tables (see [`crate::spec`]).

mod include;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::ast::{Argument, ConfigTree, Directive, SourceFile, Span};
use crate::error::{ConfError, ConfErrorKind};
use crate::lexer::{Lexer, Origin, Token};
use crate::sources::Sources;

/// How deeply blocks may nest, counting across included files. nginx has no limit, but real
/// configurations stay under ten levels and the parser recurses once per level.
pub const BLOCK_DEPTH_MAX: usize = 64;

/// How deeply `include` may nest. nginx recurses until open(2) runs out of descriptors; a
/// cycle of includes ends here instead.
pub const INCLUDE_DEPTH_MAX: usize = 32;

/// How many files one configuration may read, counting a file each time it is included.
/// This bounds the work of includes that multiply (`a` includes `b` twice, `b` includes `c`
/// twice, and so on).
pub const FILES_MAX: usize = 65_536;

/// The directive nginx's own configuration module handles in every context.
const INCLUDE: &str = "include";

/// Parses the main configuration file at `path` (already absolute). `include` patterns that
/// are relative are resolved against the directory of `path` (nginx's conf prefix), also in
/// included files. Returns the main context's directives with includes expanded inline, and
/// every file read (for `-T`), in the order first read, once per path.
pub fn parse_file(path: &Path, sources: &dyn Sources) -> Result<ConfigTree, ConfError> {
    let conf_prefix = path.parent().unwrap_or(Path::new("/"));
    let mut parser = Parser::new(conf_prefix, sources);
    let text = parser.read_file(path, None)?;
    let mut lexer = Lexer::new(&text, Origin::File(Arc::from(path)));
    let directives = parser.parse_statements(&mut lexer, Scope::File, 0)?;
    Ok(ConfigTree {
        directives,
        files: parser.files,
    })
}

/// Parses the text given with `-g` (spans are [`Span::CommandLine`]); `include` in it
/// resolves relative to `conf_prefix`. As in nginx, the text may not contain blocks. The
/// returned tree's `files` holds only files included from it.
pub fn parse_command_line(
    text: &str,
    conf_prefix: &Path,
    sources: &dyn Sources,
) -> Result<ConfigTree, ConfError> {
    let mut parser = Parser::new(conf_prefix, sources);
    let mut lexer = Lexer::new(text, Origin::CommandLine);
    let directives = parser.parse_statements(&mut lexer, Scope::CommandLine, 0)?;
    Ok(ConfigTree {
        directives,
        files: parser.files,
    })
}

/// What is being parsed, which decides how `}` and the end of the text are taken; nginx's
/// `parse_file`, `parse_block` and `parse_param`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scope {
    /// The top level of a file.
    File,
    /// The inside of `{ ... }`, which must close in the same file.
    Block,
    /// The `-g` text.
    CommandLine,
}

/// The state of one parse: where includes resolve, what was read, and the limits' counters.
struct Parser<'a> {
    conf_prefix: PathBuf,
    sources: &'a dyn Sources,
    files: Vec<SourceFile>,
    files_read: usize,
    include_depth: usize,
}

impl<'a> Parser<'a> {
    fn new(conf_prefix: &Path, sources: &'a dyn Sources) -> Parser<'a> {
        Parser {
            conf_prefix: conf_prefix.to_path_buf(),
            sources,
            files: Vec::new(),
            files_read: 0,
            include_depth: 0,
        }
    }

    /// Reads directives until the end of `scope`: the end of the text, or the `}` closing a
    /// block. `block_depth` is the number of blocks around this one.
    fn parse_statements(
        &mut self,
        lexer: &mut Lexer<'_>,
        scope: Scope,
        block_depth: usize,
    ) -> Result<Vec<Directive>, ConfError> {
        let mut directives = Vec::new();
        let mut words: Vec<Argument> = Vec::new();
        loop {
            let lexeme = lexer.next_token()?;
            let span = lexer.origin().span(lexeme.line);
            match lexeme.token {
                Token::Word(word) => words.push(word),
                Token::Semicolon if words.is_empty() => return Err(unexpected(';', &span)),
                Token::BlockStart if words.is_empty() => return Err(unexpected('{', &span)),
                Token::Semicolon => {
                    let directive = new_directive(&mut words, None, span);
                    if directive.name == INCLUDE {
                        directives.extend(self.include(&directive, block_depth)?);
                    } else {
                        directives.push(directive);
                    }
                }
                Token::BlockStart => {
                    let directive = new_directive(&mut words, Some(Vec::new()), span);
                    directives.push(self.parse_block(lexer, scope, directive, block_depth)?);
                }
                Token::BlockEnd if words.is_empty() && scope == Scope::Block => {
                    return Ok(directives);
                }
                Token::BlockEnd => return Err(unexpected('}', &span)),
                Token::End => return end_of_text(scope, words.is_empty(), &span, directives),
            }
        }
    }

    /// Parses the block of `directive`, whose `{` was just read.
    fn parse_block(
        &mut self,
        lexer: &mut Lexer<'_>,
        scope: Scope,
        mut directive: Directive,
        block_depth: usize,
    ) -> Result<Directive, ConfError> {
        if scope == Scope::CommandLine {
            return Err(ConfError::at(
                ConfErrorKind::BlockInCommandLine,
                &directive.span,
            ));
        }
        if directive.name == INCLUDE {
            // nginx checks the terminator before the argument count.
            let kind = ConfErrorKind::NotTerminated {
                name: directive.name,
            };
            return Err(ConfError::at(kind, &directive.span));
        }
        if block_depth >= BLOCK_DEPTH_MAX {
            let kind = ConfErrorKind::BlockTooDeep {
                limit: BLOCK_DEPTH_MAX,
            };
            return Err(ConfError::at(kind, &directive.span));
        }
        directive.block = Some(self.parse_statements(lexer, Scope::Block, block_depth + 1)?);
        Ok(directive)
    }
}

/// A directive from the words read so far (at least one), which are taken.
fn new_directive(
    words: &mut Vec<Argument>,
    block: Option<Vec<Directive>>,
    span: Span,
) -> Directive {
    let mut words = std::mem::take(words).into_iter();
    let name = words.next().map(|word| word.value).unwrap_or_default();
    Directive {
        name,
        args: words.collect(),
        block,
        span,
    }
}

fn unexpected(found: char, span: &Span) -> ConfError {
    ConfError::at(ConfErrorKind::UnexpectedCharacter { found }, span)
}

/// What the end of the text means in `scope`, given whether a directive was left open.
fn end_of_text(
    scope: Scope,
    directive_closed: bool,
    span: &Span,
    directives: Vec<Directive>,
) -> Result<Vec<Directive>, ConfError> {
    let kind = match (scope, directive_closed) {
        (Scope::CommandLine, false) => ConfErrorKind::UnexpectedEndOfParameter,
        (_, false) => ConfErrorKind::UnexpectedEndOfFile,
        (Scope::Block, true) => ConfErrorKind::UnexpectedEndOfFileExpecting { expected: "\"}\"" },
        (Scope::File | Scope::CommandLine, true) => return Ok(directives),
    };
    Err(ConfError::at(kind, span))
}

#[cfg(test)]
mod tests;
