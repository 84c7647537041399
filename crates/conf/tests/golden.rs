//! Golden tests: every `tests/data/*.conf` is parsed, and the result compared with the files
//! beside it, where `{dir}` stands for the directory the data was read from:
//!
//! - `NAME.tree`: the parsed tree, one directive per line with its file and line;
//! - `NAME.dump` (optional): what `-T` prints for it, which is also what `nginx -T` prints;
//! - `NAME.error`: the error, which nginx prints identically (checked when nginx is installed);
//! - `NAME.portico-error`: the error where Portico deliberately differs from nginx.
//!
//! The data is read twice: from memory ([`MemorySources`]) and from a copy on disk
//! ([`DiskSources`]). Run with `PORTICO_BLESS=1` to rewrite the expected files from the
//! current output (then review the diff).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use portico_conf::dump::render;
use portico_conf::{ConfigTree, Directive, DiskSources, MemorySources, Sources, Span, parse_file};

const NGINX: &str = "/usr/sbin/nginx";
const DIR_PLACEHOLDER: &str = "{dir}";
const MEMORY_ROOT: &str = "/golden";

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

/// Every file under `dir`, as paths relative to it.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![PathBuf::new()];
    while let Some(relative) = pending.pop() {
        let entries = fs::read_dir(dir.join(&relative)).expect("the test data is readable");
        for entry in entries {
            let entry = entry.expect("the test data is readable");
            let path = relative.join(entry.file_name());
            if entry
                .file_type()
                .expect("the test data is readable")
                .is_dir()
            {
                pending.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// The top-level configuration files, each one case.
fn cases() -> Vec<String> {
    let mut names: Vec<String> = files_under(&data_dir())
        .iter()
        .filter(|path| path.parent() == Some(Path::new("")))
        .filter_map(|path| path.to_str()?.strip_suffix(".conf").map(str::to_owned))
        .collect();
    names.sort();
    names
}

/// The tree in the `.tree` format: `name "arg" q"quoted-arg"  # file:line`, blocks indented;
/// a name that is empty or has spaces or control characters is written in quotes.
fn show_tree(directives: &[Directive], dir: &Path, depth: usize, out: &mut String) {
    for directive in directives {
        out.push_str(&"    ".repeat(depth));
        let plain =
            !directive.name.is_empty() && directive.name.bytes().all(|b| b.is_ascii_graphic());
        if plain {
            out.push_str(&directive.name);
        } else {
            out.push_str(&format!("{:?}", directive.name));
        }
        for argument in &directive.args {
            let prefix = if argument.quoted { " q" } else { " " };
            out.push_str(&format!("{prefix}{:?}", argument.value));
        }
        if directive.block.is_some() {
            out.push_str(" {");
        }
        let location = match &directive.span {
            Span::File { path, line } => {
                let relative = path.strip_prefix(dir).unwrap_or(path);
                format!("{}:{line}", relative.display())
            }
            Span::CommandLine => "command line".to_owned(),
        };
        out.push_str(&format!("  # {location}\n"));
        if let Some(block) = &directive.block {
            show_tree(block, dir, depth + 1, out);
            out.push_str(&"    ".repeat(depth));
            out.push_str("}\n");
        }
    }
}

/// The outcome of one case as expected files: (extension, contents), with `{dir}` put back.
fn outcomes(result: &Result<ConfigTree, String>, dir: &Path) -> Vec<(&'static str, String)> {
    let dir_text = dir.display().to_string();
    match result {
        Ok(tree) => {
            let mut shown = String::new();
            show_tree(&tree.directives, dir, 0, &mut shown);
            vec![
                ("tree", shown),
                ("dump", render(tree).replace(&dir_text, DIR_PLACEHOLDER)),
            ]
        }
        Err(message) => vec![(
            "error",
            format!("{}\n", message.replace(&dir_text, DIR_PLACEHOLDER)),
        )],
    }
}

fn parse_case(name: &str, dir: &Path, sources: &dyn Sources) -> Result<ConfigTree, String> {
    parse_file(&dir.join(format!("{name}.conf")), sources).map_err(|error| error.to_string())
}

/// Compares a case's outcome with its expected files; returns the differences.
fn check_case(
    name: &str,
    result: &Result<ConfigTree, String>,
    dir: &Path,
    how: &str,
) -> Vec<String> {
    let mut differences = Vec::new();
    let data = data_dir();
    let bless = std::env::var_os("PORTICO_BLESS").is_some();
    for (extension, actual) in outcomes(result, dir) {
        let mut expected_path = data.join(format!("{name}.{extension}"));
        if extension == "error" && !expected_path.exists() {
            expected_path = data.join(format!("{name}.portico-error"));
        }
        if extension == "dump" && !expected_path.exists() {
            continue;
        }
        if bless && how == "memory" {
            fs::write(&expected_path, &actual).expect("the test data is writable when blessing");
            continue;
        }
        match fs::read_to_string(&expected_path) {
            Ok(expected) if expected == actual => {}
            Ok(expected) => differences.push(format!(
                "{name} ({how}): {} differs\n--- expected\n{expected}--- actual\n{actual}",
                expected_path.display()
            )),
            Err(_) => differences.push(format!(
                "{name} ({how}): no {} for\n{actual}",
                expected_path.display()
            )),
        }
    }
    differences
}

#[test]
fn golden_files_from_memory() {
    let data = data_dir();
    let mut sources = MemorySources::new();
    for relative in files_under(&data) {
        sources.insert(
            Path::new(MEMORY_ROOT).join(&relative),
            fs::read(data.join(&relative)).unwrap(),
        );
    }
    let cases = cases();
    assert!(cases.len() >= 10, "the golden cases are missing: {cases:?}");
    let mut differences = Vec::new();
    for name in &cases {
        let result = parse_case(name, Path::new(MEMORY_ROOT), &sources);
        differences.extend(check_case(name, &result, Path::new(MEMORY_ROOT), "memory"));
    }
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}

/// A copy of `tests/data` in a new temporary directory, removed on drop.
struct DataCopy(PathBuf);

impl DataCopy {
    /// `purpose` keeps the copies of tests running at once apart.
    fn new(purpose: &str) -> DataCopy {
        let name = format!("portico-conf-golden-{purpose}-{}", std::process::id());
        let dir = std::env::temp_dir().join(name);
        let data = data_dir();
        for relative in files_under(&data) {
            let target = dir.join(&relative);
            let parent = target.parent().expect("a file under the copy has a parent");
            fs::create_dir_all(parent).expect("the temporary directory is writable");
            fs::copy(data.join(&relative), target).expect("the temporary directory is writable");
        }
        DataCopy(dir)
    }
}

impl Drop for DataCopy {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

#[test]
fn golden_files_from_disk() {
    let copy = DataCopy::new("disk");
    let mut differences = Vec::new();
    for name in cases() {
        let result = parse_case(&name, &copy.0, &DiskSources);
        differences.extend(check_case(&name, &result, &copy.0, "disk"));
    }
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}

/// nginx's output for `-t` (or `-T`) on a case in `dir`: (stdout, first emerg/crit message).
fn run_nginx(dir: &Path, name: &str, flag: &str) -> (String, String) {
    let output = Command::new(NGINX)
        .arg(flag)
        .arg("-p")
        .arg(format!("{}/", dir.display()))
        .arg("-c")
        .arg(dir.join(format!("{name}.conf")))
        .output()
        .expect("nginx was found, so it runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    let message = stderr
        .lines()
        .find_map(|line| {
            let (_, rest) = line
                .split_once("[emerg] ")
                .or_else(|| line.split_once("[crit] "))?;
            // Log-file form: `PID#TID: message`.
            let rest = if rest.starts_with(|c: char| c.is_ascii_digit()) {
                rest.split_once(": ").map_or(rest, |(_, message)| message)
            } else {
                rest
            };
            Some(rest.to_owned())
        })
        .unwrap_or_default();
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        message,
    )
}

#[test]
fn golden_errors_and_dumps_match_nginx() {
    if !Path::new(NGINX).exists() {
        eprintln!("skipped: {NGINX} is not installed");
        return;
    }
    let copy = DataCopy::new("nginx");
    let data = data_dir();
    let dir_text = copy.0.display().to_string();
    let mut differences = Vec::new();
    for name in cases() {
        if let Ok(expected) = fs::read_to_string(data.join(format!("{name}.error"))) {
            let (_, message) = run_nginx(&copy.0, &name, "-t");
            let expected = expected.trim_end().replace(DIR_PLACEHOLDER, &dir_text);
            if message != expected {
                differences.push(format!(
                    "{name}: nginx says {message:?}, expected {expected:?}"
                ));
            }
        }
        if let Ok(expected) = fs::read_to_string(data.join(format!("{name}.dump"))) {
            let (dump, message) = run_nginx(&copy.0, &name, "-T");
            let expected = expected.replace(DIR_PLACEHOLDER, &dir_text);
            if dump != expected {
                differences.push(format!(
                    "{name}: nginx -T ({message}) prints\n{dump}expected\n{expected}"
                ));
            }
        }
    }
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}
