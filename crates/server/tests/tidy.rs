//! Mechanical rules of STYLE.md, checked over the workspace's source: no `unsafe` outside
//! `runtime::sys`, no printing or `dbg!` in library code, no blocking calls in crates that
//! run on a worker's loop, no ignored test without a reason, limits on file and line length,
//! and every directive of the directive tables used by some e2e test's config (or listed as
//! untested, with the reason).

use std::path::{Path, PathBuf};

const LINE_CHARS_MAX: usize = 120;
const FILE_LINES_MAX: usize = 1000;

/// Calls that block a worker's loop or use tokio's hidden blocking pool, each written in two
/// parts joined when checked, so that this file, which has to name them, does not itself
/// contain what it forbids (other greps for them over the tree stay meaningful).
const BANNED_ON_LOOP: &[(&str, &str)] = &[
    ("tokio::", "fs"),
    ("spawn_", "blocking"),
    ("block_", "in_place"),
    ("thread::", "sleep"),
];

/// Calls that touch the file system (naming the `File` type is fine; opening one is not).
const FILESYSTEM_CALLS: &[&str] = &[
    "fs::read",
    "fs::write",
    "fs::metadata",
    "fs::create_dir",
    "fs::remove",
    "fs::rename",
    "fs::canonicalize",
    "fs::copy",
    "File::open",
    "File::create",
    "OpenOptions::new",
];

/// Crates whose code runs on a worker's loop.
const LOOP_CRATES: &[&str] = &[
    "http", "http1", "http2", "http3", "quic", "cgi", "vars", "runtime", "upstream",
];

/// Files of loop crates that may touch the file system because their code runs on the
/// master or on a thread pool, never on a worker's loop.
const FILESYSTEM_ALLOWED: &[&str] = &[
    "crates/http/src/modules/static_files/handler.rs",
    "crates/http/src/modules/static_files/listing.rs",
    "crates/http/src/modules/random_index/listing.rs",
    "crates/http/src/modules/dav/fs.rs",
    "crates/http/src/kernel/file/open.rs",
    "crates/http/src/kernel/body/temp.rs",
    "crates/http/src/kernel/pool_fs.rs",
    "crates/http/src/kernel/ssl/mod.rs",
    // `quic_host_key` reads its key file at load, on the master.
    "crates/http/src/modules/v3/directives.rs",
    "crates/runtime/src/sys/linux.rs",
    // Test sessions only (`#[cfg(test)]`): a prefix directory for the server under test.
    "crates/http/src/testing.rs",
];

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the workspace root exists")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|extension| extension == "rs") {
            out.push(path);
        }
    }
}

/// The lines of a file that are not test code: test modules sit after `#[cfg(test)]` at
/// the bottom of a file, or in files named `tests.rs` / under `tests/`.
fn library_lines(relative: &str, text: &str) -> Vec<(usize, String)> {
    if relative.contains("/tests/")
        || relative.ends_with("tests.rs")
        || relative.contains("/tests_")
    {
        return Vec::new();
    }
    let mut lines = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("#[cfg(test)]") {
            break;
        }
        lines.push((index + 1, line.to_owned()));
    }
    lines
}

fn is_comment(line: &str) -> bool {
    line.trim_start().starts_with("//")
}

