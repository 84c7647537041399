//! The not-modified filter (nginx's ngx_http_not_modified_filter_module): conditional
//! requests on a 200 response with `Last-Modified` and/or `ETag`. `If-Unmodified-Since` and
//! `If-Match` can turn it into 412, `If-Modified-Since` and `If-None-Match` into 304.
//! Pure: the caller gives the request's headers and the response's validators; the fields
//! are read by the codec (`http1::conditional`).

use http1::conditional::{self, Comparison, etag_listed};

use crate::kernel::core::IfModifiedSince;

/// The conditional headers of a request (each is unique: a second one is refused with 400
/// when the head is read).
#[derive(Clone, Copy, Debug, Default)]
pub struct Conditions<'a> {
    pub if_unmodified_since: Option<&'a [u8]>,
    pub if_match: Option<&'a [u8]>,
    pub if_modified_since: Option<&'a [u8]>,
    pub if_none_match: Option<&'a [u8]>,
}

/// The response's validators.
#[derive(Clone, Copy, Debug, Default)]
pub struct Validators<'a> {
    pub last_modified: Option<i64>,
    pub etag: Option<&'a [u8]>,
}

/// What the filter does to a 200 response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Send it as it is.
    Unchanged,
    /// 304: the head without content headers, no body.
    NotModified,
    /// 412, with its status page.
    PreconditionFailed,
}

/// nginx's order: `If-Unmodified-Since`, then `If-Match` (either fails with 412), then
/// `If-Modified-Since` and `If-None-Match`, of which every one present must say "not
/// modified" for a 304.
pub fn check(
    conditions: &Conditions<'_>,
    validators: &Validators<'_>,
    if_modified_since: IfModifiedSince,
) -> Outcome {
    if let Some(value) = conditions.if_unmodified_since
        && !unmodified_since(value, validators.last_modified)
    {
        return Outcome::PreconditionFailed;
    }
    if let Some(list) = conditions.if_match
        && !etag_listed(list, validators.etag, Comparison::Strong)
    {
        return Outcome::PreconditionFailed;
    }
    if conditions.if_modified_since.is_none() && conditions.if_none_match.is_none() {
        return Outcome::Unchanged;
    }
    if let Some(value) = conditions.if_modified_since
        && modified_since(value, validators.last_modified, if_modified_since)
    {
        return Outcome::Unchanged;
    }
    if let Some(list) = conditions.if_none_match
        && !etag_listed(list, validators.etag, Comparison::Weak)
    {
        return Outcome::Unchanged;
    }
    Outcome::NotModified
}

/// `If-Unmodified-Since` holds when the resource is not newer than the date; without
/// `Last-Modified` it never holds.
fn unmodified_since(value: &[u8], last_modified: Option<i64>) -> bool {
    last_modified.is_some_and(|modified| conditional::date(value) >= modified)
}

