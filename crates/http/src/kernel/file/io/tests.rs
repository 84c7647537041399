//! The non-blocking read path against real page-cache states. The files live in the
//! system's temp directory, which must be a disk file system (not tmpfs) for pages to be
//! evicted.

use std::path::PathBuf;

use super::*;

/// Large enough that its halves fall in different page-cache folios.
const LEN: usize = 4 * 1024 * 1024;

struct TestFile {
    path: PathBuf,
    file: File,
    bytes: Vec<u8>,
}

impl Drop for TestFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

fn test_file(name: &str) -> TestFile {
    let path = std::env::temp_dir().join(format!("portico-io-{name}-{}", std::process::id()));
    let bytes: Vec<u8> = (0..LEN).map(|index| (index * 7 % 251) as u8).collect();
    std::fs::write(&path, &bytes).unwrap();
    let file = File::open(&path).unwrap();
    // Written pages are dirty; only clean pages can be dropped from the cache.
    file.sync_all().unwrap();
    TestFile { path, file, bytes }
}

/// Drops `[offset, end)` of the file from page cache.
fn evict(file: &File, offset: u64) {
    rustix::fs::fadvise(file, offset, None, rustix::fs::Advice::DontNeed).unwrap();
    assert!(
        !runtime::sys::linux::range_in_core(file, offset, LEN as u64 - offset).unwrap(),
        "the temp directory must be on a disk file system for this test"
    );
}

fn cache_all(file: &File) {
    let mut buffer = vec![0u8; LEN];
    read_chunk(file, &mut buffer);
    assert!(runtime::sys::linux::range_in_core(file, 0, LEN as u64).unwrap());
}

fn read_chunk(file: &File, buffer: &mut [u8]) {
    let mut filled = 0;
    while filled < buffer.len() {
        let read = file.read_at(&mut buffer[filled..], filled as u64).unwrap();
        assert!(read > 0);
        filled += read;
    }
}

#[test]
fn cached_data_is_read_whole_without_waiting() {
    let test = test_file("cached");
    cache_all(&test.file);
    let mut buffer = Vec::new();
    let read = read_nowait(&test.file, 0, &mut buffer, LEN).unwrap();
    assert_eq!(
        read,
        NowaitRead {
            filled: LEN,
            end: NowaitEnd::Complete
        }
    );
    assert_eq!(buffer, test.bytes);
}

#[test]
fn partly_cached_data_stops_where_the_cache_ends() {
    let test = test_file("partly");
    cache_all(&test.file);
    let half = LEN as u64 / 2;
    evict(&test.file, half);
    // A no-wait read still starts the kernel's asynchronous readahead when it meets a page
    // marked for it, which can bring the evicted half back while the read goes on (this
    // test then failed about once in three runs beside other tests). Without readahead on
    // this file, the cache ends where it was cut.
    rustix::fs::fadvise(&test.file, 0, None, rustix::fs::Advice::Random).unwrap();
    let mut buffer = Vec::new();
    let read = read_nowait(&test.file, 0, &mut buffer, LEN).unwrap();
    assert_eq!(read.end, NowaitEnd::WouldBlock);
    assert_eq!(read.filled, LEN / 2, "exactly the cached half");
    assert_eq!(buffer[..read.filled], test.bytes[..read.filled]);
    // The rest, sent by a pool thread's sendfile, completes the body (to a blocking
    // socket here, so that one call sends it all).
    let (sender, receiver) = socket_pair();
    rustix::io::ioctl_fionbio(&sender, false).unwrap();
    let reader = std::thread::spawn(move || read_all(receiver));
    let rest = sendfile_from_pool(&sender, &test.file, half, half as usize).unwrap();
    assert_eq!(
        rest,
        PoolSend {
            sent: half as usize,
            end: PoolSendEnd::Complete
        }
    );
    drop(sender);
    assert!(reader.join().unwrap() == test.bytes[LEN / 2..]);
}

/// A connected pair of Unix sockets: the first (the sending side) non-blocking, as a
/// client's socket is.
fn socket_pair() -> (OwnedFd, std::os::unix::net::UnixStream) {
    let (sender, receiver) = std::os::unix::net::UnixStream::pair().unwrap();
    sender.set_nonblocking(true).unwrap();
    (OwnedFd::from(sender), receiver)
}

fn read_all(mut receiver: std::os::unix::net::UnixStream) -> Vec<u8> {
    let mut received = Vec::new();
    std::io::Read::read_to_end(&mut receiver, &mut received).unwrap();
    received
}

