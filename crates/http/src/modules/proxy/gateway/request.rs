//! The request a gateway sends: the module's params evaluated, the client's fields as
//! `HTTP_*` params, framed by the protocol (FastCGI's BEGIN_REQUEST and PARAMS records,
//! uwsgi's packet, SCGI's netstring). The body follows: in STDIN records for FastCGI
//! (written as it is sent, `proxy/exchange.rs`), raw for the others.

use std::ops::Range;

use cgi::RequestError;
use cgi::fastcgi::{KeepConn, RequestEncoder};

use crate::kernel::conf::Location;
use crate::kernel::request::{ConnectionInfo, Request};
use crate::kernel::variables::evaluate::RequestVariables;
use crate::kernel::worker::HttpWorker;
use crate::modules::proxy::exchange::{PooledBuffer, take_buffer};
use crate::modules::proxy::gateway::{Gateway, Protocol};
use crate::modules::proxy::request::{CACHE_CLEARED_FIELDS, CacheFields, HeadInput};

/// The FastCGI request id: one request per connection at a time, as nginx sends.
pub const FASTCGI_REQUEST_ID: u16 = 1;

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
        crate::kernel::request_log::log(
            worker,
            connection,
            request,
            level,
            format_args!("{error}"),
        );
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
    let params = params(worker, connection, request, location, input.cache.as_ref());
    let pairs = params.iter();
    match protocol {
        // memcached and gRPC write their own requests (`memcached/`, `grpc/`).
        Protocol::Fastcgi
        | Protocol::Http
        | Protocol::Memcached
        | Protocol::Grpc
        | Protocol::Tunnel => {
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

/// A param's name: the configuration's, or made in [`Params::bytes`] (`HTTP_NAME`).
#[derive(Clone)]
enum Name<'r> {
    Config(&'r [u8]),
    Made(Range<usize>),
}

/// The params of one request: their values (and made names) in one buffer, evaluated
/// with one set of request variables, so that a request costs no allocation per param.
struct Params<'r> {
    bytes: PooledBuffer,
    pairs: Vec<(Name<'r>, Range<usize>)>,
}

impl Params<'_> {
    fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
        self.pairs.iter().map(|(name, value)| {
            let name = match name {
                Name::Config(name) => name,
                Name::Made(range) => &self.bytes.0[range.clone()],
            };
            (name, &self.bytes.0[value.clone()])
        })
    }
}

/// The params in the order they are sent: the configuration's, then the client's fields
/// as `HTTP_NAME` (unless a param of that name was set), then the cache's validators.
fn params<'r>(
    worker: &HttpWorker,
    connection: &ConnectionInfo,
    request: &Request<'_>,
    location: &'r Location,
    cache: Option<&CacheFields>,
) -> Params<'r> {
    let gateway = &location.settings.gateway;
    let mut params = Params {
        bytes: PooledBuffer(take_buffer(0)),
        pairs: Vec::with_capacity(gateway.params.len() + 16),
    };
    let mut variables = RequestVariables::of(worker, connection, request);
    let bytes = &mut params.bytes.0;
    for param in gateway.params.iter() {
        let start = bytes.len();
        param.value.evaluate(&mut variables, bytes);
        if param.if_not_empty && bytes.len() == start {
            continue;
        }
        params
            .pairs
            .push((Name::Config(&param.name), start..bytes.len()));
    }
    let set = |name: &[u8]| gateway.params.iter().any(|param| &*param.name == name);
    if location.settings.proxy.pass_request_headers {
        let first_field = params.pairs.len();
        for header in &request.head.headers {
            let (Some(name), Some(value)) = (
                request.head_bytes.get(header.name.clone()),
                request.head_bytes.get(header.value.clone()),
            ) else {
                continue;
            };
            if cache.is_some()
                && CACHE_CLEARED_FIELDS
                    .iter()
                    .any(|cleared| cleared.eq_ignore_ascii_case(name))
            {
                continue;
            }
            let name_start = bytes.len();
            push_http_name(bytes, name);
            let made = name_start..bytes.len();
            if set(&bytes[made.clone()]) {
                bytes.truncate(name_start);
                continue;
            }
            // Fields of one name go as one param: `Cookie` values joined by `; `, the
            // others' by `, ` (RFC 9110 §5.3). The joined value is made anew at the end.
            let earlier = params.pairs[first_field..].iter().position(|(existing, _)| {
                matches!(existing, Name::Made(range) if bytes[range.clone()] == bytes[made.clone()])
            });
            if let Some(index) = earlier {
                bytes.truncate(name_start);
                let pair = &mut params.pairs[first_field + index];
                let start = bytes.len();
                bytes.extend_from_within(pair.1.clone());
                bytes.extend_from_slice(if name.eq_ignore_ascii_case(b"cookie") {
                    b"; "
                } else {
                    b", "
                });
                bytes.extend_from_slice(value);
                pair.1 = start..bytes.len();
                continue;
            }
            let value_start = bytes.len();
            bytes.extend_from_slice(value);
            params
                .pairs
                .push((Name::Made(made), value_start..bytes.len()));
        }
    }
    if let Some(cache) = cache {
        if let Some(time) = cache.if_modified_since
            && !set(b"HTTP_IF_MODIFIED_SINCE")
        {
            let start = bytes.len();
            http1::response::write_http_date(bytes, time);
            params
                .pairs
                .push((Name::Config(b"HTTP_IF_MODIFIED_SINCE"), start..bytes.len()));
        }
        if let Some(etag) = &cache.if_none_match
            && !set(b"HTTP_IF_NONE_MATCH")
        {
            let start = bytes.len();
            bytes.extend_from_slice(etag);
            params
                .pairs
                .push((Name::Config(b"HTTP_IF_NONE_MATCH"), start..bytes.len()));
        }
    }
    params
}

/// Appends `HTTP_` and the field's name in upper case with `-` as `_` (RFC 3875 §4.1.18).
fn push_http_name(out: &mut Vec<u8>, name: &[u8]) {
    out.extend_from_slice(b"HTTP_");
    out.extend(name.iter().map(|&byte| match byte {
        b'-' => b'_',
        other => other.to_ascii_uppercase(),
    }));
}

#[cfg(test)]
mod tests {
    use super::push_http_name;

    #[test]
    fn field_names_become_cgi_variables() {
        for (field, param) in [
            (&b"Accept-Encoding"[..], &b"HTTP_ACCEPT_ENCODING"[..]),
            (b"x-real-ip", b"HTTP_X_REAL_IP"),
            (b"Host", b"HTTP_HOST"),
        ] {
            let mut out = Vec::new();
            push_http_name(&mut out, field);
            assert_eq!(out, param);
        }
    }
}
