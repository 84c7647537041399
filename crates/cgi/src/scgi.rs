//! The SCGI request (SCGI 1): the headers as a netstring, `LENGTH:` then each name and
//! value ended by a NUL, then `,`; `CONTENT_LENGTH` comes first and is always there, even
//! as `0`. nginx writes `CONTENT_LENGTH` itself and takes every other header, `SCGI 1`
//! included, from `scgi_param` (its stock `scgi_params` file sets `SCGI 1`). The request
//! body follows raw; the answer is a CGI head or an HTTP status line
//! ([`crate::head::HeadStyle::StatusLineOrCgi`]) and a body that ends when the
//! application closes the connection.

use crate::error::{InvalidNetstring, RequestError};

/// Appends the request's netstring for a body of `content_length` bytes and `headers`.
/// A name or value with a NUL byte is refused and `out` is left as it was.
pub fn encode_request<I, N, V>(
    out: &mut Vec<u8>,
    content_length: u64,
    headers: I,
) -> Result<(), RequestError>
where
    I: IntoIterator<Item = (N, V)>,
    N: AsRef<[u8]>,
    V: AsRef<[u8]>,
{
    let start = out.len();
    put_header(
        out,
        b"CONTENT_LENGTH",
        itoa::Buffer::new().format(content_length).as_bytes(),
    );
    for (name, value) in headers {
        let (name, value) = (name.as_ref(), value.as_ref());
        if name.contains(&0) || value.contains(&0) {
            out.truncate(start);
            return Err(RequestError::ScgiNul {
                name: name.to_vec(),
            });
        }
        put_header(out, name, value);
    }
    // The length goes before the headers, which had to be written to be counted: move
    // them up by its size (headers are small; the body is never moved).
    let end = out.len();
    let mut digits = itoa::Buffer::new();
    let length = digits.format(end - start).as_bytes();
    let prefix_len = length.len() + 1;
    out.resize(end + prefix_len, 0);
    out.copy_within(start..end, start + prefix_len);
    out[start..start + length.len()].copy_from_slice(length);
    out[start + length.len()] = b':';
    out.push(b',');
    Ok(())
}

fn put_header(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    out.extend_from_slice(name);
    out.push(0);
    out.extend_from_slice(value);
    out.push(0);
}

/// An SCGI request's headers as an application reads them (for peers written in tests and
/// round-trip checks).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request<'a> {
    headers: &'a [u8],
    len: usize,
}

/// More decimal digits than a netstring length needs: a longer length is refused.
const LENGTH_DIGITS_MAX: usize = 10;

