//! Reading a request body for a handler: into memory up to `client_body_buffer_size`,
//! beyond that (or always, with `client_body_in_file_only`) into a temporary file under
//! `client_body_temp_path`, written through the thread pool.

use std::io;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use http1::RequestError;
use threadpool::ThreadPool;

use crate::kernel::body::temp::{RequestBody, TempBody};
use crate::kernel::body::{BodyState, temp};
use crate::kernel::client::{BodyRead, BodySource};
use crate::kernel::core::{BodyInFileOnly, TempPath};

/// The settings of the location that reads the body.
#[derive(Clone, Debug)]
pub(crate) struct BodySettings {
    /// `client_body_buffer_size`: larger bodies go to a temp file.
    pub buffer_size: usize,
    /// `client_max_body_size`; 0 is no limit.
    pub max_size: u64,
    /// `client_body_timeout`: between two reads.
    pub timeout: Duration,
    pub temp_path: TempPath,
    pub in_file_only: BodyInFileOnly,
}

impl BodySettings {
    /// The settings a location's `client_body_*` directives give.
    pub fn from_location(core: &crate::kernel::core::CoreLocation) -> BodySettings {
        BodySettings {
            buffer_size: usize::try_from(core.client_body_buffer_size).unwrap_or(usize::MAX),
            max_size: core.client_max_body_size,
            timeout: core.client_body_timeout,
            temp_path: core.client_body_temp_path.clone(),
            in_file_only: core.client_body_in_file_only,
        }
    }
}

/// Why a body could not be read; each maps to nginx's answer.
#[derive(Debug)]
pub(crate) enum BodyError {
    /// More than `client_max_body_size` arrived (chunked bodies are checked as they come).
    TooLarge { received: u64 },
    /// `client_body_timeout` passed between two reads.
    TimedOut,
    /// The client closed the connection before the body ended.
    Closed,
    /// Bad chunked framing.
    Invalid(RequestError),
    /// A framed stream's body that is not its `content-length` (nginx's words).
    Refused(String),
    /// A temp file could not be created or written.
    File {
        path: PathBuf,
        call: &'static str,
        error: io::Error,
    },
    /// The thread pool refused or lost the task.
    Pool { name: String },
}

impl BodyError {
    /// The status nginx ends the request with.
    pub fn status(&self) -> u16 {
        match self {
            BodyError::TooLarge { .. } => 413,
            BodyError::TimedOut => 408,
            BodyError::Closed => 400,
            BodyError::Invalid(error) => error.status(),
            BodyError::Refused(_) => 400,
            BodyError::File { .. } | BodyError::Pool { .. } => 500,
        }
    }
}

/// Reads the rest of the body described by `state`, starting with the bytes already in
/// the connection's buffer. Sends `100 Continue` first when the client asked for it and
/// nothing of the body has arrived.
pub(crate) async fn read_body(
    source: &mut BodySource<'_>,
    state: &mut BodyState,
    settings: &BodySettings,
    pool: &ThreadPool,
    temp_numbers: &AtomicU64,
    expect_continue: bool,
) -> Result<RequestBody, BodyError> {
    let mut sink = Sink {
        memory: Vec::new(),
        file: None,
        settings,
        pool,
        temp_numbers,
    };
    source.whole_body_wanted();
    if settings.in_file_only != BodyInFileOnly::Off {
        sink.open_file().await?;
    }
    if expect_continue && source.buffered().is_empty() && !state.is_done() {
        source
            .send_continue(settings.timeout)
            .await
            .map_err(|_| BodyError::Closed)?;
    }
    loop {
        while !source.buffered().is_empty() && !state.is_done() {
            let piece = state.next(source.buffered()).map_err(BodyError::Invalid)?;
            sink.memory
                .extend_from_slice(&source.buffered()[piece.payload]);
            source.consume(piece.consumed);
            if piece.consumed == 0 {
                break;
            }
        }
        let received = sink.len();
        if settings.max_size > 0 && received > settings.max_size {
            return Err(BodyError::TooLarge { received });
        }
        if sink.file.is_some() || sink.memory.len() > settings.buffer_size {
            sink.spill().await?;
        }
        if state.is_done() {
            break;
        }
        match source.read_more(settings.timeout).await {
            BodyRead::More => {}
            BodyRead::TimedOut => return Err(BodyError::TimedOut),
            BodyRead::Closed => return Err(BodyError::Closed),
            BodyRead::Refused(message) => return Err(BodyError::Refused(message)),
        }
    }
    sink.finish().await
}

/// Where body bytes go: memory first, a temp file once they outgrow the buffer.
struct Sink<'a> {
    memory: Vec<u8>,
    file: Option<TempBody>,
    settings: &'a BodySettings,
    pool: &'a ThreadPool,
    temp_numbers: &'a AtomicU64,
}

impl Sink<'_> {
    fn len(&self) -> u64 {
        self.file.as_ref().map_or(0, |file| file.len) + self.memory.len() as u64
    }

    async fn open_file(&mut self) -> Result<(), BodyError> {
        let number = self.temp_numbers.fetch_add(1, Ordering::Relaxed);
        let first = temp::temp_file_path(&self.settings.temp_path, number);
        let dir = self.settings.temp_path.clone();
        let created = run(self.pool, move || temp::create_numbered(&dir, number)).await?;
        let (file, path) = created.map_err(|error| BodyError::File {
            path: first,
            call: "open",
            error,
        })?;
        self.file = Some(TempBody {
            path,
            file: Arc::new(file),
            len: 0,
            keep: self.settings.in_file_only == BodyInFileOnly::On,
            pool: self.pool.clone(),
        });
        Ok(())
    }

    /// Moves what is in memory to the file.
    async fn spill(&mut self) -> Result<(), BodyError> {
        if self.file.is_none() {
            self.open_file().await?;
        }
        if self.memory.is_empty() {
            return Ok(());
        }
        let Some(body) = self.file.as_mut() else {
            return Ok(());
        };
        let data = std::mem::take(&mut self.memory);
        let file = Arc::clone(&body.file);
        let offset = body.len;
        let written = run(self.pool, move || {
            file.write_all_at(&data, offset).map(|()| data)
        })
        .await?;
        let mut data = written.map_err(|error| BodyError::File {
            path: body.path.clone(),
            call: "write",
            error,
        })?;
        body.len += data.len() as u64;
        data.clear();
        self.memory = data;
        Ok(())
    }

    async fn finish(mut self) -> Result<RequestBody, BodyError> {
        if self.file.is_some() {
            self.spill().await?;
        }
        match self.file.take() {
            Some(file) => Ok(RequestBody::File(file)),
            None => Ok(RequestBody::Memory(self.memory)),
        }
    }
}

async fn run<T: Send + 'static>(
    pool: &ThreadPool,
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, BodyError> {
    let lost = || BodyError::Pool {
        name: pool.name().to_owned(),
    };
    match pool.submit_as(threadpool::TaskKind::Write, work) {
        Ok(completion) => completion.await.map_err(|_| lost()),
        Err(_) => Err(lost()),
    }
}

#[cfg(test)]
mod tests;
