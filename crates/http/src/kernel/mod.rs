//! The kernel: what every module builds on, naming none of them.

pub mod body;
pub mod client;
pub mod conf;
pub(crate) mod connection_log;
pub(crate) mod connection_state;
pub mod core;
pub mod file;
pub mod find;
pub mod gzip_ok;
pub mod log_buffers;
pub mod map;
pub mod module_state;
pub mod pool_fs;
pub mod proxy_protocol;
pub mod request;
pub mod request_log;
pub mod response;
pub mod send;
pub mod special;
pub mod ssl;
pub mod subrequest;
pub mod upstream;
pub mod variables;
pub mod worker;
