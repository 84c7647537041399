//! A request head from a decoded header block (RFC 9113 §8.3): pseudo-header fields
//! checked and taken out, field names and values checked as nginx checks them, `cookie`
//! fields joined (§8.2.3); and a request's trailers checked (§8.1). A refused head is
//! answered with 400, as nginx answers it, or with a stream reset where nginx resets
//! ([`Malformed::resets_stream`]); refused trailers always reset the stream.

use crate::hpack::{Field, FieldList};

/// How field names outside the usual set are treated (nginx's `underscores_in_headers`
/// and `ignore_invalid_headers`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldPolicy {
    /// Whether `_` is a valid name character.
    pub underscores: bool,
    /// Whether fields with invalid names are dropped (else kept as they are).
    pub ignore_invalid: bool,
}

impl Default for FieldPolicy {
    fn default() -> Self {
        Self {
            underscores: false,
            ignore_invalid: true,
        }
    }
}

/// The pseudo-header fields and the regular fields of a request, kept in the decoded
/// list they came in (no field is copied out of it).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestHead {
    list: FieldList,
    method: usize,
    scheme: Option<usize>,
    authority: Option<usize>,
    path: Option<usize>,
    /// The first `host` and `content-length` fields.
    host: Option<usize>,
    content_length: Option<usize>,
}

impl RequestHead {
    fn value(&self, index: usize) -> &[u8] {
        self.list.get(index).map_or(&[], |field| field.value)
    }

    /// `:method`.
    pub fn method(&self) -> &[u8] {
        self.value(self.method)
    }

    /// `:scheme` (absent only for CONNECT).
    pub fn scheme(&self) -> Option<&[u8]> {
        self.scheme.map(|index| self.value(index))
    }

    /// `:authority`, when sent.
    pub fn authority(&self) -> Option<&[u8]> {
        self.authority.map(|index| self.value(index))
    }

    /// `:path` (absent only for CONNECT).
    pub fn path(&self) -> Option<&[u8]> {
        self.path.map(|index| self.value(index))
    }

    /// The first `host` field's value.
    pub fn host(&self) -> Option<&[u8]> {
        self.host.map(|index| self.value(index))
    }

    /// The first `content-length` field's value.
    pub fn content_length(&self) -> Option<&[u8]> {
        self.content_length.map(|index| self.value(index))
    }

    /// The decoded list the head was made of, for its memory's reuse
    /// (`Connection::recycle_fields`).
    pub fn into_fields(self) -> FieldList {
        self.list
    }

    /// The regular fields, in order; several `cookie` fields are joined into the first.
    pub fn fields(&self) -> impl Iterator<Item = Field<'_>> + '_ {
        self.list.iter()
    }
}

/// Why a header block is not a valid request; the words are nginx's `info` lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Malformed {
    /// A name with a control character, a space or a colon.
    InvalidName,
    /// A name with an upper-case letter (RFC 9113 §8.2.1).
    UppercaseName,
    /// A value with NUL, CR or LF.
    InvalidValue,
    /// A pseudo-header after a regular field.
    PseudoAfterRegular,
    /// A pseudo-header a request does not have.
    UnknownPseudo,
    /// A pseudo-header sent twice.
    DuplicatePseudo,
    /// `:method`, `:scheme` or `:path` missing (or sent with CONNECT's rules broken).
    MissingPseudo,
    /// An empty `:authority`.
    EmptyAuthority,
    /// A `:path` that is empty, or neither starts with `/` nor is `*` for OPTIONS.
    InvalidPath,
    /// A connection-specific field (§8.2.2), or `te` other than `trailers`.
    ConnectionSpecific,
    /// A pseudo-header field in trailers (§8.1).
    PseudoInTrailers,
}