#[test]
fn source_follows_the_mechanical_rules() {
    let root = workspace_root();
    let mut files = Vec::new();
    rust_files(&root.join("crates"), &mut files);
    assert!(files.len() > 20, "the crates were found");
    let mut problems = Vec::new();
    for path in files {
        let relative = path
            .strip_prefix(&root)
            .unwrap_or(&path)
            .to_string_lossy()
            .replace('\\', "/");
        let text = std::fs::read_to_string(&path).expect("source files are UTF-8");
        let line_count = text.lines().count();
        if line_count > FILE_LINES_MAX {
            problems.push(format!(
                "{relative}: {line_count} lines (split it; budget {FILE_LINES_MAX})"
            ));
        }
        for (index, line) in text.lines().enumerate() {
            if line.chars().count() > LINE_CHARS_MAX {
                problems.push(format!(
                    "{relative}:{}: line longer than {LINE_CHARS_MAX}",
                    index + 1
                ));
            }
            if line.contains(concat!("#[", "ignore]")) {
                problems.push(format!(
                    "{relative}:{}: an ignored test needs a reason",
                    index + 1
                ));
            }
        }
        let crate_name = relative
            .strip_prefix("crates/")
            .and_then(|rest| rest.split('/').next())
            .unwrap_or("");
        let in_src = relative.contains("/src/");
        for (number, line) in library_lines(&relative, &text) {
            if !in_src || is_comment(&line) {
                continue;
            }
            if without_strings(&line).contains("unsafe ")
                && !relative.starts_with("crates/runtime/src/sys/")
            {
                problems.push(format!("{relative}:{number}: unsafe outside runtime::sys"));
            }
            for banned in ["println!", "eprintln!", "dbg!"] {
                if line.contains(banned) {
                    problems.push(format!("{relative}:{number}: {banned} in library code"));
                }
            }
            if LOOP_CRATES.contains(&crate_name) {
                for (head, tail) in BANNED_ON_LOOP {
                    let banned = format!("{head}{tail}");
                    if line.contains(&banned) {
                        problems.push(format!(
                            "{relative}:{number}: {banned} in a crate that runs on the loop"
                        ));
                    }
                }
                let touches_fs = FILESYSTEM_CALLS.iter().any(|call| line.contains(call));
                if touches_fs && !FILESYSTEM_ALLOWED.contains(&relative.as_str()) {
                    problems.push(format!(
                        "{relative}:{number}: file system access in a loop crate"
                    ));
                }
            }
        }
    }
    assert!(
        problems.is_empty(),
        "tidy found {} problem(s):\n{}",
        problems.len(),
        problems.join("\n")
    );
}

/// The line with the contents of its string literals blanked, so that words in messages
/// (`"unsafe URI"`) are not taken for code.
fn without_strings(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut in_string = false;
    let mut escaped = false;
    for character in line.chars() {
        if in_string {
            if escaped {
                escaped = false;
            } else if character == '\\' {
                escaped = true;
            } else if character == '"' {
                in_string = false;
                out.push('"');
            }
            continue;
        }
        if character == '"' {
            in_string = true;
        }
        out.push(character);
    }
    out
}

/// Directives that no test under `crates/server/tests/` names, each with the reason. A
/// directive leaves this list when a test starts naming it (the rule reports the entry).
const UNTESTED_DIRECTIVES: &[(&str, &str)] = &[
    (
        "grpc_ssl_certificate",
        "proxy_ssl_certificate under grpc's name; nginx-tests grpc_ssl.t runs it",
    ),
    (
        "grpc_ssl_certificate_key",
        "proxy_ssl_certificate_key under grpc's name; nginx-tests grpc_ssl.t runs it",
    ),
    (
        "grpc_ssl_password_file",
        "proxy_ssl_password_file under grpc's name; nginx-tests grpc_ssl.t runs it",
    ),
    (
        "grpc_ssl_conf_command",
        "proxy_ssl_conf_command under grpc's name (accepted, warned about, as the proxy's)",
    ),
    (
        "proxy_downstream_buffer",
        "the stream block's old name of proxy_buffer_size, which sets the same field",
    ),
    (
        "proxy_upstream_buffer",
        "the stream block's old name of proxy_buffer_size, which sets the same field",
    ),
    (
        "uwsgi_ssl_server_name",
        "proxy_ssl_server_name under uwsgi's name; nginx-tests uwsgi_ssl*.t run it",
    ),
    (
        "uwsgi_ssl_name",
        "proxy_ssl_name under uwsgi's name; nginx-tests uwsgi_ssl*.t run it",
    ),
    (
        "uwsgi_ssl_verify_depth",
        "proxy_ssl_verify_depth under uwsgi's name; nginx-tests uwsgi_ssl*.t run it",
    ),
    (
        "uwsgi_ssl_protocols",
        "proxy_ssl_protocols under uwsgi's name; nginx-tests uwsgi_ssl*.t run it",
    ),
    (
        "uwsgi_ssl_ciphers",
        "proxy_ssl_ciphers under uwsgi's name; nginx-tests uwsgi_ssl*.t run it",
    ),
    (
        "uwsgi_ssl_conf_command",
        "proxy_ssl_conf_command under uwsgi's name; nginx-tests uwsgi_ssl*.t run it",
    ),
    (
        "accept_mutex",
        "accepted for nginx's configs; workers accept on their own sockets",
    ),
    (
        "accept_mutex_delay",
        "accepted with accept_mutex, which does nothing",
    ),
    (
        "master_process",
        "accepted; the master is a thread and there is no single-process mode",
    ),
    (
        "tcp_nodelay",
        "a socket option whose effect a loopback client cannot observe",
    ),
    (
        "connection_pool_size",
        "accepted; Portico allocates per connection as needed",
    ),
    (
        "request_pool_size",
        "accepted; Portico allocates per request as needed",
    ),
    (
        "proxy_headers_hash_bucket_size",
        "accepted; header fields are not kept in a hash",
    ),
    (
        "proxy_headers_hash_max_size",
        "accepted; header fields are not kept in a hash",
    ),
    (
        "proxy_ignore_client_abort",
        "accepted and ignored: a client that leaves ends the exchange",
    ),
    (
        "proxy_socket_keepalive",
        "accepted and ignored: no SO_KEEPALIVE on upstream sockets",
    ),
    (
        "proxy_busy_buffers_size",
        "only tunes how much buffered data is being sent at once",
    ),
    (
        "proxy_temp_file_write_size",
        "only tunes the size of writes to a buffering temp file",
    ),
    (
        "client_body_in_single_buffer",
        "memory layout only; the body a handler sees is the same",
    ),
    (
        "autoindex_localtime",
        "needs a time zone apart from the machine's; the harness sets no TZ",
    ),
];

