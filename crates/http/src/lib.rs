//! The HTTP request pipeline.
//!
//! Config path: [`assembly::load::load_http`] turns the `http` block into an immutable
//! [`HttpConf`] (servers, locations, listen sockets, compiled templates), with directives
//! owned by the modules below ([`assembly::modules`] lists them).
//!
//! Request path: `runtime` accepts a connection and hands it to
//! [`assembly::connection::serve`], which reads heads with `http1`, chooses the virtual
//! server, runs the [`assembly::phases`] (rewrite, location, content), sends the response
//! through the header filter in [`assembly::send`] and writes the access log. Everything a
//! request needs from disk goes through the generation's thread pool.
//!
//! The tree is the layering: [`kernel`] (requests, responses, the worker, configuration
//! machinery, variables, file access, the send path's primitives) names no module;
//! [`modules`] holds one folder per nginx module (its directives, settings, handler,
//! filters, variables), each naming the kernel and itself; [`assembly`] is the one place
//! that names every module (directive tables, the phase runner, the filter order, the
//! connection loops). `tests/layers.rs` checks it by path.

pub mod assembly;
pub mod kernel;
pub mod modules;
#[cfg(test)]
mod testing;

pub use kernel::conf::HttpConf;
pub use kernel::worker::{Generation, HttpWorker};
