//! `stub_status`: the connection and request counters as nginx's stub status module
//! writes them, byte for byte, summed over every worker of every generation.

pub mod directives;
pub mod variables;

use std::io::Write as _;

use crate::kernel::request::Request;
use crate::kernel::response::Bytes;
use crate::kernel::send::body::Body;

/// The location's answer: the page, or the status to finalize with (405 for a method other
/// than GET and HEAD).
pub(crate) fn respond<'a>(request: &mut Request<'a>) -> Result<Body<'a>, u16> {
    if !matches!(
        request.head.method,
        http1::Method::Get | http1::Method::Head
    ) {
        return Err(405);
    }
    request.discard_body = true;
    let page = page(&metrics::GLOBAL.totals());
    request.response.status = 200;
    request.response.content_type = Some(Bytes::Borrowed(b"text/plain"));
    Ok(Body::Bytes(Bytes::Owned(page)))
}

/// The page's text: each figure followed by a space, as nginx writes it.
pub fn page(totals: &metrics::WorkerSnapshot) -> Vec<u8> {
    let mut out = Vec::with_capacity(128);
    let _ = write!(
        out,
        "Active connections: {} \nserver accepts handled requests\n {} {} {} \n\
         Reading: {} Writing: {} Waiting: {} \n",
        totals.active,
        totals.accepted,
        totals.handled,
        totals.requests,
        totals.reading,
        totals.writing,
        totals.waiting
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_is_nginx_s() {
        let totals = metrics::WorkerSnapshot {
            active: 2,
            accepted: 7,
            handled: 6,
            requests: 11,
            reading: 0,
            writing: 1,
            waiting: 1,
            ..Default::default()
        };
        assert_eq!(
            String::from_utf8(page(&totals)).unwrap(),
            "Active connections: 2 \nserver accepts handled requests\n 7 6 11 \n\
             Reading: 0 Writing: 1 Waiting: 1 \n"
        );
    }
}
