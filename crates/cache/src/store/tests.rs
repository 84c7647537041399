use std::io::Write;
use std::os::unix::fs::PermissionsExt;

use super::*;
use crate::format::{self, EntryHeader};
use crate::key::{Key, Layout, Levels};
use crate::test_dir::TestDir;

fn layout(dir: &TestDir) -> Layout {
    Layout {
        root: dir.path().to_path_buf(),
        levels: Levels::parse("1:2").expect("levels"),
    }
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).expect("stat").permissions().mode() & 0o777
}

#[test]
fn temp_files_create_their_directories() {
    let dir = TestDir::new("temp");
    let key = Key::new(&[b"http://backend/a"]);
    let wanted = layout(&dir).temp_path(&key, 7);
    let (mut file, path) = create_temp(&wanted).expect("created");
    assert_eq!(path, wanted);
    file.write_all(b"x").expect("write");
    assert_eq!(mode(&path), 0o600);
    let level = path.parent().expect("level 2");
    assert_eq!(mode(level), 0o700);
    assert_eq!(mode(level.parent().expect("level 1")), 0o700);

    // Taken: the next number.
    let (_, second) = create_temp(&wanted).expect("created");
    assert_eq!(second, layout(&dir).temp_path(&key, 8));
    assert_eq!(std::fs::read(&path).expect("read"), b"x", "not truncated");
}

#[test]
fn a_taken_name_without_a_number_is_an_error() {
    let dir = TestDir::new("taken");
    let path = dir.path().join("plain");
    create_temp(&path).expect("created");
    let error = create_temp(&path).expect_err("taken");
    assert_eq!(error.kind(), ErrorKind::AlreadyExists);
}

#[test]
fn taken_names_are_skipped_for_the_next_one_given() {
    let dir = TestDir::new("among");
    // A crash left 0000000001 and 0000000002 (in their level directories).
    let name = |number: u64| {
        let digits = format!("{number:010}");
        dir.path().join(&digits[9..]).join(digits)
    };
    for number in 1..=2 {
        create_temp(&name(number)).expect("a leftover");
    }
    let mut next = 1;
    let (_, path) = create_temp_among(|| {
        let path = name(next);
        next += 1;
        Some(path)
    })
    .expect("a free name");
    assert_eq!(
        path,
        name(3),
        "the first free one, in its own level directory"
    );
    let mut given = vec![name(1), name(2)].into_iter();
    let error = create_temp_among(|| given.next()).expect_err("every name given is taken");
    assert_eq!(error.kind(), ErrorKind::AlreadyExists);
}

#[test]
fn next_temp_names_wrap() {
    assert_eq!(
        next_temp_name(Path::new("/a/b.0000000009")),
        Some(PathBuf::from("/a/b.0000000010"))
    );
    assert_eq!(
        next_temp_name(Path::new("/a/b.9999999999")),
        Some(PathBuf::from("/a/b.0000000000"))
    );
    assert_eq!(next_temp_name(Path::new("/a/b")), None);
}

fn entry_bytes(key_text: &[u8], body: &[u8]) -> Vec<u8> {
    let key = Key::new(&[key_text]);
    let head = b"HTTP/1.1 200 OK\r\n\r\n";
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
    let mut out = Vec::new();
    format::encode(&header, key_text, &mut out);
    out.extend_from_slice(head);
    out.extend_from_slice(body);
    out
}

#[test]
fn commit_renames_and_reports_inode_and_blocks() {
    let dir = TestDir::new("commit");
    let key_text = b"http://backend/b";
    let key = Key::new(&[key_text]);
    let layout = layout(&dir);
    // A temp file in the root, so the rename must create the level directories.
    let (mut file, temp) = create_temp(&dir.path().join("t.0000000001")).expect("temp");
    let bytes = entry_bytes(key_text, &[b'z'; 5000]);
    file.write_all(&bytes).expect("write");
    let final_path = layout.entry_path(&key);
    let info = commit(&file, &temp, &final_path, 4096).expect("commit");
    assert!(!temp.exists());
    let metadata = std::fs::metadata(&final_path).expect("stat");
    assert_eq!(info.uniq, metadata.ino());
    assert_eq!(info.fs_size % 4096, 0);
    assert!(info.fs_size >= bytes.len() as u64);
    assert_eq!(info.fs_size, file_info(&metadata, 4096).fs_size);

    let (opened, metadata) = open_entry(&final_path).expect("open");
    assert_eq!(metadata.len(), bytes.len() as u64);
    let head = read_head(&opened, 1000).expect("read");
    assert_eq!(head, &bytes[..1000]);
    let all = read_head(&opened, 100_000).expect("read");
    assert_eq!(all, bytes);
    let header = format::check(&head, &key, key_text, metadata.len()).expect("valid");
    assert_eq!(header.valid_sec, 10);
}

