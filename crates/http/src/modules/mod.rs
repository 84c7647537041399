//! One folder per module, as nginx's `src/http/modules`: its directives, the settings
//! they fill (data), its handler or filter and its variables. A module names the kernel
//! and itself; the assembly (`assembly::modules`) lists them all.

pub mod access;
pub mod addition;
pub mod auth_basic;
pub mod auth_request;
pub mod browser;
pub mod charset;
pub mod dav;
pub mod empty_gif;
pub mod flv;
pub mod geo;
pub mod gunzip;
pub mod gzip;
pub mod headers;
pub mod limit;
pub mod log;
pub mod mirror;
pub mod not_modified;
pub mod observe;
pub mod proxy;
pub mod random_index;
pub mod range;
pub mod realip;
pub mod referer;
pub mod rewrite;
pub mod secure_link;
pub mod ssi;
pub mod static_files;
pub mod stub_status;
pub mod sub_filter;
pub mod upstream;
pub mod userid;
pub mod v2;
pub mod v3;
