//! `grpc_pass`: requests passed to gRPC servers, one HTTP/2 stream each, over `grpc://`
//! (h2c) or `grpcs://` (TLS with ALPN `h2`). The proxy's upstream engine carries it
//! (peers, upstream groups and their balancers, tries, timeouts, TLS) with the
//! `http2` crate's client role on the wire: the request head the proxy writes becomes the
//! stream's HEADERS (`request.rs`), the body its DATA as the client sends it, and the
//! response head, DATA and trailers come back as events (`exchange.rs`, `body.rs`). The
//! upstream's trailers reach the client after the body, as an HTTP/1.1 chunked body's
//! last chunk or an HTTP/2 HEADERS frame with END_STREAM.

pub mod body;
pub mod directives;
pub(crate) mod exchange;
pub(crate) mod request;
