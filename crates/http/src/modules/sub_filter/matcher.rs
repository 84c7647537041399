//! The sub filter's search and replace over a body that arrives in pieces: several strings
//! at once (Aho-Corasick), without regard to ASCII case, a match split across two pieces
//! found all the same (the last bytes that may begin one are held back). Pure.

use aho_corasick::{AhoCorasick, Input, MatchKind};

/// A body being rewritten.
#[derive(Debug)]
pub struct Matcher {
    automaton: AhoCorasick,
    replacements: Vec<Vec<u8>>,
    once: bool,
    /// With `once`: which strings were replaced already, and how many were not.
    used: Vec<bool>,
    unused: usize,
    /// Bytes held back because they may begin a match.
    carry: Vec<u8>,
    /// The most bytes held back: the longest string less one.
    hold: usize,
    /// The strings, lower-cased, to tell which last bytes may begin a match.
    strings: Vec<Vec<u8>>,
}

impl Matcher {
    /// A matcher for `(string, replacement)` pairs; `None` when no string is left (empty
    /// ones are dropped).
    pub fn new(pairs: Vec<(Vec<u8>, Vec<u8>)>, once: bool) -> Option<Matcher> {
        let pairs: Vec<_> = pairs
            .into_iter()
            .filter(|(string, _)| !string.is_empty())
            .collect();
        let hold = pairs.iter().map(|(string, _)| string.len()).max()? - 1;
        let automaton = AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::LeftmostFirst)
            .build(pairs.iter().map(|(string, _)| string))
            .ok()?;
        let strings = pairs
            .iter()
            .map(|(string, _)| string.to_ascii_lowercase())
            .collect();
        Some(Matcher {
            strings,
            automaton,
            used: vec![false; pairs.len()],
            unused: pairs.len(),
            replacements: pairs
                .into_iter()
                .map(|(_, replacement)| replacement)
                .collect(),
            once,
            carry: Vec::new(),
            hold,
        })
    }

    /// Rewrites the next piece into `out` (some of it may be held back).
    pub fn feed(&mut self, input: &[u8], out: &mut Vec<u8>) {
        if self.once && self.unused == 0 {
            out.append(&mut self.carry);
            out.extend_from_slice(input);
            return;
        }
        if self.carry.is_empty() {
            let kept = self.search(input, out);
            self.carry.extend_from_slice(&input[kept..]);
        } else {
            let mut buffer = std::mem::take(&mut self.carry);
            buffer.extend_from_slice(input);
            let kept = self.search(&buffer, out);
            buffer.drain(..kept);
            self.carry = buffer;
        }
    }

    /// The body ended: what was held back goes out as it is.
    pub fn finish(&mut self, out: &mut Vec<u8>) {
        out.append(&mut self.carry);
    }

    /// Writes `buffer` rewritten up to where a match may still begin; returns that point.
    fn search(&mut self, buffer: &[u8], out: &mut Vec<u8>) -> usize {
        let mut emitted = 0;
        let mut at = 0;
        while at < buffer.len() {
            let input = Input::new(buffer).span(at..buffer.len());
            let Some(found) = self.automaton.find(input) else {
                break;
            };
            let pattern = found.pattern().as_usize();
            if self.once && self.used[pattern] {
                at = found.start() + 1;
                continue;
            }
            out.extend_from_slice(&buffer[emitted..found.start()]);
            out.extend_from_slice(&self.replacements[pattern]);
            emitted = found.end();
            at = found.end();
            if self.once {
                self.used[pattern] = true;
                self.unused -= 1;
                if self.unused == 0 {
                    out.extend_from_slice(&buffer[emitted..]);
                    return buffer.len();
                }
            }
        }
        let safe = emitted.max(buffer.len() - self.partial_len(buffer));
        out.extend_from_slice(&buffer[emitted..safe]);
        safe
    }

    /// How many of the last bytes of `buffer` begin some string (and so wait for more).
    fn partial_len(&self, buffer: &[u8]) -> usize {
        (1..=self.hold.min(buffer.len()))
            .rev()
            .find(|&len| {
                let tail = &buffer[buffer.len() - len..];
                self.strings
                    .iter()
                    .any(|string| string.len() > len && string[..len].eq_ignore_ascii_case(tail))
            })
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(pairs: &[(&str, &str)], once: bool, input: &str) -> Vec<String> {
        let pairs: Vec<_> = pairs
            .iter()
            .map(|(a, b)| (a.as_bytes().to_vec(), b.as_bytes().to_vec()))
            .collect();
        // Every split of the input gives the same output.
        let mut outputs = Vec::new();
        for split in 0..=input.len() {
            let mut matcher = Matcher::new(pairs.clone(), once).expect("patterns");
            let mut out = Vec::new();
            matcher.feed(&input.as_bytes()[..split], &mut out);
            matcher.feed(&input.as_bytes()[split..], &mut out);
            matcher.finish(&mut out);
            outputs.push(String::from_utf8(out).expect("utf-8"));
        }
        outputs.dedup();
        outputs
    }

    #[test]
    fn nginx_tests_cases_at_every_split() {
        assert_eq!(run(&[("foo", "bar")], true, "foofoo"), ["barfoo"]);
        assert_eq!(run(&[("foo", "bar")], false, "FOOfoofo"), ["barbarfo"]);
        assert_eq!(run(&[("abac", "_r")], true, "abaabac"), ["aba_r"]);
        assert_eq!(run(&[("ababX", "_r")], true, "abababX"), ["ab_r"]);
        assert_eq!(run(&[("aab", "_r")], true, "aaaab"), ["aa_r"]);
        assert_eq!(run(&[("A", "B")], false, "CAAC"), ["CBBC"]);
        assert_eq!(run(&[("A", "B")], true, "CAAC"), ["CBAC"]);
    }

    #[test]
    fn several_strings_once_each() {
        let pairs = [("one", "1"), ("two", "2"), ("three", "3")];
        assert_eq!(run(&pairs, true, "one two three one"), ["1 2 3 one"]);
        assert_eq!(run(&pairs, false, "one two three one"), ["1 2 3 1"]);
        assert!(Matcher::new(vec![(Vec::new(), b"x".to_vec())], true).is_none());
    }

    #[test]
    fn only_a_possible_beginning_is_held_back() {
        let mut matcher = Matcher::new(vec![(b"ab".to_vec(), b"AB".to_vec())], true).expect("one");
        let mut out = Vec::new();
        matcher.feed(b"xyz", &mut out);
        assert_eq!(out, b"xyz");
        matcher.feed(b"xya", &mut out);
        assert_eq!(out, b"xyzxy");
        matcher.feed(b"b", &mut out);
        assert_eq!(out, b"xyzxyAB");
    }
}
