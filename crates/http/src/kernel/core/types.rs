//! `types { ... }`: file extensions to MIME types.

use std::sync::Arc;

use conf::{ConfError, Directive};

use crate::kernel::core::settings::MimeTypes;

/// An extension a later `types` block mapped again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Redefined {
    pub extension: Box<[u8]>,
    pub mime: Arc<[u8]>,
    pub previous: Arc<[u8]>,
}

/// A warning to log at config load (nginx logs these at `warn` and goes on).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TypesWarning {
    pub message: String,
    pub span: conf::Span,
}

impl MimeTypes {
    /// The types nginx knows when a configuration has no `types` block.
    pub(crate) fn builtin() -> MimeTypes {
        let mut types = MimeTypes::default();
        for (mime, extension) in [
            ("text/html", "html"),
            ("image/gif", "gif"),
            ("image/jpeg", "jpg"),
        ] {
            types.insert(extension.as_bytes(), Arc::from(mime.as_bytes()));
        }
        types
    }

    /// Fills a map from the directives inside `types { ... }`: each is `MIME EXT...;`.
    pub(crate) fn from_block(
        block: &[Directive],
        warnings: &mut Vec<TypesWarning>,
    ) -> Result<MimeTypes, ConfError> {
        let mut types = MimeTypes::default();
        for entry in block {
            if entry.block.is_some() {
                return Err(ConfError::at(
                    conf::ConfErrorKind::UnexpectedCharacter { found: '{' },
                    &entry.span,
                ));
            }
            if entry.args.is_empty() {
                return Err(ConfError::at(
                    conf::ConfErrorKind::InvalidArgumentCount {
                        name: entry.name.clone(),
                    },
                    &entry.span,
                ));
            }
            let mime: Arc<[u8]> = Arc::from(entry.name.as_bytes());
            for extension in &entry.args {
                let lower = extension.value.to_ascii_lowercase();
                if let Some(previous) = types.get(lower.as_bytes()) {
                    warnings.push(TypesWarning {
                        message: format!(
                            "duplicate extension \"{lower}\", content type: \"{}\", previous content type: \"{}\"",
                            entry.name,
                            String::from_utf8_lossy(previous)
                        ),
                        span: entry.span.clone(),
                    });
                }
                types.insert(lower.as_bytes(), Arc::clone(&mime));
            }
        }
        Ok(types)
    }

    /// Adds every mapping of `other`; its entries win. Returns the extensions that were
    /// already mapped, with their old and new types, for nginx's "duplicate extension"
    /// warning.
    pub fn extend(&mut self, other: MimeTypes) -> Vec<Redefined> {
        let mut redefined = Vec::new();
        for (extension, mime) in other.by_extension {
            let previous = self
                .by_extension
                .insert(extension.clone(), Arc::clone(&mime));
            if let Some(previous) = previous {
                redefined.push(Redefined {
                    extension,
                    mime,
                    previous,
                });
            }
        }
        redefined
    }

    fn insert(&mut self, extension: &[u8], mime: Arc<[u8]>) {
        self.by_extension
            .insert(extension.to_ascii_lowercase().into_boxed_slice(), mime);
    }

    /// The MIME type of an extension, compared case-insensitively.
    pub fn get(&self, extension: &[u8]) -> Option<&Arc<[u8]>> {
        if extension.iter().any(u8::is_ascii_uppercase) {
            return self
                .by_extension
                .get(extension.to_ascii_lowercase().as_slice());
        }
        self.by_extension.get(extension)
    }

    pub fn len(&self) -> usize {
        self.by_extension.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_extension.is_empty()
    }
}

/// The MIME type `types` gives a URI's extension, else `default_type`, as nginx's
/// `ngx_http_set_content_type` chooses it. Inline: `return` with text calls it per request.
#[inline]
pub fn mime_type<'a>(core: &'a crate::kernel::core::CoreLocation, uri: &[u8]) -> &'a [u8] {
    let extension = extension_of(uri);
    if extension.is_empty() {
        return &core.default_type;
    }
    core.types.get(extension).unwrap_or(&core.default_type)
}

/// The extension of the last path segment (`/a.b/c.TXT` gives `TXT`), as nginx computes
/// `r->exten`.
pub(crate) fn extension_of(path: &[u8]) -> &[u8] {
    let segment_start = memchr::memrchr(b'/', path).map_or(0, |slash| slash + 1);
    let segment = &path[segment_start..];
    match memchr::memrchr(b'.', segment) {
        Some(dot) => &segment[dot + 1..],
        None => b"",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use conf::{Argument, Span};

    fn entry(mime: &str, extensions: &[&str]) -> Directive {
        Directive {
            name: mime.to_owned(),
            args: extensions
                .iter()
                .map(|e| Argument {
                    value: (*e).to_owned(),
                    quoted: false,
                })
                .collect(),
            block: None,
            span: Span::CommandLine,
        }
    }

    #[test]
    fn builtin_matches_nginx() {
        let types = MimeTypes::builtin();
        assert_eq!(types.get(b"html").map(|t| &t[..]), Some(&b"text/html"[..]));
        assert_eq!(types.get(b"JPG").map(|t| &t[..]), Some(&b"image/jpeg"[..]));
        assert_eq!(types.get(b"css"), None);
    }

    #[test]
    fn later_duplicate_wins_with_a_warning() {
        let mut warnings = Vec::new();
        let block = [
            entry("text/html", &["html", "htm"]),
            entry("text/plain", &["HTM"]),
        ];
        let types = MimeTypes::from_block(&block, &mut warnings).unwrap();
        assert_eq!(types.get(b"htm").map(|t| &t[..]), Some(&b"text/plain"[..]));
        assert_eq!(warnings.len(), 1);
        assert_eq!(
            warnings[0].message,
            "duplicate extension \"htm\", content type: \"text/plain\", previous content type: \"text/html\""
        );
    }

    #[test]
    fn extension_is_taken_from_the_last_segment() {
        assert_eq!(extension_of(b"/a.b/c.TXT"), b"TXT");
        assert_eq!(extension_of(b"/a.b/c"), b"");
        assert_eq!(extension_of(b"/x."), b"");
        assert_eq!(extension_of(b"/.hidden"), b"hidden");
    }
}