#[test]
fn disk_size_rounds_up_to_blocks() {
    let dir = TestDir::new("size");
    let path = dir.path().join("f");
    std::fs::write(&path, b"abc").expect("write");
    let metadata = std::fs::metadata(&path).expect("stat");
    let info = file_info(&metadata, 4096);
    assert_eq!(info.fs_size, metadata.blocks().max(1).div_ceil(8) * 4096);
    assert_eq!(
        file_info(&metadata, 1).fs_size,
        3.max(metadata.blocks() * 512)
    );
}

#[test]
fn copies_across_file_systems() {
    let dir = TestDir::new("across");
    let source_dir = TestDir::new("across-source");
    let (mut file, temp) = create_temp(&source_dir.path().join("s.0000000001")).expect("temp");
    file.write_all(b"entry bytes").expect("write");
    let final_path = dir.path().join("x/yy/entry");
    std::fs::create_dir_all(final_path.parent().expect("dir")).expect("mkdir");
    let info = copy_across(&temp, &final_path, 4096).expect("copied");
    assert_eq!(std::fs::read(&final_path).expect("read"), b"entry bytes");
    assert_eq!(
        info.uniq,
        std::fs::metadata(&final_path).expect("stat").ino()
    );
    assert!(!temp.exists());
    let leftovers: Vec<_> = std::fs::read_dir(final_path.parent().expect("dir"))
        .expect("list")
        .collect();
    assert_eq!(leftovers.len(), 1, "no temp copy left");
}

/// Through `commit` itself when this machine has a second file system (tmpfs on /dev/shm).
#[test]
fn commit_falls_back_to_a_copy_on_exdev() {
    let shm = Path::new("/dev/shm");
    let dir = TestDir::new("exdev");
    let other = if shm.is_dir() && device(shm) != device(dir.path()) {
        TestDir::under(shm, "exdev")
    } else {
        // One file system only: the copy path is covered by `copies_across_file_systems`.
        TestDir::new("exdev-same")
    };
    let (mut file, temp) = create_temp(&other.path().join("s.0000000001")).expect("temp");
    file.write_all(b"moved").expect("write");
    let final_path = dir.path().join("a/bc/entry");
    let info = commit(&file, &temp, &final_path, 4096).expect("commit");
    assert_eq!(std::fs::read(&final_path).expect("read"), b"moved");
    assert_eq!(
        info.uniq,
        std::fs::metadata(&final_path).expect("stat").ino()
    );
    assert!(!temp.exists());
}

fn device(path: &Path) -> u64 {
    std::fs::metadata(path).expect("stat").dev()
}

#[test]
fn header_rewrites_check_inode_and_length() {
    let dir = TestDir::new("rewrite");
    let key_text = b"http://backend/r";
    let path = dir.path().join("entry");
    let bytes = entry_bytes(key_text, b"body");
    std::fs::write(&path, &bytes).expect("write");
    // Stored long ago: a write now would give it another time.
    let stored = std::time::UNIX_EPOCH + std::time::Duration::new(1_000_000, 123_456_789);
    std::fs::File::options()
        .write(true)
        .open(&path)
        .and_then(|file| file.set_modified(stored))
        .expect("set the time");
    let metadata = std::fs::metadata(&path).expect("stat");
    let mut header = format::decode(&bytes).expect("header");
    header.valid_sec = 999;
    header.date = 900;
    let fixed = format::encode_fixed(&header);

    assert!(!rewrite_header(&path, metadata.ino() + 1, metadata.len(), &fixed).expect("io"));
    assert!(!rewrite_header(&path, metadata.ino(), metadata.len() + 1, &fixed).expect("io"));
    assert_eq!(std::fs::read(&path).expect("read"), bytes);

    assert!(rewrite_header(&path, metadata.ino(), metadata.len(), &fixed).expect("io"));
    let after = std::fs::read(&path).expect("read");
    assert_eq!(after.len(), bytes.len());
    assert_eq!(format::decode(&after).expect("header").valid_sec, 999);
    assert_eq!(&after[HEADER_SIZE..], &bytes[HEADER_SIZE..]);
    assert_eq!(
        std::fs::metadata(&path)
            .expect("stat")
            .modified()
            .expect("mtime"),
        stored,
        "the rewrite keeps the file's time, to the nanosecond"
    );
}

#[test]
fn modified_nanos_counts_from_the_epoch() {
    assert_eq!(modified_nanos(0, 5u32), 5);
    assert_eq!(modified_nanos(2, 7i64), 2_000_000_007);
    assert_eq!(modified_nanos(-1, 0u32), 0, "before the epoch");
    assert_eq!(
        modified_nanos(1, -3i64),
        1_000_000_000,
        "a bad nanosecond count"
    );
}

