//! glob(3) patterns as nginx's `include` uses them: `*`, `?` and `[...]` in any component.
//!
//! nginx calls glob() with no flags in the C locale, so: matching is bytewise; a backslash
//! quotes the next character; a name starting with `.` is matched only by a literal `.`
//! (this includes the `.` and `..` entries of a directory); `[!...]` and `[^...]` negate;
//! a `[` without a closing `]` is an ordinary character; results are sorted bytewise.

use std::fs;
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

/// The most paths one pattern may expand to, including intermediate directories; a pattern
/// such as `/*/*/*` would otherwise walk the whole file system.
pub const GLOB_PATHS_MAX: usize = 65_536;

/// Whether a path pattern has a character nginx treats as a glob (nginx's check ignores
/// backslashes, and so does this one).
pub fn has_glob_characters(pattern: &Path) -> bool {
    pattern
        .as_os_str()
        .as_bytes()
        .iter()
        .any(|byte| matches!(byte, b'*' | b'?' | b'['))
}

/// Whether `path` matches `pattern` component by component, as glob(3) would list it.
pub fn matches_path(pattern: &Path, path: &Path) -> bool {
    let mut patterns = pattern.as_os_str().as_bytes().split(|byte| *byte == b'/');
    let mut names = path.as_os_str().as_bytes().split(|byte| *byte == b'/');
    loop {
        match (patterns.next(), names.next()) {
            (None, None) => return true,
            (Some(pattern), Some(name)) if matches_component(pattern, name) => {}
            _ => return false,
        }
    }
}

/// Lists the existing paths matching `pattern` on disk, sorted bytewise. The text before the
/// first component with a glob character is kept as written, as glob(3) keeps it.
pub fn expand_on_disk(pattern: &Path) -> io::Result<Vec<PathBuf>> {
    let bytes = pattern.as_os_str().as_bytes();
    let components: Vec<&[u8]> = bytes.split(|byte| *byte == b'/').collect();
    // `split` yields at least one component, so `last` cannot underflow.
    let last = components.len() - 1;
    // Without any glob character, only the last component is unquoted and checked.
    let first_magic = components
        .iter()
        .position(|component| has_magic(component))
        .unwrap_or(last);
    let prefix_len: usize = components[..first_magic].iter().map(|c| c.len() + 1).sum();
    let mut candidates: Vec<Vec<u8>> = vec![bytes[..prefix_len].to_vec()];
    for (index, component) in components.iter().enumerate().skip(first_magic) {
        let mut next = Vec::new();
        for directory in &candidates {
            if has_magic(component) {
                for name in list_directory(directory) {
                    if matches_component(component, &name) {
                        next.push([directory.as_slice(), &name].concat());
                    }
                }
            } else {
                next.push([directory.as_slice(), &unquote(component)].concat());
            }
            if next.len() > GLOB_PATHS_MAX {
                return Err(io::Error::other("too many matching paths"));
            }
        }
        if index < last {
            next.iter_mut().for_each(|path| path.push(b'/'));
        }
        candidates = next;
    }
    let mut paths: Vec<PathBuf> = candidates
        .into_iter()
        .map(|bytes| PathBuf::from(std::ffi::OsString::from_vec(bytes)))
        .filter(|path| fs::symlink_metadata(path).is_ok())
        .collect();
    sort_bytewise(&mut paths);
    Ok(paths)
}

/// Sorts paths by their bytes, as glob(3) does in the C locale (`Path`'s own order compares
/// components, which differs: `a/b` sorts before `a-b` there).
pub fn sort_bytewise(paths: &mut [PathBuf]) {
    paths.sort_by(|a, b| a.as_os_str().as_bytes().cmp(b.as_os_str().as_bytes()));
}

/// The entry names of a directory (`directory` is empty or ends with `/`), with `.` and `..`
/// as readdir(3) returns them. A directory that cannot be read has no entries, as glob(3)
/// without `GLOB_ERR` treats it.
fn list_directory(directory: &[u8]) -> Vec<Vec<u8>> {
    let path: &Path = if directory.is_empty() {
        Path::new(".")
    } else {
        Path::new(std::ffi::OsStr::from_bytes(directory))
    };
    let Ok(entries) = fs::read_dir(path) else {
        return Vec::new();
    };
    let mut names = vec![b".".to_vec(), b"..".to_vec()];
    names.extend(
        entries
            .filter_map(Result::ok)
            .map(|entry| entry.file_name().into_vec()),
    );
    names
}

/// Whether a component has an unquoted `*`, `?` or `[`.
fn has_magic(component: &[u8]) -> bool {
    let mut index = 0;
    while index < component.len() {
        match component[index] {
            b'\\' => index += 2,
            b'*' | b'?' | b'[' => return true,
            _ => index += 1,
        }
    }
    false
}

