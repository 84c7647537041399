//! The pages Portico sends for errors and redirects when nothing else gives a body, in
//! nginx's shape (CRLF line ends, title, centred heading, server tokens).

use crate::kernel::core::ServerTokens;
use crate::kernel::find::current_location;
use crate::kernel::request::Request;
use crate::kernel::response::Bytes;
use crate::kernel::send::body::Body;
use crate::kernel::worker::HttpWorker;

/// nginx's non-standard code: close the connection without a response.
pub(crate) const STATUS_CLOSE: u16 = 444;

/// nginx's internal code for "request header too large", sent as 400.
pub const STATUS_HEADER_TOO_LARGE: u16 = 494;

/// The status the client sees for nginx's internal codes.
pub(crate) fn status_on_wire(status: u16) -> u16 {
    match status {
        494..=497 => 400,
        499 => 499,
        other => other,
    }
}

/// The page title and, for nginx's 49x codes, the extra line under the heading.
fn page_text(status: u16) -> Option<(&'static str, Option<&'static str>)> {
    Some(match status {
        301 => ("301 Moved Permanently", None),
        302 => ("302 Found", None),
        303 => ("303 See Other", None),
        307 => ("307 Temporary Redirect", None),
        308 => ("308 Permanent Redirect", None),
        400 => ("400 Bad Request", None),
        401 => ("401 Authorization Required", None),
        402 => ("402 Payment Required", None),
        403 => ("403 Forbidden", None),
        404 => ("404 Not Found", None),
        405 => ("405 Not Allowed", None),
        406 => ("406 Not Acceptable", None),
        408 => ("408 Request Time-out", None),
        409 => ("409 Conflict", None),
        410 => ("410 Gone", None),
        411 => ("411 Length Required", None),
        412 => ("412 Precondition Failed", None),
        413 => ("413 Request Entity Too Large", None),
        414 => ("414 Request-URI Too Large", None),
        415 => ("415 Unsupported Media Type", None),
        416 => ("416 Requested Range Not Satisfiable", None),
        421 => ("421 Misdirected Request", None),
        429 => ("429 Too Many Requests", None),
        494 => (
            "400 Bad Request",
            Some("Request Header Or Cookie Too Large"),
        ),
        495 => ("400 Bad Request", Some("The SSL certificate error")),
        496 => (
            "400 Bad Request",
            Some("No required SSL certificate was sent"),
        ),
        497 => (
            "400 Bad Request",
            Some("The plain HTTP request was sent to HTTPS port"),
        ),
        500 => ("500 Internal Server Error", None),
        501 => ("501 Not Implemented", None),
        502 => ("502 Bad Gateway", None),
        503 => ("503 Service Temporarily Unavailable", None),
        504 => ("504 Gateway Time-out", None),
        505 => ("505 HTTP Version Not Supported", None),
        507 => ("507 Insufficient Storage", None),
        _ => return None,
    })
}

/// The `<hr><center>...</center>` signature under every page.
pub(crate) fn server_signature(tokens: ServerTokens) -> &'static str {
    match tokens {
        ServerTokens::On => concat!("portico/", env!("CARGO_PKG_VERSION")),
        ServerTokens::Off => "portico",
        ServerTokens::Build => build_signature(),
    }
}

/// The name `PORTICO_BUILD` gave at build time, shown by `server_tokens build` as nginx
/// shows its `--build` name.
pub(crate) const BUILD_NAME: Option<&str> = option_env!("PORTICO_BUILD");

/// `portico/VERSION (BUILD)`, or `portico/VERSION` when the build has no name.
fn build_signature() -> &'static str {
    static SIGNATURE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    SIGNATURE.get_or_init(|| match BUILD_NAME {
        Some(name) => format!("portico/{} ({name})", env!("CARGO_PKG_VERSION")),
        None => format!("portico/{}", env!("CARGO_PKG_VERSION")),
    })
}

/// nginx pads error pages for MSIE so that it shows them instead of its own.
const MSIE_PADDING: &str = "<!-- a padding to disable MSIE and Chrome friendly error page -->\r\n";
const MSIE_PADDING_LINES: usize = 6;

