//! The CGI-family gateways: `fastcgi_pass` (PHP-FPM), `uwsgi_pass` (uWSGI) and
//! `scgi_pass`. Each is the proxy's upstream engine with another protocol on the wire: the
//! request goes as CGI variables (`fastcgi_param` and its siblings, the client's fields as
//! `HTTP_*`) framed by the `cgi` crate, and the answer's CGI head becomes the response's
//! head. Peers, tries, buffers, the cache, limits and the filters are the proxy's.
//!
//! Configuration: each module has its own copy of the proxy's settings (a location may set
//! `proxy_buffers` and `fastcgi_buffers` apart), filled by the proxy's own setters under
//! the module's names ([`directives`]); the location's content handler says whose copy
//! the request path reads ([`crate::kernel::conf::scope::LocationScope::resolve`]).

pub mod directives;
pub mod request;
pub(crate) mod response;
pub mod settings;
pub mod variables;

pub use settings::{Gateway, GatewayConf, GatewayScope, Param, Protocol};