impl Malformed {
    /// The `info` line nginx logs for it.
    pub fn message(self) -> &'static str {
        match self {
            Self::InvalidName | Self::UppercaseName => "client sent invalid header name",
            Self::InvalidValue => "client sent header with invalid value",
            Self::PseudoAfterRegular => "client sent pseudo-header after regular header",
            Self::UnknownPseudo => "client sent unknown pseudo-header",
            Self::DuplicatePseudo => "client sent duplicate pseudo-header",
            Self::MissingPseudo => "client sent no mandatory pseudo-header",
            Self::EmptyAuthority => "client sent empty :authority header",
            Self::InvalidPath => "client sent invalid :path header",
            Self::ConnectionSpecific => "client sent connection-specific header",
            Self::PseudoInTrailers => "client sent pseudo-header in trailers",
        }
    }

    /// Whether the stream is reset (RST_STREAM with PROTOCOL_ERROR, RFC 9113 §8.1.1) rather
    /// than answered with 400. An upper-case name is: nginx 1.22 resets the stream for it,
    /// as the RFC and h2spec (8.1.2/1) want; nginx 1.25 and later answer 400, which
    /// nginx-tests checks only for the other invalid names, and those keep their 400.
    /// Trailers come after the request went on: they cannot get an answer of their own.
    pub fn resets_stream(self) -> bool {
        matches!(self, Self::UppercaseName | Self::PseudoInTrailers)
    }
}

/// What a name's bytes make of a field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum NameCheck {
    Valid,
    /// Valid HTTP/2 but outside nginx's set: dropped or kept as the policy says.
    Unusual,
    Bad,
    Uppercase,
}

fn check_name(name: &[u8], policy: FieldPolicy) -> NameCheck {
    // What the name's bytes are, all at once: the byte-by-byte walk below is needed only
    // to tell which of an upper-case letter and a forbidden byte comes first.
    let classes = name.iter().fold(0u8, |classes, &byte| {
        classes | NAME_CLASS[usize::from(byte)]
    });
    if classes & (class::UPPER | class::BAD) == class::UPPER | class::BAD {
        return check_name_bytes(name, policy);
    }
    if name.is_empty() || classes & class::BAD != 0 {
        NameCheck::Bad
    } else if classes & class::UPPER != 0 {
        NameCheck::Uppercase
    } else if classes & class::UNUSUAL != 0
        || (classes & class::UNDERSCORE != 0 && !policy.underscores)
    {
        NameCheck::Unusual
    } else {
        NameCheck::Valid
    }
}

/// [`check_name`] a byte at a time: the first upper-case letter or forbidden byte decides.
fn check_name_bytes(name: &[u8], policy: FieldPolicy) -> NameCheck {
    let mut check = NameCheck::Valid;
    for &byte in name {
        match byte {
            b'a'..=b'z' | b'0'..=b'9' | b'-' => {}
            b'_' if policy.underscores => {}
            b'A'..=b'Z' => return NameCheck::Uppercase,
            b':' | b' ' | 0..=0x1f | 0x7f => return NameCheck::Bad,
            _ => check = NameCheck::Unusual,
        }
    }
    if name.is_empty() {
        NameCheck::Bad
    } else {
        check
    }
}

/// The classes of a name's bytes, as bits of [`NAME_CLASS`].
mod class {
    pub(super) const UNDERSCORE: u8 = 1;
    pub(super) const UPPER: u8 = 2;
    pub(super) const BAD: u8 = 4;
    pub(super) const UNUSUAL: u8 = 8;
}

/// Each byte's class in a field name (0: a lower-case letter, a digit or `-`).
static NAME_CLASS: [u8; 256] = {
    let mut table = [class::UNUSUAL; 256];
    let mut byte = 0;
    while byte < 256 {
        let b = byte as u8;
        table[byte] = match b {
            b'a'..=b'z' | b'0'..=b'9' | b'-' => 0,
            b'_' => class::UNDERSCORE,
            b'A'..=b'Z' => class::UPPER,
            b':' | b' ' | 0..=0x1f | 0x7f => class::BAD,
            _ => class::UNUSUAL,
        };
        byte += 1;
    }
    table
};

