//! Workers and the plumbing under them.
//!
//! A worker is an OS thread running its own single-threaded tokio runtime: a connection is
//! accepted, served and closed on one worker, and nothing is stolen by another thread. The
//! master opens [`listener::Listener`]s once; each worker registers its own duplicate of every
//! listening socket, so a reload starts new workers on the very same sockets and not one
//! connection is refused while the old workers drain.
//!
//! This crate owns the worker thread ([`worker`]), accepting with `worker_connections` and
//! `multi_accept` ([`accept`]), the per-worker cached clock ([`clock`]), the connection stream
//! type ([`stream`]) and every Linux system call that needs `unsafe` ([`sys`]). It knows
//! nothing of HTTP: `http` gets accepted streams and does the rest.

pub mod accept;
pub mod clock;
pub mod listener;
pub mod stream;
pub mod sys;
pub mod ticker;
pub mod tls;
pub mod worker;

pub use accept::{
    AcceptSettings, Accepted, ConnectionGauge, ConnectionGuard, WorkerListener, accept_loop,
};
pub use clock::Clock;
pub use listener::{Inherited, ListenAddress, ListenError, ListenOptions, Listener};
pub use stream::{PeerAddress, Stream};
pub use worker::{BeforePark, Phase, ThreadStart, WorkerContext, WorkerHandle, WorkerSpec};
