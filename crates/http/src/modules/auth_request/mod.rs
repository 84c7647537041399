//! `auth_request`: access decided by a subrequest, as nginx's module does. The access
//! phase runs a subrequest to the URI and waits for its answer: 2xx lets the request
//! through, 401 (with the subrequest's `WWW-Authenticate` fields, all of them) and 403 refuse it, anything
//! else is a 500. `auth_request_set` then copies values of the subrequest's variables
//! (`$upstream_http_*`, ...) into the request's.

pub mod directives;
pub mod settings;

use logging::Level;
use runtime::Stream;

use crate::kernel::conf::Location;
use crate::kernel::request::{ConnectionInfo, Request};
use crate::kernel::request_log::log;
use crate::kernel::response::Bytes;
use crate::kernel::subrequest::SubrequestRunner;
use crate::kernel::variables::Settable;
use crate::kernel::variables::evaluate::render;
use crate::kernel::worker::HttpWorker;

/// What the subrequest decided.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// No `auth_request` here.
    NotInvolved,
    Passed,
    /// Refused (401, 403) or failed (500).
    Status(u16),
}

/// Runs the location's `auth_request`, if any.
pub async fn check<'a>(
    worker: &'a HttpWorker,
    connection: &ConnectionInfo,
    socket: &Stream,
    request: &mut Request<'a>,
    location: &'a Location,
    runner: &dyn SubrequestRunner,
) -> Verdict {
    let settings = &location.settings.auth_request;
    let Some(uri) = &settings.uri else {
        return Verdict::NotInvolved;
    };
    let (path, args) = match memchr::memchr(b'?', uri) {
        Some(at) => (uri[..at].to_vec(), uri[at + 1..].to_vec()),
        None => (uri.to_vec(), Vec::new()),
    };
    let child = match request.child(path, args) {
        Ok(child) => child,
        Err(refused) => {
            let message = refused.message(uri);
            log(
                worker,
                connection,
                request,
                Level::Error,
                format_args!("{message}"),
            );
            return Verdict::Status(500);
        }
    };
    let done = runner
        .run(worker, connection, socket, Box::new(child))
        .await;
    // The answer's body is not wanted, as nginx's header-only subrequest.
    drop(done.body);
    let child = done.request;
    for set in &settings.set {
        let value = render(worker, connection, &child, &set.value);
        assign(request, set.variable, value);
    }
    match child.response.status {
        403 => Verdict::Status(403),
        401 => {
            // Every challenge the subrequest sent, in its order (nginx since 1.23.0).
            let challenges = child
                .response
                .headers
                .iter()
                .filter(|(name, _)| name.as_slice().eq_ignore_ascii_case(b"www-authenticate"));
            for (_, challenge) in challenges {
                request.response.headers.push((
                    Bytes::Borrowed(b"WWW-Authenticate"),
                    Bytes::Owned(challenge.as_slice().to_vec()),
                ));
            }
            Verdict::Status(401)
        }
        200..=299 => Verdict::Passed,
        other => {
            log(
                worker,
                connection,
                request,
                Level::Error,
                format_args!("auth request unexpected status: {other}"),
            );
            Verdict::Status(500)
        }
    }
}

/// `auth_request_set`'s assignment, as `set` makes it.
fn assign(request: &mut Request<'_>, variable: Settable, value: Vec<u8>) {
    match variable {
        Settable::Named(slot) => request.matches.get_mut().set_named(slot, Some(value)),
        Settable::Args => {
            request.args = value;
            request.args_changed = true;
        }
        Settable::LimitRate => {
            let text = String::from_utf8_lossy(&value);
            if let Some(rate) = conf::value::parse_size(&text) {
                request.limit_rate = Some(rate);
            }
        }
        Settable::Fixed => {}
    }
}
