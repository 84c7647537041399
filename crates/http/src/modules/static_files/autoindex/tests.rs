use super::*;
use std::os::unix::ffi::OsStrExt;

fn entry(name: &str, is_dir: bool, len: u64) -> Entry {
    Entry {
        name: name.as_bytes().to_vec(),
        is_dir,
        is_file: !is_dir,
        // 22-Nov-2026 00:12:27 UTC
        modified: 1_795_306_347,
        len,
    }
}

const EXACT: HtmlOptions = HtmlOptions {
    exact_size: true,
    utc_offset_seconds: 0,
    utf8: false,
};

/// The listing nginx 1.22.1 sent for the same directory (captured from its response).
#[test]
fn html_matches_nginx_byte_for_byte() {
    let entries = [
        entry("d\"q", true, 4096),
        entry("dir sp", true, 4096),
        entry("a\"b<c>.txt", false, 1),
    ];
    let expected = "<html>\r\n<head><title>Index of /</title></head>\r\n<body>\r\n\
<h1>Index of /</h1><hr><pre><a href=\"../\">../</a>\r\n\
<a href=\"d%22q/\">d&quot;q/</a>{pad47}22-Nov-2026 00:12                   -\r\n\
<a href=\"dir%20sp/\">dir sp/</a>{pad44}22-Nov-2026 00:12                   -\r\n\
<a href=\"a%22b%3Cc%3E.txt\">a&quot;b&lt;c&gt;.txt</a>{pad41}22-Nov-2026 00:12                   1\r\n\
</pre><hr></body>\r\n</html>\r\n"
        .replace("{pad47}", &" ".repeat(47))
        .replace("{pad44}", &" ".repeat(44))
        .replace("{pad41}", &" ".repeat(41));
    assert_eq!(
        String::from_utf8(html(b"/", &entries, EXACT)).unwrap(),
        expected
    );
}

#[test]
fn long_names_are_cut_at_47_bytes() {
    let name = "a".repeat(60);
    let out = html(b"/", &[entry(&name, false, 5)], EXACT);
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.contains(&format!(">{}..&gt;</a> 22-Nov-2026", "a".repeat(47))),
        "{text}"
    );
    let exactly = "b".repeat(50);
    let text = String::from_utf8(html(b"/", &[entry(&exactly, true, 0)], EXACT)).unwrap();
    assert!(
        text.contains(&format!(">{exactly}</a> 22-Nov-2026")),
        "a 50-byte directory name has no room for its slash: {text}"
    );
}

#[test]
fn utf8_names_are_cut_and_padded_by_characters() {
    let utf8 = HtmlOptions {
        utf8: true,
        ..EXACT
    };
    let long = format!("x-{}", "\u{444}".repeat(60));
    let text = String::from_utf8(html(b"/", &[entry(&long, false, 0)], utf8)).unwrap();
    assert!(
        text.contains(&format!(
            ">x-{}..&gt;</a> 22-Nov-2026",
            "\u{444}".repeat(45)
        )),
        "{text}"
    );
    let escaped = format!("<{}", "\u{444}".repeat(60));
    let text = String::from_utf8(html(b"/", &[entry(&escaped, false, 0)], utf8)).unwrap();
    assert!(
        text.contains(&format!(">&lt;{}..&gt;</a>", "\u{444}".repeat(46))),
        "{text}"
    );
    // A short name is padded to 50 characters, not bytes.
    let short = "\u{444}".repeat(3);
    let text = String::from_utf8(html(b"/", &[entry(&short, false, 0)], utf8)).unwrap();
    assert!(
        text.contains(&format!(">{short}</a>{} 22-Nov-2026", " ".repeat(47))),
        "{text}"
    );
    // Without `charset utf-8` the same name is cut at 47 bytes, as nginx does.
    let out = html(b"/", &[entry(&long, false, 0)], EXACT);
    let text = String::from_utf8_lossy(&out);
    assert!(
        text.contains(&format!(">x-{}\u{fffd}..&gt;</a>", "\u{444}".repeat(22))),
        "{text}"
    );
}

