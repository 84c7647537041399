//! Parsing and evaluating templates.

use std::fmt;

/// One piece of a template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Segment<V> {
    Literal(Box<[u8]>),
    Variable(V),
    /// `$0`..`$9`: a capture of the last regular expression that matched.
    Capture(u8),
}

/// A compiled template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Template<V> {
    segments: Box<[Segment<V>]>,
}

/// Supplies variable and capture values while a template is evaluated.
pub trait Evaluator<V> {
    /// Appends the value of `variable` to `out` (nothing if it is not found).
    fn variable(&mut self, variable: &V, out: &mut Vec<u8>);
    /// Appends capture `index` of the last regex match to `out` (nothing if none).
    fn capture(&mut self, index: u8, out: &mut Vec<u8>);
}

/// Why a template did not compile, with nginx's wording.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TemplateError<E> {
    /// `${name` without `}`: `the closing bracket in "name" variable is missing`.
    MissingClosingBracket { name: String },
    /// `$` not followed by a name: `invalid variable name in "TEXT"`.
    InvalidVariableName { text: String },
    /// The resolver rejected a name (usually `unknown "name" variable`).
    Resolve(E),
}

impl<E: fmt::Display> fmt::Display for TemplateError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TemplateError::MissingClosingBracket { name } => {
                write!(f, "the closing bracket in \"{name}\" variable is missing")
            }
            TemplateError::InvalidVariableName { text } => {
                write!(f, "invalid variable name in \"{text}\"")
            }
            TemplateError::Resolve(error) => error.fmt(f),
        }
    }
}

fn is_name_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_'
}

impl<V> Template<V> {
    /// Compiles `text`, calling `resolve` once per variable reference with the name as
    /// written (the caller lowercases if it wants nginx's case-insensitive names).
    pub fn compile<E>(
        text: &str,
        mut resolve: impl FnMut(&str) -> Result<V, E>,
    ) -> Result<Template<V>, TemplateError<E>> {
        let bytes = text.as_bytes();
        let mut segments = Vec::new();
        let mut literal = Vec::new();
        let mut position = 0;
        while position < bytes.len() {
            let byte = bytes[position];
            if byte != b'$' {
                literal.push(byte);
                position += 1;
                continue;
            }
            flush_literal(&mut literal, &mut segments);
            position += 1;
            if let Some(&digit) = bytes.get(position)
                && digit.is_ascii_digit()
            {
                segments.push(Segment::Capture(digit - b'0'));
                position += 1;
                continue;
            }
            let bracketed = bytes.get(position) == Some(&b'{');
            if bracketed {
                position += 1;
            }
            let start = position;
            while position < bytes.len() && is_name_byte(bytes[position]) {
                position += 1;
            }
            let name = &text[start..position];
            if bracketed {
                if bytes.get(position) != Some(&b'}') {
                    return Err(TemplateError::MissingClosingBracket {
                        name: name.to_owned(),
                    });
                }
                position += 1;
            }
            if name.is_empty() {
                return Err(TemplateError::InvalidVariableName {
                    text: text.to_owned(),
                });
            }
            segments.push(Segment::Variable(
                resolve(name).map_err(TemplateError::Resolve)?,
            ));
        }
        flush_literal(&mut literal, &mut segments);
        Ok(Template {
            segments: segments.into_boxed_slice(),
        })
    }

    /// A template of fixed bytes.
    pub fn from_literal(bytes: &[u8]) -> Template<V> {
        let segments = if bytes.is_empty() {
            Vec::new()
        } else {
            vec![Segment::Literal(bytes.into())]
        };
        Template {
            segments: segments.into_boxed_slice(),
        }
    }

    /// The bytes, when the template has no variables and no captures.
    pub fn as_literal(&self) -> Option<&[u8]> {
        match &*self.segments {
            [] => Some(b""),
            [Segment::Literal(bytes)] => Some(bytes),
            _ => None,
        }
    }