/// The page body for `status`, or `None` when nginx sends none (e.g. 2xx, 418).
pub fn page(status: u16, tokens: ServerTokens, msie_padding: bool) -> Option<Vec<u8>> {
    let (title, detail) = page_text(status)?;
    let heading = title;
    let mut body = String::with_capacity(256);
    body.push_str("<html>\r\n<head><title>");
    match detail {
        Some(detail) => {
            body.push_str("400 ");
            body.push_str(detail);
        }
        None => body.push_str(title),
    }
    body.push_str("</title></head>\r\n<body>\r\n<center><h1>");
    body.push_str(heading);
    body.push_str("</h1></center>\r\n");
    if let Some(detail) = detail {
        body.push_str("<center>");
        body.push_str(detail);
        body.push_str("</center>\r\n");
    }
    body.push_str("<hr><center>");
    body.push_str(server_signature(tokens));
    body.push_str("</center>\r\n</body>\r\n</html>\r\n");
    if msie_padding && status >= 400 {
        for _ in 0..MSIE_PADDING_LINES {
            body.push_str(MSIE_PADDING);
        }
    }
    Some(body.into_bytes())
}

/// Whether nginx drops keep-alive after answering this status itself.
pub(crate) fn status_closes_connection(status: u16) -> bool {
    matches!(status, 400 | 413 | 414 | 494..=497 | 500 | 501)
}

/// How the request ends.
#[derive(Debug)]
pub enum Reply<'a> {
    /// Send `request.response` with this body.
    Respond(Body<'a>),
    /// `return 444`: close without a response.
    Close,
}

/// Portico's own page for `status` (nginx's "special response"), without `error_page`.
pub(crate) fn special_response<'a>(
    worker: &'a HttpWorker,
    request: &mut Request<'a>,
    status: u16,
) -> Reply<'a> {
    let location = current_location(worker, request);
    let core = &location.settings.core;
    request.response.status = status;
    request.response.content_type = None;
    request.response.content_length = None;
    request.response.etag = None;
    request.response.last_modified = None;
    request.response.accept_ranges = false;
    request.response.special = true;
    let browser = request.info.browser;
    let padding = core.msie_padding && (browser.msie || browser.chrome);
    match page(status, core.server_tokens, padding) {
        Some(page) => {
            request.response.content_type = Some(Bytes::Borrowed(b"text/html"));
            Reply::Respond(Body::Bytes(Bytes::Owned(page)))
        }
        None => Reply::Respond(Body::Empty),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_found_page_has_nginx_shape() {
        let page = String::from_utf8(page(404, ServerTokens::Off, false).unwrap()).unwrap();
        assert_eq!(
            page,
            "<html>\r\n<head><title>404 Not Found</title></head>\r\n<body>\r\n\
             <center><h1>404 Not Found</h1></center>\r\n<hr><center>portico</center>\r\n\
             </body>\r\n</html>\r\n"
        );
    }

    #[test]
    fn internal_codes_show_as_400_with_detail() {
        let page = String::from_utf8(page(494, ServerTokens::On, false).unwrap()).unwrap();
        assert!(page.contains("<title>400 Request Header Or Cookie Too Large</title>"));
        assert!(page.contains(
            "<center><h1>400 Bad Request</h1></center>\r\n\
             <center>Request Header Or Cookie Too Large</center>"
        ));
        assert_eq!(status_on_wire(494), 400);
        assert_eq!(status_on_wire(404), 404);
    }

    #[test]
    fn no_page_for_success_or_unknown_codes() {
        assert!(page(200, ServerTokens::On, false).is_none());
        assert!(page(418, ServerTokens::On, false).is_none());
    }

    #[test]
    fn msie_padding_only_for_errors() {
        let padded = page(404, ServerTokens::On, true).unwrap();
        let plain = page(404, ServerTokens::On, false).unwrap();
        assert_eq!(
            padded.len(),
            plain.len() + MSIE_PADDING.len() * MSIE_PADDING_LINES
        );
        assert_eq!(
            page(302, ServerTokens::On, true).unwrap().len(),
            page(302, ServerTokens::On, false).unwrap().len()
        );
    }
}
