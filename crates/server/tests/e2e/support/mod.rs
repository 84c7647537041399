//! The e2e harness: a running `portico` per test ([`Instance`]), a raw client ([`Client`]),
//! the command-line runner ([`cli::run`]) and deadline polling ([`wait`]).

#![allow(dead_code)]

/// Servers started by a test and stopped by their pid, temporary directories: the helpers
/// of `crates/cgi`'s real-server tests, shared here for PHP-FPM and uWSGI.
#[path = "../../../../cgi/tests/real_servers/support.rs"]
pub mod app_servers;
pub mod cli;
pub mod client;
pub mod clock;
pub mod dns;
pub mod dnsmasq;
pub mod h2;
pub mod h3;
pub mod instance;
pub mod log;
pub mod mariadb;
pub mod php_fpm;
pub mod ports;
pub mod prefix;
pub mod proc_net;
pub mod proxy;
pub mod slow_disk;
pub mod tls;
pub mod upstream;
pub mod wait;
pub mod wordpress;

pub use client::{Client, Ending, ReadError, Response, get, get_host, get_keepalive};
pub use instance::{Builder, Instance};
pub use prefix::TempPrefix;
pub use rustix::process::Signal;
pub use wait::{Gate, PATIENCE, poll, wait_until};