/// Whether the response counts as modified since the `If-Modified-Since` date: always
/// without `Last-Modified` or with `if_modified_since off`; `exact` wants the same second,
/// `before` also accepts a later date.
fn modified_since(value: &[u8], last_modified: Option<i64>, mode: IfModifiedSince) -> bool {
    let Some(modified) = last_modified else {
        return true;
    };
    if mode == IfModifiedSince::Off {
        return true;
    }
    let since = conditional::date(value);
    if since == modified {
        return false;
    }
    mode == IfModifiedSince::Exact || since < modified
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sat, 21 Nov 2026 23:29:08 GMT.
    const MODIFIED: i64 = 1_795_303_748;
    const MODIFIED_TEXT: &[u8] = b"Sat, 21 Nov 2026 23:29:08 GMT";
    const EARLIER_TEXT: &[u8] = b"Sat, 21 Nov 2026 23:29:07 GMT";
    const LATER_TEXT: &[u8] = b"Sat, 21 Nov 2026 23:29:09 GMT";
    const ETAG: &[u8] = b"\"6b022944-8\"";

    fn file() -> Validators<'static> {
        Validators {
            last_modified: Some(MODIFIED),
            etag: Some(ETAG),
        }
    }

    fn ims(value: &[u8], mode: IfModifiedSince) -> Outcome {
        let conditions = Conditions {
            if_modified_since: Some(value),
            ..Conditions::default()
        };
        check(&conditions, &file(), mode)
    }

    fn inm(list: &[u8], validators: &Validators<'_>) -> Outcome {
        let conditions = Conditions {
            if_none_match: Some(list),
            ..Conditions::default()
        };
        check(&conditions, validators, IfModifiedSince::Exact)
    }

    fn im(list: &[u8], validators: &Validators<'_>) -> Outcome {
        let conditions = Conditions {
            if_match: Some(list),
            ..Conditions::default()
        };
        check(&conditions, validators, IfModifiedSince::Exact)
    }

    #[test]
    fn without_conditions_nothing_changes() {
        assert_eq!(
            check(&Conditions::default(), &file(), IfModifiedSince::Exact),
            Outcome::Unchanged
        );
    }

    #[test]
    fn if_modified_since_exact() {
        use IfModifiedSince::Exact;
        assert_eq!(ims(MODIFIED_TEXT, Exact), Outcome::NotModified);
        assert_eq!(ims(EARLIER_TEXT, Exact), Outcome::Unchanged);
        assert_eq!(ims(LATER_TEXT, Exact), Outcome::Unchanged);
        assert_eq!(ims(b"garbage", Exact), Outcome::Unchanged);
    }

    #[test]
    fn if_modified_since_before() {
        use IfModifiedSince::Before;
        assert_eq!(ims(MODIFIED_TEXT, Before), Outcome::NotModified);
        assert_eq!(ims(LATER_TEXT, Before), Outcome::NotModified);
        assert_eq!(ims(EARLIER_TEXT, Before), Outcome::Unchanged);
        assert_eq!(ims(b"garbage", Before), Outcome::Unchanged);
        // The largest 32-bit time and beyond, as nginx-tests checks.
        assert_eq!(
            ims(b"Tue, 19 Jan 2038 03:14:07 GMT", Before),
            Outcome::NotModified
        );
        assert_eq!(
            ims(b"Fri, 25 Feb 2174 09:42:23 GMT", Before),
            Outcome::NotModified
        );
    }

    #[test]
    fn if_modified_since_off_or_without_last_modified() {
        assert_eq!(ims(MODIFIED_TEXT, IfModifiedSince::Off), Outcome::Unchanged);
        let conditions = Conditions {
            if_modified_since: Some(MODIFIED_TEXT),
            ..Conditions::default()
        };
        let no_date = Validators {
            last_modified: None,
            etag: Some(ETAG),
        };
        assert_eq!(
            check(&conditions, &no_date, IfModifiedSince::Before),
            Outcome::Unchanged
        );
    }

    #[test]
    fn if_none_match_lists_star_and_weak() {
        let file = file();
        assert_eq!(inm(ETAG, &file), Outcome::NotModified);
        assert_eq!(inm(b"\"foo\"", &file), Outcome::Unchanged);
        assert_eq!(
            inm(b"\"foo\", \"bar\", \"6b022944-8\" , \"baz\"", &file),
            Outcome::NotModified
        );
        assert_eq!(
            inm(b"\"foo\",\t\"6b022944-8\"", &file),
            Outcome::NotModified
        );
        assert_eq!(inm(b"*", &file), Outcome::NotModified);
        assert_eq!(inm(b"W/\"6b022944-8\"", &file), Outcome::NotModified);
        // A prefix of a longer tag is not the tag.
        assert_eq!(inm(b"\"6b022944-8\"x", &file), Outcome::Unchanged);
        assert_eq!(inm(b"\"6b022944-8", &file), Outcome::Unchanged);
        // A comma inside a tag: scanning goes on after the tag, as nginx's does.
        let comma = Validators {
            last_modified: None,
            etag: Some(b"\"a,b\""),
        };
        assert_eq!(inm(b"\"a,b\"x, \"a,b\"", &comma), Outcome::NotModified);
        assert_eq!(inm(b"\"a\", \"a,b\" ", &comma), Outcome::NotModified);
        let weak = Validators {
            last_modified: Some(MODIFIED),
            etag: Some(b"W/\"abc\""),
        };
        assert_eq!(inm(b"\"abc\"", &weak), Outcome::NotModified);
        assert_eq!(inm(b"W/\"abc\"", &weak), Outcome::NotModified);
        // Without an ETag only `*` matches.
        let no_etag = Validators {
            last_modified: Some(MODIFIED),
            etag: None,
        };
        assert_eq!(inm(ETAG, &no_etag), Outcome::Unchanged);
        assert_eq!(inm(b"*", &no_etag), Outcome::NotModified);
        assert_eq!(inm(b"*", &Validators::default()), Outcome::NotModified);
    }

    #[test]
    fn if_match_is_strong() {
        let file = file();
        assert_eq!(im(ETAG, &file), Outcome::Unchanged);
        assert_eq!(im(b"\"foo\"", &file), Outcome::PreconditionFailed);
        assert_eq!(
            im(b"\"foo\", \"bar\", \t\"6b022944-8\" , \"baz\"", &file),
            Outcome::Unchanged
        );
        assert_eq!(im(b"*", &file), Outcome::Unchanged);
        assert_eq!(im(b"W/\"6b022944-8\"", &file), Outcome::PreconditionFailed);
        assert_eq!(im(b"*", &Validators::default()), Outcome::Unchanged);
        assert_eq!(
            im(ETAG, &Validators::default()),
            Outcome::PreconditionFailed
        );
    }

    #[test]
    fn if_unmodified_since() {
        let check_iums = |value: &[u8], validators: &Validators<'_>| {
            let conditions = Conditions {
                if_unmodified_since: Some(value),
                ..Conditions::default()
            };
            check(&conditions, validators, IfModifiedSince::Exact)
        };
        let file = file();
        assert_eq!(check_iums(MODIFIED_TEXT, &file), Outcome::Unchanged);
        assert_eq!(check_iums(LATER_TEXT, &file), Outcome::Unchanged);
        assert_eq!(check_iums(EARLIER_TEXT, &file), Outcome::PreconditionFailed);
        assert_eq!(check_iums(b"garbage", &file), Outcome::PreconditionFailed);
        assert_eq!(
            check_iums(LATER_TEXT, &Validators::default()),
            Outcome::PreconditionFailed
        );
    }

    #[test]
    fn preconditions_come_first_and_every_validator_must_agree() {
        let file = file();
        // A failed If-Match wins over a matching If-None-Match.
        let conditions = Conditions {
            if_match: Some(b"\"foo\""),
            if_none_match: Some(ETAG),
            ..Conditions::default()
        };
        assert_eq!(
            check(&conditions, &file, IfModifiedSince::Exact),
            Outcome::PreconditionFailed
        );
        // If-Unmodified-Since is checked before If-Match.
        let conditions = Conditions {
            if_unmodified_since: Some(EARLIER_TEXT),
            if_match: Some(ETAG),
            ..Conditions::default()
        };
        assert_eq!(
            check(&conditions, &file, IfModifiedSince::Exact),
            Outcome::PreconditionFailed
        );
        // Both If-Modified-Since and If-None-Match must say "not modified".
        let both = |since: &'static [u8], list: &'static [u8]| Conditions {
            if_modified_since: Some(since),
            if_none_match: Some(list),
            ..Conditions::default()
        };
        let exact = IfModifiedSince::Exact;
        assert_eq!(
            check(&both(MODIFIED_TEXT, ETAG), &file, exact),
            Outcome::NotModified
        );
        assert_eq!(
            check(&both(EARLIER_TEXT, ETAG), &file, exact),
            Outcome::Unchanged
        );
        assert_eq!(
            check(&both(MODIFIED_TEXT, b"\"foo\""), &file, exact),
            Outcome::Unchanged
        );
        // A passing If-Match with a matching If-None-Match is a 304.
        let conditions = Conditions {
            if_match: Some(ETAG),
            if_none_match: Some(ETAG),
            ..Conditions::default()
        };
        assert_eq!(check(&conditions, &file, exact), Outcome::NotModified);
    }
}
