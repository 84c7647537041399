//! Splits configuration text into words, `;`, `{` and `}`, as nginx's reader does.
//!
//! The rules are those of nginx's `ngx_conf_read_token`:
//!
//! - Words are separated by space, tab, CR and LF. An unquoted word also ends at `;` or `{`,
//!   except that a `{` right after `$` stays in the word (`${name}`). A `}` inside a word is
//!   ordinary text; only at the start of a token does it close a block.
//! - `#` starts a comment to the end of the line, but only where a token could start.
//! - A word that starts with `"` or `'` runs to the matching quote; the next character must
//!   then be whitespace, `;`, `{` or `)` (the `)` starts a new word, for `if ($a = "b")`).
//! - A backslash hides the next character from all of the above, inside quotes or not. In the
//!   word's value, `\"`, `\'` and `\\` lose the backslash, `\t`, `\r` and `\n` become the
//!   control character, and any other pair is kept as written (`\;` stays `\;`).
//! - In a file, a token (or comment) that reaches 4096 bytes before its end is an error,
//!   because nginx reads through a buffer of that size; `-g` text has no such limit.

use std::path::Path;
use std::sync::Arc;

use crate::ast::{Argument, Span};
use crate::error::{ConfError, ConfErrorKind};

/// nginx's read buffer size (`NGX_CONF_BUFFER`), which bounds a token read from a file.
pub const PARAMETER_BYTES_MAX: usize = 4096;

/// How many bytes of a too-long token nginx quotes in its error.
const TOO_LONG_QUOTED_BYTES: usize = 10;

/// Where the text being read came from; decides spans and the end-of-text error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// A configuration file, named as nginx prints it.
    File(Arc<Path>),
    /// The `-g` command-line text.
    CommandLine,
}

impl Origin {
    /// The span of `line` in this text.
    pub fn span(&self, line: u32) -> Span {
        match self {
            Origin::File(path) => Span::file(path.clone(), line),
            Origin::CommandLine => Span::CommandLine,
        }
    }
}

/// One token of configuration text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Token {
    /// A word with quotes removed and escapes processed.
    Word(Argument),
    /// `;`
    Semicolon,
    /// `{`
    BlockStart,
    /// `}` at the start of a token.
    BlockEnd,
    /// The end of the text; every later call returns it again.
    End,
}

/// A token and the line nginx was on when it finished reading it (for `;` and `{`, the line
/// of that character; for [`Token::End`], the last line).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lexeme {
    pub token: Token,
    pub line: u32,
}

/// Which quote, if any, the word being read started with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Quote {
    None,
    Double,
    Single,
}

/// Reads tokens from one file or from the `-g` text.
#[derive(Debug)]
pub struct Lexer<'a> {
    text: &'a str,
    origin: Origin,
    /// Index of the next byte to read.
    position: usize,
    /// The current line, counted from 1; nginx reports errors on this line.
    line: u32,
    /// Where nginx's reader considers the current parameter to start; a parameter reaching
    /// [`PARAMETER_BYTES_MAX`] bytes from here is too long. It moves with every byte read
    /// between tokens, not across a comment, and not across the whitespace after a quote.
    parameter_start: usize,
    parameter_start_line: u32,
    /// A quoted word just ended: the next byte must separate it from what follows.
    after_quote: bool,
}

