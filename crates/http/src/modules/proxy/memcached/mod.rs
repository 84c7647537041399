//! `memcached_pass`: the value memcached keeps under `$memcached_key` as the response
//! body. The proxy's upstream engine carries it (peers, tries, keep-alive, timeouts) with
//! memcached's text protocol on the wire: one `get` per request (`request.rs`) and the
//! `VALUE` line read as a head (`response.rs`); a key memcached does not have is a 404
//! that goes to `error_page`, as nginx's module intercepts it.

pub mod directives;
pub(crate) mod request;
pub(crate) mod response;