/// Whether `name` is used as a directive in a config within `text` (string literals of
/// test files, joined by newlines): after a line start, space, `{` or `;`, and followed,
/// on the same line, by arguments and `;` or `{` (a `{word}` of a `format!` is skipped).
fn names_directive(text: &str, name: &str) -> bool {
    let bytes = text.as_bytes();
    let mut from = 0;
    while let Some(found) = text[from..].find(name) {
        let start = from + found;
        from = start + name.len();
        let before = start.checked_sub(1).map(|index| bytes[index]);
        if !matches!(before, None | Some(b' ' | b'\t' | b'\n' | b'{' | b';')) {
            continue;
        }
        let mut index = from;
        let mut spaced = false;
        while index < bytes.len() {
            match bytes[index] {
                b';' => return true,
                b'{' => {
                    let rest = &text[index + 1..];
                    let placeholder = rest.find('}').is_some_and(|end| {
                        rest[..end]
                            .bytes()
                            .all(|byte| byte == b'_' || byte.is_ascii_alphanumeric())
                    });
                    if !placeholder {
                        return true;
                    }
                    index += rest.find('}').unwrap_or(0) + 2;
                    continue;
                }
                b'}' | b'\n' => break,
                b' ' | b'\t' => spaced = true,
                _ if !spaced => break,
                _ => {}
            }
            index += 1;
        }
    }
    false
}

/// The contents of every string literal of Rust source `text` (escapes decoded, `\` line
/// continuations joined), one per line; comments and character literals are skipped.
fn string_literals(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::new();
    let mut index = 0;
    while index < chars.len() {
        let previous_is_word =
            index > 0 && (chars[index - 1].is_alphanumeric() || chars[index - 1] == '_');
        let raw_hashes = raw_string_hashes(&chars[index + 1..]);
        index = match chars[index] {
            '/' if chars.get(index + 1) == Some(&'/') => chars[index..]
                .iter()
                .position(|character| *character == '\n')
                .map_or(chars.len(), |offset| index + offset),
            'r' if !previous_is_word && raw_hashes.is_some() => {
                raw_string(&chars, index, raw_hashes.unwrap_or(0), &mut out)
            }
            '"' => quoted_string(&chars, index, &mut out),
            // A character literal (`'"'`, `'\''`); a lifetime is left alone.
            '\'' if chars.get(index + 1) == Some(&'\\') => chars[index + 2..]
                .iter()
                .position(|character| *character == '\'')
                .map_or(chars.len(), |offset| index + offset + 3),
            '\'' if chars.get(index + 2) == Some(&'\'') => index + 3,
            _ => index + 1,
        };
    }
    out
}

