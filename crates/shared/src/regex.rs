//! Regular expressions as nginx uses them: PCRE2 (so `\Q..\E`, lookaround and `(?P<name>)`
//! behave exactly as in nginx), JIT-compiled, with named captures exposed as variables.

use std::ops::Range;

use pcre2::bytes::{CaptureLocations, Regex as Pcre2Regex, RegexBuilder};

/// A compiled `location ~`, `server_name ~`, `if (... ~ ...)` or `rewrite` pattern.
#[derive(Clone, Debug)]
pub struct Regex {
    inner: Pcre2Regex,
    pattern: String,
    /// Named groups: (name, group index).
    names: Vec<(String, usize)>,
}

/// The groups of the last successful match, kept for `$1`..`$9` and named captures.
#[derive(Clone, Debug, Default)]
pub struct Captures {
    /// A copy of the subject: the captures stay valid when the URI changes afterwards,
    /// as nginx keeps them.
    subject: Vec<u8>,
    groups: Vec<Option<Range<usize>>>,
}

impl Captures {
    /// Capture `index` (0 = the whole match), if it took part in the match.
    pub fn group(&self, index: usize) -> Option<&[u8]> {
        let range = self.groups.get(index)?.clone()?;
        self.subject.get(range)
    }

    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    pub fn clear(&mut self) {
        self.subject.clear();
        self.groups.clear();
    }
}

/// How a pattern failed to compile, in nginx's words:
/// `pcre2_compile() failed: missing closing parenthesis in "^(foo"`, with ` at "REST"` when
/// the error is before the end of the pattern.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegexError(pub String);

impl Regex {
    pub fn compile(pattern: &str, caseless: bool) -> Result<Regex, RegexError> {
        let inner = RegexBuilder::new()
            .caseless(caseless)
            .jit_if_available(true)
            .build(pattern)
            .map_err(|error| {
                let offset = error.offset().unwrap_or(pattern.len()).min(pattern.len());
                let rest = pattern.get(offset..).unwrap_or("");
                // The crate's text is "PCRE2: error compiling pattern at offset N: MESSAGE".
                let text = error.to_string();
                let message = text
                    .rsplit_once(": ")
                    .map_or(text.as_str(), |(_, message)| message);
                // nginx names the rest of the pattern only when the error is before its end.
                if rest.is_empty() {
                    RegexError(format!(
                        "pcre2_compile() failed: {message} in \"{pattern}\""
                    ))
                } else {
                    RegexError(format!(
                        "pcre2_compile() failed: {message} in \"{pattern}\" at \"{rest}\""
                    ))
                }
            })?;
        let names = inner
            .capture_names()
            .iter()
            .enumerate()
            .filter_map(|(index, name)| name.as_ref().map(|name| (name.clone(), index)))
            .collect();
        Ok(Regex {
            inner,
            pattern: pattern.to_owned(),
            names,
        })
    }

    pub fn pattern(&self) -> &str {
        &self.pattern
    }

    /// Named groups and their indexes, for registering `$name` variables.
    pub fn names(&self) -> &[(String, usize)] {
        &self.names
    }

    /// The number of groups including group 0.
    pub fn groups_len(&self) -> usize {
        self.inner.captures_len()
    }

    /// Whether the pattern matches anywhere in `subject`.
    pub fn is_match(&self, subject: &[u8]) -> bool {
        // A matching error (e.g. the JIT stack limit) counts as no match, as nginx logs it
        // and declines.
        self.inner.is_match(subject).unwrap_or(false)
    }

    /// Matches and, on success, replaces `captures` with this match's groups.
    pub fn captures(&self, subject: &[u8], captures: &mut Captures) -> bool {
        let mut locations: CaptureLocations = self.inner.capture_locations();
        match self.inner.captures_read(&mut locations, subject) {
            Ok(Some(_)) => {
                captures.subject.clear();
                captures.subject.extend_from_slice(subject);
                captures.groups.clear();
                for index in 0..locations.len() {
                    captures
                        .groups
                        .push(locations.get(index).map(|(start, end)| start..end));
                }
                true
            }
            Ok(None) | Err(_) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pcre_syntax_nginx_configs_use() {
        let quoted = Regex::compile(r"^(?P<name>[a-z]+)\Q.example.com\E$", false).unwrap();
        let mut captures = Captures::default();
        assert!(quoted.captures(b"blah.example.com", &mut captures));
        assert_eq!(captures.group(1), Some(&b"blah"[..]));
        assert_eq!(quoted.names(), &[("name".to_owned(), 1)]);
        assert!(!quoted.is_match(b"blahXexampleXcom"));

        let lookahead = Regex::compile(r"^/(?!admin)", false).unwrap();
        assert!(lookahead.is_match(b"/public"));
        assert!(!lookahead.is_match(b"/admin"));

        let digits = Regex::compile(r"^www\p{N}+$", true).unwrap();
        assert!(digits.is_match(b"WWW01"));
    }

    #[test]
    fn caseless_and_case_sensitive() {
        assert!(
            Regex::compile(r"\.(gif|jpg)$", true)
                .unwrap()
                .is_match(b"/t.GIF")
        );
        assert!(
            !Regex::compile(r"\.(gif|jpg)$", false)
                .unwrap()
                .is_match(b"/t.GIF")
        );
    }

    #[test]
    fn unmatched_groups_are_absent() {
        let regex = Regex::compile(r"^/(a)?(b)", false).unwrap();
        let mut captures = Captures::default();
        assert!(regex.captures(b"/b", &mut captures));
        assert_eq!(captures.group(0), Some(&b"/b"[..]));
        assert_eq!(captures.group(1), None);
        assert_eq!(captures.group(2), Some(&b"b"[..]));
        assert_eq!(captures.group(9), None);
        assert_eq!(regex.groups_len(), 3);
    }

    #[test]
    fn compile_errors_read_like_nginx() {
        let error = Regex::compile("^(foo", false).unwrap_err();
        assert_eq!(
            error.0,
            "pcre2_compile() failed: missing closing parenthesis in \"^(foo\""
        );
        let error = Regex::compile("a)b", false).unwrap_err();
        assert_eq!(
            error.0,
            "pcre2_compile() failed: unmatched closing parenthesis in \"a)b\" at \")b\""
        );
    }
}
