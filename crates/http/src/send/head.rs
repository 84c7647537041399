//! nginx's header filter: the status line and header fields in nginx's order, the
//! `add_header` fields, and the trailer section `add_trailer` gives a chunked response.

use logging::time::push_number;

use crate::conf::Location;
use crate::core::{CoreLocation, ServerTokens};
use crate::headers::settings::{AddHeader, status_takes_added_headers};
use crate::request::{ConnectionInfo, Request};
use crate::response::ResponseHead;
use crate::send::framing::{Framing, push_last_chunk};
use crate::special;
use crate::variables::RequestVariables;
use crate::worker::HttpWorker;

fn server_header(tokens: ServerTokens) -> &'static [u8] {
    special::server_signature(tokens).as_bytes()
}

/// Appends the response head.
pub(super) fn write_head(
    worker: &HttpWorker,
    connection: &ConnectionInfo,
    request: &Request<'_>,
    location: &Location,
    framing: Framing,
    now_seconds: i64,
    out: &mut Vec<u8>,
) {
    let core = &location.settings.core;
    let response = &request.response;
    let status = special::status_on_wire(response.status);
    let no_content = status == 204;
    // A proxied server's own status line is kept (its reason phrase included) while the
    // status is still the one it sent.
    match response
        .status_line
        .as_ref()
        .filter(|line| line.get(..3) == Some(status_digits(status).as_slice()))
    {
        Some(line) => {
            out.extend_from_slice(b"HTTP/1.1 ");
            out.extend_from_slice(line);
            out.extend_from_slice(b"\r\n");
        }
        None => http1::response::write_status_line(out, status),
    }
    // An empty value is a proxied response's own absence of the field, passed on
    // (`proxy_pass_header Server` with no `Server` from the upstream).
    match &response.server {
        Some(server) if server.is_empty() => {}
        Some(server) => http1::response::write_header(out, b"Server", server),
        None => {
            out.extend_from_slice(b"Server: ");
            out.extend_from_slice(server_header(core.server_tokens));
            out.extend_from_slice(b"\r\n");
        }
    }
    match &response.date {
        Some(date) if date.is_empty() => {}
        Some(date) => http1::response::write_header(out, b"Date", date),
        None => {
            out.extend_from_slice(b"Date: ");
            worker.write_date(now_seconds, out);
            out.extend_from_slice(b"\r\n");
        }
    }
    if let Some(content_type) = response.content_type.as_ref().filter(|_| !no_content) {
        out.extend_from_slice(b"Content-Type: ");
        out.extend_from_slice(content_type.as_slice());
        out.extend_from_slice(b"\r\n");
    }
    if let Some(length) = response.content_length.filter(|_| !no_content) {
        out.extend_from_slice(b"Content-Length: ");
        push_number(out, length as i64, 1);
        out.extend_from_slice(b"\r\n");
    }
    // nginx's header filter sends `Last-Modified` only with 200, 206 and 304.
    let dated = matches!(status, 200 | 206 | 304);
    if let Some(modified) = response.last_modified.filter(|_| dated) {
        out.extend_from_slice(b"Last-Modified: ");
        http1::response::write_http_date(out, modified);
        out.extend_from_slice(b"\r\n");
    }
    let relative_location = response
        .location
        .as_ref()
        .filter(|location| location.value.starts_with(b"/") && core.absolute_redirect);
    if let Some(location) = relative_location {
        out.extend_from_slice(b"Location: ");
        write_absolute_prefix(
            request,
            connection,
            location_server_name(worker, request),
            core,
            out,
        );
        out.extend_from_slice(&location.value);
        out.extend_from_slice(b"\r\n");
    }
    if framing == Framing::Chunked {
        out.extend_from_slice(b"Transfer-Encoding: chunked\r\n");
    }
    out.extend_from_slice(if request.response.status == 101 {
        b"Connection: upgrade\r\n"
    } else if request.keepalive {
        b"Connection: keep-alive\r\n"
    } else {
        b"Connection: close\r\n"
    });
    if request.keepalive
        && let Some(header) = core.keepalive_timeout.header
    {
        out.extend_from_slice(b"Keep-Alive: timeout=");
        push_number(out, header.as_secs() as i64, 1);
        out.extend_from_slice(b"\r\n");
    }
    if let Some(location) = response
        .location
        .as_ref()
        .filter(|_| relative_location.is_none())
    {
        http1::response::write_header(out, b"Location", &location.value);
    }
    if let Some(etag) = response
        .etag
        .as_ref()
        .filter(|_| response.etag_added_at.is_none())
    {
        http1::response::write_header(out, b"ETag", etag);
    }
    for (name, value) in &response.headers {
        http1::response::write_header(out, name.as_slice(), value.as_slice());
    }
    let added = &location.settings.headers.add_header;
    write_added_fields(worker, connection, request, added, Fields::Headers, out);
    if let Some(content_range) = &response.content_range {
        http1::response::write_header(out, b"Content-Range", content_range);
    }
    if response.accept_ranges {
        out.extend_from_slice(b"Accept-Ranges: bytes\r\n");
    }
    out.extend_from_slice(b"\r\n");
}

