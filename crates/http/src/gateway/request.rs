//! The request a gateway sends: the module's params evaluated, the client's fields as
//! `HTTP_*` params, framed by the protocol (FastCGI's BEGIN_REQUEST and PARAMS records,
//! uwsgi's packet, SCGI's netstring). The body follows: in STDIN records for FastCGI
//! (written as it is sent, [`crate::proxy::exchange`]), raw for the others.

use std::borrow::Cow;

use cgi::RequestError;
use cgi::fastcgi::{KeepConn, RequestEncoder};

use crate::conf::Location;
use crate::gateway::{Gateway, Protocol};
use crate::proxy::request::{CacheFields, HeadInput};
use crate::request::{ConnectionInfo, Request};
use crate::variables::evaluate::render;
use crate::worker::HttpWorker;

/// The FastCGI request id: one request per connection at a time, as nginx sends.
pub const FASTCGI_REQUEST_ID: u16 = 1;

/// The client's fields a request that may fill the cache does not pass on; the entry's
/// validators take the place of the conditional ones.
const CACHE_CLEARED: &[&[u8]] = &[
    b"if-modified-since",
    b"if-unmodified-since",
    b"if-none-match",
    b"if-match",
    b"range",
    b"if-range",
];

/// The encoder of a location's FastCGI requests.
pub fn fastcgi_encoder(gateway: &Gateway) -> RequestEncoder {
    RequestEncoder::new(
        FASTCGI_REQUEST_ID,
        if gateway.keep_conn {
            KeepConn::Keep
        } else {
            KeepConn::Close
        },
    )
}

/// Writes the start of the request, everything before the body, into `out`; a request
/// the protocol cannot carry is logged (`alert`, as nginx logs it) and ends with 500.
pub(crate) fn write_request(
    worker: &HttpWorker,
    connection: &ConnectionInfo,
    request: &Request<'_>,
    location: &Location,
    input: &HeadInput<'_>,
    out: &mut Vec<u8>,
) -> Result<(), u16> {
    encode(worker, connection, request, location, input, out).map_err(|error| {
        let level = logging::Level::Alert;
        crate::request_log::log(worker, connection, request, level, format_args!("{error}"));
        500
    })
}

fn encode(
    worker: &HttpWorker,
    connection: &ConnectionInfo,
    request: &Request<'_>,
    location: &Location,
    input: &HeadInput<'_>,
    out: &mut Vec<u8>,
) -> Result<(), RequestError> {
    let protocol = location.settings.proxy.protocol;
    let pairs = params(worker, connection, request, location, input.cache.as_ref());
    let pairs = pairs.iter().map(|(name, value)| (&**name, &**value));
    match protocol {
        Protocol::Fastcgi | Protocol::Http => {
            let encoder = fastcgi_encoder(&location.settings.gateway);
            encoder.begin(out);
            encoder.params(out, pairs)
        }
        Protocol::Uwsgi => {
            let gateway = &location.settings.gateway;
            let modifiers = cgi::uwsgi::Modifiers {
                modifier1: gateway.modifier1,
                modifier2: gateway.modifier2,
            };
            cgi::uwsgi::encode_request(out, modifiers, pairs)
        }
        Protocol::Scgi => cgi::scgi::encode_request(out, input.body_len.unwrap_or(0), pairs),
    }
}

type Pair<'r> = (Cow<'r, [u8]>, Cow<'r, [u8]>);

/// The params in the order they are sent: the configuration's, then the client's fields
/// as `HTTP_NAME` (unless a param of that name was set), then the cache's validators.
fn params<'r>(
    worker: &HttpWorker,
    connection: &ConnectionInfo,
    request: &'r Request<'_>,
    location: &'r Location,
    cache: Option<&CacheFields>,
) -> Vec<Pair<'r>> {
    let gateway = &location.settings.gateway;
    let mut pairs: Vec<Pair<'r>> = Vec::with_capacity(gateway.params.len() + 16);
    for param in gateway.params.iter() {
        let value: Cow<'r, [u8]> = match param.value.as_literal() {
            Some(literal) => Cow::Borrowed(literal),
            None => Cow::Owned(render(worker, connection, request, &param.value)),
        };
        if param.if_not_empty && value.is_empty() {
            continue;
        }
        pairs.push((Cow::Borrowed(&param.name), value));
    }
    let set = |name: &[u8]| gateway.params.iter().any(|param| &*param.name == name);
    if location.settings.proxy.pass_request_headers {
        let first_field = pairs.len();
        for header in &request.head.headers {
            let (Some(name), Some(value)) = (
                request.head_bytes.get(header.name.clone()),
                request.head_bytes.get(header.value.clone()),
            ) else {
                continue;
            };
            if cache.is_some()
                && CACHE_CLEARED
                    .iter()
                    .any(|cleared| cleared.eq_ignore_ascii_case(name))
            {
                continue;
            }
            let param = http_name(name);
            if set(&param) {
                continue;
            }
            // Fields of one name go as one param: `Cookie` values joined by `; `, the
            // others' by `, ` (RFC 9110 §5.3).
            if let Some((_, joined)) = pairs[first_field..]
                .iter_mut()
                .find(|(existing, _)| **existing == *param)
            {
                let joined = joined.to_mut();
                joined.extend_from_slice(if name.eq_ignore_ascii_case(b"cookie") {
                    b"; "
                } else {
                    b", "
                });
                joined.extend_from_slice(value);
                continue;
            }
            pairs.push((Cow::Owned(param), Cow::Borrowed(value)));
        }
    }
    if let Some(cache) = cache {
        if let Some(time) = cache.if_modified_since
            && !set(b"HTTP_IF_MODIFIED_SINCE")
        {
            let mut value = Vec::new();
            http1::response::write_http_date(&mut value, time);
            pairs.push((Cow::Borrowed(b"HTTP_IF_MODIFIED_SINCE"), Cow::Owned(value)));
        }
        if let Some(etag) = &cache.if_none_match
            && !set(b"HTTP_IF_NONE_MATCH")
        {
            pairs.push((
                Cow::Borrowed(b"HTTP_IF_NONE_MATCH"),
                Cow::Owned(etag.clone()),
            ));
        }
    }
    pairs
}

/// `HTTP_` and the field's name in upper case with `-` as `_` (RFC 3875 §4.1.18).
pub fn http_name(name: &[u8]) -> Vec<u8> {
    let mut param = Vec::with_capacity(5 + name.len());
    param.extend_from_slice(b"HTTP_");
    param.extend(name.iter().map(|&byte| match byte {
        b'-' => b'_',
        other => other.to_ascii_uppercase(),
    }));
    param
}

#[cfg(test)]
mod tests {
    use super::http_name;

    #[test]
    fn field_names_become_cgi_variables() {
        assert_eq!(http_name(b"Accept-Encoding"), b"HTTP_ACCEPT_ENCODING");
        assert_eq!(http_name(b"x-real-ip"), b"HTTP_X_REAL_IP");
        assert_eq!(http_name(b"Host"), b"HTTP_HOST");
    }
}
