//! What the headers module's directives set: the data other modules may read.

use crate::kernel::variables::HttpTemplate;
use crate::settings;

/// One `add_header NAME VALUE [always]` or `add_trailer NAME VALUE [always]`.
#[derive(Clone, Debug)]
pub struct AddHeader {
    pub name: Box<[u8]>,
    pub value: HttpTemplate,
    /// Without `always`, nginx adds the field only to these statuses.
    pub always: bool,
}

settings! {
    /// A level with its own `add_header` (or `add_trailer`) replaces the enclosing level's
    /// list entirely, as in nginx; several at one level accumulate.
    pub struct HeadersConf => Headers (env) {
        /// `add_header`
        add_header: Vec<AddHeader> = Vec::new(),
        /// `add_trailer`
        add_trailer: Vec<AddHeader> = Vec::new(),
        /// `expires`
        expires: Expires = Expires::Fixed(ExpiresValue::Off),
    }
}

/// The statuses `add_header`, `add_trailer` and `expires` apply to (without `always`).
pub fn status_takes_added_headers(status: u16) -> bool {
    matches!(
        status,
        200 | 201 | 204 | 206 | 301 | 302 | 303 | 304 | 307 | 308
    )
}

impl Headers {
    /// Whether some `add_trailer` applies to a response with this status: nginx then
    /// expects trailers and sends the response chunked when it can.
    pub(crate) fn expects_trailers(&self, status: u16) -> bool {
        let status_ok = status_takes_added_headers(status);
        self.add_trailer
            .iter()
            .any(|trailer| trailer.always || status_ok)
    }
}

/// The `expires` setting of a location.
#[derive(Clone, Debug)]
pub enum Expires {
    Fixed(ExpiresValue),
    /// A value with variables, parsed for each response; `modified` was written before it.
    Variable {
        modified: bool,
        value: HttpTemplate,
    },
}

/// What `expires` says once its value is parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExpiresValue {
    /// `off`: no headers.
    Off,
    /// `epoch`: expired long ago, `no-cache`.
    Epoch,
    /// `max`: far in the future, ten years of `max-age`.
    Max,
    /// Seconds after the response is sent; negative is before (`no-cache`).
    Access(i64),
    /// `modified`: seconds after the response's `Last-Modified` (after now without one).
    Modified(i64),
    /// `@TIME`: the next time this time of day (seconds after local midnight) comes.
    Daily(i64),
}