#[test]
fn sendfile_from_pool_stops_when_the_socket_is_full() {
    let test = test_file("socket-full");
    let (sender, receiver) = socket_pair();
    let result = sendfile_from_pool(&sender, &test.file, 0, LEN).unwrap();
    assert_eq!(result.end, PoolSendEnd::SocketFull);
    assert!(result.sent > 0 && result.sent < LEN, "{result:?}");
    // Nothing more fits until the client reads.
    let again = sendfile_from_pool(&sender, &test.file, result.sent as u64, LEN).unwrap();
    assert_eq!(
        again,
        PoolSend {
            sent: 0,
            end: PoolSendEnd::SocketFull
        }
    );
    drop(receiver);
    // A socket whose client went away fails.
    assert!(sendfile_from_pool(&sender, &test.file, 0, 4096).is_err());
}

#[test]
fn uncached_data_would_block_and_reads_nothing() {
    let test = test_file("uncached");
    evict(&test.file, 0);
    let mut buffer = Vec::new();
    let read = read_nowait(&test.file, 0, &mut buffer, 4096).unwrap();
    assert_eq!(
        read,
        NowaitRead {
            filled: 0,
            end: NowaitEnd::WouldBlock
        }
    );
}

#[test]
fn end_of_file_ends_the_read_early() {
    let test = test_file("eof");
    cache_all(&test.file);
    let mut buffer = Vec::new();
    let read = read_nowait(&test.file, LEN as u64 - 100, &mut buffer, 1000).unwrap();
    assert_eq!(
        read,
        NowaitRead {
            filled: 100,
            end: NowaitEnd::EndOfFile
        }
    );
    assert_eq!(buffer.len(), 100);
    let past = read_nowait(&test.file, LEN as u64 + 10, &mut buffer, 1000).unwrap();
    assert_eq!((past.filled, past.end), (0, NowaitEnd::EndOfFile));
}

#[test]
fn a_file_shorter_than_announced_or_truncated_reads_short() {
    let test = test_file("truncated");
    cache_all(&test.file);
    let mut buffer = Vec::new();
    let first = read_nowait(&test.file, 0, &mut buffer, 64 * 1024).unwrap();
    assert_eq!(first.end, NowaitEnd::Complete);
    // Truncated while being served: the next piece finds the file ended.
    let writer = std::fs::OpenOptions::new()
        .write(true)
        .open(&test.path)
        .unwrap();
    writer.set_len(100 * 1024).unwrap();
    buffer.clear();
    let second = read_nowait(&test.file, 64 * 1024, &mut buffer, 64 * 1024).unwrap();
    assert_eq!(
        second,
        NowaitRead {
            filled: 36 * 1024,
            end: NowaitEnd::EndOfFile
        }
    );
    let (sender, receiver) = socket_pair();
    assert_eq!(
        sendfile_from_pool(&sender, &test.file, 64 * 1024, 64 * 1024).unwrap(),
        PoolSend {
            sent: 36 * 1024,
            end: PoolSendEnd::EndOfFile
        }
    );
    drop(sender);
    assert!(read_all(receiver) == test.bytes[64 * 1024..100 * 1024]);
}

#[test]
fn direct_reads_return_the_exact_unaligned_range() {
    let test = test_file("direct");
    let file = File::open(&test.path).unwrap();
    let direct = enable_directio(&file);
    let mut buffer = vec![0u8; 10_000];
    let read = read_direct(&file, 1234, &mut buffer, 4096).unwrap();
    assert_eq!(read, 10_000, "O_DIRECT on: {direct}");
    assert_eq!(buffer[..], test.bytes[1234..11_234]);
    let tail = read_direct(&file, LEN as u64 - 10, &mut buffer, 4096).unwrap();
    assert_eq!(tail, 10);
    assert_eq!(buffer[..10], test.bytes[LEN - 10..]);
}

/// The sampled probe answers for cached ranges, finds a hole at a probed page, and
/// reports the file's end.
#[test]
fn the_probe_finds_cached_ranges_and_holes() {
    let test = test_file("probe");
    cache_all(&test.file);
    let mut scratch = Vec::new();
    let len = LEN as u64;
    assert_eq!(
        probe_cached(&test.file, 0, len, &mut scratch),
        NowaitEnd::Complete
    );
    assert_eq!(
        probe_cached(&test.file, 5, 0, &mut scratch),
        NowaitEnd::Complete
    );
    assert_eq!(
        probe_cached(&test.file, len - 10, 20, &mut scratch),
        NowaitEnd::EndOfFile,
        "the range's last byte is past the end"
    );
    // Where large folios cannot straddle it (as in the test above).
    let hole = len / 2;
    assert_eq!(hole % PROBE_STRIDE, 0);
    evict(&test.file, hole);
    // No readahead on this descriptor: a probe next to the hole must not fill it.
    rustix::fs::fadvise(&test.file, 0, None, rustix::fs::Advice::Random).unwrap();
    assert_eq!(
        probe_cached(&test.file, 0, hole, &mut scratch),
        NowaitEnd::Complete,
        "everything before the hole is cached"
    );
    // The probe at `hole` misses (and may start readahead there, so nothing is asked after).
    assert_eq!(
        probe_cached(&test.file, 1, hole + 100, &mut scratch),
        NowaitEnd::WouldBlock
    );
}
