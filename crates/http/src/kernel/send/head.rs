//! nginx's header filter: the status and header fields in nginx's order, the `add_header`
//! fields, and the trailer section `add_trailer` gives a response. The filter writes to a
//! [`HeadWriter`]: HTTP/1 text for an HTTP/1 connection, a [`FieldList`] that HTTP/2
//! encodes (nothing is written as text and read back).

use logging::time::push_number;

use crate::kernel::conf::Location;
use crate::kernel::core::{CoreLocation, ServerTokens};
use crate::kernel::request::{ConnectionInfo, Request};
use crate::kernel::response::{FieldList, ResponseHead};
use crate::kernel::send::framing::{Framing, push_last_chunk};
use crate::kernel::special;
use crate::kernel::variables::RequestVariables;
use crate::kernel::worker::HttpWorker;
use crate::modules::headers::settings::{AddHeader, status_takes_added_headers};

/// Where the header filter writes a head: each protocol's own form of it.
pub(crate) trait HeadWriter {
    /// Whether the fields of an HTTP/1 connection (`Connection`, `Keep-Alive`,
    /// `Transfer-Encoding`) belong in this head.
    const CONNECTION_FIELDS: bool;
    /// The status; `line` is a proxied server's own `NNN Reason`, kept where the protocol
    /// has a reason phrase.
    fn status(&mut self, status: u16, line: Option<&[u8]>);
    /// A field whose value `value` appends.
    fn field_with(&mut self, name: &[u8], value: impl FnOnce(&mut Vec<u8>));
    #[inline]
    fn field(&mut self, name: &[u8], value: &[u8]) {
        self.field_with(name, |out| out.extend_from_slice(value));
    }
    /// A field whose whole HTTP/1 line (`Name: value\r\n`) is known in advance: HTTP/1
    /// copies the line in one piece.
    fn field_line(&mut self, _line: &'static [u8], name: &'static [u8], value: &'static [u8]) {
        self.field(name, value);
    }
    /// The head is complete.
    fn end(&mut self) {}
}

/// An HTTP/1 head: the status line and field lines as text, ended by the empty line.
pub(crate) struct Text<'o>(pub &'o mut Vec<u8>);

impl HeadWriter for Text<'_> {
    const CONNECTION_FIELDS: bool = true;

    fn status(&mut self, status: u16, line: Option<&[u8]>) {
        match line {
            Some(line) => {
                self.0.extend_from_slice(b"HTTP/1.1 ");
                self.0.extend_from_slice(line);
                self.0.extend_from_slice(b"\r\n");
            }
            None => http1::response::write_status_line(self.0, status),
        }
    }

    fn field_with(&mut self, name: &[u8], value: impl FnOnce(&mut Vec<u8>)) {
        self.0.extend_from_slice(name);
        self.0.extend_from_slice(b": ");
        value(self.0);
        self.0.extend_from_slice(b"\r\n");
    }

    fn field(&mut self, name: &[u8], value: &[u8]) {
        http1::response::write_header(self.0, name, value);
    }

    fn field_line(&mut self, line: &'static [u8], _name: &'static [u8], _value: &'static [u8]) {
        self.0.extend_from_slice(line);
    }

    fn end(&mut self) {
        self.0.extend_from_slice(b"\r\n");
    }
}

impl HeadWriter for FieldList {
    const CONNECTION_FIELDS: bool = false;

    fn status(&mut self, status: u16, _line: Option<&[u8]>) {
        self.status = status;
    }

    #[inline]
    fn field_with(&mut self, name: &[u8], value: impl FnOnce(&mut Vec<u8>)) {
        self.push_with(name, value);
    }
}

fn server_header(tokens: ServerTokens) -> &'static [u8] {
    special::server_signature(tokens).as_bytes()
}