/// Whether a value holds NUL, CR or LF, looked for eight bytes at a time.
fn has_forbidden_value_byte(value: &[u8]) -> bool {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    let forbidden = |byte: &u8| matches!(byte, 0 | b'\r' | b'\n');
    let mut chunks = value.chunks_exact(8);
    for chunk in &mut chunks {
        let word = u64::from_ne_bytes(chunk.try_into().unwrap_or([0xff; 8]));
        // A byte below 0x0e sets its high bit here (the three forbidden bytes are below it;
        // a tab is too, and is then looked at closer).
        let low = word.wrapping_sub(ONES * 0x0e) & !word & HIGHS;
        if low != 0 && chunk.iter().any(forbidden) {
            return true;
        }
    }
    chunks.remainder().iter().any(forbidden)
}

/// What [`parse`] makes of one field.
enum Step {
    Pseudo(Pseudo),
    /// Dropped (`ignore_invalid_headers`).
    Drop,
    Cookie,
    /// Kept; the head notes where the first is.
    Host,
    ContentLength,
    Keep,
}

#[derive(Clone, Copy)]
enum Pseudo {
    Method,
    Scheme,
    Authority,
    Path,
}

/// Builds the request head, or says why the block is malformed.
pub fn parse(mut list: FieldList, policy: FieldPolicy) -> Result<RequestHead, Malformed> {
    let mut pseudo = [None; 4];
    let mut regular_seen = false;
    let mut cookies = Vec::new();
    let (mut host, mut content_length) = (None, None);
    for index in 0..list.len() {
        let step = match list.get(index) {
            Some(field) => classify(field, policy, regular_seen)?,
            None => break,
        };
        match step {
            Step::Pseudo(which) => {
                if pseudo[which as usize].replace(index).is_some() {
                    return Err(Malformed::DuplicatePseudo);
                }
                list.hide(index);
                continue;
            }
            Step::Drop => list.hide(index),
            Step::Cookie => cookies.push(index),
            Step::Host => {
                host.get_or_insert(index);
            }
            Step::ContentLength => {
                content_length.get_or_insert(index);
            }
            Step::Keep => {}
        }
        regular_seen = true;
    }
    if let [first, _, ..] = cookies[..] {
        list.join_values(first, &cookies, b"; ");
    }
    let [method, scheme, authority, path] = pseudo;
    let head = RequestHead {
        list,
        method: method.ok_or(Malformed::MissingPseudo)?,
        scheme,
        authority,
        path,
        host,
        content_length,
    };
    check_pseudo(&head)?;
    Ok(head)
}

fn classify(field: Field<'_>, policy: FieldPolicy, regular_seen: bool) -> Result<Step, Malformed> {
    if has_forbidden_value_byte(field.value) {
        return Err(Malformed::InvalidValue);
    }
    if let Some(pseudo) = field.name.strip_prefix(b":") {
        if regular_seen {
            return Err(Malformed::PseudoAfterRegular);
        }
        return match pseudo {
            b"method" => Ok(Step::Pseudo(Pseudo::Method)),
            b"scheme" => Ok(Step::Pseudo(Pseudo::Scheme)),
            b"authority" => Ok(Step::Pseudo(Pseudo::Authority)),
            b"path" => Ok(Step::Pseudo(Pseudo::Path)),
            _ => Err(Malformed::UnknownPseudo),
        };
    }
    match check_name(field.name, policy) {
        NameCheck::Bad => return Err(Malformed::InvalidName),
        NameCheck::Uppercase => return Err(Malformed::UppercaseName),
        NameCheck::Unusual if policy.ignore_invalid => return Ok(Step::Drop),
        NameCheck::Valid | NameCheck::Unusual => {}
    }
    // The length first: most names have none of these lengths.
    let name = field.name;
    let connection_specific = match name.len() {
        2 => name == b"te" && field.value != b"trailers",
        4 if name == b"host" => return Ok(Step::Host),
        6 if name == b"cookie" => return Ok(Step::Cookie),
        7 => name == b"upgrade",
        10 => name == b"connection" || name == b"keep-alive",
        14 if name == b"content-length" => return Ok(Step::ContentLength),
        16 => name == b"proxy-connection",
        17 => name == b"transfer-encoding",
        _ => false,
    };
    if connection_specific {
        Err(Malformed::ConnectionSpecific)
    } else {
        Ok(Step::Keep)
    }
}