impl<'a> Lexer<'a> {
    pub fn new(text: &'a str, origin: Origin) -> Lexer<'a> {
        Lexer {
            text,
            origin,
            position: 0,
            line: 1,
            parameter_start: 0,
            parameter_start_line: 1,
            after_quote: false,
        }
    }

    pub fn origin(&self) -> &Origin {
        &self.origin
    }

    /// Reads the next token.
    pub fn next_token(&mut self) -> Result<Lexeme, ConfError> {
        if self.after_quote {
            self.after_quote = false;
            if let Some(lexeme) = self.read_after_quote()? {
                return Ok(lexeme);
            }
        }
        loop {
            let Some(byte) = self.read_byte(Quote::None)? else {
                return Ok(self.lexeme(Token::End));
            };
            self.parameter_start = self.position - 1;
            self.parameter_start_line = self.line;
            match byte {
                b' ' | b'\t' | b'\r' | b'\n' => {}
                b';' => return Ok(self.end_statement(Token::Semicolon)),
                b'{' => return Ok(self.end_statement(Token::BlockStart)),
                b'}' => return Ok(self.end_statement(Token::BlockEnd)),
                b'#' => self.skip_comment()?,
                _ => return self.read_word(byte),
            }
        }
    }

    /// Handles the byte after a closing quote. Whitespace is consumed and `None` returned, so
    /// the caller goes on between tokens.
    fn read_after_quote(&mut self) -> Result<Option<Lexeme>, ConfError> {
        let Some(byte) = self.read_byte(Quote::None)? else {
            return Ok(Some(self.lexeme(Token::End)));
        };
        match byte {
            b' ' | b'\t' | b'\r' | b'\n' => Ok(None),
            b';' => Ok(Some(self.end_statement(Token::Semicolon))),
            b'{' => Ok(Some(self.end_statement(Token::BlockStart))),
            b')' => {
                self.parameter_start = self.position - 1;
                self.parameter_start_line = self.line;
                self.read_word(byte).map(Some)
            }
            _ => {
                let found = self.text[self.position - 1..]
                    .chars()
                    .next()
                    .unwrap_or('\u{fffd}');
                Err(self.error(ConfErrorKind::UnexpectedCharacter { found }))
            }
        }
    }

    /// Reads a word whose first byte, `first`, was just consumed.
    fn read_word(&mut self, first: u8) -> Result<Lexeme, ConfError> {
        let mut quote = Quote::None;
        let mut escaped = false;
        let mut after_dollar = false;
        match first {
            b'"' => quote = Quote::Double,
            b'\'' => quote = Quote::Single,
            b'\\' => escaped = true,
            b'$' => after_dollar = true,
            _ => {}
        }
        if quote != Quote::None {
            self.parameter_start = self.position;
        }
        let value_start = self.parameter_start;
        loop {
            let Some(byte) = self.read_byte(quote)? else {
                // The word is cut by the end of the text; the parser reports it.
                return Ok(self.word(value_start, self.position, quote));
            };
            if escaped {
                escaped = false;
                continue;
            }
            if byte == b'{' && after_dollar {
                continue;
            }
            after_dollar = false;
            match (byte, quote) {
                (b'\\', _) => escaped = true,
                (b'$', _) => after_dollar = true,
                (b'"', Quote::Double) | (b'\'', Quote::Single) => {
                    self.after_quote = true;
                    return Ok(self.word(value_start, self.position - 1, quote));
                }
                (b' ' | b'\t' | b'\r' | b'\n', Quote::None) => {
                    return Ok(self.word(value_start, self.position - 1, quote));
                }
                (b';' | b'{', Quote::None) => {
                    // Leave the terminator to be read as the next token.
                    self.position -= 1;
                    return Ok(self.word(value_start, self.position, quote));
                }
                _ => {}
            }
        }
    }

    /// Skips a comment after its `#`, up to the end of the line. The line feed is left to be
    /// read between tokens, where it moves the parameter start as nginx's reader does.
    fn skip_comment(&mut self) -> Result<(), ConfError> {
        while let Some(&byte) = self.text.as_bytes().get(self.position) {
            if byte == b'\n' {
                break;
            }
            self.read_byte(Quote::None)?;
        }
        Ok(())
    }

    /// Reads one byte, counting lines; `None` at the end of the text. Fails when the current
    /// parameter has filled nginx's read buffer and the file goes on.
    fn read_byte(&mut self, quote: Quote) -> Result<Option<u8>, ConfError> {
        let bytes = self.text.as_bytes();
        let &byte = match bytes.get(self.position) {
            Some(byte) => byte,
            None => return Ok(None),
        };
        if matches!(self.origin, Origin::File(_))
            && self.position - self.parameter_start >= PARAMETER_BYTES_MAX
        {
            return Err(self.too_long_error(quote));
        }
        self.position += 1;
        if byte == b'\n' {
            self.line = self.line.saturating_add(1);
        }
        Ok(Some(byte))
    }

    fn too_long_error(&self, quote: Quote) -> ConfError {
        let kind = match quote {
            Quote::Double => ConfErrorKind::TooLongQuotedParameter { quote: '"' },
            Quote::Single => ConfErrorKind::TooLongQuotedParameter { quote: '\'' },
            Quote::None => {
                let bytes = self.text.as_bytes();
                let end = (self.parameter_start + TOO_LONG_QUOTED_BYTES).min(bytes.len());
                let start = String::from_utf8_lossy(&bytes[self.parameter_start..end]);
                ConfErrorKind::TooLongParameter {
                    start: start.into_owned(),
                }
            }
        };
        ConfError::at(kind, &self.origin.span(self.parameter_start_line))
    }

    /// A `;`, `{` or `}` token; nginx's reader starts afresh after each.
    fn end_statement(&mut self, token: Token) -> Lexeme {
        self.parameter_start = self.position;
        self.parameter_start_line = self.line;
        self.lexeme(token)
    }

    fn word(&self, start: usize, end: usize, quote: Quote) -> Lexeme {
        let value = unescape(&self.text[start..end]);
        self.lexeme(Token::Word(Argument {
            value,
            quoted: quote != Quote::None,
        }))
    }

    fn lexeme(&self, token: Token) -> Lexeme {
        Lexeme {
            token,
            line: self.line,
        }
    }

    fn error(&self, kind: ConfErrorKind) -> ConfError {
        ConfError::at(kind, &self.origin.span(self.line))
    }
}

/// Turns a word as written into its value: `\"`, `\'` and `\\` drop the backslash, `\t`,
/// `\r` and `\n` become control characters, other pairs stay as written.
fn unescape(raw: &str) -> String {
    let bytes = raw.as_bytes();
    let mut value = String::with_capacity(raw.len());
    let mut copied_up_to = 0;
    let mut index = 0;
    while index < bytes.len() {
        let replacement = match (bytes[index], bytes.get(index + 1)) {
            (b'\\', Some(b'"')) => Some('"'),
            (b'\\', Some(b'\'')) => Some('\''),
            (b'\\', Some(b'\\')) => Some('\\'),
            (b'\\', Some(b't')) => Some('\t'),
            (b'\\', Some(b'r')) => Some('\r'),
            (b'\\', Some(b'n')) => Some('\n'),
            _ => None,
        };
        match replacement {
            Some(character) => {
                // Both bytes are ASCII, so the slice boundaries are character boundaries.
                value.push_str(&raw[copied_up_to..index]);
                value.push(character);
                index += 2;
                copied_up_to = index;
            }
            None => index += 1,
        }
    }
    value.push_str(&raw[copied_up_to..]);
    value
}

#[cfg(test)]
#[path = "lexer_tests.rs"]
mod tests;