    pub fn segments(&self) -> &[Segment<V>] {
        &self.segments
    }

    /// Whether the template refers to regex captures (`$1`), which must then be kept.
    pub fn uses_captures(&self) -> bool {
        self.segments
            .iter()
            .any(|segment| matches!(segment, Segment::Capture(_)))
    }

    /// Appends the template's value to `out`.
    pub fn evaluate(&self, evaluator: &mut impl Evaluator<V>, out: &mut Vec<u8>) {
        for segment in self.segments.iter() {
            match segment {
                Segment::Literal(bytes) => out.extend_from_slice(bytes),
                Segment::Variable(variable) => evaluator.variable(variable, out),
                Segment::Capture(index) => evaluator.capture(*index, out),
            }
        }
    }

    /// The template's value as a new buffer.
    pub fn render(&self, evaluator: &mut impl Evaluator<V>) -> Vec<u8> {
        let mut out = Vec::new();
        self.evaluate(evaluator, &mut out);
        out
    }
}

fn flush_literal<V>(literal: &mut Vec<u8>, segments: &mut Vec<Segment<V>>) {
    if !literal.is_empty() {
        segments.push(Segment::Literal(std::mem::take(literal).into_boxed_slice()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Values;

    impl Evaluator<String> for Values {
        fn variable(&mut self, variable: &String, out: &mut Vec<u8>) {
            if variable == "uri" {
                out.extend_from_slice(b"/index.html");
            } else if variable == "host" {
                out.extend_from_slice(b"example.com");
            }
        }

        fn capture(&mut self, index: u8, out: &mut Vec<u8>) {
            out.extend_from_slice(format!("<{index}>").as_bytes());
        }
    }

    fn compile(text: &str) -> Result<Template<String>, TemplateError<String>> {
        Template::compile(text, |name| {
            if name == "unknown" {
                Err(format!("unknown \"{name}\" variable"))
            } else {
                Ok(name.to_owned())
            }
        })
    }

    fn render(text: &str) -> String {
        String::from_utf8(compile(text).unwrap().render(&mut Values)).unwrap()
    }

    #[test]
    fn literals_and_variables() {
        assert_eq!(render("x $uri x"), "x /index.html x");
        assert_eq!(render("$host$uri"), "example.com/index.html");
        assert_eq!(render("${host}1"), "example.com1");
        assert_eq!(render("$uri."), "/index.html.");
        assert_eq!(render("$missing-"), "-");
        assert_eq!(render("plain"), "plain");
        assert_eq!(render(""), "");
    }

    #[test]
    fn captures_take_one_digit() {
        assert_eq!(render("/$1/$2"), "/<1>/<2>");
        assert_eq!(render("$10"), "<1>0");
        assert!(compile("$1").unwrap().uses_captures());
        assert!(!compile("$uri").unwrap().uses_captures());
    }

    #[test]
    fn literal_templates_are_recognised() {
        assert_eq!(compile("abc").unwrap().as_literal(), Some(&b"abc"[..]));
        assert_eq!(compile("").unwrap().as_literal(), Some(&b""[..]));
        assert_eq!(compile("a$uri").unwrap().as_literal(), None);
        assert_eq!(
            Template::<String>::from_literal(b"x").as_literal(),
            Some(&b"x"[..])
        );
    }

    #[test]
    fn errors_use_nginx_wording() {
        assert_eq!(
            compile("a $ b").unwrap_err().to_string(),
            "invalid variable name in \"a $ b\""
        );
        assert_eq!(
            compile("a$").unwrap_err().to_string(),
            "invalid variable name in \"a$\""
        );
        assert_eq!(
            compile("${uri").unwrap_err().to_string(),
            "the closing bracket in \"uri\" variable is missing"
        );
        assert_eq!(
            compile("$unknown").unwrap_err().to_string(),
            "unknown \"unknown\" variable"
        );
        assert_eq!(
            compile("${}").unwrap_err().to_string(),
            "invalid variable name in \"${}\""
        );
    }
}
