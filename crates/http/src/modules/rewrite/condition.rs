//! `if` conditions: parsed from the directive's arguments exactly as nginx reads them, with
//! its error texts.

use conf::{Argument, ConfError, Span};

use crate::kernel::conf::{LoadContext, NamedCaptures};
use crate::modules::rewrite::settings::{Condition, FileKind, FileTest};
use shared::regex::Regex;

impl FileTest {
    /// The test's answer before `!` is applied.
    pub fn holds(self, kind: FileKind) -> bool {
        match self {
            FileTest::Plain => kind.is_file,
            FileTest::Directory => kind.is_dir,
            FileTest::Exists => kind.exists,
            FileTest::Executable => kind.is_exec,
        }
    }
}

/// `if ($var)` and the value tests: empty and `0` are false.
pub(crate) fn value_is_true(value: &[u8]) -> bool {
    !value.is_empty() && value != b"0"
}

fn invalid(text: &str, span: &Span) -> ConfError {
    ConfError::message(format!("invalid condition \"{text}\""), span)
}

/// Parses the arguments of `if`, parentheses included.
pub fn parse(
    args: &[Argument],
    context: &mut LoadContext<'_>,
    span: &Span,
) -> Result<Condition, ConfError> {
    let mut values: Vec<String> = args.iter().map(|arg| arg.value.clone()).collect();
    let Some(first) = values.first_mut() else {
        return Err(invalid("", span));
    };
    if !first.starts_with('(') {
        return Err(invalid(first, span));
    }
    let cur = if first.len() == 1 {
        1
    } else {
        first.remove(0);
        0
    };
    let mut last = values.len() - 1;
    let closing = &mut values[last];
    if !closing.ends_with(')') {
        return Err(invalid(closing, span));
    }
    if closing.len() == 1 {
        if last == 0 {
            return Err(invalid(&values[cur.min(last)], span));
        }
        last -= 1;
    } else {
        closing.pop();
    }
    if cur > last {
        return Err(invalid(&values[cur.min(values.len() - 1)], span));
    }
    let text = values[cur].as_str();
    if text.len() > 1 && text.starts_with('$') {
        if cur != last && cur + 2 != last {
            return Err(invalid(text, span));
        }
        let variable = context.variables.resolve(&text[1..]);
        if cur == last {
            return Ok(Condition::Variable(variable));
        }
        let operator = values[cur + 1].as_str();
        let operand = values[last].as_str();
        return match operator {
            "=" | "!=" => Ok(Condition::Equal {
                variable,
                value: context.template(operand, span)?,
                negate: operator == "!=",
            }),
            "~" | "~*" | "!~" | "!~*" => {
                let regex = Regex::compile(operand, operator.ends_with('*'))
                    .map_err(|error| ConfError::message(error.0, span))?;
                Ok(Condition::Match {
                    variable,
                    regex: NamedCaptures::new(regex, |name| context.variables.define(name)),
                    negate: operator.starts_with('!'),
                })
            }
            _ => Err(ConfError::message(
                format!("unexpected \"{operator}\" in condition"),
                span,
            )),
        };
    }
    let (negate, letter) = match text.as_bytes() {
        [b'-', letter] => (false, *letter),
        [b'!', b'-', letter] => (true, *letter),
        _ => return Err(invalid(text, span)),
    };
    if cur + 1 != last {
        return Err(invalid(text, span));
    }
    let test = match letter {
        b'f' => FileTest::Plain,
        b'd' => FileTest::Directory,
        b'e' => FileTest::Exists,
        b'x' => FileTest::Executable,
        _ => return Err(invalid(text, span)),
    };
    Ok(Condition::File {
        path: context.template(&values[last], span)?,
        test,
        negate,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::conf::context::test_context;
    use crate::kernel::variables::Variable;

    fn args(text: &[&str]) -> Vec<Argument> {
        text.iter()
            .map(|value| Argument {
                value: (*value).to_owned(),
                quoted: false,
            })
            .collect()
    }

    fn parse_text(text: &[&str]) -> Result<Condition, String> {
        let mut files = logging::LogFiles::default();
        let mut context = test_context(&mut files);
        parse(&args(text), &mut context, &Span::CommandLine).map_err(|error| error.kind.to_string())
    }

    #[test]
    fn variable_conditions_with_and_without_spaces() {
        assert!(matches!(
            parse_text(&["($arg_c)"]),
            Ok(Condition::Variable(Variable::Arg(_)))
        ));
        assert!(matches!(
            parse_text(&["(", "$arg_c", ")"]),
            Ok(Condition::Variable(_))
        ));
        assert!(matches!(
            parse_text(&["($arg_c", "=", "1)"]),
            Ok(Condition::Equal { negate: false, .. })
        ));
        assert!(matches!(
            parse_text(&["(", "$arg_c", "!=", "", ")"]),
            Ok(Condition::Equal { negate: true, .. })
        ));
    }

    #[test]
    fn regex_conditions() {
        let Ok(Condition::Match { regex, negate, .. }) = parse_text(&["($uri", "~*", "^/A)"])
        else {
            panic!("not a match condition");
        };
        assert!(!negate);
        assert!(regex.regex.is_match(b"/abc"));
        let Ok(Condition::Match { regex, negate, .. }) = parse_text(&["($uri", "!~", "^/A)"])
        else {
            panic!("not a match condition");
        };
        assert!(negate);
        assert!(!regex.regex.is_match(b"/abc"));
        assert!(
            parse_text(&["($uri", "~", "(a)"])
                .unwrap_err()
                .starts_with("pcre2_compile() failed: ")
        );
    }

    #[test]
    fn file_conditions() {
        for (operator, test, negate) in [
            ("-f", FileTest::Plain, false),
            ("!-d", FileTest::Directory, true),
            ("-e", FileTest::Exists, false),
            ("!-x", FileTest::Executable, true),
        ] {
            let parsed = parse_text(&["(", operator, "/tmp/x)"]).unwrap();
            assert!(
                matches!(parsed, Condition::File { test: t, negate: n, .. } if t == test && n == negate),
                "{operator}"
            );
        }
    }

    #[test]
    fn errors_read_like_nginx() {
        assert_eq!(
            parse_text(&["$a)"]).unwrap_err(),
            "invalid condition \"$a)\""
        );
        assert_eq!(
            parse_text(&["($a"]).unwrap_err(),
            "invalid condition \"$a\""
        );
        assert_eq!(
            parse_text(&["($a", "=", "1", "2)"]).unwrap_err(),
            "invalid condition \"$a\""
        );
        assert_eq!(
            parse_text(&["($a", "<", "1)"]).unwrap_err(),
            "unexpected \"<\" in condition"
        );
        assert_eq!(
            parse_text(&["(-q", "/x)"]).unwrap_err(),
            "invalid condition \"-q\""
        );
        assert_eq!(
            parse_text(&["(-f)"]).unwrap_err(),
            "invalid condition \"-f\""
        );
        assert_eq!(parse_text(&["(x)"]).unwrap_err(), "invalid condition \"x\"");
        assert_eq!(parse_text(&["()"]).unwrap_err(), "invalid condition \")\"");
    }

    #[test]
    fn values_that_are_false() {
        assert!(!value_is_true(b""));
        assert!(!value_is_true(b"0"));
        assert!(value_is_true(b"00"));
        assert!(value_is_true(b"1"));
        assert!(value_is_true(b"false"));
    }

    #[test]
    fn file_tests_read_stat_results() {
        let dir = FileKind {
            exists: true,
            is_dir: true,
            is_exec: true,
            ..FileKind::default()
        };
        let file = FileKind {
            exists: true,
            is_file: true,
            ..FileKind::default()
        };
        assert!(FileTest::Directory.holds(dir));
        assert!(FileTest::Executable.holds(dir));
        assert!(!FileTest::Plain.holds(dir));
        assert!(FileTest::Plain.holds(file));
        assert!(FileTest::Exists.holds(file));
        assert!(!FileTest::Exists.holds(FileKind::default()));
    }
}
