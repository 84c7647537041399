//! The steps between a handler's response and its head on the wire, in nginx's filter
//! order: the not-modified filter, the headers filter (`expires`; `add_header` is written
//! with the head), and the rate limit the response starts with.

use logging::Level;
use logging::time::Timestamp;

use crate::kernel::conf::Location;
use crate::kernel::core::SizeValue;
use crate::kernel::request::{ConnectionInfo, Request};
use crate::kernel::send::body::Body;
use crate::kernel::send::head::OwnField;
use crate::kernel::send::rate::{self, RateLimit};
use crate::kernel::special::{self, Reply};
use crate::kernel::variables::evaluate::render;
use crate::kernel::worker::HttpWorker;
use crate::modules::headers::expires::{self, SendTime};
use crate::modules::headers::settings::{Expires, ExpiresValue};
use crate::modules::headers::status_takes_added_headers;
use crate::modules::not_modified::{self, Conditions, Outcome, Validators};

/// nginx's not-modified filter, for a 200 response: a 304 keeps the head without its
/// content headers and drops the body unread; a 412 becomes its status page.
pub(super) fn not_modified<'a>(
    worker: &'a HttpWorker,
    request: &mut Request<'a>,
    location: &Location,
    body: Body<'a>,
) -> (Body<'a>, Outcome) {
    debug_assert_eq!(request.response.status, 200);
    let known = &request.head.known;
    let conditions = Conditions {
        if_unmodified_since: request.known_header(known.if_unmodified_since),
        if_match: request.known_header(known.if_match),
        if_modified_since: request.known_header(known.if_modified_since),
        if_none_match: request.known_header(known.if_none_match),
    };
    let response = &request.response;
    let validators = Validators {
        last_modified: response.last_modified,
        etag: response.etag.as_deref(),
    };
    let mode = location.settings.core.if_modified_since;
    let outcome = not_modified::check(&conditions, &validators, mode);
    let body = match outcome {
        Outcome::Unchanged => body,
        Outcome::NotModified => {
            let response = &mut request.response;
            response.status = 304;
            response.content_type = None;
            response.content_length = None;
            response.accept_ranges = false;
            // A proxied body being stored is read on into the cache (a 304 has a head
            // only, so nothing of it reaches the client).
            match body {
                Body::Upstream(_) => body,
                _ => Body::Empty,
            }
        }
        Outcome::PreconditionFailed => {
            // nginx's filter would also try an `error_page 412` here; Portico sends its page.
            match special::special_response(worker, request, 412) {
                Reply::Respond(page) => page,
                Reply::Close => Body::Empty,
            }
        }
    };
    (body, outcome)
}

/// nginx's headers filter, for the statuses `add_header` applies to (and `always`):
/// `expires`, then the `add_header` fields that set one of the response's own fields
/// rather than add one. The other `add_header` fields are written with the head.
pub(super) fn headers(
    worker: &HttpWorker,
    connection: &ConnectionInfo,
    request: &mut Request<'_>,
    location: &Location,
    now: &Timestamp,
) {
    expires(worker, connection, request, location, now);
    own_fields(worker, connection, request, location);
}

/// `Expires` and `Cache-Control`. A value with variables that does not parse gives no
/// headers.
fn expires(
    worker: &HttpWorker,
    connection: &ConnectionInfo,
    request: &mut Request<'_>,
    location: &Location,
    now: &Timestamp,
) {
    let setting = &location.settings.headers.expires;
    if let Expires::Fixed(ExpiresValue::Off) = setting {
        return;
    }
    if !status_takes_added_headers(special::status_on_wire(request.response.status)) {
        return;
    }
    let (value, configured_negative) = match setting {
        Expires::Fixed(value) => (*value, value_is_negative(*value)),
        Expires::Variable { modified, value } => {
            let text = render(worker, connection, request, value);
            match expires::parse_expires(&text, *modified) {
                Ok(parsed) => (parsed, false),
                Err(_) => return,
            }
        }
    };
    let now = SendTime {
        unix_seconds: now.unix_seconds,
        utc_offset_seconds: now.utc_offset_seconds.into(),
    };
    let last_modified = request.response.last_modified;
    if let Some(headers) = expires::expires_headers(value, configured_negative, now, last_modified)
    {
        expires::apply_expires(&mut request.response, headers);
    }
}