/// Appends the contents of the raw string at `start` (its `r`) and a newline to `out`;
/// returns the index after it.
fn raw_string(chars: &[char], start: usize, hashes: usize, out: &mut String) -> usize {
    let mut index = start + hashes + 2;
    while index < chars.len() {
        let closing = chars[index] == '"'
            && chars[index + 1..].iter().take_while(|c| **c == '#').count() >= hashes;
        if closing {
            break;
        }
        out.push(chars[index]);
        index += 1;
    }
    out.push('\n');
    index + hashes + 1
}

/// Appends the decoded contents of the string at `start` (its `"`) and a newline to `out`;
/// returns the index after it.
fn quoted_string(chars: &[char], start: usize, out: &mut String) -> usize {
    let mut index = start + 1;
    while index < chars.len() && chars[index] != '"' {
        if chars[index] == '\\' {
            index += 1;
            match chars.get(index) {
                Some('\n') => {
                    while chars.get(index + 1).is_some_and(|c| c.is_whitespace()) {
                        index += 1;
                    }
                }
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some('r') => out.push('\r'),
                Some(other) => out.push(*other),
                None => {}
            }
        } else {
            out.push(chars[index]);
        }
        index += 1;
    }
    out.push('\n');
    index + 1
}

/// The number of `#` of a raw string that starts after its `r` (`r"`, `r#"`), if it is one.
fn raw_string_hashes(after_r: &[char]) -> Option<usize> {
    let hashes = after_r.iter().take_while(|c| **c == '#').count();
    (after_r.get(hashes) == Some(&'"')).then_some(hashes)
}

/// Every directive name declared in a directive table of `text`: a `const` whose type is a
/// slice of some `...Directive`, whose string literals are the names it declares.
fn table_directives(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(found) = rest.find("Directive] = &[") {
        let line_start = rest[..found].rfind('\n').map_or(0, |index| index + 1);
        let declared = rest[line_start..found].contains("const ");
        let body_start = found + "Directive] = &".len();
        let body = &rest[body_start..];
        let mut depth = 0usize;
        let mut end = body.len();
        let mut in_string = false;
        for (index, character) in body.char_indices() {
            match character {
                '"' => in_string = !in_string,
                '[' if !in_string => depth += 1,
                ']' if !in_string => {
                    depth -= 1;
                    if depth == 0 {
                        end = index;
                        break;
                    }
                }
                _ => {}
            }
        }
        if declared {
            for literal in string_literals(&body[..end]).lines() {
                names.push(literal.to_owned());
            }
        }
        rest = &body[end..];
    }
    names
}

/// The directive coverage rule over directive-table sources and test sources, each given as
/// (path, text); `untested` is the list of exceptions. Returns the problems found.
fn directive_coverage(
    tables: &[(String, String)],
    tests: &[(String, String)],
    untested: &[(&str, &str)],
) -> Vec<String> {
    let test_text: String = tests
        .iter()
        .map(|(_, text)| string_literals(text))
        .collect();
    let mut declared: Vec<(String, &str)> = Vec::new();
    for (path, text) in tables {
        for name in table_directives(text) {
            if !declared.iter().any(|(known, _)| *known == name) {
                declared.push((name, path.as_str()));
            }
        }
    }
    let mut problems = Vec::new();
    for (name, path) in &declared {
        let tested = names_directive(&test_text, name);
        let listed = untested
            .iter()
            .any(|(untested_name, _)| untested_name == name);
        if !tested && !listed {
            problems.push(format!(
                "{path}: directive `{name}` is named by no test under crates/server/tests/ \
                 (test it, or add it to UNTESTED_DIRECTIVES with the reason)"
            ));
        }
        if tested && listed {
            problems.push(format!(
                "UNTESTED_DIRECTIVES: `{name}` is tested now; take it off the list"
            ));
        }
    }
    for (name, reason) in untested {
        if !declared.iter().any(|(known, _)| known == name) {
            problems.push(format!(
                "UNTESTED_DIRECTIVES: `{name}` is no directive of any table"
            ));
        }
        if reason.trim().is_empty() {
            problems.push(format!("UNTESTED_DIRECTIVES: `{name}` needs a reason"));
        }
    }
    problems
}

