//! The HTTP modules and their directive tables, in the order nginx lists them. A grep for
//! a directive name finds its table entry under the module that owns it.

use crate::kernel::conf::HttpDirective;
use crate::kernel::variables::evaluate::{VariableDef, register_module_getters};
use crate::kernel::variables::{ModuleNames, ModuleVariable, register_module_names};

/// Every module's directive table.
pub const TABLES: &[&[HttpDirective]] = &[
    crate::kernel::core::directives::DIRECTIVES,
    crate::modules::log::directives::DIRECTIVES,
    crate::modules::realip::directives::DIRECTIVES,
    crate::modules::access::directives::DIRECTIVES,
    crate::modules::auth_basic::directives::DIRECTIVES,
    crate::modules::auth_request::directives::DIRECTIVES,
    crate::modules::headers::directives::DIRECTIVES,
    crate::kernel::map::directives::DIRECTIVES,
    crate::kernel::map::directives::SPLIT_CLIENTS_DIRECTIVES,
    crate::modules::geo::directives::DIRECTIVES,
    crate::modules::limit::directives::CONN_DIRECTIVES,
    crate::modules::limit::directives::REQ_DIRECTIVES,
    crate::modules::rewrite::directives::DIRECTIVES,
    crate::modules::referer::directives::DIRECTIVES,
    crate::modules::secure_link::directives::DIRECTIVES,
    crate::modules::browser::directives::DIRECTIVES,
    crate::modules::userid::directives::DIRECTIVES,
    crate::modules::random_index::directives::DIRECTIVES,
    crate::modules::dav::directives::DIRECTIVES,
    crate::modules::static_files::directives::DIRECTIVES,
    crate::modules::charset::directives::DIRECTIVES,
    crate::modules::gzip::directives::DIRECTIVES,
    crate::modules::gunzip::directives::DIRECTIVES,
    crate::modules::ssi::directives::DIRECTIVES,
    crate::modules::addition::directives::DIRECTIVES,
    crate::modules::mirror::directives::DIRECTIVES,
    crate::modules::sub_filter::directives::DIRECTIVES,
    crate::modules::proxy::directives::DIRECTIVES,
    crate::modules::proxy::cache::directives::DIRECTIVES,
    crate::modules::proxy::gateway::directives::FASTCGI_DIRECTIVES,
    crate::modules::proxy::gateway::directives::UWSGI_DIRECTIVES,
    crate::modules::proxy::gateway::directives::SCGI_DIRECTIVES,
    crate::modules::proxy::directives::FASTCGI_DIRECTIVES,
    crate::modules::proxy::directives::UWSGI_DIRECTIVES,
    crate::modules::proxy::directives::SCGI_DIRECTIVES,
    crate::modules::proxy::cache::directives::FASTCGI_DIRECTIVES,
    crate::modules::proxy::cache::directives::UWSGI_DIRECTIVES,
    crate::modules::proxy::cache::directives::SCGI_DIRECTIVES,
    crate::modules::proxy::memcached::directives::DIRECTIVES,
    crate::modules::proxy::directives::MEMCACHED_DIRECTIVES,
    crate::modules::proxy::grpc::directives::DIRECTIVES,
    crate::modules::proxy::directives::GRPC_DIRECTIVES,
    crate::modules::proxy::tunnel::directives::DIRECTIVES,
    crate::modules::proxy::directives::TUNNEL_DIRECTIVES,
    crate::modules::upstream::directives::DIRECTIVES,
    crate::modules::stub_status::directives::DIRECTIVES,
    crate::modules::empty_gif::directives::DIRECTIVES,
    crate::modules::flv::directives::DIRECTIVES,
    crate::modules::observe::directives::DIRECTIVES,
    crate::kernel::ssl::directives::DIRECTIVES,
    crate::modules::v2::directives::DIRECTIVES,
    crate::modules::v3::directives::DIRECTIVES,
    crate::modules::proxy::ssl::DIRECTIVES,
    crate::modules::proxy::ssl::UWSGI_DIRECTIVES,
    crate::modules::proxy::ssl::GRPC_DIRECTIVES,
];

/// Every module's variable table; the kernel's own variables (`$uri`, `$remote_addr`, ...)
/// are the `variables` module's.
pub const VARIABLES: &[&[VariableDef]] = &[
    crate::modules::realip::variables::VARIABLES,
    crate::modules::limit::variables::VARIABLES,
    crate::modules::gzip::variables::VARIABLES,
    crate::modules::proxy::variables::VARIABLES,
    crate::modules::proxy::gateway::variables::VARIABLES,
    crate::modules::stub_status::variables::VARIABLES,
    crate::modules::referer::variables::VARIABLES,
    crate::modules::secure_link::variables::VARIABLES,
    crate::modules::browser::variables::VARIABLES,
    crate::modules::userid::variables::VARIABLES,
    crate::kernel::ssl::variables::VARIABLES,
    crate::modules::v2::variables::VARIABLES,
    crate::modules::v3::variables::VARIABLES,
];

/// The modules' variables by name, for the registry.
struct Names;

impl ModuleNames for Names {
    fn find(&self, lower: &str) -> Option<ModuleVariable> {
        for (table, definitions) in VARIABLES.iter().enumerate() {
            for (index, definition) in definitions.iter().enumerate() {
                let arg = if definition.prefix {
                    match lower.strip_prefix(definition.name) {
                        Some(rest) => rest.as_bytes(),
                        None => continue,
                    }
                } else if definition.name == lower {
                    b""
                } else {
                    continue;
                };
                return Some(ModuleVariable {
                    table: u16::try_from(table).ok()?,
                    index: u16::try_from(index).ok()?,
                    arg: arg.into(),
                });
            }
        }
        None
    }
}

/// Makes the modules' variables known to the kernel: their names to the registry, their
/// getters to the evaluator. Once per process, before the first load.
pub fn register_variables() {
    register_module_names(&Names);
    register_module_getters(VARIABLES);
}

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
    "http_geo",
    "http_limit_conn",
    "http_limit_req",
    "http_rewrite",
    "http_referer",
    "http_secure_link",
    "http_browser",
    "http_userid",
    "http_static",
    "http_random_index",
    "http_dav",
    "http_index",
    "http_proxy",
    "http_fastcgi",
    "http_uwsgi",
    "http_scgi",
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
    "http_empty_gif",
    "http_flv",
    "http_ssl",
];
