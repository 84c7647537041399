//! Server-side includes.
pub mod directives;
pub mod parse;
pub mod settings;
