//! `CDN-Cache-Control` (RFC 9213): the cache-control field an origin addresses to CDNs
//! and reverse-proxy caches such as this one. It is a Dictionary structured field (RFC
//! 8941 section 3.2), parsed here strictly: a value that does not parse is ignored as a
//! whole, and Cache-Control is used instead (RFC 9213 section 2.1).

/// A member's value, as far as cache directives care.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Item {
    Integer(i64),
    Boolean(bool),
    /// A decimal, string, token, byte sequence or inner list: no directive takes one.
    Other,
}

/// The members of a Dictionary, keys in their (lower-case) form, parameters dropped;
/// `None` when `value` is not a valid Dictionary.
pub(crate) fn parse_dictionary(value: &[u8]) -> Option<Vec<(Vec<u8>, Item)>> {
    let mut input = Input {
        bytes: value,
        at: 0,
    };
    let mut members = Vec::new();
    input.skip_spaces();
    if input.done() {
        return Some(members);
    }
    loop {
        let key = input.key()?;
        let item = if input.eat(b'=') {
            if input.peek() == Some(b'(') {
                input.inner_list()?;
                Item::Other
            } else {
                input.bare_item()?
            }
        } else {
            Item::Boolean(true)
        };
        input.parameters()?;
        // A key given twice keeps its last value (RFC 8941 section 4.2.2).
        members.retain(|(seen, _): &(Vec<u8>, Item)| *seen != key);
        members.push((key, item));
        input.skip_whitespace();
        if input.done() {
            return Some(members);
        }
        if !input.eat(b',') {
            return None;
        }
        input.skip_whitespace();
        if input.done() {
            // A trailing comma.
            return None;
        }
    }
}

