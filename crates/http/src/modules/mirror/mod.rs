//! `mirror`: copies of a request sent to other URIs as subrequests, whose answers are
//! read and dropped. The precontent phase records each mirror (its URI and the request's
//! arguments at that moment, once per pass, so an internal redirect through the phase
//! mirrors again, as nginx does); the connection runs them together once the response is
//! out, and serves its next request only when they are done (nginx's main request
//! waits for its mirrors before it is finalized).

pub mod directives;
pub mod settings;

use crate::kernel::conf::Location;
use crate::kernel::module_state::ModuleState;
use crate::kernel::request::Request;

/// A subrequest to run once the response is out: its URI and arguments.
#[derive(Clone, Debug)]
pub struct PendingMirror {
    pub uri: Vec<u8>,
    pub args: Vec<u8>,
}

/// The module's state in a request: the mirrors the precontent phase recorded, run once
/// the response is out.
#[derive(Debug, Default)]
pub struct Pending(pub Vec<PendingMirror>);

impl ModuleState for Pending {}

/// Whether the request has mirrors to run.
pub fn pending(request: &Request<'_>) -> bool {
    request
        .modules
        .get::<Pending>()
        .is_some_and(|pending| !pending.0.is_empty())
}

/// The mirrors to run, taken from the request.
pub fn take(request: &mut Request<'_>) -> Vec<PendingMirror> {
    request
        .modules
        .take::<Pending>()
        .map(|pending| pending.0)
        .unwrap_or_default()
}

/// The precontent phase's part: records the location's mirrors for the request.
pub fn record(request: &mut Request<'_>, location: &Location) {
    if request.is_subrequest() {
        return;
    }
    if location.settings.mirror.uris.is_empty() {
        return;
    }
    let pending = &mut request.modules.get_or_default::<Pending>().0;
    for uri in &location.settings.mirror.uris {
        let (uri, args) = match memchr::memchr(b'?', uri) {
            Some(at) => (uri[..at].to_vec(), uri[at + 1..].to_vec()),
            None => (uri.to_vec(), request.args.clone()),
        };
        pending.push(PendingMirror { uri, args });
    }
}
