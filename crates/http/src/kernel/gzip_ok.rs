//! nginx's `ngx_http_gzip_ok`: whether the client takes a gzip response and nothing rules
//! it out. The `gzip` filter and `gzip_static` both ask; the settings are the gzip
//! module's data.

use crate::kernel::conf::Location;
use crate::kernel::request::Request;

/// nginx's `ngx_http_gzip_ok`: the client takes gzip, and nothing rules it out.
pub fn gzip_ok(request: &Request<'_>, location: &Location) -> bool {
    // A subrequest's answer is part of its parent's: never sent gzip on its own, as in
    // nginx.
    if request.is_subrequest() {
        return false;
    }
    let settings = &location.settings.gzip;
    let Some(accept) = request.header(b"accept-encoding") else {
        return false;
    };
    if !takes_gzip(accept) {
        return false;
    }
    let version_ok = match request.head.version {
        http1::Version::Http11 => true,
        http1::Version::Http10 => !settings.http_11,
        _ => false,
    };
    if !version_ok {
        return false;
    }
    if let Some(agent) = request.header(b"user-agent") {
        if settings.disable_msie6 && request.info.browser.msie6 {
            return false;
        }
        if settings.disable.iter().any(|regex| regex.is_match(agent)) {
            return false;
        }
    }
    if request.header(b"via").is_some() {
        return proxied_ok(request, location);
    }
    true
}

/// `Accept-Encoding` names `gzip` with a weight above zero.
pub(crate) fn takes_gzip(accept: &[u8]) -> bool {
    accept.split(|b| *b == b',').any(|item| {
        let mut parts = item.split(|b| *b == b';');
        let coding = parts.next().unwrap_or_default().trim_ascii();
        if !coding.eq_ignore_ascii_case(b"gzip") && !coding.eq_ignore_ascii_case(b"x-gzip") {
            return false;
        }
        parts.all(|parameter| {
            let parameter = parameter.trim_ascii();
            let Some(weight) = parameter
                .strip_prefix(b"q=")
                .or_else(|| parameter.strip_prefix(b"Q="))
            else {
                return true;
            };
            std::str::from_utf8(weight)
                .ok()
                .and_then(|weight| weight.parse::<f32>().ok())
                .is_some_and(|weight| weight > 0.0)
        })
    })
}

/// `gzip_proxied` for a request that came through a proxy (`Via`).
fn proxied_ok(request: &Request<'_>, location: &Location) -> bool {
    use crate::modules::gzip::settings::Proxied;
    let proxied = location.settings.gzip.proxied;
    if proxied.has(Proxied::OFF) {
        return false;
    }
    if proxied.has(Proxied::ANY) {
        return true;
    }
    let response = &request.response;
    let header = |name: &[u8]| {
        response
            .headers
            .iter()
            .find(|(field, _)| field.as_slice().eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_slice().to_ascii_lowercase())
    };
    let control = header(b"cache-control").unwrap_or_default();
    let has = |token: &[u8]| control.windows(token.len()).any(|window| window == token);
    (proxied.has(Proxied::EXPIRED) && header(b"expires").is_some())
        || (proxied.has(Proxied::NO_CACHE) && has(b"no-cache"))
        || (proxied.has(Proxied::NO_STORE) && has(b"no-store"))
        || (proxied.has(Proxied::PRIVATE) && has(b"private"))
        || (proxied.has(Proxied::NO_LAST_MODIFIED) && response.last_modified.is_none())
        || (proxied.has(Proxied::NO_ETAG) && response.etag.is_none())
        || (proxied.has(Proxied::AUTH) && request.header(b"authorization").is_some())
}
