//! `proxy_intercept_errors`: an upstream's error status goes to `error_page` instead of
//! its response.

use crate::kernel::request::Request;
use crate::modules::proxy::handler::ProxyOutcome;
use crate::modules::proxy::response::UpstreamHead;

/// `proxy_intercept_errors`: the status goes to `error_page`, the response is dropped.
pub(super) fn intercept<'a>(
    request: &mut Request<'a>,
    head: &UpstreamHead,
    buffer: &[u8],
) -> ProxyOutcome<'a> {
    // The challenge of an intercepted 401 still reaches the client.
    if head.status == 401 {
        for (name, value) in &head.fields {
            let name = &buffer[name.clone()];
            if name.eq_ignore_ascii_case(b"www-authenticate") {
                request.response.headers.push((
                    crate::kernel::response::Bytes::Owned(name.to_vec()),
                    crate::kernel::response::Bytes::Owned(buffer[value.clone()].to_vec()),
                ));
            }
        }
    }
    request.upstream.keep_head(buffer, head.len, &head.fields);
    ProxyOutcome::Finalize(head.status)
}