impl<'a> Request<'a> {
    /// The netstring at the start of `buf`: `Ok(None)` while it has not all arrived, an
    /// error when `buf` cannot start with one (a length that is not decimal, a missing `:`
    /// or `,`, headers not ended by NUL).
    pub fn parse(buf: &'a [u8]) -> Result<Option<Request<'a>>, InvalidNetstring> {
        let digits = buf.iter().take_while(|byte| byte.is_ascii_digit()).count();
        if digits > LENGTH_DIGITS_MAX || (digits == 0 && !buf.is_empty()) {
            return Err(InvalidNetstring);
        }
        let Some(&separator) = buf.get(digits) else {
            return Ok(None);
        };
        if separator != b':' {
            return Err(InvalidNetstring);
        }
        let length: usize = std::str::from_utf8(&buf[..digits])
            .ok()
            .and_then(|text| text.parse().ok())
            .ok_or(InvalidNetstring)?;
        let start = digits + 1;
        let Some(&comma) = buf.get(start + length) else {
            return Ok(None);
        };
        let headers = &buf[start..start + length];
        if comma != b',' || headers.last().is_some_and(|&last| last != 0) {
            return Err(InvalidNetstring);
        }
        Ok(Some(Request {
            headers,
            len: start + length + 1,
        }))
    }

    /// Bytes the netstring takes; the body starts after them.
    pub fn byte_len(&self) -> usize {
        self.len
    }

    /// The headers in order (`CONTENT_LENGTH` first). An odd count of NUL-ended strings
    /// leaves the last name without a value: it is not returned.
    pub fn headers(&self) -> impl Iterator<Item = (&'a [u8], &'a [u8])> + 'a {
        // Every string ends with a NUL (checked by `parse`), so the split's last piece is
        // the empty one after the final NUL, never a name.
        let mut strings = self.headers.split(|&byte| byte == 0);
        std::iter::from_fn(move || {
            let name = strings.next()?;
            let value = strings.next()?;
            Some((name, value))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_netstring_as_the_scgi_specification_shows_it() {
        let mut out = Vec::new();
        let headers = [
            ("SCGI", "1"),
            ("REQUEST_METHOD", "POST"),
            ("REQUEST_URI", "/deepthought"),
        ];
        encode_request(&mut out, 27, headers).expect("no NUL");
        let expected = concat!(
            "70:CONTENT_LENGTH\x0027\x00SCGI\x001\x00",
            "REQUEST_METHOD\x00POST\x00REQUEST_URI\x00/deepthought\x00,"
        );
        let expected = expected.as_bytes();
        assert_eq!(out, expected);
        let request = Request::parse(&out).expect("valid").expect("whole");
        assert_eq!(request.byte_len(), out.len());
        let read: Vec<_> = request.headers().collect();
        assert_eq!(read[0], (&b"CONTENT_LENGTH"[..], &b"27"[..]));
        assert_eq!(
            read[1..],
            [
                (&b"SCGI"[..], &b"1"[..]),
                (b"REQUEST_METHOD", b"POST"),
                (b"REQUEST_URI", b"/deepthought")
            ]
        );
    }

    #[test]
    fn empty_names_and_values_read_back() {
        let mut out = Vec::new();
        encode_request(&mut out, 0, [("", "v"), ("N", "")]).expect("no NUL");
        let request = Request::parse(&out).expect("valid").expect("whole");
        let read: Vec<_> = request.headers().collect();
        assert_eq!(
            read,
            [
                (&b"CONTENT_LENGTH"[..], &b"0"[..]),
                (b"", b"v"),
                (b"N", b"")
            ]
        );
    }

    #[test]
    fn content_length_is_there_without_a_body_and_other_headers() {
        let mut out = b"before".to_vec();
        encode_request(&mut out, 0, std::iter::empty::<(&str, &str)>()).expect("no NUL");
        assert_eq!(out, b"before17:CONTENT_LENGTH\x000\x00,");
    }

    #[test]
    fn a_nul_in_a_name_or_value_is_refused() {
        for (name, value) in [(&b"A\0B"[..], &b"v"[..]), (b"A", b"v\0SCRIPT_NAME\0/x")] {
            let mut out = b"kept".to_vec();
            let refused = encode_request(&mut out, 0, [(name, value)]);
            assert_eq!(
                refused,
                Err(RequestError::ScgiNul {
                    name: name.to_vec()
                })
            );
            assert_eq!(out, b"kept");
        }
        let error = RequestError::ScgiNul {
            name: b"X".to_vec(),
        };
        assert_eq!(error.to_string(), "scgi header \"X\" has a NUL byte");
    }

    #[test]
    fn a_request_is_not_parsed_before_it_has_all_arrived() {
        let mut out = Vec::new();
        encode_request(&mut out, 5, [("SCGI", "1")]).expect("no NUL");
        for len in 0..out.len() {
            assert_eq!(Request::parse(&out[..len]), Ok(None), "{len}");
        }
        out.extend_from_slice(b"hello");
        assert_eq!(
            Request::parse(&out)
                .expect("valid")
                .expect("whole")
                .byte_len(),
            out.len() - 5
        );
    }

    #[test]
    fn what_is_not_a_netstring_is_refused() {
        for input in [&b"x:"[..], b"12a", b"3:ab\x00;", b"3:abc,", b"12345678901:"] {
            assert_eq!(
                Request::parse(input),
                Err(InvalidNetstring),
                "{}",
                String::from_utf8_lossy(input)
            );
        }
    }
}
