//! Entry files written by nginx 1.22.1 (see `tests/data/README.md`): the names, the levels,
//! the header and the variant hash must come out of Portico's code byte for byte.

use std::path::{Path, PathBuf};

use cache::format::{self, HEADER_SIZE};
use cache::{Key, Layout, Levels};

const ETAG_KEY: &[u8] = b"http://127.0.0.1:42679/etag";
const VARY_KEY: &[u8] = b"http://127.0.0.1:42679/vary";

fn layout() -> Layout {
    Layout {
        root: Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/nginx-1.22.1"),
        levels: Levels::parse("1:2").expect("levels"),
    }
}

fn read(key_text: &[u8]) -> (Key, PathBuf, Vec<u8>) {
    let key = Key::new(&[key_text]);
    let path = layout().entry_path(&key);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    (key, path, bytes)
}

fn reencoded(header: &format::EntryHeader, key_text: &[u8], file: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    format::encode(header, key_text, &mut out);
    out.extend_from_slice(&file[out.len()..]);
    out
}

#[test]
fn etag_entry_decodes_and_reencodes() {
    let (key, path, file) = read(ETAG_KEY);
    assert!(path.ends_with("8/4e/c076a9c9e1065be6b8c7d3475c11c4e8"));
    let header = format::check(&file, &key, ETAG_KEY, file.len() as u64).expect("valid entry");
    assert_eq!(header.etag, b"\"v1-abc\"");
    assert_eq!(header.last_modified, 784_903_526);
    assert_eq!(header.vary, b"");
    assert_eq!(header.variant, [0; 16]);
    assert_eq!(header.valid_sec - header.date, 600);
    assert_eq!(
        usize::from(header.header_start),
        format::header_start_for(ETAG_KEY.len())
    );
    let head = &file[usize::from(header.header_start)..usize::from(header.body_start)];
    assert!(head.starts_with(b"HTTP/1.1 200 OK\r\n"));
    assert!(head.ends_with(b"\r\n\r\n"));
    assert_eq!(&file[usize::from(header.body_start)..], b"hello etag\n");
    assert_eq!(reencoded(&header, ETAG_KEY, &file), file);
    assert_eq!(&format::encode_fixed(&header)[..], &file[..HEADER_SIZE]);
}

#[test]
fn vary_entry_decodes_reencodes_and_has_our_variant() {
    let (key, path, file) = read(VARY_KEY);
    assert!(path.ends_with("3/c7/23b453b56c92556887f864795ceecc73"));
    let header = format::check(&file, &key, VARY_KEY, file.len() as u64).expect("valid entry");
    assert_eq!(header.vary, b"Accept-Language");
    assert_eq!(header.etag, b"");
    assert_eq!(header.last_modified, -1);
    assert_eq!(&file[usize::from(header.body_start)..], b"hello vary\n");
    assert_eq!(reencoded(&header, VARY_KEY, &file), file);

    let request = |name: &[u8]| -> Vec<&[u8]> {
        if name == b"accept-language" {
            vec![b"en-US, fr;q=0.5"]
        } else {
            Vec::new()
        }
    };
    assert_eq!(
        format::variant(&key.md5, &header.vary, request),
        header.variant
    );
    let other = |_: &[u8]| -> Vec<&[u8]> { vec![b"de"] };
    assert_ne!(
        format::variant(&key.md5, &header.vary, other),
        header.variant
    );
}

#[test]
fn a_wrong_key_is_a_collision() {
    let (_, _, file) = read(ETAG_KEY);
    let wrong = Key::new(&[b"http://127.0.0.1:42679/etah"]);
    assert_eq!(
        format::check(
            &file,
            &wrong,
            b"http://127.0.0.1:42679/etah",
            file.len() as u64
        ),
        Err(cache::ReadError::Md5Collision)
    );
}

#[test]
fn a_secondary_variant_file_is_named_by_our_variant_hash() {
    let key = Key::new(&[VARY_KEY]);
    let german = |name: &[u8]| -> Vec<&[u8]> {
        if name == b"accept-language" {
            vec![b"de"]
        } else {
            Vec::new()
        }
    };
    let variant = format::variant(&key.md5, b"Accept-Language", german);
    let secondary = Key {
        md5: variant,
        crc32: key.crc32,
    };
    let path = layout().entry_path(&secondary);
    assert!(path.ends_with("c/e8/0a7d8f6d24ae7e9c2c0b203309e89e8c"));
    let file = std::fs::read(&path).expect("secondary file");
    // The secondary file carries the main key's text and CRC, and its own variant.
    let header = format::check(&file, &secondary, VARY_KEY, file.len() as u64).expect("valid");
    assert_eq!(header.variant, variant);
    assert_eq!(header.vary, b"Accept-Language");
    assert_eq!(&file[usize::from(header.body_start)..], b"hello vary\n");
    assert_eq!(reencoded(&header, VARY_KEY, &file), file);
}

/// Several lines of one header, joined by `,` with their spaces kept, except for the
/// `Accept-*` headers whose tokens are joined without spaces.
#[test]
fn variants_of_repeated_headers_match_nginx() {
    const XVARY_KEY: &[u8] = b"http://127.0.0.1:42679/xvary";
    let (key, path, file) = read(XVARY_KEY);
    assert!(path.ends_with("d/2b/ea6a3546bb58bc91616c8cecaff862bd"));
    let header = format::check(&file, &key, XVARY_KEY, file.len() as u64).expect("valid entry");
    assert_eq!(header.vary, b"X-Test, Accept-Encoding");
    let request = |name: &[u8]| -> Vec<&[u8]> {
        match name {
            b"x-test" => vec![b"a, b", b"c"],
            b"accept-encoding" => vec![b"gzip,  br", b"zstd"],
            _ => Vec::new(),
        }
    };
    assert_eq!(
        format::variant(&key.md5, &header.vary, request),
        header.variant
    );
    let spaced = |name: &[u8]| -> Vec<&[u8]> {
        match name {
            b"x-test" => vec![b"a,b", b"c"],
            b"accept-encoding" => vec![b"gzip,br,zstd"],
            _ => Vec::new(),
        }
    };
    assert_ne!(
        format::variant(&key.md5, &header.vary, spaced),
        header.variant
    );
    assert_eq!(reencoded(&header, XVARY_KEY, &file), file);
}
