use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

use cache::format::{self, EntryHeader};

use super::read::{FIRST_READ, SMALL_BODY_MAX};
use super::*;

/// An entry file of `key_text` with a `Content-Length` head and `body`, in a directory of
/// its own; its path.
fn entry_file(name: &str, key_text: &[u8], body: &[u8]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("portico-lookup-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a directory");
    let key = Key::new(&[key_text]);
    let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len());
    let header_start = format::header_start_for(key_text.len());
    let header = EntryHeader {
        valid_sec: 10,
        date: 5,
        last_modified: -1,
        crc32: key.crc32,
        header_start: header_start as u16,
        body_start: (header_start + head.len()) as u16,
        ..EntryHeader::default()
    };
    let mut bytes = Vec::new();
    format::encode(&header, key_text, &mut bytes);
    bytes.extend_from_slice(head.as_bytes());
    bytes.extend_from_slice(body);
    let path = dir.join("entry");
    std::fs::write(&path, bytes).expect("write the entry");
    path
}

fn read(path: &std::path::Path, key_text: &[u8], known: Option<u64>) -> Entry {
    match read_entry(
        cache::store::open_entry(path).map(|(file, _)| file),
        Arc::from(path),
        &Key::new(&[key_text]),
        key_text,
        known,
        4096,
    ) {
        Ok(entry) => entry,
        Err(_) => panic!("the entry reads"),
    }
}

#[test]
fn a_small_entry_the_index_knows_is_read_whole_without_its_times() {
    let key = b"http://backend/small";
    let path = entry_file("small", key, &[7u8; 4096]);
    let inode = std::fs::metadata(&path).expect("stat").ino();
    let known = read(&path, key, Some(12345));
    assert_eq!(known.size, std::fs::metadata(&path).expect("stat").len());
    assert_eq!(known.uniq, 12345, "the index's inode, not a fstat's");
    assert_eq!(known.written, 0, "no time without a fstat");
    assert_eq!(known.body.as_deref(), Some(&[7u8; 4096][..]));
    // Unknown to the index (or purge rules to compare with): the file's own facts.
    let stated = read(&path, key, None);
    assert_eq!((stated.size, stated.uniq), (known.size, inode));
    assert!(stated.written > 0);
    assert_eq!(stated.body, known.body);
}

#[test]
fn larger_bodies_stay_in_the_file() {
    let key = b"http://backend/large";
    // Past the body size kept in memory, within the first read.
    let path = entry_file("medium", key, &[1u8; SMALL_BODY_MAX + 1]);
    let entry = read(&path, key, Some(1));
    assert!(entry.body.is_none());
    assert_eq!(entry.uniq, 1);
    // Past the first read: its size comes from a fstat.
    let path = entry_file("large", key, &[2u8; FIRST_READ * 2]);
    let entry = read(&path, key, Some(1));
    assert!(entry.body.is_none());
    assert_eq!(entry.size, std::fs::metadata(&path).expect("stat").len());
    assert_eq!(entry.uniq, std::fs::metadata(&path).expect("stat").ino());
    assert_eq!(entry.body_len(), (FIRST_READ * 2) as u64);
}

/// The first read's buffer stays with its thread: a small entry read after a larger one
/// has its own bytes only, head and body.
#[test]
fn entries_read_one_after_another_keep_their_own_bytes() {
    let (large_key, small_key) = (&b"http://backend/first"[..], &b"http://backend/then"[..]);
    let large = entry_file("first", large_key, &[3u8; SMALL_BODY_MAX]);
    let small = entry_file("then", small_key, b"tiny");
    for _ in 0..2 {
        let entry = read(&large, large_key, Some(1));
        assert_eq!(entry.body.as_deref(), Some(&[3u8; SMALL_BODY_MAX][..]));
        let entry = read(&small, small_key, Some(2));
        assert_eq!(entry.body.as_deref(), Some(&b"tiny"[..]));
        assert_eq!(entry.size, std::fs::metadata(&small).expect("stat").len());
        assert_eq!(
            &entry.head[..],
            b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n"
        );
    }
}
