//! nginx's status lines: the reason phrases it prints, and the codes it prints bare.

/// The reason phrase nginx prints after `status`, from its own table (some differ from
/// RFC 9110: "302 Moved Temporarily", "405 Not Allowed", "408 Request Time-out",
/// "413 Request Entity Too Large", "414 Request-URI Too Large", "503 Service Temporarily
/// Unavailable"). `None` for codes nginx prints without a phrase (`HTTP/1.1 203 \r\n`):
/// 1xx, 203, 205, 207, 300, 305, 306, 417–420, 422–428, 494 (nginx's internal "header too
/// large" code, answered as 400), 506 and anything outside its table.
pub fn reason_phrase(status: u16) -> Option<&'static str> {
    let phrase = match status {
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        206 => "Partial Content",
        301 => "Moved Permanently",
        302 => "Moved Temporarily",
        303 => "See Other",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        402 => "Payment Required",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Not Allowed",
        406 => "Not Acceptable",
        407 => "Proxy Authentication Required",
        408 => "Request Time-out",
        409 => "Conflict",
        410 => "Gone",
        411 => "Length Required",
        412 => "Precondition Failed",
        413 => "Request Entity Too Large",
        414 => "Request-URI Too Large",
        415 => "Unsupported Media Type",
        416 => "Requested Range Not Satisfiable",
        421 => "Misdirected Request",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Temporarily Unavailable",
        504 => "Gateway Time-out",
        505 => "HTTP Version Not Supported",
        507 => "Insufficient Storage",
        _ => return None,
    };
    Some(phrase)
}

#[cfg(test)]
mod tests {
    use super::reason_phrase;

    #[test]
    fn nginx_specific_phrases() {
        assert_eq!(reason_phrase(302), Some("Moved Temporarily"));
        assert_eq!(reason_phrase(405), Some("Not Allowed"));
        assert_eq!(reason_phrase(413), Some("Request Entity Too Large"));
        assert_eq!(reason_phrase(414), Some("Request-URI Too Large"));
        assert_eq!(reason_phrase(503), Some("Service Temporarily Unavailable"));
    }

    #[test]
    fn gaps_in_nginx_table_have_no_phrase() {
        for status in [
            100, 101, 203, 205, 207, 300, 305, 417, 422, 426, 494, 506, 508, 299,
        ] {
            assert_eq!(reason_phrase(status), None, "{status}");
        }
    }
}
