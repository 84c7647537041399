//! The charset module (nginx's ngx_http_charset_filter_module): `charset`, `source_charset`,
//! `override_charset`, `charset_types` and `charset_map`. Its header filter names the
//! charset in `Content-Type` and may recode the body with a `charset_map` table; it runs
//! after the headers filter and before the range filter, as in nginx.

pub mod directives;
pub mod recode;
pub mod settings;

use std::sync::Arc;

use logging::Level;

use crate::kernel::conf::Location;
use crate::kernel::request::{ConnectionInfo, Request};
use crate::kernel::response::{Bytes, ResponseHead};
use crate::kernel::send::body::Body;
use crate::kernel::send::coding::Coding;
use crate::kernel::send::pieces::Pieces;
use crate::kernel::variables::{RequestVariables, Variable};
use crate::kernel::worker::HttpWorker;

pub use recode::Recoder;
pub use settings::{Charset, CharsetConf, CharsetMaps, CharsetName, CharsetTypes, same_name};
pub use settings::{CharsetMap, Table};

/// nginx's default `charset_types`.
const DEFAULT_TYPES: &[&str] = &[
    "text/html",
    "text/xml",
    "text/plain",
    "text/vnd.wap.wml",
    "application/javascript",
    "application/rss+xml",
];

impl Default for CharsetTypes {
    fn default() -> CharsetTypes {
        CharsetTypes {
            any: false,
            types: DEFAULT_TYPES
                .iter()
                .map(|name| name.as_bytes().into())
                .collect(),
        }
    }
}

/// What the header filter decided.
#[derive(Debug)]
pub enum Decision {
    /// Nothing to do (nginx's "declined").
    Unchanged,
    /// Name this charset in `Content-Type`.
    Name(Arc<str>),
    /// Name the charset and recode the body with the table.
    Recode(Arc<str>, Arc<Table>),
    /// No map between the charsets: nginx logs an error and sends the response as it is.
    NoMap { from: String, to: Arc<str> },
}

/// A variable a charset name comes from was not found: nginx ends the request without a
/// response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VariableNotFound;

/// The header filter's decision for a response with this content type and (when the
/// handler knew it apart from the type) charset. `evaluate` gives a variable's value, or
/// `None` when it is not found.
pub fn decide(
    settings: &Charset,
    maps: &CharsetMaps,
    content_type: Option<&[u8]>,
    response_charset: Option<&[u8]>,
    mut evaluate: impl FnMut(&Variable) -> Option<Vec<u8>>,
) -> Result<Decision, VariableNotFound> {
    if content_type.is_none_or(<[u8]>::is_empty) || settings.charset == CharsetName::Off {
        return Ok(Decision::Unchanged);
    }
    match response_charset {
        Some(_) if !settings.override_charset => return Ok(Decision::Unchanged),
        Some(_) => {}
        None => {
            let content_type = content_type.unwrap_or_default();
            if !settings.charset_types.contains(content_type) {
                return Ok(Decision::Unchanged);
            }
        }
    }
    let mut name_of = |name: &CharsetName| -> Result<Option<Arc<str>>, VariableNotFound> {
        Ok(match name {
            CharsetName::Off => None,
            CharsetName::Named(name) => Some(Arc::clone(name)),
            CharsetName::Variable(variable) => {
                let value = evaluate(variable).ok_or(VariableNotFound)?;
                Some(Arc::from(String::from_utf8_lossy(&value)))
            }
        })
    };
    let Some(to) = name_of(&settings.charset)? else {
        return Ok(Decision::Unchanged);
    };
    let from: Arc<str> = match response_charset {
        Some(charset) => Arc::from(String::from_utf8_lossy(charset)),
        None => match name_of(&settings.source_charset)? {
            Some(from) => from,
            None => return Ok(Decision::Name(to)),
        },
    };
    let no_map = |from: Arc<str>, to: Arc<str>| Decision::NoMap {
        from: from.to_string(),
        to,
    };
    let (to_known, from_known) = (maps.knows(&to), maps.knows(&from));
    if !to_known || !from_known {
        // nginx compares its "unknown charset" marks, then the names over the length of
        // the destination's.
        let same =
            to_known == from_known && from.len() >= to.len() && same_name(&from[..to.len()], &to);
        return Ok(if same {
            Decision::Name(to)
        } else {
            no_map(from, to)
        });
    }
    if same_name(&from, &to) {
        return Ok(Decision::Name(to));
    }
    Ok(match maps.table(&from, &to) {
        Some(table) => Decision::Recode(to, table),
        None => no_map(from, to),
    })
}

