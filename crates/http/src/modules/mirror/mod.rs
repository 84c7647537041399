//! `mirror`: copies of a request sent to other URIs as subrequests, whose answers are
//! read and dropped. The precontent phase records each mirror (its URI and the request's
//! arguments at that moment, once per pass, so an internal redirect through the phase
//! mirrors again, as nginx does); the connection runs them together once the response is
//! out, and serves its next request only when they are done (nginx's main request
//! waits for its mirrors before it is finalized).

pub mod directives;
pub mod settings;

use crate::kernel::conf::Location;
use crate::kernel::request::{PendingMirror, Request};

/// The precontent phase's part: records the location's mirrors for the request.
pub fn record(request: &mut Request<'_>, location: &Location) {
    if request.is_subrequest() {
        return;
    }
    for uri in &location.settings.mirror.uris {
        let (uri, args) = match memchr::memchr(b'?', uri) {
            Some(at) => (uri[..at].to_vec(), uri[at + 1..].to_vec()),
            None => (uri.to_vec(), request.args.clone()),
        };
        request.mirrors.push(PendingMirror { uri, args });
    }
}
