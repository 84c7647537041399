//! The assembly: the one place that names every module. The directive tables and scope
//! composition (`modules`, `load`), the phase runner (`phases`), the filter order and the
//! sending of a response (`send`), and the connection loops of HTTP/1 (`connection`),
//! HTTP/2 (`v2`) and HTTP/3 (`v3`), whose streams share `stream_head` and `stream_body`.

pub mod connection;
pub(crate) mod connection_open;
pub mod load;
pub mod modules;
pub mod phases;
pub mod send;
pub(crate) mod stream_body;
pub(crate) mod stream_head;
pub(crate) mod v2;
pub mod v3;