/// The charset filter: names the charset and, with a `charset_map`, recodes the body.
pub fn filter<'a>(
    worker: &'a HttpWorker,
    connection: &ConnectionInfo,
    request: &mut Request<'a>,
    location: &Location,
    body: Body<'a>,
    coding: &mut Coding,
) -> Result<Body<'a>, VariableNotFound> {
    if let Some(target) = request.response.override_charset.take() {
        return Ok(override_filter(
            worker, connection, request, location, body, &target, coding,
        ));
    }
    let settings = &location.settings.charset;
    if settings.charset == CharsetName::Off {
        return Ok(body);
    }
    // A proxied response's charset is the one its `Content-Type` names (nginx's upstream
    // module sets it apart from the type).
    let proxied = !request.upstream.attempts.is_empty() || request.upstream.cache_status.is_some();
    let named = match (&request.response.charset, &request.response.content_type) {
        (None, Some(content_type)) if proxied => split_charset(content_type.as_slice())
            .map(|(base, charset)| (base.to_vec(), charset.to_vec())),
        _ => None,
    };
    let response = &request.response;
    let (content_type, response_charset) = match &named {
        Some((base, charset)) => (Some(base.as_slice()), Some(charset.as_slice())),
        None => (
            response.content_type.as_ref().map(Bytes::as_slice),
            response.charset.as_ref().map(Bytes::as_slice),
        ),
    };
    let variables = RequestVariables::of(worker, connection, request);
    let decision = decide(
        settings,
        &worker.conf().charset_maps,
        content_type,
        response_charset,
        |variable| {
            let mut value = Vec::new();
            variables.append(variable, &mut value).then_some(value)
        },
    )?;
    // A charset named anew replaces the one the proxied type named.
    if let Some((base, _)) = named
        && matches!(decision, Decision::Name(_) | Decision::Recode(..))
        && !(matches!(decision, Decision::Recode(..)) && encoded(&request.response))
    {
        request.response.content_type = Some(Bytes::Owned(base));
    }
    Ok(match decision {
        Decision::Unchanged => body,
        Decision::Name(name) => {
            name_charset(&mut request.response, &name);
            body
        }
        // An encoded body (gzip) is not recoded, nor named as recoded.
        Decision::Recode(..) if encoded(&request.response) => body,
        Decision::Recode(name, table) => {
            name_charset(&mut request.response, &name);
            recode_body(&mut request.response, body, table, coding)
        }
        Decision::NoMap { from, to } => {
            log_no_map(worker, connection, request, location, &from, &to);
            body
        }
    })
}

/// The response already has a `Content-Encoding`.
fn encoded(response: &ResponseHead<'_>) -> bool {
    response
        .headers
        .iter()
        .any(|(name, _)| name.as_slice().eq_ignore_ascii_case(b"content-encoding"))
}

/// A proxied response's `X-Accel-Charset`: recoded from the charset its `Content-Type`
/// names to the one given, whatever the location's `charset` says, as nginx does.
fn override_filter<'a>(
    worker: &'a HttpWorker,
    connection: &ConnectionInfo,
    request: &mut Request<'a>,
    location: &Location,
    body: Body<'a>,
    target: &[u8],
    coding: &mut Coding,
) -> Body<'a> {
    let Some(content_type) = request.response.content_type.as_ref().map(Bytes::as_slice) else {
        return body;
    };
    let Some((base, source)) = split_charset(content_type) else {
        return body;
    };
    let (base, source) = (base.to_vec(), String::from_utf8_lossy(source).into_owned());
    let to: Arc<str> = Arc::from(String::from_utf8_lossy(target));
    if same_name(&source, &to) {
        return body;
    }
    let maps = &worker.conf().charset_maps;
    let Some(table) = maps.table(&source, &to) else {
        log_no_map(worker, connection, request, location, &source, &to);
        return body;
    };
    request.response.content_type = Some(Bytes::Owned(base));
    name_charset(&mut request.response, &to);
    recode_body(&mut request.response, body, table, coding)
}

/// `text/html; charset=B` as `text/html` and `B` (unquoted); `None` without a charset.
fn split_charset(content_type: &[u8]) -> Option<(&[u8], &[u8])> {
    let lower = content_type.to_ascii_lowercase();
    let at = lower.windows(8).position(|window| window == b"charset=")?;
    let before = &content_type[..at];
    let semicolon = before.iter().rposition(|b| *b == b';')?;
    let value = &content_type[at + 8..];
    let end = value.iter().position(|b| *b == b';').unwrap_or(value.len());
    let value = value[..end].trim_ascii();
    let value = value
        .strip_prefix(b"\"")
        .and_then(|value| value.strip_suffix(b"\""))
        .unwrap_or(value);
    Some((content_type[..semicolon].trim_ascii_end(), value))
}

