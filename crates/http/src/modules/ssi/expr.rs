//! SSI's `if expr=`: a value alone (true when not empty), or `LEFT = RIGHT`,
//! `LEFT != RIGHT`, where RIGHT is text or `/regex/`; `$name` and `${name}` are
//! substituted in both sides, and a regex's captures become `$1`... and named variables.

use shared::regex::{Captures, Regex};

/// The expression's truth, or nginx's error words; `captured` gets a regex's groups.
pub fn evaluate(
    expr: &[u8],
    value_of: &mut dyn FnMut(&[u8]) -> Option<Vec<u8>>,
    captured: &mut Vec<(Vec<u8>, Vec<u8>)>,
) -> Result<bool, String> {
    let expr = expr.trim_ascii();
    let left_end = expr
        .iter()
        .position(|&b| matches!(b, b' ' | b'\t' | b'=' | b'!'))
        .unwrap_or(expr.len());
    let left = substitute(&expr[..left_end], value_of);
    let rest = expr[left_end..].trim_ascii_start();
    if rest.is_empty() {
        return Ok(!left.is_empty());
    }
    let (negate, right) = if let Some(right) = rest.strip_prefix(b"!=") {
        (true, right)
    } else if let Some(right) = rest.strip_prefix(b"=") {
        (false, right)
    } else {
        return Err(format!(
            "invalid expression in \"{}\"",
            String::from_utf8_lossy(expr)
        ));
    };
    let right = right.trim_ascii();
    let matched = if right.len() >= 2 && right.starts_with(b"/") && right.ends_with(b"/") {
        let pattern = String::from_utf8_lossy(&right[1..right.len() - 1]).into_owned();
        let regex = Regex::compile(&pattern, false).map_err(|error| error.0)?;
        let mut captures = Captures::default();
        let matched = regex.captures(&left, &mut captures);
        if matched {
            for index in 1..=regex.groups_len() {
                let value = captures.group(index).unwrap_or_default().to_vec();
                captured.push((index.to_string().into_bytes(), value));
            }
            for (name, index) in regex.names() {
                let value = captures.group(*index).unwrap_or_default().to_vec();
                captured.push((name.as_bytes().to_ascii_lowercase(), value));
            }
        }
        matched
    } else {
        left == substitute(right, value_of)
    };
    Ok(matched != negate)
}

/// `text` with `$name` and `${name}` replaced by their values (nothing when not found);
/// a backslash makes the next character literal.
pub fn substitute(text: &[u8], value_of: &mut dyn FnMut(&[u8]) -> Option<Vec<u8>>) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut at = 0;
    while at < text.len() {
        match text[at] {
            b'\\' if at + 1 < text.len() => {
                out.push(text[at + 1]);
                at += 2;
            }
            b'$' => {
                let (name, next) = variable_name(text, at + 1);
                if name.is_empty() {
                    out.push(b'$');
                    at += 1;
                    continue;
                }
                if let Some(value) = value_of(name) {
                    out.extend_from_slice(&value);
                }
                at = next;
            }
            byte => {
                out.push(byte);
                at += 1;
            }
        }
    }
    out
}

/// The name after a `$` at `start` (`name` or `{name}`) and where the text goes on.
fn variable_name(text: &[u8], start: usize) -> (&[u8], usize) {
    let word = |b: &u8| b.is_ascii_alphanumeric() || *b == b'_';
    if text.get(start) == Some(&b'{') {
        let end = text[start + 1..]
            .iter()
            .position(|&b| b == b'}')
            .map_or(text.len(), |offset| start + 1 + offset);
        return (&text[start + 1..end], (end + 1).min(text.len()));
    }
    let len = text[start..].iter().take_while(|b| word(b)).count();
    (&text[start..start + len], start + len)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(expr: &str, args: &[(&str, &str)]) -> bool {
        let mut lookup = |name: &[u8]| {
            args.iter()
                .find(|(key, _)| key.as_bytes() == name)
                .map(|(_, value)| value.as_bytes().to_vec())
        };
        evaluate(expr.as_bytes(), &mut lookup, &mut Vec::new()).expect("valid expression")
    }

    #[test]
    fn nginx_forms() {
        assert!(eval("$v", &[("v", "1")]));
        assert!(!eval("$v", &[]));
        assert!(eval("$v = equal", &[("v", "equal")]));
        assert!(eval("equal != $v", &[("v", "other")]));
        assert!(eval("$v = /re+gexp?/", &[("v", "xreeegexy")]));
        assert!(eval("$v != /re+gexp?/", &[("v", "none")]));
        assert!(eval("$v = var${w}", &[("v", "varx"), ("w", "x")]));
    }

    #[test]
    fn regex_captures_become_variables() {
        let mut lookup = |_: &[u8]| Some(b"hereCAP1andCAP2".to_vec());
        let mut captured = Vec::new();
        let truth = evaluate(
            b"$v = /(CAP\\d).*(?P<n>CAP\\d)/",
            &mut lookup,
            &mut captured,
        );
        assert_eq!(truth, Ok(true));
        assert!(captured.contains(&(b"1".to_vec(), b"CAP1".to_vec())));
        assert!(captured.contains(&(b"n".to_vec(), b"CAP2".to_vec())));
    }
}