/// (path relative to the workspace, text) of every Rust file under `dir`.
fn sources_under(root: &Path, dir: &str) -> Vec<(String, String)> {
    let mut files = Vec::new();
    rust_files(&root.join(dir), &mut files);
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let relative = path
                .strip_prefix(root)
                .unwrap_or(&path)
                .to_string_lossy()
                .replace('\\', "/");
            let text = std::fs::read_to_string(&path).expect("source files are UTF-8");
            (relative, text)
        })
        .collect()
}

#[test]
fn every_directive_is_named_by_a_test() {
    let root = workspace_root();
    let tables: Vec<(String, String)> = sources_under(&root, "crates")
        .into_iter()
        .filter(|(path, _)| path.contains("/src/"))
        .collect();
    let declared: usize = tables
        .iter()
        .map(|(_, text)| table_directives(text).len())
        .sum();
    // The tables are found where they are declared today; a change of their form must not
    // make this rule pass by finding none.
    assert!(
        declared > 150,
        "only {declared} directives found in the tables"
    );
    // This file names directives in its own list and fixtures, which is not a test of them.
    // The in-process sessions of the http crate (`src/testing/`) are tests too.
    let mut tests: Vec<(String, String)> = sources_under(&root, "crates/server/tests")
        .into_iter()
        .filter(|(path, _)| !path.ends_with("/tidy.rs"))
        .collect();
    tests.extend(sources_under(&root, "crates/http/src/testing"));
    let problems = directive_coverage(&tables, &tests, UNTESTED_DIRECTIVES);
    assert!(
        problems.is_empty(),
        "tidy found {} problem(s):\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn directive_coverage_reports_what_it_should() {
    let table = "pub const DIRECTIVES: &[HttpDirective] = &[\n    entry(\"made_up_tested\", ANY, \
                 Arity::FLAG, set_tested),\n    entry(\"made_up_untested\", ANY, Arity::TAKE1, set_untested),\n];\n";
    let tables = vec![("crates/fake/src/directives.rs".to_owned(), table.to_owned())];
    // Named in a config, and (not counting) in a comment, in prose and as a Rust call.
    let test = "// made_up_untested off;\nfn t() { made_up_untested(1); start(\"server { made_up_tested on; }\"); \
                check(\"the made_up_untested directive\"); }\n";
    let tests = vec![(
        "crates/server/tests/e2e/fake.rs".to_owned(),
        test.to_owned(),
    )];
    assert_eq!(
        table_directives(table),
        ["made_up_tested", "made_up_untested"]
    );
    let problems = directive_coverage(&tables, &tests, &[]);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].starts_with("crates/fake/src/directives.rs: directive `made_up_untested`"));
    // Listed with a reason, the untested one passes; a tested or unknown entry is reported.
    assert!(directive_coverage(&tables, &tests, &[("made_up_untested", "why")]).is_empty());
    let problems = directive_coverage(
        &tables,
        &tests,
        &[
            ("made_up_untested", "why"),
            ("made_up_tested", "why"),
            ("made_up_gone", "why"),
        ],
    );
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(
        problems[0].contains("`made_up_tested` is tested now"),
        "{problems:?}"
    );
    assert!(
        problems[1].contains("`made_up_gone` is no directive"),
        "{problems:?}"
    );
}

#[test]
fn a_directive_is_named_where_a_config_uses_it() {
    for config in [
        "made on;",
        "x;made;",
        "events {\nmade {\n",
        "pid {PID_FILE};",
        "made {{ inner; }}",
    ] {
        let name = if config.starts_with("pid") {
            "pid"
        } else {
            "made"
        };
        assert!(names_directive(config, name), "{config:?}");
    }
    for text in [
        "the made directive",
        "made_up on;",
        "unmade on;",
        "made\n;",
        "{ made }",
    ] {
        assert!(!names_directive(text, "made"), "{text:?}");
    }
    // Escapes are decoded, `\` continuations joined, raw strings and comments handled.
    let source = "let a = \"one\\n  two;\"; // \"not\"\nlet b = r#\"three \"q\"\"#; let c = '\"';\n\
                  let d = \"four \\\n      five\";";
    assert_eq!(
        string_literals(source),
        "one\n  two;\nthree \"q\"\nfour five\n"
    );
}