/// Checks a request's trailers (RFC 9113 §8.1): no pseudo-header fields, and names and
/// values as in a head, but whatever `underscores_in_headers` says (Portico does not pass
/// trailers on). A field nginx would only drop from a head (`ignore_invalid_headers`) is
/// kept; a name with a byte above 0x7e is refused, as §8.2.1 says.
pub fn check_trailers(fields: &FieldList) -> Result<(), Malformed> {
    let policy = FieldPolicy {
        underscores: true,
        ignore_invalid: false,
    };
    for field in fields.iter() {
        if field.name.starts_with(b":") {
            return Err(Malformed::PseudoInTrailers);
        }
        if field.name.iter().any(|&byte| byte > 0x7e) {
            return Err(Malformed::InvalidName);
        }
        match check_name(field.name, policy) {
            NameCheck::Bad => return Err(Malformed::InvalidName),
            NameCheck::Uppercase => return Err(Malformed::UppercaseName),
            NameCheck::Valid | NameCheck::Unusual => {}
        }
        if field
            .value
            .iter()
            .any(|&byte| matches!(byte, 0 | b'\r' | b'\n'))
        {
            return Err(Malformed::InvalidValue);
        }
        if matches!(
            field.name,
            b"connection" | b"keep-alive" | b"proxy-connection" | b"transfer-encoding" | b"upgrade"
        ) {
            return Err(Malformed::ConnectionSpecific);
        }
    }
    Ok(())
}

