//! A request head that came as fields on a stream of a framed connection (HTTP/2,
//! HTTP/3) made into a [`Request`]: an HTTP/1.1 head built from the fields and read by
//! the HTTP/1 parser with the server's rules, its protocol then written as the stream's
//! (`HTTP/2.0`, `HTTP/3.0`). One implementation for both protocols, whose heads follow
//! the same rules (RFC 9114 §4.3 takes RFC 9113's).

use http2::request::RequestHead;
use logging::Level;

use crate::kernel::conf::{AddressConf, Server};
use crate::kernel::request::{ConnectionInfo, Request};
use crate::kernel::worker::HttpWorker;

/// Logs a refused head at `info`, as nginx logs it, in the address's default server's
/// log.
pub(crate) fn log_malformed(
    worker: &HttpWorker,
    info: &ConnectionInfo,
    address: &AddressConf,
    message: &str,
) {
    let conf = worker.conf();
    let request = Request {
        location: Some(conf.server(address.default_server).location),
        ..Request::default()
    };
    crate::kernel::request_log::log(
        worker,
        info,
        &request,
        Level::Info,
        format_args!("{message}"),
    );
}

/// What a framed connection's stream brings to [`read_head`]: its protocol's words, and
/// whether the server the host names may be served over it.
pub(crate) struct StreamProtocol<'a> {
    /// `HTTP/2.0` or `HTTP/3.0`: `$server_protocol`, and what `$http2`/`$http3` look at.
    pub(crate) protocol: &'static [u8; 8],
    pub(crate) address: &'a AddressConf,
    /// Whether the server chosen by the host speaks this protocol; if not nginx answers
    /// 421.
    pub(crate) serves: fn(&Server, &AddressConf) -> bool,
}

/// Makes a stream's head into `request` with the default server's rules, chooses the
/// server by `Host`, and runs realip's post-read step. `Err` is the status to answer.
pub(crate) fn read_head(
    worker: &HttpWorker,
    stream: &StreamProtocol<'_>,
    info: &ConnectionInfo,
    request: &mut Request<'_>,
    head: &RequestHead,
    body: bool,
) -> Result<(), u16> {
    let conf = worker.conf();
    let core = &conf.server(stream.address.default_server).core;
    let limits = core.head_limits();
    let (fields, added) = request_fields(head, body);
    let parts = http1::request::assemble::Parts {
        method: head.method(),
        path: head.path().unwrap_or(b"*"),
        protocol: stream.protocol,
    };
    http1::request::assemble::assemble(
        parts,
        fields,
        usize::from(added),
        &limits,
        &mut request.head_bytes,
        &mut request.head,
    )
    .map_err(|error| error.status())?;
    http1::request::analyze(&request.head_bytes, &request.head, &mut request.info)
        .map_err(|error| error.status())?;
    // No tunnel over a stream of HTTP/2 or HTTP/3: CONNECT is 405 there, as in nginx.
    http1::request::check_connect(
        &request.head,
        &request.info,
        http1::request::ConnectAllowed::No,
    )
    .map_err(|error| error.status())?;
    // A body without `content-length` is read to the stream's end, as nginx reads it
    // (chunked, in its terms).
    if body && request.info.framing == http1::request::BodyFraming::None {
        request.info.framing = http1::request::BodyFraming::Chunked;
    }
    let server = crate::kernel::find::select_server(worker, stream.address, request);
    request.server = Some(server);
    // TLS's own refusals (a host other than SNI's with client certificates: 421).
    if let Some((status, message)) =
        crate::kernel::ssl::refusal(worker, (info, false), server, &request.info.host)
    {
        request.location = Some(conf.server(server).location);
        crate::kernel::request_log::log(
            worker,
            info,
            request,
            Level::Info,
            format_args!("{message}"),
        );
        return Err(status);
    }
    if !(stream.serves)(conf.server(server), stream.address) {
        // The host names a server without this protocol: nginx answers 421.
        request.location = Some(conf.server(server).location);
        let message = "client attempted to request the server name different from the one \
                       that was negotiated";
        crate::kernel::request_log::log(
            worker,
            info,
            request,
            Level::Info,
            format_args!("{message}"),
        );
        return Err(421);
    }
    crate::modules::realip::post_read(worker, server, info, request);
    request.uri.extend_from_slice(&request.head.uri);
    if let Some(args) = request.info.target.args.clone() {
        request.args.extend_from_slice(&request.head_bytes[args]);
    }
    Ok(())
}

/// Why nginx refuses a head with 400 before it becomes a request, in its words: a
/// `host` that differs from `:authority`, a `content-length` on a request without a body.
/// (A body that is not its `content-length` fails as it is read.)
pub(crate) fn refusal(head: &RequestHead, body: bool) -> Option<String> {
    if let (Some(authority), Some(host)) = (head.authority(), head.host())
        && !authority.eq_ignore_ascii_case(host)
    {
        return Some("client sent \":authority\" and \"host\" headers that differ".to_owned());
    }
    let declared: u64 = std::str::from_utf8(head.content_length()?)
        .ok()?
        .parse()
        .ok()?;
    (!body && declared > 0).then(|| {
        format!(
            "client prematurely closed stream: only 0 out of {declared} bytes of request body \
             received"
        )
    })
}

/// The fields of the request head: `host` from `:authority` first when the client sent
/// no `host`, then the client's fields, without a `content-length` on a request that has
/// no body (a non-zero one was refused). Also says whether `host` was added.
pub(crate) fn request_fields(
    head: &RequestHead,
    body: bool,
) -> (impl Iterator<Item = (&[u8], &[u8])> + '_, bool) {
    let has_host = head.host().is_some();
    let host = head
        .authority()
        .filter(|_| !has_host)
        .map(|authority| (&b"host"[..], authority));
    let added = host.is_some();
    let fields = head
        .fields()
        .filter(move |field| body || field.name != b"content-length")
        .map(|field| (field.name, field.value));
    (host.into_iter().chain(fields), added)
}

/// A status as its three digits (a status outside 100..=999 is sent as 500).
pub(crate) fn status_digits(status: u16) -> [u8; 3] {
    let status = if (100..1000).contains(&status) {
        status
    } else {
        500
    };
    [
        b'0' + (status / 100) as u8,
        b'0' + (status / 10 % 10) as u8,
        b'0' + (status % 10) as u8,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_becomes_three_digits() {
        assert_eq!(&status_digits(200), b"200");
        assert_eq!(&status_digits(404), b"404");
        assert_eq!(&status_digits(0), b"500");
        assert_eq!(&status_digits(1000), b"500");
    }

    #[test]
    fn the_request_fields_take_host_from_authority() {
        let mut list = http2::hpack::FieldList::new();
        for (name, value) in [
            (&b":method"[..], &b"POST"[..]),
            (b":scheme", b"http"),
            (b":authority", b"example.com"),
            (b":path", b"/a?b"),
            (b"content-length", b"9"),
            (b"x-y", b"z"),
        ] {
            list.push(name, value, false);
        }
        let head = http2::request::parse(list, http2::request::FieldPolicy::default())
            .expect("a valid head");
        let (fields, added) = request_fields(&head, true);
        assert!(added);
        let fields: Vec<(&[u8], &[u8])> = fields.collect();
        let want: Vec<(&[u8], &[u8])> = vec![
            (b"host", b"example.com"),
            (b"content-length", b"9"),
            (b"x-y", b"z"),
        ];
        assert_eq!(fields, want);
        let (mut fields, _) = request_fields(&head, false);
        assert!(fields.all(|(name, _)| name != b"content-length"));
    }
}
