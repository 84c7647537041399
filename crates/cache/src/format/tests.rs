use super::*;

fn sample(key_text: &[u8]) -> EntryHeader {
    let key = Key::new(&[key_text]);
    let header_start = u16::try_from(header_start_for(key_text.len())).expect("short key");
    EntryHeader {
        valid_sec: 1_700_000_600,
        updating_sec: 30,
        error_sec: 60,
        last_modified: 1_600_000_000,
        date: 1_700_000_000,
        crc32: key.crc32,
        valid_msec: 250,
        header_start,
        body_start: header_start + 40,
        etag: b"\"abc\"".to_vec(),
        vary: b"Accept-Language".to_vec(),
        variant: [7; 16],
    }
}

fn file_for(header: &EntryHeader, key_text: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    encode(header, key_text, &mut out);
    out.extend_from_slice(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n");
    out.resize(usize::from(header.body_start), b' ');
    out.extend_from_slice(b"body");
    out
}

#[test]
fn layout_offsets() {
    assert_eq!(OFFSET_VARY, 187);
    assert_eq!(OFFSET_VARIANT, 316);
    assert_eq!(header_start_for(0), 343);
    assert_eq!(header_start_for(20), 363);
}

#[test]
fn round_trip() {
    let key_text = b"http://backend/x";
    let header = sample(key_text);
    let file = file_for(&header, key_text);
    assert_eq!(&file[..8], &5u64.to_le_bytes());
    assert_eq!(&file[336..342], b"\nKEY: ");
    assert_eq!(&file[342..342 + key_text.len()], key_text);
    assert_eq!(file[342 + key_text.len()], b'\n');
    assert_eq!(&file[332..336], &[0; 4]);
    assert_eq!(decode(&file), Ok(header.clone()));
    let key = Key::new(&[key_text]);
    let len = file.len() as u64;
    assert_eq!(check(&file, &key, key_text, len), Ok(header.clone()));
    assert_eq!(&encode_fixed(&header)[..], &file[..HEADER_SIZE]);
}

#[test]
fn decode_errors() {
    let header = sample(b"k");
    let mut fixed = encode_fixed(&header);
    assert_eq!(
        decode(&fixed[..335]),
        Err(FormatError::TooShort { len: 335 })
    );
    fixed[0] = 4;
    assert_eq!(decode(&fixed), Err(FormatError::Version { found: 4 }));
    fixed[0] = 5;
    fixed[OFFSET_VARY] = 129;
    assert_eq!(decode(&fixed), Err(FormatError::VaryLength { len: 129 }));
    fixed[OFFSET_VARY] = 0;
    fixed[OFFSET_ETAG] = 200;
    assert_eq!(decode(&fixed), Err(FormatError::EtagLength { len: 200 }));
}

#[test]
fn check_reports_nginx_errors() {
    let key_text = b"http://backend/x";
    let key = Key::new(&[key_text]);
    let header = sample(key_text);
    let file = file_for(&header, key_text);
    let len = file.len() as u64;

    let short = &file[..header_start_for(key_text.len()) - 1];
    assert_eq!(check(short, &key, key_text, len), Err(ReadError::TooSmall));
    assert_eq!(check(&file, &key, key_text, 300), Err(ReadError::TooSmall));

    let mut old = file.clone();
    old[0] = 3;
    assert_eq!(
        check(&old, &key, key_text, len),
        Err(ReadError::VersionMismatch)
    );

    let other_text = b"http://backend/y";
    let other = Key::new(&[other_text]);
    assert_eq!(
        check(&file, &other, other_text, len),
        Err(ReadError::Md5Collision)
    );
    // Same CRC given, other key text of the same length: still a collision.
    let forged = Key {
        md5: other.md5,
        crc32: key.crc32,
    };
    assert_eq!(
        check(&file, &forged, other_text, len),
        Err(ReadError::Md5Collision)
    );
    // A key of another length changes header_start.
    let long_text = b"http://backend/xx";
    let long = Key {
        md5: key.md5,
        crc32: key.crc32,
    };
    assert_eq!(
        check(&file, &long, long_text, len),
        Err(ReadError::Md5Collision)
    );

    let mut vary = file.clone();
    vary[OFFSET_VARY] = 130;
    assert_eq!(
        check(&vary, &key, key_text, len),
        Err(ReadError::IncorrectVaryLength)
    );

    let truncated = usize::from(header.body_start) - 1;
    assert_eq!(
        check(&file[..truncated], &key, key_text, truncated as u64),
        Err(ReadError::TooLongHeader)
    );
}

#[test]
fn read_error_words() {
    assert_eq!(ReadError::TooSmall.to_string(), "is too small");
    assert_eq!(ReadError::VersionMismatch.to_string(), "version mismatch");
    assert_eq!(ReadError::Md5Collision.to_string(), "has md5 collision");
    assert_eq!(
        ReadError::IncorrectVaryLength.to_string(),
        "has incorrect vary length"
    );
    assert!(!ReadError::VersionMismatch.is_crit());
    assert!(ReadError::TooSmall.is_crit());
}

#[test]
#[should_panic(expected = "header_start")]
fn encode_refuses_a_wrong_header_start() {
    let mut header = sample(b"abc");
    header.header_start += 1;
    encode(&header, b"abc", &mut Vec::new());
}

fn headers<'a>(list: &'a [(&'a str, &'a str)]) -> impl Fn(&[u8]) -> Vec<&'a [u8]> + 'a {
    move |name: &[u8]| {
        list.iter()
            .filter(|(n, _)| n.as_bytes().eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_bytes())
            .collect()
    }
}

