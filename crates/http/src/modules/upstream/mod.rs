//! The `upstream` block's directives (`ngx_http_upstream_module`); the groups they build
//! are the kernel's (`kernel::upstream`).

pub mod directives;
pub mod sticky;
