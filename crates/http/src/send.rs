//! Sending a response: the keep-alive decision, the header filter, the body, and the
//! access-log line at the end.

use std::io;
use std::time::Instant;

use http1::Version;
use http1::request::ConnectionOption;
use logging::time::push_number;

use crate::conf::Location;
use crate::connection::Connection;
use crate::core::{CoreLocation, ServerTokens};
use crate::headers::status_takes_added_headers;
use crate::request::{ConnectionInfo, Request};
use crate::response::{Body, status_has_body};
use crate::special;
use crate::static_files::handler::read_chunk;
use crate::variables::RequestVariables;
use crate::worker::HttpWorker;

/// Bodies up to this size are copied behind the head and sent with it in one `write`.
const INLINE_BODY_BYTES_MAX: usize = 16 * 1024;

/// File bodies are read from the pool in chunks of this size.
const FILE_CHUNK_BYTES: usize = 256 * 1024;

fn location<'a>(worker: &'a HttpWorker, request: &Request<'_>) -> &'a Location {
    let conf = worker.conf();
    let id = request
        .location
        .or_else(|| request.server.map(|server| conf.server(server).location))
        .unwrap_or(crate::conf::LocationId(0));
    conf.location(id)
}

/// Whether the connection may serve another request after this one, as nginx decides.
pub fn keepalive_allowed(
    worker: &HttpWorker,
    connection: &ConnectionInfo,
    request: &Request<'_>,
) -> bool {
    let wanted = match request.info.connection {
        ConnectionOption::Close => false,
        ConnectionOption::KeepAlive => request.head.version >= Version::Http10,
        ConnectionOption::Default | ConnectionOption::Upgrade => {
            request.head.version == Version::Http11
        }
    };
    if !wanted || !worker.is_running() {
        return false;
    }
    let core = &location(worker, request).settings.core;
    let browser = request.info.browser;
    if core.keepalive_timeout.timeout.is_zero()
        || connection.requests >= core.keepalive_requests
        || request.started.is_some_and(|now| {
            now.saturating_duration_since(connection.accepted) > core.keepalive_time
        })
        || (core.keepalive_disable.msie6
            && browser.msie6
            && request.head.method == http1::Method::Post)
        || (core.keepalive_disable.safari && browser.safari)
    {
        return false;
    }
    !(request.response.special && special::status_closes_connection(request.response.status))
}

/// Sends the head and body. `Err` means the connection is broken or timed out.
pub async fn send_response<'a>(
    worker: &'a HttpWorker,
    connection: &mut Connection,
    request: &mut Request<'a>,
    body: Body<'a>,
) -> io::Result<()> {
    let location = location(worker, request);
    let core = &location.settings.core;
    let http09 = request.head.version == Version::Http09;
    let header_only = request.is_head() || !status_has_body(request.response.status);
    let mut out = std::mem::take(&mut connection.out);
    out.clear();
    if !http09 {
        if request.response.content_length.is_none() && status_has_body(request.response.status) {
            request.response.content_length = body.len();
        }
        write_head(worker, &connection.info, request, location, &mut out);
        request.sent.header_bytes = out.len() as u64;
    }
    let result = match body {
        _ if header_only => connection.write_all_timed(&out, core.send_timeout).await,
        Body::Empty => connection.write_all_timed(&out, core.send_timeout).await,
        Body::Bytes(bytes) if bytes.len() <= INLINE_BODY_BYTES_MAX => {
            out.extend_from_slice(bytes.as_slice());
            request.sent.body_bytes = bytes.len() as u64;
            connection.write_all_timed(&out, core.send_timeout).await
        }
        Body::Bytes(bytes) => {
            connection.write_all_timed(&out, core.send_timeout).await?;
            request.sent.body_bytes = bytes.len() as u64;
            connection
                .write_all_timed(bytes.as_slice(), core.send_timeout)
                .await
        }
        Body::File(file) => {
            connection.write_all_timed(&out, core.send_timeout).await?;
            send_file(worker, connection, request, file, core).await
        }
    };
    connection.out = out;
    if result.is_ok() {
        request.completed = true;
    }
    result
}

