//! The send path's primitives: framing, the head writer, bodies from memory, files and
//! pieces, compression of stored pieces, the rate limit. The filters' order and the
//! sending of a response are the assembly's (`assembly::send`).

pub mod body;
pub mod coding;
pub(crate) mod compress;
pub(crate) mod file;
pub mod framing;
pub(crate) mod head;
pub mod pieces;
pub mod pull;
pub mod rate;
pub(crate) mod turn;