/// nginx names no charset on a 301 or 302 (old browsers took it for the next page's).
fn name_charset(response: &mut ResponseHead<'_>, name: &str) {
    response.charset = match response.status {
        301 | 302 => None,
        _ => Some(Bytes::Owned(name.as_bytes().to_vec())),
    };
}

/// The body through a recoder; a recoding that may change the length drops
/// `Content-Length`, as nginx does (the response is then chunked or ends with the
/// connection). A streamed body, or one a gunzip decodes first, is recoded among its
/// codings as it goes out.
fn recode_body<'a>(
    response: &mut ResponseHead<'a>,
    body: Body<'a>,
    table: Arc<Table>,
    coding: &mut Coding,
) -> Body<'a> {
    let recoder = Recoder::new(table);
    if recoder.changes_length() {
        response.content_length = None;
    }
    if matches!(body, Body::Upstream(_)) || coding.gunzip.is_some() {
        coding.recoder = Some(Box::new(recoder));
        return body;
    }
    match body {
        Body::Empty => Body::Empty,
        Body::Bytes(bytes) if !recoder.changes_length() => {
            let mut recoder = recoder;
            let mut out = Vec::with_capacity(bytes.len());
            recoder.recode(bytes.as_slice(), &mut out);
            Body::Bytes(Bytes::Owned(out))
        }
        other => {
            let mut pieces = Pieces::from_body(other);
            pieces.recoder = Some(Box::new(recoder));
            Body::Pieces(pieces)
        }
    }
}

/// Writes `TYPE; charset=NAME` into the content type before the head is written (nginx's
/// header filter does it as it writes), so `$sent_http_content_type` sees it too.
pub(crate) fn fold_into_content_type(response: &mut ResponseHead<'_>) {
    let Some(charset) = response.charset.take() else {
        return;
    };
    let Some(content_type) = &response.content_type else {
        return;
    };
    let mut value = content_type.as_slice().to_vec();
    value.extend_from_slice(b"; charset=");
    value.extend_from_slice(charset.as_slice());
    response.content_type = Some(Bytes::Owned(value));
}

fn log_no_map(
    worker: &HttpWorker,
    connection: &ConnectionInfo,
    request: &Request<'_>,
    location: &Location,
    from: &str,
    to: &str,
) {
    let error_log = &location.settings.core.error_log;
    if !error_log.enabled(Level::Error) {
        return;
    }
    let context = request
        .log_context(connection, worker.conf())
        .with_action("sending response to client");
    error_log.write(
        Level::Error,
        &worker.clock.wall(),
        Some(connection.id),
        format_args!("no \"charset_map\" between the charsets \"{from}\" and \"{to}\""),
        Some(&context),
    );
}

/// The charset filter's recoder, as the send path applies it to a body's buffers.
impl crate::kernel::send::pieces::Recode for Recoder {
    fn changes_length(&self) -> bool {
        Recoder::changes_length(self)
    }