fn md5_of(bytes: &[u8]) -> [u8; 16] {
    Md5::digest(bytes).into()
}

#[test]
fn variant_hashes_names_and_values() {
    let main = [1u8; 16];
    let request = [
        ("Accept-Language", "en-US, fr;q=0.5"),
        ("X-A", "one"),
        ("x-a", "two, three"),
    ];
    let got = variant(&main, b"X-A, Accept-Language ,, Missing", headers(&request));
    let mut expected = main.to_vec();
    expected.extend_from_slice(b"x-a:one,two, three\r\n");
    expected.extend_from_slice(b"accept-language:en-US,fr;q=0.5\r\n");
    expected.extend_from_slice(b"missing:\r\n");
    assert_eq!(got, md5_of(&expected));
}

#[test]
fn variant_normalizes_accept_tokens_across_lines() {
    let main = [2u8; 16];
    let spaced = [
        ("Accept-Encoding", " gzip ,  br"),
        ("Accept-Encoding", "zstd"),
    ];
    let tight = [("accept-encoding", "gzip,br,zstd")];
    let a = variant(&main, b"accept-encoding", headers(&spaced));
    let b = variant(&main, b"Accept-Encoding", headers(&tight));
    assert_eq!(a, b);
    let reordered = [("accept-encoding", "br,gzip,zstd")];
    assert_ne!(a, variant(&main, b"accept-encoding", headers(&reordered)));
    // Other headers keep their spaces.
    let x1 = [("X-B", "a,b")];
    let x2 = [("X-B", "a, b")];
    assert_ne!(
        variant(&main, b"x-b", headers(&x1)),
        variant(&main, b"x-b", headers(&x2))
    );
}

#[test]
fn key_text_of_any_entry() {
    let key_text = b"http://example.com/a/1";
    let file = file_for(&sample(key_text), key_text);
    assert_eq!(key_text_of(&file), Some(&key_text[..]));
    assert_eq!(key_text_of(&file[..HEADER_SIZE + 4]), None, "cut short");
    let mut other = file.clone();
    other[0] = 4;
    assert_eq!(key_text_of(&other), None, "another version");
}
