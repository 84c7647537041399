//! The HTTP modules and their directive tables, in the order nginx lists them. A grep for
//! a directive name finds its table entry under the module that owns it.

use crate::conf::HttpDirective;

/// Every module's directive table.
pub const TABLES: &[&[HttpDirective]] = &[
    crate::core::directives::DIRECTIVES,
    crate::log::directives::DIRECTIVES,
    crate::realip::directives::DIRECTIVES,
    crate::access::directives::DIRECTIVES,
    crate::auth_basic::directives::DIRECTIVES,
    crate::auth_request::directives::DIRECTIVES,
    crate::headers::directives::DIRECTIVES,
    crate::map::directives::DIRECTIVES,
    crate::map::directives::SPLIT_CLIENTS_DIRECTIVES,
    crate::limit::directives::CONN_DIRECTIVES,
    crate::limit::directives::REQ_DIRECTIVES,
    crate::rewrite::directives::DIRECTIVES,
    crate::static_files::directives::DIRECTIVES,
    crate::charset::directives::DIRECTIVES,
    crate::gzip::directives::DIRECTIVES,
    crate::gunzip::directives::DIRECTIVES,
    crate::ssi::directives::DIRECTIVES,
    crate::addition::directives::DIRECTIVES,
    crate::mirror::directives::DIRECTIVES,
    crate::sub_filter::directives::DIRECTIVES,
    crate::proxy::directives::DIRECTIVES,
    crate::proxy::cache::directives::DIRECTIVES,
    crate::upstream::directives::DIRECTIVES,
    crate::stub_status::directives::DIRECTIVES,
    crate::observe::directives::DIRECTIVES,
    crate::ssl::directives::DIRECTIVES,
    crate::v2::directives::DIRECTIVES,
    crate::proxy::ssl::DIRECTIVES,
];

/// All directives of all modules, for [`conf::spec::check`].
pub fn directives() -> impl Iterator<Item = &'static HttpDirective> {
    TABLES.iter().flat_map(|table| table.iter())
}

/// The module families `portico -V` reports.
pub const FAMILIES: &[&str] = &[
    "http_core",
    "http_log",
    "http_realip",
    "http_access",
    "http_auth_basic",
    "http_auth_request",
    "http_headers",
    "http_map",
    "http_split_clients",
    "http_limit_conn",
    "http_limit_req",
    "http_rewrite",
    "http_static",
    "http_index",
    "http_proxy",
    "http_upstream_hash",
    "http_upstream_ip_hash",
    "http_upstream_least_conn",
    "http_upstream_random",
    "http_upstream_keepalive",
    "http_upstream_zone",
    "http_charset",
    "http_gzip",
    "http_gunzip",
    "http_ssi",
    "http_addition",
    "http_mirror",
    "http_sub",
    "http_stub_status",
    "http_ssl",
];