fn status_digits(status: u16) -> [u8; 3] {
    [
        b'0' + (status / 100 % 10) as u8,
        b'0' + (status / 10 % 10) as u8,
        b'0' + (status % 10) as u8,
    ]
}

fn location_server_name<'a>(worker: &'a HttpWorker, request: &Request<'_>) -> &'a [u8] {
    match request.server {
        Some(server) => &worker.conf().server(server).name,
        None => b"",
    }
}

/// `http://HOST[:PORT]` for a relative `Location`, as nginx's header filter builds it.
fn write_absolute_prefix(
    request: &Request<'_>,
    connection: &ConnectionInfo,
    server_name: &[u8],
    core: &CoreLocation,
    out: &mut Vec<u8>,
) {
    out.extend_from_slice(b"http://");
    if core.server_name_in_redirect {
        out.extend_from_slice(server_name);
    } else if !request.info.host.is_empty() {
        out.extend_from_slice(&request.info.host);
    } else if let Some(local) = connection.local {
        // No Host: nginx names the address the client connected to.
        out.extend_from_slice(local.ip().to_string().as_bytes());
    }
    if core.port_in_redirect
        && let Some(local) = connection.local
        && local.port() != 80
    {
        out.push(b':');
        push_number(out, local.port().into(), 1);
    }
}

/// Which list `write_added_fields` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fields {
    /// `add_header`: `ETag` and `Last-Modified` were applied to the response already.
    Headers,
    /// `add_trailer`: every field is added as it is.
    Trailers,
}

/// `add_header` (or `add_trailer`) fields: for the statuses nginx allows (or `always`),
/// skipping empty values.
fn write_added_fields(
    worker: &HttpWorker,
    connection: &ConnectionInfo,
    request: &Request<'_>,
    fields: &[AddHeader],
    kind: Fields,
    out: &mut Vec<u8>,
) {
    if fields.is_empty() {
        return;
    }
    let status_ok = status_takes_added_headers(special::status_on_wire(request.response.status));
    let now = worker.clock.now();
    let mut variables = RequestVariables::new(
        request,
        connection,
        worker.conf(),
        now,
        &worker.generation.hostname,
    );
    let mut value = Vec::new();
    for (index, field) in fields.iter().enumerate() {
        if !field.always && !status_ok {
            continue;
        }
        if kind == Fields::Headers && write_own_field(&request.response, index, field, out) {
            continue;
        }
        value.clear();
        field.value.evaluate(&mut variables, &mut value);
        if value.is_empty() {
            continue;
        }
        http1::response::write_header(out, &field.name, &value);
    }
}

/// An `add_header ETag` or `Last-Modified` is written only where it added the field (see
/// `filters::own_fields`); `true` when `field` is one of those.
fn write_own_field(
    response: &ResponseHead<'_>,
    index: usize,
    field: &AddHeader,
    out: &mut Vec<u8>,
) -> bool {
    match OwnField::of(&field.name) {
        OwnField::None => false,
        OwnField::ETag => {
            if let Some(etag) = &response.etag
                && response.etag_added_at == Some(index)
            {
                http1::response::write_header(out, &field.name, etag);
            }
            true
        }
        OwnField::LastModified => {
            if let Some((at, value)) = &response.last_modified_added
                && *at == index
            {
                http1::response::write_header(out, &field.name, value);
            }
            true
        }
    }
}

/// Appends the last chunk with the `add_trailer` fields as its trailer section.
pub(super) fn write_last_chunk(
    worker: &HttpWorker,
    connection: &ConnectionInfo,
    request: &Request<'_>,
    location: &Location,
    out: &mut Vec<u8>,
) {
    let mut fields = Vec::new();
    let trailers = &location.settings.headers.add_trailer;
    write_added_fields(
        worker,
        connection,
        request,
        trailers,
        Fields::Trailers,
        &mut fields,
    );
    push_last_chunk(out, &fields);
}

/// The response fields `add_header` sets rather than adds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OwnField {
    ETag,
    LastModified,
    None,
}

impl OwnField {
    pub fn of(name: &[u8]) -> OwnField {
        if name.eq_ignore_ascii_case(b"etag") {
            OwnField::ETag
        } else if name.eq_ignore_ascii_case(b"last-modified") {
            OwnField::LastModified
        } else {
            OwnField::None
        }
    }
}
