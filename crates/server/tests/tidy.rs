//! Mechanical rules of STYLE.md, checked over the workspace's source: no `unsafe` outside
//! `runtime::sys`, no printing or `dbg!` in library code, no blocking calls in crates that
//! run on a worker's loop, no ignored test without a reason, and limits on file and line length.

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
const LOOP_CRATES: &[&str] = &["http", "http1", "vars", "runtime"];

/// Files of loop crates that may touch the file system because their code runs on the
/// master or on a thread pool, never on a worker's loop.
const FILESYSTEM_ALLOWED: &[&str] = &[
    "crates/http/src/static_files/handler.rs",
    "crates/http/src/static_files/listing.rs",
    "crates/http/src/file/open.rs",
    "crates/http/src/body/temp.rs",
    "crates/http/src/pool_fs.rs",
    "crates/runtime/src/sys/linux.rs",
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
