//! The HTTP/2 connection driver: the connection, its streams and their request bodies
//! (the module's directives and settings are `modules::v2`).

mod body;
pub(crate) mod connection;
mod stream;