/// A literal component with its backslashes removed.
fn unquote(component: &[u8]) -> Vec<u8> {
    let mut literal = Vec::with_capacity(component.len());
    let mut index = 0;
    while index < component.len() {
        if component[index] == b'\\' && index + 1 < component.len() {
            index += 1;
        }
        literal.push(component[index]);
        index += 1;
    }
    literal
}

/// One element of a pattern and how many pattern bytes it took.
enum Element {
    /// `*`
    Star,
    /// Anything that matches exactly one byte.
    One { matched: bool },
}

/// Whether one file name matches one pattern component (fnmatch(3) with `FNM_PERIOD`).
pub fn matches_component(pattern: &[u8], name: &[u8]) -> bool {
    if name.first() == Some(&b'.') && !starts_with_literal_dot(pattern) {
        return false;
    }
    let (mut pattern_index, mut name_index) = (0, 0);
    // Where to resume after the last `*`: the pattern after it, and the name byte it would
    // swallow next. One resume point is enough because every other element is one byte.
    let mut resume: Option<(usize, usize)> = None;
    loop {
        if pattern_index < pattern.len() {
            let (element, width) = element_at(pattern, pattern_index, name.get(name_index));
            match element {
                Element::Star => {
                    pattern_index += width;
                    resume = Some((pattern_index, name_index));
                    continue;
                }
                Element::One { matched: true } => {
                    pattern_index += width;
                    name_index += 1;
                    continue;
                }
                Element::One { matched: false } => {}
            }
        } else if name_index == name.len() {
            return true;
        }
        match resume {
            Some((after_star, swallowed)) if swallowed < name.len() => {
                resume = Some((after_star, swallowed + 1));
                pattern_index = after_star;
                name_index = swallowed + 1;
            }
            _ => return false,
        }
    }
}

fn starts_with_literal_dot(pattern: &[u8]) -> bool {
    pattern.starts_with(b".") || pattern.starts_with(b"\\.")
}

/// The element at `index` and whether it matches `byte` (`None`: the name has ended).
fn element_at(pattern: &[u8], index: usize, byte: Option<&u8>) -> (Element, usize) {
    let one = |matched: bool, width: usize| (Element::One { matched }, width);
    match pattern[index] {
        b'*' => (Element::Star, 1),
        b'?' => one(byte.is_some(), 1),
        b'\\' if index + 1 < pattern.len() => one(byte == Some(&pattern[index + 1]), 2),
        b'[' => match byte {
            None => one(false, 1),
            Some(&byte) => match bracket_matches(pattern, index, byte) {
                Some((matched, width)) => one(matched, width),
                // An unclosed bracket is a literal `[`.
                None => one(byte == b'[', 1),
            },
        },
        literal => one(byte == Some(&literal), 1),
    }
}

/// Matches `byte` against the bracket expression opening at `open`. Returns whether it
/// matched and the expression's width, or `None` when the bracket is never closed.
fn bracket_matches(pattern: &[u8], open: usize, byte: u8) -> Option<(bool, usize)> {
    let mut index = open + 1;
    let negated = matches!(pattern.get(index), Some(b'!' | b'^'));
    if negated {
        index += 1;
    }
    let mut matched = false;
    let mut first = true;
    loop {
        let current = *pattern.get(index)?;
        if current == b']' && !first {
            return Some((matched != negated, index + 1 - open));
        }
        first = false;
        if current == b'['
            && pattern.get(index + 1) == Some(&b':')
            && let Some((class_matched, width)) = class_matches(&pattern[index..], byte)
        {
            matched |= class_matched;
            index += width;
            continue;
        }
        let (low, width) = bracket_character(pattern, index)?;
        index += width;
        let is_range = pattern.get(index) == Some(&b'-')
            && pattern.get(index + 1).is_some_and(|next| *next != b']');
        if is_range {
            let (high, width) = bracket_character(pattern, index + 1)?;
            index += 1 + width;
            matched |= (low..=high).contains(&byte);
        } else {
            matched |= low == byte;
        }
    }
}

/// A character inside brackets, with a backslash quoting the next one.
fn bracket_character(pattern: &[u8], index: usize) -> Option<(u8, usize)> {
    match *pattern.get(index)? {
        b'\\' => pattern.get(index + 1).map(|quoted| (*quoted, 2)),
        character => Some((character, 1)),
    }
}

