//! A request body that could not be read: the error-log line nginx writes for it and the
//! status the request ends with.

use logging::Level;

use crate::kernel::body::BodyState;
use crate::kernel::body::reader::BodyError;
use crate::kernel::request::{ConnectionInfo, Request};
use crate::kernel::request_log::{errno_text, log};
use crate::kernel::worker::HttpWorker;

/// The client's body could not be read: logged, the connection closes after the
/// response; the status to end with.
pub(crate) fn body_failed(
    worker: &HttpWorker,
    info: &ConnectionInfo,
    request: &mut Request<'_>,
    body_state: &mut BodyState,
    error: BodyError,
) -> u16 {
    if let Some((level, message)) = body_error_log(request, &error) {
        log(worker, info, request, level, format_args!("{message}"));
    }
    request.keepalive = false;
    *body_state = BodyState::Done;
    request.discard_body = true;
    match error {
        BodyError::Closed => 499,
        other => other.status(),
    }
}

/// How a failure to read the client's body is logged, in nginx's words; `None` where
/// nginx logs nothing.
fn body_error_log(request: &Request<'_>, error: &BodyError) -> Option<(Level, String)> {
    Some(match error {
        BodyError::TooLarge { received } => (
            Level::Error,
            format!("client intended to send too large chunked body: {received} bytes"),
        ),
        // nginx ends the request with 408 and logs nothing.
        BodyError::TimedOut => return None,
        BodyError::Closed => (
            Level::Info,
            "client prematurely closed connection while reading client request body".to_owned(),
        ),
        BodyError::Invalid(invalid) => (
            Level::Info,
            invalid.log_message_in(&request.head_bytes).to_string(),
        ),
        BodyError::Refused(message) => (Level::Info, message.clone()),
        BodyError::File { path, call, error } => (
            Level::Crit,
            format!(
                "{call}() \"{}\" failed ({})",
                path.display(),
                errno_text(error)
            ),
        ),
        BodyError::Pool { name } => (
            Level::Alert,
            format!("thread pool \"{name}\" task was lost"),
        ),
    })
}
