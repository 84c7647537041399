//! End-to-end tests: each starts the real `portico` binary with a real config on free ports
//! and talks to it over sockets. One module per directive family, named like nginx-tests.
//! The harness is in `support/`; `PORTICO_E2E_KEEP=1` keeps every test's prefix directory.

mod support;

mod access;
mod access_log;
mod add_header;
mod aio;
mod aio_slow_disk;
mod autoindex;
mod charset;
mod cli;
mod config;
mod core;
mod error_log;
mod error_page;
mod expires;
mod http_body;
mod http_core;
mod http_disable_symlinks;
mod http_header_buffers;
mod http_host;
mod http_keepalive;
mod http_listen;
mod http_location;
mod http_server_name;
mod http_timeouts;
mod http_try_files;
mod http_uri;
mod limit_rate;
mod map;
mod not_modified;
mod open_file_cache;
mod proxy;
mod proxy_directives;
mod range;
mod reload;
mod r#return;
mod rewrite;
mod split_clients;
mod static_files;
mod thread_pool;
mod trailers;
mod upstream;
mod variables;