/// Matches a `[:name:]` class at the start of `text`; `None` if it is not one.
fn class_matches(text: &[u8], byte: u8) -> Option<(bool, usize)> {
    // The name starts after `[:`; searching from there keeps `[:]` from closing itself.
    let end = 2 + text.get(2..)?.windows(2).position(|pair| pair == b":]")?;
    let test: fn(&u8) -> bool = match &text[2..end] {
        b"alnum" => u8::is_ascii_alphanumeric,
        b"alpha" => u8::is_ascii_alphabetic,
        b"blank" => |byte| *byte == b' ' || *byte == b'\t',
        b"cntrl" => u8::is_ascii_control,
        b"digit" => u8::is_ascii_digit,
        b"graph" => u8::is_ascii_graphic,
        b"lower" => u8::is_ascii_lowercase,
        b"print" => |byte| byte.is_ascii_graphic() || *byte == b' ',
        b"punct" => u8::is_ascii_punctuation,
        b"space" => |byte| byte.is_ascii_whitespace() || *byte == 0x0b,
        b"upper" => u8::is_ascii_uppercase,
        b"xdigit" => u8::is_ascii_hexdigit,
        _ => return None,
    };
    Some((test(&byte), end + 2))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(pattern: &str, name: &str) -> bool {
        matches_component(pattern.as_bytes(), name.as_bytes())
    }

    #[test]
    fn star_and_question_mark() {
        assert!(matches("*.conf", "a.conf"));
        assert!(!matches("*.conf", ".conf.conf"));
        assert!(matches("*", "anything"));
        assert!(matches("a*b*c", "aXXbYYc"));
        assert!(!matches("a*b*c", "aXXbYY"));
        assert!(matches("a**", "a"));
        assert!(matches("?.conf", "a.conf"));
        assert!(!matches("?.conf", "ab.conf"));
        assert!(!matches("?", ""));
        assert!(matches("", ""));
        assert!(!matches("", "a"));
    }

    #[test]
    fn leading_dot_needs_a_literal_dot() {
        assert!(!matches("*", ".hidden"));
        assert!(!matches("?hidden", ".hidden"));
        assert!(!matches("[.]hidden", ".hidden"));
        assert!(matches(".*", ".hidden"));
        assert!(matches(".*", "."));
        assert!(matches(".*", ".."));
        assert!(matches("\\.h*", ".hidden"));
        assert!(matches("a*", "a.b"));
    }

    #[test]
    fn brackets() {
        assert!(matches("[ab].conf", "a.conf"));
        assert!(!matches("[ab].conf", "c.conf"));
        assert!(matches("[!a]*", "b"));
        assert!(matches("[^a]*", "b"));
        assert!(!matches("[!a]*", "a"));
        assert!(matches("[a-c]", "b"));
        assert!(!matches("[z-a]", "b"));
        assert!(matches("[a-]", "-"));
        assert!(matches("[]a]", "]"));
        assert!(matches("[!]a]", "b"));
        assert!(matches("[\\]]", "]"));
        assert!(matches("[[:digit:]]x", "7x"));
        assert!(!matches("[[:digit:]]x", "ax"));
        assert!(matches("[[:alpha:][:digit:]]", "7"));
        // Found by fuzzing: `[:]` is not a class (it panicked).
        assert!(matches("[[:]]", ":]"));
        assert!(matches("[[:]", "["));
        assert!(!matches("[[:nope:]]", "n"));
        // Unclosed: a literal `[`.
        assert!(matches("[a.conf", "[a.conf"));
        assert!(!matches("[a.conf", "a.conf"));
        assert!(matches("x[", "x["));
    }

    #[test]
    fn backslash_quotes() {
        assert!(matches("\\*", "*"));
        assert!(!matches("\\*", "a"));
        assert!(matches("a\\", "a\\"));
        assert!(matches("\\[a]", "[a]"));
        assert!(!has_magic(b"a\\*b"));
        assert!(has_magic(b"a\\*b*"));
        assert_eq!(unquote(b"a\\*b\\"), b"a*b\\");
    }

    #[test]
    fn paths_match_component_by_component() {
        let matches = |pattern: &str, path: &str| matches_path(Path::new(pattern), Path::new(path));
        assert!(matches("/etc/*/x.conf", "/etc/a/x.conf"));
        assert!(!matches("/etc/*/x.conf", "/etc/a/b/x.conf"));
        assert!(!matches("/etc/*", "/etc/a/b"));
        assert!(!matches("/etc/*", "/etc"));
        assert!(matches("/etc/*.conf", "/etc/a.conf"));
    }

    #[test]
    fn sorting_is_bytewise() {
        let mut paths: Vec<PathBuf> = ["/a/b/c", "/a/b-c", "/a/B"]
            .iter()
            .map(PathBuf::from)
            .collect();
        sort_bytewise(&mut paths);
        assert_eq!(paths, ["/a/B", "/a/b-c", "/a/b/c"].map(PathBuf::from));
    }

    #[test]
    fn has_glob_characters_follows_nginx() {
        assert!(has_glob_characters(Path::new("/etc/*.conf")));
        assert!(has_glob_characters(Path::new("/etc/a?")));
        assert!(has_glob_characters(Path::new("/etc/[a")));
        assert!(has_glob_characters(Path::new("/etc/\\*")));
        assert!(!has_glob_characters(Path::new("/etc/a.conf")));
    }
}