/// Writes the response head.
pub(crate) fn write_head<W: HeadWriter>(
    worker: &HttpWorker,
    connection: &ConnectionInfo,
    request: &Request<'_>,
    location: &Location,
    framing: Framing,
    now_seconds: i64,
    out: &mut W,
) {
    let core = &location.settings.core;
    let response = &request.response;
    let status = special::status_on_wire(response.status);
    let no_content = status == 204;
    // A proxied server's own status line is kept (its reason phrase included) while the
    // status is still the one it sent.
    let own_line = response
        .status_line
        .as_deref()
        .filter(|line| line.get(..3) == Some(status_digits(status).as_slice()));
    out.status(status, own_line);
    // An empty value is a proxied response's own absence of the field, passed on
    // (`proxy_pass_header Server` with no `Server` from the upstream).
    match &response.server {
        Some(server) if server.is_empty() => {}
        Some(server) => out.field(b"Server", server),
        None => match core.server_tokens {
            ServerTokens::On => out.field_line(
                concat!("Server: portico/", env!("CARGO_PKG_VERSION"), "\r\n").as_bytes(),
                b"Server",
                server_header(ServerTokens::On),
            ),
            ServerTokens::Off => out.field_line(b"Server: portico\r\n", b"Server", b"portico"),
            tokens => out.field(b"Server", server_header(tokens)),
        },
    }
    match &response.date {
        Some(date) if date.is_empty() => {}
        Some(date) => out.field(b"Date", date),
        None => out.field_with(b"Date", |out| worker.write_date(now_seconds, out)),
    }
    if let Some(content_type) = response.content_type.as_ref().filter(|_| !no_content) {
        out.field(b"Content-Type", content_type.as_slice());
    }
    if let Some(length) = response.content_length.filter(|_| !no_content) {
        out.field_with(b"Content-Length", |out| push_number(out, length as i64, 1));
    }
    // nginx's header filter sends `Last-Modified` only with 200, 206 and 304.
    let dated = matches!(status, 200 | 206 | 304);
    if let Some(modified) = response.last_modified.filter(|_| dated) {
        out.field_with(b"Last-Modified", |out| {
            http1::response::write_http_date(out, modified);
        });
    }
    let relative_location = response
        .location
        .as_ref()
        .filter(|location| location.value.starts_with(b"/") && core.absolute_redirect);
    if let Some(location) = relative_location {
        out.field_with(b"Location", |out| {
            write_absolute_prefix(
                request,
                connection,
                location_server_name(worker, request),
                core,
                out,
            );
            out.extend_from_slice(&location.value);
        });
    }
    if W::CONNECTION_FIELDS {
        if framing == Framing::Chunked {
            out.field_line(
                b"Transfer-Encoding: chunked\r\n",
                b"Transfer-Encoding",
                b"chunked",
            );
        }
        if request.response.status == 101 {
            out.field_line(b"Connection: upgrade\r\n", b"Connection", b"upgrade");
        } else if request.keepalive {
            out.field_line(b"Connection: keep-alive\r\n", b"Connection", b"keep-alive");
        } else {
            out.field_line(b"Connection: close\r\n", b"Connection", b"close");
        }
        if request.keepalive
            && let Some(header) = core.keepalive_timeout.header
        {
            out.field_with(b"Keep-Alive", |out| {
                out.extend_from_slice(b"timeout=");
                push_number(out, header.as_secs() as i64, 1);
            });
        }
    }
    if let Some(location) = response
        .location
        .as_ref()
        .filter(|_| relative_location.is_none())
    {
        out.field(b"Location", &location.value);
    }
    if let Some(etag) = response
        .etag
        .as_ref()
        .filter(|_| response.etag_added_at.is_none())
    {
        out.field(b"ETag", etag);
    }
    // A passed `Upgrade` (a 426's, a 200's offer) is HTTP/1's own: the HTTP/2 head leaves
    // it out with the other connection-specific fields (`FieldList::push_with`).
    for (name, value) in &response.headers {
        out.field(name.as_slice(), value.as_slice());
    }
    let added = &location.settings.headers.add_header;
    write_added_fields(worker, connection, request, added, Fields::Headers, out);
    if let Some(content_range) = &response.content_range {
        out.field(b"Content-Range", content_range);
    }
    if response.accept_ranges {
        out.field_line(b"Accept-Ranges: bytes\r\n", b"Accept-Ranges", b"bytes");
    }
    out.end();
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

/// `http://HOST[:PORT]` for a relative `Location` (`https://` over TLS and QUIC, whose
/// default port is 443), as nginx's header filter builds it.
fn write_absolute_prefix(
    request: &Request<'_>,
    connection: &ConnectionInfo,
    server_name: &[u8],
    core: &CoreLocation,
    out: &mut Vec<u8>,
) {
    let (scheme, default_port): (&[u8], u16) = match connection.tls {
        Some(_) => (b"https://", 443),
        None => (b"http://", 80),
    };
    out.extend_from_slice(scheme);
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
        && local.port() != default_port
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
fn write_added_fields<W: HeadWriter>(
    worker: &HttpWorker,
    connection: &ConnectionInfo,
    request: &Request<'_>,
    fields: &[AddHeader],
    kind: Fields,
    out: &mut W,
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
        out.field(&field.name, &value);
    }
}

/// An `add_header ETag` or `Last-Modified` is written only where it added the field (see
/// `filters::own_fields`); `true` when `field` is one of those.
fn write_own_field<W: HeadWriter>(
    response: &ResponseHead<'_>,
    index: usize,
    field: &AddHeader,
    out: &mut W,
) -> bool {
    match OwnField::of(&field.name) {
        OwnField::None => false,
        OwnField::ETag => {
            if let Some(etag) = &response.etag
                && response.etag_added_at == Some(index)
            {
                out.field(&field.name, etag);
            }
            true
        }
        OwnField::LastModified => {
            if let Some((at, value)) = &response.last_modified_added
                && *at == index
            {
                out.field(&field.name, value);
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
    write_trailers(
        worker,
        connection,
        request,
        location,
        &mut Text(&mut fields),
    );
    push_last_chunk(out, &fields);
}

/// Writes the trailer section: the upstream's trailers, then the `add_trailer` fields.
pub(crate) fn write_trailers<W: HeadWriter>(
    worker: &HttpWorker,
    connection: &ConnectionInfo,
    request: &Request<'_>,
    location: &Location,
    out: &mut W,
) {
    for (name, value) in &request.response.trailers {
        out.field(name, value);
    }
    let trailers = &location.settings.headers.add_trailer;
    write_added_fields(worker, connection, request, trailers, Fields::Trailers, out);
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
