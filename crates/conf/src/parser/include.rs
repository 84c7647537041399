//! `include`: resolving, globbing and reading the files it names.

use std::io;
use std::path::Path;
use std::str::Utf8Error;
use std::sync::Arc;

use super::{FILES_MAX, INCLUDE_DEPTH_MAX, Parser, Scope};
use crate::ast::{Directive, SourceFile, Span};
use crate::error::{ConfError, ConfErrorKind};
use crate::glob;
use crate::lexer::{Lexer, Origin};

impl Parser<'_> {
    /// Expands `include PATTERN;` into the directives of the files it names. A relative
    /// pattern is taken from the conf prefix, as nginx does, whichever file includes it. A
    /// pattern with `*`, `?` or `[` anywhere in its full path is a glob, and matching nothing
    /// is fine; any other path must exist.
    pub(super) fn include(
        &mut self,
        directive: &Directive,
        block_depth: usize,
    ) -> Result<Vec<Directive>, ConfError> {
        if directive.args.len() != 1 {
            let kind = ConfErrorKind::InvalidArgumentCount {
                name: directive.name.clone(),
            };
            return Err(ConfError::at(kind, &directive.span));
        }
        let full_path = self.conf_prefix.join(directive.arg(0));
        if !glob::has_glob_characters(&full_path) {
            return self.include_file(&full_path, &directive.span, block_depth);
        }
        let paths = self
            .sources
            .glob(&full_path)
            .map_err(|error| io_error("glob", &full_path, &error, Some(&directive.span)))?;
        let mut directives = Vec::new();
        for path in paths {
            directives.extend(self.include_file(&path, &directive.span, block_depth)?);
        }
        Ok(directives)
    }

    /// Parses one included file; its blocks must close within it, as in nginx.
    fn include_file(
        &mut self,
        path: &Path,
        include_span: &Span,
        block_depth: usize,
    ) -> Result<Vec<Directive>, ConfError> {
        if self.include_depth >= INCLUDE_DEPTH_MAX {
            let kind = ConfErrorKind::IncludeTooDeep {
                path: path.to_path_buf(),
                limit: INCLUDE_DEPTH_MAX,
            };
            return Err(ConfError::at(kind, include_span));
        }
        let text = self.read_file(path, Some(include_span))?;
        let mut lexer = Lexer::new(&text, Origin::File(Arc::from(path)));
        self.include_depth += 1;
        let directives = self.parse_statements(&mut lexer, Scope::File, block_depth);
        self.include_depth -= 1;
        directives
    }

    /// Reads a configuration file and records it for `-T` the first time its path is seen.
    /// `include_span` is the `include` that named it, where nginx reports a failed open;
    /// `None` for the main file.
    pub(super) fn read_file(
        &mut self,
        path: &Path,
        include_span: Option<&Span>,
    ) -> Result<String, ConfError> {
        if self.files_read >= FILES_MAX {
            let kind = ConfErrorKind::TooManyFiles { limit: FILES_MAX };
            return Err(ConfError::new(kind, include_span.cloned()));
        }
        self.files_read += 1;
        let bytes = self
            .sources
            .read(path)
            .map_err(|error| read_error(path, &error, include_span))?;
        let text = String::from_utf8(bytes)
            .map_err(|error| invalid_utf8(path, error.as_bytes(), error.utf8_error()))?;
        if !self
            .files
            .iter()
            .any(|file| file.path.as_os_str() == path.as_os_str())
        {
            self.files.push(SourceFile {
                path: path.to_path_buf(),
                text: text.clone(),
            });
        }
        Ok(text)
    }
}

/// The error for a file that could not be read. nginx opens a directory without complaint
/// and fails on pread(2), which it logs without the including file's position.
fn read_error(path: &Path, error: &io::Error, include_span: Option<&Span>) -> ConfError {
    if error.kind() == io::ErrorKind::IsADirectory {
        return io_error("pread", path, error, None);
    }
    io_error("open", path, error, include_span)
}

fn io_error(call: &'static str, path: &Path, error: &io::Error, span: Option<&Span>) -> ConfError {
    let (errno, text) = match error.raw_os_error() {
        Some(errno) => (errno, os_error_text(errno)),
        None => (0, error.to_string()),
    };
    let kind = ConfErrorKind::Io {
        call,
        path: path.to_path_buf(),
        errno,
        text,
    };
    ConfError::new(kind, span.cloned())
}

/// The strerror(3) text nginx prints; std renders it followed by ` (os error N)`.
fn os_error_text(errno: i32) -> String {
    let message = io::Error::from_raw_os_error(errno).to_string();
    let suffix = format!(" (os error {errno})");
    message.strip_suffix(&suffix).unwrap_or(&message).to_owned()
}

/// The error for a file that is not UTF-8, at the line of the first bad byte.
fn invalid_utf8(path: &Path, bytes: &[u8], error: Utf8Error) -> ConfError {
    let line_feeds = bytes[..error.valid_up_to()]
        .iter()
        .filter(|byte| **byte == b'\n')
        .count();
    let line = u32::try_from(line_feeds)
        .unwrap_or(u32::MAX)
        .saturating_add(1);
    let kind = ConfErrorKind::InvalidUtf8 {
        path: path.to_path_buf(),
    };
    ConfError::at(kind, &Span::file(Arc::from(path), line))
}