    fn recode(&mut self, input: &[u8], out: &mut Vec<u8>) {
        Recoder::recode(self, input, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use recode::MapBuilder;

    fn maps() -> CharsetMaps {
        let mut builder = MapBuilder::new(false);
        builder.line("58", "59").unwrap();
        let mut maps = CharsetMaps::default();
        maps.register("B");
        maps.register("A");
        maps.maps.push(builder.finish("B", "A"));
        maps
    }

    fn decide(
        settings: &Charset,
        maps: &CharsetMaps,
        content_type: Option<&[u8]>,
        response_charset: Option<&[u8]>,
    ) -> Decision {
        super::decide(settings, maps, content_type, response_charset, |_| None)
            .expect("no variables")
    }

    fn settings(charset: &str, source: Option<&str>) -> Charset {
        let named = |name: &str| CharsetName::Named(name.into());
        Charset {
            charset: named(charset),
            source_charset: source.map_or(CharsetName::Off, named),
            override_charset: false,
            charset_types: Arc::new(CharsetTypes::default()),
        }
    }

    #[test]
    fn names_the_charset_of_listed_types() {
        let maps = maps();
        let only_name = settings("utf-8", None);
        assert!(matches!(
            decide(&only_name, &maps, Some(b"text/html"), None),
            Decision::Name(name) if &*name == "utf-8"
        ));
        assert!(matches!(
            decide(&only_name, &maps, Some(b"TEXT/Plain"), None),
            Decision::Name(_)
        ));
        for unlisted in [&b"image/png"[..], b"text/html; charset=koi8-r", b""] {
            assert!(matches!(
                decide(&only_name, &maps, Some(unlisted), None),
                Decision::Unchanged
            ));
        }
        assert!(matches!(
            decide(&only_name, &maps, None, None),
            Decision::Unchanged
        ));
        let off = Charset {
            charset: CharsetName::Off,
            ..only_name
        };
        assert!(matches!(
            decide(&off, &maps, Some(b"text/html"), None),
            Decision::Unchanged
        ));
    }

    #[test]
    fn recodes_with_a_map_either_way() {
        let maps = maps();
        assert!(matches!(
            decide(&settings("A", Some("b")), &maps, Some(b"text/html"), None),
            Decision::Recode(name, _) if &*name == "A"
        ));
        assert!(matches!(
            decide(&settings("B", Some("A")), &maps, Some(b"text/html"), None),
            Decision::Recode(..)
        ));
        assert!(matches!(
            decide(&settings("A", Some("a")), &maps, Some(b"text/html"), None),
            Decision::Name(_)
        ));
    }

    #[test]
    fn a_response_charset_is_kept_unless_overridden() {
        let maps = maps();
        let plain = settings("A", None);
        assert!(matches!(
            decide(&plain, &maps, Some(b"image/png"), Some(b"B")),
            Decision::Unchanged
        ));
        let overriding = Charset {
            override_charset: true,
            ..settings("A", None)
        };
        // The type is not tested when the response has a charset.
        assert!(matches!(
            decide(&overriding, &maps, Some(b"image/png"), Some(b"B")),
            Decision::Recode(..)
        ));
        assert!(matches!(
            decide(&overriding, &maps, Some(b"text/html"), Some(b"koi8-r")),
            Decision::NoMap { from, .. } if from == "koi8-r"
        ));
    }

    #[test]
    fn names_from_variables_may_be_unknown() {
        let maps = maps();
        let variable = |name: &str| CharsetName::Variable(Variable::Arg(name.as_bytes().into()));
        let from_args = Charset {
            charset: variable("c"),
            source_charset: variable("s"),
            ..settings("A", None)
        };
        let run = |c: Option<&str>, s: Option<&str>| {
            super::decide(&from_args, &maps, Some(b"text/html"), None, |variable| {
                let Variable::Arg(name) = variable else {
                    return None;
                };
                let value = if &name[..] == b"c" { c } else { s };
                value.map(|value| value.as_bytes().to_vec())
            })
        };
        assert!(
            matches!(run(Some("a"), Some("b")), Ok(Decision::Recode(name, _)) if &*name == "a")
        );
        // Two unknown names agree when the source starts with the destination.
        assert!(matches!(run(Some("zz"), Some("zzz")), Ok(Decision::Name(name)) if &*name == "zz"));
        assert!(matches!(
            run(Some("zzz"), Some("zz")),
            Ok(Decision::NoMap { .. })
        ));
        assert!(matches!(
            run(Some("A"), Some("zz")),
            Ok(Decision::NoMap { .. })
        ));
        assert!(matches!(
            run(Some(""), Some("B")),
            Ok(Decision::NoMap { .. })
        ));
        assert_eq!(run(Some("A"), None).err(), Some(VariableNotFound));
        assert_eq!(run(None, Some("B")).err(), Some(VariableNotFound));
    }

    #[test]
    fn load_check_wants_a_map() {
        let mut maps = maps();
        assert!(maps.resolve_location(&mut settings("A", Some("B"))).is_ok());
        assert!(maps.resolve_location(&mut settings("A", Some("a"))).is_ok());
        assert!(maps.resolve_location(&mut settings("A", None)).is_ok());
        // Names take the spelling of the map.
        let mut lower = settings("a", Some("b"));
        maps.resolve_location(&mut lower).unwrap();
        assert_eq!(lower.charset, CharsetName::Named("A".into()));
        assert_eq!(lower.source_charset, CharsetName::Named("B".into()));
        let error = maps
            .resolve_location(&mut settings("utf-8", Some("koi8-r")))
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "no \"charset_map\" between the charsets \"koi8-r\" and \"utf-8\""
        );
    }

    #[test]
    fn fold_writes_type_and_charset() {
        let mut response = ResponseHead {
            content_type: Some(Bytes::Borrowed(b"text/html")),
            charset: Some(Bytes::Borrowed(b"A")),
            ..ResponseHead::default()
        };
        fold_into_content_type(&mut response);
        assert_eq!(
            response.content_type.as_ref().map(Bytes::as_slice),
            Some(&b"text/html; charset=A"[..])
        );
        assert!(response.charset.is_none());
    }
}
