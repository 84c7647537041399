use std::path::Path;
use std::time::Instant;

use http1::request::BodyFraming;
use runtime::{PeerAddress, Stream};
use threadpool::PoolSettings;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;

use super::*;
use crate::assembly::connection::Connection;
use crate::kernel::request::ConnectionInfo;

fn settings(temp_root: &Path, buffer_size: usize, in_file_only: BodyInFileOnly) -> BodySettings {
    BodySettings {
        buffer_size,
        max_size: 1024 * 1024,
        timeout: Duration::from_secs(5),
        temp_path: TempPath {
            path: temp_root.to_owned(),
            levels: vec![1],
        },
        in_file_only,
    }
}

fn temp_root(name: &str) -> PathBuf {
    let root = std::env::temp_dir().join(format!("portico-body-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    root
}

fn pool() -> ThreadPool {
    ThreadPool::start(
        &PoolSettings {
            name: "test".to_owned(),
            threads: 2,
            max_queue: 64,
        },
        None,
    )
    .unwrap()
}

fn connection(stream: UnixStream, buffer_size: usize) -> Connection {
    let info = ConnectionInfo {
        id: 1,
        peer: std::cell::Cell::new(PeerAddress::Unix),
        socket_peer: PeerAddress::Unix,
        proxy_protocol: None,
        local: None,
        accepted: Instant::now(),
        requests: 1,
        tls: None,
        debug: false,
    };
    Connection::new(Stream::Unix(stream), info, buffer_size)
}

/// Runs `test` with a server-side connection and the client end of a socket pair.
fn with_pair<F, Fut>(test: F)
where
    F: FnOnce(UnixStream, UnixStream) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let (server, client) = UnixStream::pair().unwrap();
        test(server, client).await;
    });
}

fn memory(body: RequestBody) -> Vec<u8> {
    match body {
        RequestBody::Memory(bytes) => bytes,
        RequestBody::File(file) => panic!("expected memory, got file {:?}", file.path),
    }
}

#[test]
fn small_length_body_stays_in_memory_and_leaves_the_next_request() {
    with_pair(|server, mut client| async move {
        let root = temp_root("small");
        let mut connection = connection(server, 64);
        connection.preload(b"hello");
        client.write_all(b" worldGET / HTTP/1.1\r\n").await.unwrap();
        let mut state = BodyState::new(BodyFraming::Length(11));
        let numbers = AtomicU64::new(1);
        let body = read_body(
            &mut connection.body_source(),
            &mut state,
            &settings(&root, 64, BodyInFileOnly::Off),
            &pool(),
            &numbers,
            false,
        )
        .await
        .unwrap();
        assert_eq!(memory(body), b"hello world");
        assert!(state.is_done());
        assert_eq!(connection.read_ahead.bytes(), b"GET / HTTP/1.1\r\n");
        assert!(!root.exists(), "no temp file for a small body");
    });
}

#[test]
fn chunked_body_across_reads() {
    with_pair(|server, mut client| async move {
        let root = temp_root("chunked");
        let mut connection = connection(server, 8);
        let sender = tokio::spawn(async move {
            for piece in [&b"5\r\nhel"[..], b"lo\r\n6\r\n worl", b"d\r\n0\r\n\r\n"] {
                client.write_all(piece).await.unwrap();
                tokio::task::yield_now().await;
            }
            client
        });
        let mut state = BodyState::new(BodyFraming::Chunked);
        let numbers = AtomicU64::new(1);
        let body = read_body(
            &mut connection.body_source(),
            &mut state,
            &settings(&root, 64, BodyInFileOnly::Off),
            &pool(),
            &numbers,
            false,
        )
        .await
        .unwrap();
        assert_eq!(memory(body), b"hello world");
        drop(sender.await.unwrap());
    });
}

#[test]
fn large_body_goes_to_a_temp_file_removed_after_use() {
    with_pair(|server, mut client| async move {
        let root = temp_root("large");
        let payload: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        let expected = payload.clone();
        let writer = tokio::spawn(async move {
            client.write_all(&payload).await.unwrap();
            client
        });
        let mut connection = connection(server, 512);
        let mut state = BodyState::new(BodyFraming::Length(expected.len() as u64));
        let pool = pool();
        let numbers = AtomicU64::new(7);
        let body = read_body(
            &mut connection.body_source(),
            &mut state,
            &settings(&root, 1024, BodyInFileOnly::Off),
            &pool,
            &numbers,
            false,
        )
        .await
        .unwrap();
        let RequestBody::File(file) = body else {
            panic!("expected a temp file")
        };
        assert_eq!(file.path, root.join("7").join("0000000007"));
        assert_eq!(file.len, expected.len() as u64);
        assert_eq!(std::fs::read(&file.path).unwrap(), expected);
        let path = file.path.clone();
        drop(file);
        pool.shutdown();
        assert!(
            !path.exists(),
            "the temp file is removed once the body is dropped"
        );
        drop(writer.await.unwrap());
        std::fs::remove_dir_all(root).unwrap();
    });
}

