//! `sticky` on the request path: the peer a request is bound to, found before a peer is
//! chosen, and what the answer then carries (`cookie`) or teaches (`learn`).

use std::sync::Arc;
use std::time::Instant;

use upstream::sticky::{CookieConf, CookieExpires, SameSite, Sessions, Sticky};

use crate::kernel::request::{ConnectionInfo, Request};
use crate::kernel::response::Bytes;
use crate::kernel::upstream::{Group, Selected};
use crate::kernel::variables::evaluate::render;
use crate::kernel::variables::time_format::cookie_time;
use crate::kernel::worker::HttpWorker;

/// `expires=max`: nginx's latest cookie date, and ten years as `max-age`.
const EXPIRES_MAX: &str = "Thu, 31-Dec-37 23:55:55 GMT";
const MAX_AGE_MAX: u64 = 315_360_000;

/// The peer a request is bound to: the id wanted, and for `learn` the session's key.
#[derive(Debug, Default)]
pub(crate) struct Binding {
    pub wanted: Vec<u8>,
    pub session: Vec<u8>,
}

/// What a request names: its cookie, its first non-empty route, or the peer its session
/// was learned on.
#[inline]
pub(crate) fn binding(
    worker: &HttpWorker,
    info: &ConnectionInfo,
    request: &Request<'_>,
    group: &Group,
) -> Binding {
    let Some(sticky) = &group.sticky else {
        return Binding::default();
    };
    match sticky {
        Sticky::Cookie(cookie) => Binding {
            wanted: request_cookie(request, cookie.name.as_bytes())
                .map(<[u8]>::to_vec)
                .unwrap_or_default(),
            session: Vec::new(),
        },
        Sticky::Route(routes) => Binding {
            wanted: routes
                .iter()
                .map(|route| render(worker, info, request, route))
                .find(|route| !route.is_empty())
                .unwrap_or_default(),
            session: Vec::new(),
        },
        Sticky::Learn(learn) => {
            let session = render(worker, info, request, &learn.lookup);
            let wanted = if session.is_empty() {
                Vec::new()
            } else {
                learn
                    .sessions
                    .lookup(&session, runtime::clock::monotonic())
                    .map(|id| id.as_bytes().to_vec())
                    .unwrap_or_default()
            };
            Binding { wanted, session }
        }
    }
}

/// A session to bind once the answer's body has ended (`learn` without `header`).
#[derive(Debug)]
pub struct Learned {
    sessions: Arc<Sessions>,
    key: Vec<u8>,
    id: Arc<str>,
}

impl Learned {
    pub fn commit(self, now: Instant) {
        self.sessions.learn(&self.key, self.id, now);
    }
}

/// The answer of `selected` goes to the client: `cookie` sets its cookie, `learn` binds
/// the session the answer creates (now with `header`, else once the body has ended).
#[inline]
pub(crate) fn answered(
    worker: &HttpWorker,
    info: &ConnectionInfo,
    request: &mut Request<'_>,
    group: &Group,
    selected: Selected,
) -> Option<Box<Learned>> {
    let sticky = group.sticky.as_ref()?;
    let id = group.sticky_id(selected)?;
    match sticky {
        Sticky::Cookie(cookie) => {
            let value = set_cookie(worker, info, request, cookie, &id);
            request
                .response
                .headers
                .push((Bytes::Borrowed(b"Set-Cookie"), Bytes::Owned(value)));
            None
        }
        Sticky::Route(_) => None,
        Sticky::Learn(learn) => {
            let key = render(worker, info, request, &learn.create);
            if key.is_empty() {
                return None;
            }
            let learned = Learned {
                sessions: Arc::clone(&learn.sessions),
                key,
                id,
            };
            if learn.header {
                learned.commit(runtime::clock::monotonic());
                return None;
            }
            Some(Box::new(learned))
        }
    }
}

/// `NAME=ID; expires=..; max-age=..; domain=..; path=..; secure; httponly; samesite=..`,
/// each attribute only when configured (and, with variables, not empty).
fn set_cookie(
    worker: &HttpWorker,
    info: &ConnectionInfo,
    request: &Request<'_>,
    cookie: &CookieConf<crate::kernel::variables::HttpTemplate>,
    id: &str,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    out.extend_from_slice(cookie.name.as_bytes());
    out.push(b'=');
    out.extend_from_slice(id.as_bytes());
    match cookie.expires {
        CookieExpires::Session => {}
        CookieExpires::Max => {
            out.extend_from_slice(b"; expires=");
            out.extend_from_slice(EXPIRES_MAX.as_bytes());
            out.extend_from_slice(format!("; max-age={MAX_AGE_MAX}").as_bytes());
        }
        CookieExpires::After(after) => {
            let seconds = after.as_secs();
            let at = worker
                .clock
                .wall()
                .unix_seconds
                .saturating_add(i64::try_from(seconds).unwrap_or(i64::MAX));
            out.extend_from_slice(b"; expires=");
            out.extend_from_slice(cookie_time(at).as_bytes());
            out.extend_from_slice(format!("; max-age={seconds}").as_bytes());
        }
    }
    for (attribute, template) in [(&b"domain"[..], &cookie.domain), (b"path", &cookie.path)] {
        if let Some(template) = template {
            let value = render(worker, info, request, template);
            if !value.is_empty() {
                out.extend_from_slice(b"; ");
                out.extend_from_slice(attribute);
                out.push(b'=');
                out.extend_from_slice(&value);
            }
        }
    }
    if cookie.secure {
        out.extend_from_slice(b"; secure");
    }
    if cookie.httponly {
        out.extend_from_slice(b"; httponly");
    }
    let samesite: Option<&[u8]> = match &cookie.samesite {
        None => None,
        Some(SameSite::Strict) => Some(b"strict"),
        Some(SameSite::Lax) => Some(b"lax"),
        Some(SameSite::None) => Some(b"none"),
        Some(SameSite::Variable(template)) => {
            let value = render(worker, info, request, template);
            if value.is_empty() {
                None
            } else if value.eq_ignore_ascii_case(b"lax") {
                Some(b"lax")
            } else if value.eq_ignore_ascii_case(b"none") {
                Some(b"none")
            } else {
                Some(b"strict")
            }
        }
    };
    if let Some(samesite) = samesite {
        out.extend_from_slice(b"; samesite=");
        out.extend_from_slice(samesite);
    }
    out
}

/// The request's cookie `name` (names compared without case, as `$cookie_NAME`).
fn request_cookie<'r>(request: &'r Request<'_>, name: &[u8]) -> Option<&'r [u8]> {
    request.headers(b"cookie").find_map(|header| {
        header.split(|&byte| byte == b';').find_map(|pair| {
            let pair = pair.trim_ascii_start();
            let equals = memchr::memchr(b'=', pair)?;
            pair[..equals]
                .eq_ignore_ascii_case(name)
                .then(|| &pair[equals + 1..])
        })
    })
}