#[test]
fn unlink_removes() {
    let dir = TestDir::new("unlink");
    let path = dir.path().join("f");
    std::fs::write(&path, b"x").expect("write");
    unlink(&path).expect("removed");
    assert_eq!(unlink(&path).expect_err("gone").kind(), ErrorKind::NotFound);
}

#[test]
fn parts_are_written_one_after_the_other_at_the_offset() {
    let dir = TestDir::new("parts");
    let path = dir.path().join("file");
    let file = File::create(&path).expect("create");
    file.write_all_at(b"abc", 0).expect("prefix");
    let body = vec![7u8; 70_000];
    write_all_parts_at(&file, &[b"head", b"", &body], 3).expect("written");
    let read = std::fs::read(&path).expect("read");
    assert_eq!(&read[..7], b"abchead");
    assert_eq!(&read[7..], &body[..]);
    write_all_parts_at(&file, &[], 0).expect("nothing to write");
    assert_eq!(std::fs::metadata(&path).expect("stat").len(), 70_007);
}

/// A layout of `levels=1:2` rooted at `dir/name`.
fn layout_at(dir: &TestDir, name: &str) -> Layout {
    Layout {
        root: dir.path().join(name),
        levels: Levels::parse("1:2").expect("levels"),
    }
}

/// Writes `body` as `key`'s entry file (its levels made), then opens it through `root`
/// and returns what it reads.
fn store_then_read(root: &RootDir, layout: &Layout, key: &Key, body: &str) -> String {
    let path = layout.entry_path(key);
    create_parent(&path).expect("levels");
    std::fs::write(&path, body).expect("write");
    let mut read = String::new();
    io::Read::read_to_string(
        &mut root.open_entry(layout, &key.md5).expect("open"),
        &mut read,
    )
    .expect("read");
    read
}

#[test]
fn entries_open_below_the_held_root() {
    let dir = TestDir::new("root-held");
    let layout = layout(&dir);
    let key = Key::new(&[b"http://backend/held"]);
    let root = RootDir::open(&layout.root);
    assert!(root.is_held());
    let missing = root
        .open_entry(&layout, &key.md5)
        .expect_err("not stored yet");
    assert_eq!(missing.kind(), ErrorKind::NotFound);
    assert!(root.is_held(), "a missing entry keeps the root");

    assert_eq!(store_then_read(&root, &layout, &key, "entry"), "entry");
}

#[test]
fn a_root_made_again_is_read_by_its_path() {
    let dir = TestDir::new("root-again");
    let layout = layout_at(&dir, "cache");
    std::fs::create_dir(&layout.root).expect("root");
    let root = RootDir::open(&layout.root);
    assert!(root.is_held());

    // The directory removed and one made in its place: the held one is gone.
    std::fs::remove_dir_all(&layout.root).expect("remove");
    std::fs::create_dir(&layout.root).expect("again");
    let key = Key::new(&[b"http://backend/again"]);
    assert_eq!(
        store_then_read(&root, &layout, &key, "new root"),
        "new root"
    );
    assert!(!root.is_held(), "full paths from now on");
}

#[test]
fn a_root_that_cannot_be_opened_gives_way_to_full_paths() {
    let dir = TestDir::new("root-missing");
    let layout = layout_at(&dir, "later");
    let root = RootDir::open(&layout.root);
    assert!(!root.is_held());
    let key = Key::new(&[b"http://backend/later"]);
    assert_eq!(store_then_read(&root, &layout, &key, "later"), "later");
}

#[test]
fn a_root_link_pointed_elsewhere_is_followed() {
    let dir = TestDir::new("root-link");
    let (first, second) = (dir.path().join("first"), dir.path().join("second"));
    std::fs::create_dir(&first).expect("first");
    std::fs::create_dir(&second).expect("second");
    let layout = layout_at(&dir, "cache");
    std::os::unix::fs::symlink(&first, &layout.root).expect("link");
    let root = RootDir::open(&layout.root);
    assert!(root.is_held());

    std::fs::remove_file(&layout.root).expect("unlink");
    std::os::unix::fs::symlink(&second, &layout.root).expect("link again");
    let key = Key::new(&[b"http://backend/moved"]);
    assert_eq!(store_then_read(&root, &layout, &key, "second"), "second");
    let path = layout.entry_path(&key);
    assert!(
        second
            .join(path.strip_prefix(&layout.root).expect("below"))
            .is_file()
    );
    assert!(!root.is_held(), "full paths from now on");
}