#[test]
fn in_file_only_on_keeps_the_file_and_clean_removes_it() {
    for (mode, kept) in [(BodyInFileOnly::On, true), (BodyInFileOnly::Clean, false)] {
        with_pair(|server, _client| async move {
            let root = temp_root(if kept { "keep" } else { "clean" });
            let mut connection = connection(server, 64);
            connection.preload(b"tiny");
            let mut state = BodyState::new(BodyFraming::Length(4));
            let pool = pool();
            let numbers = AtomicU64::new(1);
            let body = read_body(
                &mut connection.body_source(),
                &mut state,
                &settings(&root, 64, mode),
                &pool,
                &numbers,
                false,
            )
            .await
            .unwrap();
            let RequestBody::File(file) = body else {
                panic!("in_file_only writes a file")
            };
            let path = file.path.clone();
            assert_eq!(std::fs::read(&path).unwrap(), b"tiny");
            drop(file);
            pool.shutdown();
            assert_eq!(path.exists(), kept);
            let _ = std::fs::remove_dir_all(root);
        });
    }
}

#[test]
fn chunked_body_over_the_limit_is_too_large() {
    with_pair(|server, _client| async move {
        let root = temp_root("limit");
        let mut connection = connection(server, 64);
        connection.preload(b"a\r\n0123456789\r\n");
        let mut state = BodyState::new(BodyFraming::Chunked);
        let mut limited = settings(&root, 64, BodyInFileOnly::Off);
        limited.max_size = 5;
        let numbers = AtomicU64::new(1);
        let error = read_body(
            &mut connection.body_source(),
            &mut state,
            &limited,
            &pool(),
            &numbers,
            false,
        )
        .await
        .unwrap_err();
        assert!(
            matches!(error, BodyError::TooLarge { received: 10 }),
            "{error:?}"
        );
        assert_eq!(error.status(), 413);
    });
}

#[test]
fn silent_client_times_out_and_closed_client_is_reported() {
    with_pair(|server, client| async move {
        let root = temp_root("timeout");
        let mut connection = connection(server, 64);
        let mut state = BodyState::new(BodyFraming::Length(10));
        let mut quick = settings(&root, 64, BodyInFileOnly::Off);
        quick.timeout = Duration::from_millis(50);
        let numbers = AtomicU64::new(1);
        let error = read_body(
            &mut connection.body_source(),
            &mut state,
            &quick,
            &pool(),
            &numbers,
            false,
        )
        .await
        .unwrap_err();
        assert!(matches!(error, BodyError::TimedOut));
        assert_eq!(error.status(), 408);
        drop(client);
        let error = read_body(
            &mut connection.body_source(),
            &mut state,
            &quick,
            &pool(),
            &numbers,
            false,
        )
        .await
        .unwrap_err();
        assert!(matches!(error, BodyError::Closed));
    });
}

#[test]
fn expect_continue_is_answered_before_reading() {
    with_pair(|server, mut client| async move {
        let root = temp_root("continue");
        let mut connection = connection(server, 64);
        let client_side = tokio::spawn(async move {
            let mut interim = [0u8; 25];
            client.read_exact(&mut interim).await.unwrap();
            client.write_all(b"abc").await.unwrap();
            interim
        });
        let mut state = BodyState::new(BodyFraming::Length(3));
        let numbers = AtomicU64::new(1);
        let body = read_body(
            &mut connection.body_source(),
            &mut state,
            &settings(&root, 64, BodyInFileOnly::Off),
            &pool(),
            &numbers,
            true,
        )
        .await
        .unwrap();
        assert_eq!(memory(body), b"abc");
        assert_eq!(
            &client_side.await.unwrap(),
            b"HTTP/1.1 100 Continue\r\n\r\n"
        );
    });
}

#[test]
fn bad_chunk_framing_is_invalid() {
    with_pair(|server, _client| async move {
        let root = temp_root("invalid");
        let mut connection = connection(server, 64);
        connection.preload(b"zz\r\n");
        let mut state = BodyState::new(BodyFraming::Chunked);
        let numbers = AtomicU64::new(1);
        let error = read_body(
            &mut connection.body_source(),
            &mut state,
            &settings(&root, 64, BodyInFileOnly::Off),
            &pool(),
            &numbers,
            false,
        )
        .await
        .unwrap_err();
        assert_eq!(error.status(), 400);
    });
}
