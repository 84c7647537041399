//! Matching log lines against patterns (PCRE, as nginx's own regexes).

use pcre2::bytes::Regex;

/// Compiles `pattern`; a bad pattern is a bug in the test.
pub fn regex(pattern: &str) -> Regex {
    Regex::new(pattern).unwrap_or_else(|error| panic!("bad pattern {pattern:?}: {error}"))
}

/// True when `text` matches `pattern` somewhere.
pub fn matches(pattern: &str, text: &str) -> bool {
    regex(pattern)
        .is_match(text.as_bytes())
        .expect("a match does not fail")
}

/// The lines of `text` that match `pattern`.
pub fn matching_lines<'a>(pattern: &str, text: &'a str) -> Vec<&'a str> {
    let regex = regex(pattern);
    text.lines()
        .filter(|line| {
            regex
                .is_match(line.as_bytes())
                .expect("a match does not fail")
        })
        .collect()
}

/// The start of every error-log line: `YYYY/MM/DD HH:MM:SS [LEVEL] PID#TID: `.
pub const LINE_START: &str = r"^\d{4}/\d\d/\d\d \d\d:\d\d:\d\d \[[a-z]+\] \d+#\d+: ";

/// The message of an error-log line at `level` (what follows `PID#TID: `), or `None` when
/// the line is not an error-log line at that level.
pub fn message_at<'a>(level: &str, line: &'a str) -> Option<&'a str> {
    let pattern = format!(r"^\d{{4}}/\d\d/\d\d \d\d:\d\d:\d\d \[{level}\] \d+#\d+: ");
    let found = regex(&pattern)
        .find(line.as_bytes())
        .expect("a match does not fail")?;
    Some(&line[found.end()..])
}

/// The messages of every error-log line of `text` at `level`.
pub fn messages_at<'a>(level: &str, text: &'a str) -> Vec<&'a str> {
    text.lines()
        .filter_map(|line| message_at(level, line))
        .collect()
}