fn check_pseudo(head: &RequestHead) -> Result<(), Malformed> {
    if head.authority().is_some_and(<[u8]>::is_empty) {
        return Err(Malformed::EmptyAuthority);
    }
    if head.method() == b"CONNECT" {
        // §8.5: only :method and :authority.
        if head.scheme.is_some() || head.path.is_some() || head.authority.is_none() {
            return Err(Malformed::MissingPseudo);
        }
        return Ok(());
    }
    let (Some(_), Some(path)) = (head.scheme, head.path()) else {
        return Err(Malformed::MissingPseudo);
    };
    let asterisk = path == b"*" && head.method() == b"OPTIONS";
    if !path.starts_with(b"/") && !asterisk {
        return Err(Malformed::InvalidPath);
    }
    if path.iter().any(|&byte| byte <= 0x20 || byte == 0x7f) {
        return Err(Malformed::InvalidPath);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hpack::HeaderField;

    fn list(pairs: &[(&str, &str)]) -> FieldList {
        let mut list = FieldList::new();
        for (name, value) in pairs {
            list.push(name.as_bytes(), value.as_bytes(), false);
        }
        list
    }

    fn head(pairs: &[(&str, &str)]) -> Result<RequestHead, Malformed> {
        parse(list(pairs), FieldPolicy::default())
    }

    fn regular(head: &RequestHead) -> Vec<HeaderField> {
        head.fields()
            .map(|field| HeaderField::new(field.name, field.value))
            .collect()
    }

    const BASE: [(&str, &str); 4] = [
        (":method", "GET"),
        (":scheme", "http"),
        (":path", "/"),
        (":authority", "localhost"),
    ];

    fn with(extra: &[(&'static str, &'static str)]) -> Vec<(&'static str, &'static str)> {
        BASE.iter().chain(extra).copied().collect()
    }

    #[test]
    fn the_first_host_and_content_length_are_found() {
        let parsed = head(&with(&[
            ("x-a", "1"),
            ("content-length", "5"),
            ("host", "one"),
            ("host", "two"),
            ("content-length", "6"),
        ]))
        .expect("a valid head");
        assert_eq!(parsed.host(), Some(&b"one"[..]));
        assert_eq!(parsed.content_length(), Some(&b"5"[..]));
        let parsed = head(&with(&[("x-a", "1")])).expect("a valid head");
        assert_eq!((parsed.host(), parsed.content_length()), (None, None));
        // Names of the same lengths as the connection-specific ones are kept.
        let parsed = head(&with(&[("tt", "1"), ("upgradx", "2"), ("connectiox", "3")]))
            .expect("a valid head");
        assert_eq!(parsed.fields().count(), 3);
        assert_eq!(
            head(&with(&[("keep-alive", "1")])),
            Err(Malformed::ConnectionSpecific)
        );
        assert_eq!(
            head(&with(&[("te", "gzip")])),
            Err(Malformed::ConnectionSpecific)
        );
        assert!(head(&with(&[("te", "trailers")])).is_ok());
    }

    #[test]
    fn names_are_classified_as_a_byte_at_a_time() {
        // Every pair of bytes around a valid stem, in both policies: the table's answer is
        // the byte-by-byte walk's, whichever byte comes first.
        let samples: Vec<u8> = (0u8..=255).collect();
        for policy in [
            FieldPolicy::default(),
            FieldPolicy {
                underscores: true,
                ignore_invalid: false,
            },
        ] {
            assert_eq!(check_name(b"", policy), NameCheck::Bad);
            for &first in &samples {
                for &second in &samples {
                    let name = [b'x', first, b'-', second, b'9'];
                    assert_eq!(
                        check_name(&name, policy),
                        check_name_bytes(&name, policy),
                        "{name:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn values_with_nul_cr_or_lf_are_found_at_any_place() {
        for length in 0..40 {
            let clean = vec![b'\t'; length];
            assert!(!has_forbidden_value_byte(&clean));
            let text: Vec<u8> = (0..length).map(|at| b' ' + (at % 90) as u8).collect();
            assert!(!has_forbidden_value_byte(&text));
            for at in 0..length {
                for bad in [0, b'\r', b'\n'] {
                    let mut value = text.clone();
                    value[at] = bad;
                    assert!(has_forbidden_value_byte(&value), "{value:?}");
                }
                let mut near = text.clone();
                near[at] = [0x0b, 0x0c, 0x0e, 0x01][at % 4];
                assert!(!has_forbidden_value_byte(&near), "{near:?}");
            }
        }
    }

    #[test]
    fn a_valid_request_and_its_cookies() {
        let parsed = head(&with(&[
            ("cookie", "a=1"),
            ("accept", "*/*"),
            ("cookie", "b=2"),
        ]))
        .expect("valid");
        assert_eq!(parsed.method(), b"GET");
        assert_eq!(parsed.path(), Some(&b"/"[..]));
        assert_eq!(parsed.authority(), Some(&b"localhost"[..]));
        assert_eq!(
            regular(&parsed),
            [
                HeaderField::new("cookie", "a=1; b=2"),
                HeaderField::new("accept", "*/*")
            ]
        );
        assert!(head(&[(":method", "OPTIONS"), (":scheme", "http"), (":path", "*")]).is_ok());
        assert!(head(&[(":method", "CONNECT"), (":authority", "example.com:443")]).is_ok());
    }

    #[test]
    fn names_as_nginx_checks_them() {
        for bad in ["x:foo", "x foo", "foo\u{2}", ""] {
            assert_eq!(
                head(&with(&[(bad, "v")])),
                Err(Malformed::InvalidName),
                "{bad:?}"
            );
            assert!(!Malformed::InvalidName.resets_stream(), "400 for {bad:?}");
        }
        // An upper-case letter resets the stream, wherever it is in the name.
        for upper in ["X-Foo", "x-fOo", "xA:b"] {
            assert_eq!(
                head(&with(&[(upper, "v")])),
                Err(Malformed::UppercaseName),
                "{upper:?}"
            );
        }
        assert!(Malformed::UppercaseName.resets_stream());
        // An underscore makes a name invalid, and an invalid name is dropped by default.
        let parsed = head(&with(&[("x_foo", "x-bar"), ("referer", "see-this")])).expect("valid");
        assert_eq!(regular(&parsed), [HeaderField::new("referer", "see-this")]);
        let policy = FieldPolicy {
            underscores: true,
            ignore_invalid: true,
        };
        let parsed = parse(list(&with(&[("x_foo", "x-bar")])), policy).expect("valid");
        assert_eq!(regular(&parsed), [HeaderField::new("x_foo", "x-bar")]);
        assert_eq!(
            head(&with(&[("x-foo", "x-bar\r\nreferer:see-this")])),
            Err(Malformed::InvalidValue)
        );
    }

    #[test]
    fn pseudo_header_rules() {
        assert_eq!(
            head(&[(":method", "GET"), (":path", "/")]),
            Err(Malformed::MissingPseudo)
        );
        assert_eq!(
            head(&with(&[(":status", "200")])),
            Err(Malformed::UnknownPseudo)
        );
        assert_eq!(
            head(&with(&[(":path", "/again")])),
            Err(Malformed::DuplicatePseudo)
        );
        assert_eq!(
            head(&[("accept", "*/*"), (":method", "GET")]),
            Err(Malformed::PseudoAfterRegular)
        );
        let empty_authority = [
            (":method", "GET"),
            (":scheme", "http"),
            (":path", "/"),
            (":authority", ""),
        ];
        assert_eq!(head(&empty_authority), Err(Malformed::EmptyAuthority));
        assert_eq!(
            head(&[(":method", "GET"), (":scheme", "http"), (":path", "x")]),
            Err(Malformed::InvalidPath)
        );
        assert_eq!(
            head(&[(":method", "GET"), (":scheme", "http"), (":path", "/a b")]),
            Err(Malformed::InvalidPath)
        );
        assert_eq!(
            head(&with(&[("connection", "close")])),
            Err(Malformed::ConnectionSpecific)
        );
        assert_eq!(
            head(&with(&[("te", "gzip")])),
            Err(Malformed::ConnectionSpecific)
        );
        assert!(head(&with(&[("te", "trailers")])).is_ok());
    }

    #[test]
    fn trailers_without_pseudo_headers_or_bad_fields() {
        let fields = list;
        assert_eq!(
            check_trailers(&fields(&[
                ("x-checksum", "abc"),
                ("x_under", "1"),
                ("grpc-status", "0")
            ])),
            Ok(())
        );
        assert_eq!(check_trailers(&FieldList::new()), Ok(()));
        let refused = [
            ((":path", "/evil"), Malformed::PseudoInTrailers),
            ((":status", "200"), Malformed::PseudoInTrailers),
            (("X-Checksum", "abc"), Malformed::UppercaseName),
            (("x checksum", "abc"), Malformed::InvalidName),
            (("x-caf\u{e9}", "abc"), Malformed::InvalidName),
            (("x-checksum", "a\r\nb: c"), Malformed::InvalidValue),
            (("connection", "close"), Malformed::ConnectionSpecific),
            (
                ("transfer-encoding", "chunked"),
                Malformed::ConnectionSpecific,
            ),
        ];
        for ((name, value), malformed) in refused {
            // After a valid field too: every field is looked at.
            let trailers = fields(&[("x-ok", "1"), (name, value)]);
            assert_eq!(check_trailers(&trailers), Err(malformed), "{name:?}");
        }
        assert!(Malformed::PseudoInTrailers.resets_stream());
    }
}
