//! The HTTP request pipeline.
//!
//! Config path: [`conf::load_http`] turns the `http` block into an immutable [`HttpConf`]
//! (servers, locations, listen sockets, compiled templates), with directives owned by the
//! modules below ([`modules`] lists them).
//!
//! Request path: `runtime` accepts a connection and hands it to [`connection::serve`], which
//! reads heads with `http1`, chooses the virtual server, runs the [`phases`] (rewrite,
//! location, content), sends the response through the header filter in [`send`] and writes
//! the access log. Everything a request needs from disk goes through the generation's
//! thread pool.

pub mod access;
pub mod addition;
pub mod auth_basic;
pub mod auth_request;
pub mod body;
pub mod charset;
pub mod client;
pub mod conf;
pub mod connection;
mod connection_log;
mod connection_open;
mod connection_state;
pub mod core;
pub mod file;
pub mod find;
pub mod gateway;
pub mod gunzip;
pub mod gzip;
pub mod gzip_ok;
pub mod headers;
pub mod limit;
pub mod log;
pub mod log_buffers;
pub mod map;
pub mod mirror;
pub mod modules;
pub mod not_modified;
pub mod observe;
pub mod phases;
pub mod pool_fs;
pub mod proxy;
pub mod proxy_protocol;
pub mod realip;
pub mod request;
pub mod request_log;
pub mod response;
pub mod rewrite;
pub mod send;
pub mod special;
pub mod ssi;
pub mod ssl;
pub mod static_files;
pub mod stub_status;
pub mod sub_filter;
pub mod subrequest;
#[cfg(test)]
mod testing;
pub mod upstream;
pub mod v2;
pub mod variables;
pub mod worker;

pub use conf::HttpConf;
pub use worker::{Generation, HttpWorker};