/// The value being parsed and the position in it.
struct Input<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Input<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn done(&self) -> bool {
        self.at >= self.bytes.len()
    }

    fn eat(&mut self, byte: u8) -> bool {
        if self.peek() == Some(byte) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn skip_spaces(&mut self) {
        while self.peek() == Some(b' ') {
            self.at += 1;
        }
    }

    /// OWS: spaces and tabs.
    fn skip_whitespace(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.at += 1;
        }
    }

    /// `key = ( lcalpha / "*" ) *( lcalpha / DIGIT / "_" / "-" / "." / "*" )`.
    fn key(&mut self) -> Option<Vec<u8>> {
        let start = self.at;
        match self.peek()? {
            b'a'..=b'z' | b'*' => self.at += 1,
            _ => return None,
        }
        while let Some(b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-' | b'.' | b'*') = self.peek() {
            self.at += 1;
        }
        Some(self.bytes[start..self.at].to_vec())
    }

    /// `*( ";" *SP key [ "=" bare-item ] )`.
    fn parameters(&mut self) -> Option<()> {
        while self.eat(b';') {
            self.skip_spaces();
            self.key()?;
            if self.eat(b'=') {
                self.bare_item()?;
            }
        }
        Some(())
    }

    /// `"(" *SP [ item *( 1*SP item ) *SP ] ")" parameters`.
    fn inner_list(&mut self) -> Option<()> {
        if !self.eat(b'(') {
            return None;
        }
        loop {
            self.skip_spaces();
            if self.eat(b')') {
                return self.parameters();
            }
            self.bare_item()?;
            self.parameters()?;
            if !matches!(self.peek(), Some(b' ' | b')')) {
                return None;
            }
        }
    }

    fn bare_item(&mut self) -> Option<Item> {
        match self.peek()? {
            b'-' | b'0'..=b'9' => self.number(),
            b'"' => self.string().map(|()| Item::Other),
            b':' => self.byte_sequence().map(|()| Item::Other),
            b'?' => self.boolean().map(Item::Boolean),
            b'A'..=b'Z' | b'a'..=b'z' | b'*' => {
                self.token();
                Some(Item::Other)
            }
            _ => None,
        }
    }

    /// An Integer (at most 15 digits) or a Decimal (at most 12 digits, a dot, 1 to 3).
    fn number(&mut self) -> Option<Item> {
        let negative = self.eat(b'-');
        let start = self.at;
        while let Some(b'0'..=b'9') = self.peek() {
            self.at += 1;
        }
        let integer_digits = self.at - start;
        if integer_digits == 0 {
            return None;
        }
        if self.eat(b'.') {
            let fraction = self.at;
            while let Some(b'0'..=b'9') = self.peek() {
                self.at += 1;
            }
            let fraction_digits = self.at - fraction;
            return (integer_digits <= 12 && (1..=3).contains(&fraction_digits))
                .then_some(Item::Other);
        }
        if integer_digits > 15 {
            return None;
        }
        let digits = std::str::from_utf8(&self.bytes[start..self.at]).ok()?;
        let value: i64 = digits.parse().ok()?;
        Some(Item::Integer(if negative { -value } else { value }))
    }

    /// `DQUOTE *( unescaped / "\" ( DQUOTE / "\" ) ) DQUOTE`, printable ASCII only.
    fn string(&mut self) -> Option<()> {
        self.eat(b'"');
        loop {
            match self.peek()? {
                b'"' => {
                    self.at += 1;
                    return Some(());
                }
                b'\\' => {
                    self.at += 1;
                    if !matches!(self.peek()?, b'"' | b'\\') {
                        return None;
                    }
                    self.at += 1;
                }
                0x20..=0x7e => self.at += 1,
                _ => return None,
            }
        }
    }

    /// `":" *base64 ":"`.
    fn byte_sequence(&mut self) -> Option<()> {
        self.eat(b':');
        loop {
            match self.peek()? {
                b':' => {
                    self.at += 1;
                    return Some(());
                }
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'+' | b'/' | b'=' => self.at += 1,
                _ => return None,
            }
        }
    }

    fn boolean(&mut self) -> Option<bool> {
        self.eat(b'?');
        match self.peek()? {
            b'0' => {
                self.at += 1;
                Some(false)
            }
            b'1' => {
                self.at += 1;
                Some(true)
            }
            _ => None,
        }
    }

    /// `( ALPHA / "*" ) *( tchar / ":" / "/" )`.
    fn token(&mut self) {
        self.at += 1;
        while let Some(byte) = self.peek() {
            let tchar = byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~:/".contains(&byte);
            if !tchar {
                break;
            }
            self.at += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(value: &str) -> Option<Vec<(String, Item)>> {
        parse_dictionary(value.as_bytes()).map(|members| {
            members
                .into_iter()
                .map(|(key, item)| (String::from_utf8(key).expect("ascii"), item))
                .collect()
        })
    }

    /// RFC 9213 section 2.1 and RFC 8941 section 3.2: keys, integers, booleans.
    #[test]
    fn cache_directives_parse_as_a_dictionary() {
        assert_eq!(
            parsed("max-age=60, no-store, private=?0, s-maxage=5;x=1"),
            Some(vec![
                ("max-age".into(), Item::Integer(60)),
                ("no-store".into(), Item::Boolean(true)),
                ("private".into(), Item::Boolean(false)),
                ("s-maxage".into(), Item::Integer(5)),
            ])
        );
        assert_eq!(
            parsed("max-age=1, max-age=2"),
            Some(vec![("max-age".into(), Item::Integer(2))]),
            "RFC 8941 section 4.2.2: the last value of a key"
        );
        assert_eq!(
            parsed(r#"ext="a,b", max-age=3, list=(1 2);p"#),
            Some(vec![
                ("ext".into(), Item::Other),
                ("max-age".into(), Item::Integer(3)),
                ("list".into(), Item::Other),
            ])
        );
        assert_eq!(parsed(""), Some(Vec::new()));
    }

    /// RFC 9213 section 2.1: a field that does not parse is ignored as a whole.
    #[test]
    fn invalid_dictionaries_are_refused() {
        for value in [
            "Max-Age=60",
            "max-age =60",
            "max-age= 60",
            "max-age=60,",
            "max-age=1234567890123456",
            "max-age=\"60",
            "max-age=60 private",
            "max-age=1.2345",
            "max-age=?2",
        ] {
            assert_eq!(parsed(value), None, "{value:?}");
        }
    }
}
