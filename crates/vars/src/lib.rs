//! Templates: text with `$variables`, nginx's "complex values".
//!
//! A directive value such as `"x $uri x"` or `$remote_addr - $remote_user [$time_local]` is
//! compiled once, at config load, into a [`Template`]: literal bytes and references to
//! variables. The variable type `V` belongs to the caller (`http` resolves each name to its
//! own enum, so a request never looks a variable up by name). Evaluating a template appends
//! its bytes to a buffer through an [`Evaluator`] the caller provides.
//!
//! This crate does no I/O and knows no variable: it only knows nginx's syntax for them
//! (`$name`, `${name}`, `$1`..`$9`).

mod template;

pub use template::{Evaluator, Segment, Template, TemplateError};