#[test]
fn rounded_sizes() {
    assert_eq!(human_size(0), "      0");
    assert_eq!(human_size(9999), "   9999");
    assert_eq!(human_size(10000), "    10K");
    assert_eq!(human_size(10_751), "    10K");
    assert_eq!(human_size(10_752), "    11K");
    assert_eq!(human_size(1024 * 1024), "     1M");
    assert_eq!(human_size(3 * 1024 * 1024 * 1024 / 2), "     2G");
    let text = String::from_utf8(html(
        b"/",
        &[entry("f", false, 20_000), entry("d", true, 0)],
        HtmlOptions {
            exact_size: false,
            utc_offset_seconds: 3600,
            utf8: false,
        },
    ))
    .unwrap();
    assert!(text.contains("22-Nov-2026 01:12     20K\r\n"), "{text}");
    assert!(text.contains("22-Nov-2026 01:12       -\r\n"), "{text}");
}

#[test]
fn json_and_jsonp() {
    let entries = [entry("d", true, 0), entry("f\"\n", false, 3)];
    let expected = "[\r\n{ \"name\":\"d\", \"type\":\"directory\", \"mtime\":\"Sun, 22 Nov 2026 00:12:27 GMT\" },\r\n\
{ \"name\":\"f\\\"\\n\", \"type\":\"file\", \"mtime\":\"Sun, 22 Nov 2026 00:12:27 GMT\", \"size\":3 }\r\n]";
    assert_eq!(String::from_utf8(json(&entries, None)).unwrap(), expected);
    assert_eq!(json(&[], None), b"[\r\n]");
    assert_eq!(
        String::from_utf8(json(&[], Some(b"cb"))).unwrap(),
        "/* callback */\r\ncb([\r\n]);"
    );
}

#[test]
fn xml_listing() {
    let entries = [entry("d", true, 0), entry("a&b", false, 3)];
    let expected = "<?xml version=\"1.0\"?>\r\n<list>\r\n\
<directory mtime=\"2026-11-22T00:12:27Z\">d</directory>\r\n\
<file mtime=\"2026-11-22T00:12:27Z\" size=\"3\">a&amp;b</file>\r\n</list>\r\n";
    assert_eq!(String::from_utf8(xml(&entries)).unwrap(), expected);
}

#[test]
fn callbacks_are_checked() {
    assert_eq!(
        jsonp_callback(b"a=1&Callback=f.x_1"),
        Ok(Some(&b"f.x_1"[..]))
    );
    assert_eq!(jsonp_callback(b"a=1"), Ok(None));
    assert_eq!(jsonp_callback(b"callback="), Ok(None));
    assert_eq!(jsonp_callback(b"xcallback=f"), Ok(None));
    assert!(jsonp_callback(b"callback=f(1)").is_err());
    let long = format!("callback={}", "a".repeat(129));
    assert!(jsonp_callback(long.as_bytes()).is_err());
}

#[test]
fn uri_escaping() {
    let mut out = Vec::new();
    escape_uri(b"/dir sp/\"#%<>?\\^`{|}~!$&'()*+,;=:@", &mut out);
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "/dir%20sp/%22%23%25%3C%3E%3F%5C%5E%60%7B%7C%7D~!$&'()*+,;=:@"
    );
    assert!(!uri_needs_escaping(b"/plain/path"));
}

#[test]
fn reads_a_directory_sorted_without_dot_files() {
    let dir = std::env::temp_dir().join(format!("portico-autoindex-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("zdir")).unwrap();
    std::fs::write(dir.join("b"), b"12").unwrap();
    std::fs::write(dir.join("a"), b"1").unwrap();
    std::fs::write(dir.join(".hidden"), b"").unwrap();
    std::os::unix::fs::symlink(dir.join("missing"), dir.join("dangling")).unwrap();
    let listing = read_listing(dir.as_os_str().as_bytes());
    let entries = listing.result.unwrap();
    let names: Vec<&[u8]> = entries.iter().map(|entry| &entry.name[..]).collect();
    assert_eq!(names, [&b"zdir"[..], b"a", b"b", b"dangling"]);
    assert!(
        !entries[3].is_file && !entries[3].is_dir,
        "a dangling link is 'other'"
    );
    assert_eq!(entries[2].len, 2);
    let missing = read_listing(dir.join("nope").as_os_str().as_bytes());
    let failure = missing.result.unwrap_err();
    assert_eq!(failure.opendir_errno, Some(2));
    assert!(
        failure.message.starts_with("opendir() \""),
        "{}",
        failure.message
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
