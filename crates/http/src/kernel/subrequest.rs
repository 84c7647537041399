//! Subrequests: a child request that a filter (SSI's `include`) runs through the phases on
//! behalf of its parent, whose body the filter then takes in piece by piece and places in
//! the parent's response. The kernel defines the child and the limits; the assembly runs
//! it (`phases::run_subrequest`), and hands that runner to the filters that need it.

use std::future::Future;
use std::pin::Pin;

use runtime::Stream;

use crate::kernel::request::{ConnectionInfo, Request, URI_CHANGES};
use crate::kernel::send::body::Body;
use crate::kernel::worker::HttpWorker;

/// Subrequests nested in one another, as nginx allows (`NGX_HTTP_MAX_SUBREQUESTS`).
pub const SUBREQUEST_DEPTH_MAX: u8 = 50;
/// A child request once its phases have run: its head and its body (`None` when it
/// ended without a response, as `return 444` does).
pub struct Subrequest<'a> {
    pub request: Box<Request<'a>>,
    pub body: Option<Body<'a>>,
}

/// The assembly's runner of a child request: the phases, then the body filters a
/// subrequest's body goes through (SSI again, for a nested document). A feature that makes
/// subrequests is handed one, so it never names the phases.
pub trait SubrequestRunner {
    fn run<'a, 's>(
        &'s self,
        worker: &'a HttpWorker,
        connection: &'s ConnectionInfo,
        socket: &'s Stream,
        child: Box<Request<'a>>,
    ) -> Pin<Box<dyn Future<Output = Subrequest<'a>> + 's>>
    where
        'a: 's;
}

/// Why a subrequest was not made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// Nested deeper than [`SUBREQUEST_DEPTH_MAX`] (an include loop, usually).
    Cycle,
    /// More than [`SUBREQUESTS_MAX`](crate::kernel::request::SUBREQUESTS_MAX) for one client
    /// request.
    TooMany,
}

impl Refused {
    /// nginx's error-log words for the refusal.
    pub fn message(self, uri: &[u8]) -> String {
        let uri = String::from_utf8_lossy(uri);
        match self {
            Refused::Cycle => format!("subrequests cycle while processing \"{uri}\""),
            Refused::TooMany => "request reference counter overflow while processing \"{uri}\""
                .replace("{uri}", &uri),
        }
    }
}

impl Request<'_> {
    /// A child of this request for `uri` with `args`, as nginx makes one: a GET, internal,
    /// with the parent's head, server, `$request_id`, and the module states that say a
    /// subrequest inherits them (`limit_req`/`limit_conn` verdicts: the main request is
    /// judged once).
    pub fn child<'b>(&self, uri: Vec<u8>, args: Vec<u8>) -> Result<Request<'b>, Refused> {
        if self.subrequest_depth >= SUBREQUEST_DEPTH_MAX {
            return Err(Refused::Cycle);
        }
        let left = self.subrequests_left.get();
        if left == 0 {
            return Err(Refused::TooMany);
        }
        self.subrequests_left.set(left - 1);
        let id = *self
            .request_id
            .get_or_init(crate::kernel::variables::evaluate::new_request_id);
        let mut child = Request {
            head_bytes: self.head_bytes.clone(),
            head: self.head.clone(),
            info: self.info.clone(),
            uri,
            args,
            server: self.server,
            started: self.started,
            uri_changes: URI_CHANGES,
            internal: true,
            discard_body: true,
            method_is_get: self.head.method != http1::Method::Get,
            subrequest_depth: self.subrequest_depth + 1,
            subrequests_left: std::rc::Rc::clone(&self.subrequests_left),
            modules: self.modules.for_subrequest(),
            ..Request::default()
        };
        child.head.method = http1::Method::Get;
        // A child never reads the client's socket: it has the parent's body when that was
        // read into memory, else none.
        child.info.framing = http1::request::BodyFraming::None;
        if let Some(crate::kernel::body::temp::RequestBody::Memory(bytes)) = &self.body {
            child.body = Some(crate::kernel::body::temp::RequestBody::Memory(
                bytes.clone(),
            ));
        }
        let _ = child.request_id.set(id);
        Ok(child)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nesting_and_count_are_limited() {
        let mut parent = Request::default();
        parent.reset();
        let mut depth = parent
            .child(b"/a".to_vec(), Vec::new())
            .expect("first level");
        for _ in 1..SUBREQUEST_DEPTH_MAX {
            depth = depth
                .child(b"/a".to_vec(), Vec::new())
                .expect("within the limit");
        }
        assert_eq!(depth.subrequest_depth, SUBREQUEST_DEPTH_MAX);
        assert_eq!(
            depth.child(b"/a".to_vec(), Vec::new()).err(),
            Some(Refused::Cycle)
        );
        parent.subrequests_left.set(1);
        let child = parent
            .child(b"/b".to_vec(), b"x=1".to_vec())
            .expect("one left");
        assert_eq!(child.args, b"x=1");
        assert_eq!(child.request_id.get(), parent.request_id.get());
        assert_eq!(
            parent.child(b"/c".to_vec(), Vec::new()).err(),
            Some(Refused::TooMany)
        );
    }
}