/// `add_header ETag` and `add_header Last-Modified` set the response's field, as nginx's
/// headers module does: a value replaces the field where it is (or adds it at this
/// `add_header` if the response had none), an empty value removes it. Any
/// `add_header Last-Modified` replaces the time the handler gave.
fn own_fields(
    worker: &HttpWorker,
    connection: &ConnectionInfo,
    request: &mut Request<'_>,
    location: &Location,
) {
    let status_ok = status_takes_added_headers(special::status_on_wire(request.response.status));
    let added = &location.settings.headers.add_header;
    for (index, header) in added.iter().enumerate() {
        if !header.always && !status_ok {
            continue;
        }
        let field = OwnField::of(&header.name);
        if field == OwnField::None {
            continue;
        }
        let value = render(worker, connection, request, &header.value);
        let response = &mut request.response;
        match field {
            OwnField::ETag if value.is_empty() => {
                response.etag = None;
                response.etag_added_at = None;
            }
            OwnField::ETag => {
                if response.etag.is_none() {
                    response.etag_added_at = Some(index);
                }
                response.etag = Some(value);
            }
            OwnField::LastModified => {
                response.last_modified = None;
                response.last_modified_added = match response.last_modified_added.take() {
                    _ if value.is_empty() => None,
                    Some((at, _)) => Some((at, value)),
                    None => Some((index, value)),
                };
            }
            OwnField::None => {}
        }
    }
}

fn value_is_negative(value: ExpiresValue) -> bool {
    matches!(
        value,
        ExpiresValue::Access(seconds) | ExpiresValue::Modified(seconds)
            if seconds < 0
    )
}

/// The rate limit of the response: `limit_rate` of the location unless the request set
/// one already (`$limit_rate`), then `limit_rate_after`. The rate is kept on the request
/// for `$limit_rate`.
pub(super) fn limit_rate(
    worker: &HttpWorker,
    connection: &ConnectionInfo,
    request: &mut Request<'_>,
    location: &Location,
) -> Option<RateLimit> {
    let core = &location.settings.core;
    let rate = match request.limit_rate {
        Some(rate) => rate,
        None => {
            let rate = size(worker, connection, request, location, &core.limit_rate);
            request.limit_rate = Some(rate);
            rate
        }
    };
    if rate == 0 {
        return None;
    }
    let after = size(
        worker,
        connection,
        request,
        location,
        &core.limit_rate_after,
    );
    let wall = worker.clock.wall();
    let now_millis = wall.unix_seconds * 1000 + i64::from(wall.milliseconds);
    let elapsed = request
        .started
        .map(runtime::clock::since)
        .unwrap_or_default();
    Some(RateLimit {
        rate,
        after,
        start_second: rate::start_second(now_millis, elapsed),
    })
}

/// A size setting's value for this request; a value from variables that is not a size
/// is logged at `error` and counts as 0, as nginx does.
fn size(
    worker: &HttpWorker,
    connection: &ConnectionInfo,
    request: &Request<'_>,
    location: &Location,
    value: &SizeValue,
) -> u64 {
    let template = match value {
        SizeValue::Fixed(size) => return *size,
        SizeValue::Variable(template) => template,
    };
    let text = render(worker, connection, request, template);
    let parsed = std::str::from_utf8(&text)
        .ok()
        .and_then(conf::value::parse_size);
    match parsed {
        Some(size) => size,
        None => {
            let shown = String::from_utf8_lossy(&text);
            log_while_sending(
                worker,
                connection,
                request,
                location,
                format_args!("invalid size \"{shown}\""),
            );
            0
        }
    }
}

/// An `error` line about the response being sent, in the location's error log.
fn log_while_sending(
    worker: &HttpWorker,
    connection: &ConnectionInfo,
    request: &Request<'_>,
    location: &Location,
    message: std::fmt::Arguments<'_>,
) {
    let conf = worker.conf();
    let error_log = &location.settings.core.error_log;
    if !error_log.enabled(Level::Error) {
        return;
    }
    let context = request
        .log_context(connection, conf)
        .with_action("sending response to client");
    error_log.write(
        Level::Error,
        &worker.clock.wall(),
        Some(connection.id),
        message,
        Some(&context),
    );
}