async fn send_file(
    worker: &HttpWorker,
    connection: &Connection,
    request: &mut Request<'_>,
    file: crate::static_files::handler::FileBody,
    core: &CoreLocation,
) -> io::Result<()> {
    let mut offset = file.offset;
    let end = file.offset + file.len;
    while offset < end {
        let len = ((end - offset) as usize).min(FILE_CHUNK_BYTES);
        let handle = std::sync::Arc::clone(&file.file);
        let completion = worker
            .generation
            .file_pool
            .submit(move || read_chunk(&handle, offset, len))
            .map_err(|_| io::Error::other("thread pool queue overflow"))?;
        let chunk = completion
            .await
            .map_err(|_| io::Error::other("thread pool task lost"))??;
        if chunk.is_empty() {
            // The file shrank while being sent: the promised length cannot be met.
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        connection
            .write_all_timed(&chunk, core.send_timeout)
            .await?;
        offset += chunk.len() as u64;
        request.sent.body_bytes += chunk.len() as u64;
    }
    Ok(())
}

fn server_header(tokens: ServerTokens) -> &'static [u8] {
    special::server_signature(tokens).as_bytes()
}

/// nginx's header filter.
fn write_head(
    worker: &HttpWorker,
    connection: &ConnectionInfo,
    request: &Request<'_>,
    location: &Location,
    out: &mut Vec<u8>,
) {
    let core = &location.settings.core;
    let response = &request.response;
    let status = special::status_on_wire(response.status);
    let no_content = status == 204;
    http1::response::write_status_line(out, status);
    out.extend_from_slice(b"Server: ");
    out.extend_from_slice(server_header(core.server_tokens));
    out.extend_from_slice(b"\r\nDate: ");
    worker.write_date(worker.clock.wall().unix_seconds, out);
    out.extend_from_slice(b"\r\n");
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
    if let Some(modified) = response.last_modified.filter(|_| !no_content) {
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
    out.extend_from_slice(if request.keepalive {
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
    if let Some(etag) = &response.etag {
        http1::response::write_header(out, b"ETag", etag);
    }
    for (name, value) in &response.headers {
        http1::response::write_header(out, name.as_slice(), value.as_slice());
    }
    write_added_headers(worker, connection, request, location, out);
    if response.accept_ranges {
        out.extend_from_slice(b"Accept-Ranges: bytes\r\n");
    }
    out.extend_from_slice(b"\r\n");
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

/// `add_header`: for the statuses nginx allows (or `always`), skipping empty values.
fn write_added_headers(
    worker: &HttpWorker,
    connection: &ConnectionInfo,
    request: &Request<'_>,
    location: &Location,
    out: &mut Vec<u8>,
) {
    let headers = &location.settings.headers.add_header;
    if headers.is_empty() {
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
    for header in headers {
        if !header.always && !status_ok {
            continue;
        }
        value.clear();
        header.value.evaluate(&mut variables, &mut value);
        if value.is_empty() {
            continue;
        }
        http1::response::write_header(out, &header.name, &value);
    }
}

/// The log phase: the access-log line(s) of the request's location.
pub fn log_request(worker: &HttpWorker, connection: &Connection, request: &Request<'_>) {
    let location = location(worker, request);
    let settings = &location.settings.access_log;
    let targets = &settings.access_log;
    if targets.is_empty() || settings.access_log_off {
        return;
    }
    let now = worker.clock.now();
    let variables = RequestVariables::new(
        request,
        &connection.info,
        worker.conf(),
        now,
        &worker.generation.hostname,
    );
    worker
        .access_logs
        .borrow_mut()
        .log(targets, &variables, Instant::now());
}
