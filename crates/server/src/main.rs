//! The `portico` binary: nginx's command line in front of the master.

mod cache_zones;
mod cli;
mod config;
mod directives;
mod generation;
mod limit_zones;
mod listeners;
mod master;
mod pid_file;
mod stream_accept;
mod upgrade;
mod work_dirs;

use std::process::ExitCode;

/// The system allocator with medium blocks recycled per thread (`runtime::sys::alloc`).
#[global_allocator]
static ALLOCATOR: runtime::sys::alloc::Recycling = runtime::sys::alloc::Recycling;

fn main() -> ExitCode {
    match cli::parse(std::env::args_os()) {
        Ok(options) => master::main(options),
        Err(message) => {
            master::say(&message);
            ExitCode::FAILURE
        }
    }
}
