//! Linux system calls the rest of Portico needs and neither the standard library nor rustix
//! offers safely, and the global allocator. Every `unsafe` block of the project lives under
//! this module.

#![allow(unsafe_code)]

pub mod alloc;
pub mod linux;
pub mod read_into;
