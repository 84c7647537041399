//! Linux system calls the rest of Portico needs and neither the standard library nor rustix
//! offers safely, the global allocator, and boxing a value where it is made. Every `unsafe`
//! block of the project lives under this module.

#![allow(unsafe_code)]

pub mod alloc;
pub mod boxed;
pub mod linux;
pub mod read_into;
