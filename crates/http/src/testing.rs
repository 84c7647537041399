//! The request path in a unit test: a worker made from configuration text, serving a
//! connection whose other end the test holds (a Unix socket pair in this process), on a
//! runtime whose clock stands still until every task waits, then jumps to the next timer.
//! A test of a 60-second timeout therefore takes no time, and nothing sleeps.

use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::time::Duration;

use conf::sources::MemorySources;
use logging::{ErrorLog, LogFiles};
use runtime::accept::ConnectionGauge;
use runtime::{Clock, PeerAddress, Stream};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;

use crate::kernel::worker::{Generation, HttpWorker};
use crate::{assembly::load::load_http, kernel::conf::LoadEnv};

/// Runs `test` on a current-thread runtime with a paused clock (and a `LocalSet`, as the
/// workers have): time passes only when every task waits, and then at once.
pub(crate) fn run<F: Future<Output = ()>>(test: F) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .expect("a test runtime");
    tokio::task::LocalSet::new().block_on(&runtime, test);
}

/// A worker serving the `http` block it was made from.
pub(crate) struct Server {
    pub(crate) worker: Rc<HttpWorker>,
    gauge: Rc<ConnectionGauge>,
    prefix: Prefix,
    // Kept so that the worker sees `Running`.
    _phase: tokio::sync::watch::Sender<runtime::worker::Phase>,
}

/// A temporary prefix directory, removed with the server.
struct Prefix(PathBuf);

impl Drop for Prefix {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Server {
    /// A server for the inside of an `http` block; `logs/error.log` under its prefix gets
    /// every level from `debug` up (`error_log logs/error.log debug;` is added first).
    pub(crate) fn new(http_block: &str) -> Server {
        static NUMBER: AtomicU64 = AtomicU64::new(0);
        let number = NUMBER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("portico-session-{}-{number}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("logs")).expect("a prefix");
        let prefix = Prefix(dir);
        let text =
            format!("http {{\nerror_log logs/error.log debug;\nroot html;\n{http_block}\n}}\n");
        let conf_path = Path::new("/session/portico.conf");
        let sources = MemorySources::new().with(conf_path, text.as_str());
        let tree = conf::parse_file(conf_path, &sources).expect("the configuration parses");
        let http = tree
            .directives
            .iter()
            .find(|directive| directive.name == "http")
            .expect("an http block");
        let mut log_files = LogFiles::default();
        let env = LoadEnv {
            prefix: &prefix.0,
            main_error_log: Arc::new(ErrorLog::new(Vec::new())),
            log_files: &mut log_files,
            hostname: "testhost".to_owned(),
            outer_directives: &[],
        };
        let block = http.block.as_deref().unwrap_or_default();
        let http = load_http(block, env).expect("the http block loads");
        let pools =
            threadpool::ThreadPools::start(&[], None).expect("the default pool starts lazily");
        let access_log_buffers = Arc::new(crate::kernel::log_buffers::SharedBuffers::with_slots(
            http.access_log_buffers,
        ));
        let generation = Arc::new(Generation {
            number: 1,
            http,
            worker_pools: vec![pools.clone()],
            connection_ids: Arc::new(AtomicU64::new(0)),
            temp_numbers: AtomicU64::new(0),
            hostname: "testhost".to_owned(),
            error_log: Arc::new(ErrorLog::new(Vec::new())),
            debug_connections: None,
            cache_zones: Vec::new(),
            log_files: Default::default(),
            access_log_buffers,
        });
        let (phase, watched) = tokio::sync::watch::channel(runtime::worker::Phase::Running);
        let worker = Rc::new(HttpWorker::new(
            generation,
            pools,
            Rc::new(Clock::new()),
            watched,
            Arc::new(AtomicBool::new(false)),
            0,
        ));
        Server {
            worker,
            gauge: Rc::new(ConnectionGauge::new(1024)),
            prefix,
            _phase: phase,
        }
    }

    /// A new connection to the server's first listening socket; the server side runs as
    /// a local task of the test's runtime.
    pub(crate) fn connect(&self) -> UnixStream {
        let (ours, theirs) = UnixStream::pair().expect("a socket pair");
        let guard = self.gauge.try_acquire().expect("under worker_connections");
        let worker = Rc::clone(&self.worker);
        let serve = crate::assembly::connection::serve(
            worker,
            0,
            Stream::Unix(theirs),
            PeerAddress::Unix,
            guard,
        );
        tokio::task::spawn_local(runtime::clock::turn_clocked(serve));
        ours
    }

    /// The server's prefix directory (`root html` is `PREFIX/html`).
    pub(crate) fn prefix_path(&self) -> &Path {
        &self.prefix.0
    }

    /// The error log as written so far.
    pub(crate) fn error_log(&self) -> String {
        let path = self.prefix.0.join("logs/error.log");
        String::from_utf8_lossy(&std::fs::read(path).unwrap_or_default()).into_owned()
    }
}

/// Reads until the server closes the connection, or `limit` of (test) time has passed;
/// returns what was read and whether the server closed.
pub(crate) async fn read_until_closed(client: &mut UnixStream, limit: Duration) -> (Vec<u8>, bool) {
    let mut received = Vec::new();
    let deadline = tokio::time::Instant::now() + limit;
    let mut buffer = [0u8; 16 * 1024];
    loop {
        match tokio::time::timeout_at(deadline, client.read(&mut buffer)).await {
            Err(_) => return (received, false),
            Ok(Ok(0)) | Ok(Err(_)) => return (received, true),
            Ok(Ok(count)) => received.extend_from_slice(&buffer[..count]),
        }
    }
}

/// Writes all of `bytes`.
pub(crate) async fn send(client: &mut UnixStream, bytes: &[u8]) {
    client.write_all(bytes).await.expect("the server reads");
}

#[cfg(test)]
mod tests;
