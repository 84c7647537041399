//! The layers of the `http` crate, checked over its source by directory (ARCHITECTURE.md,
//! "Layers"):
//!
//! - `kernel/` (requests, responses, the worker, configuration machinery, variables, file
//!   access, the send path's primitives) names no module;
//! - `modules/NAME/` (or `modules/NAME.rs`) is one module: it names the kernel and itself,
//!   never another module (FastCGI, uwsgi and SCGI are the proxy with other protocols on
//!   the wire: `modules/proxy/gateway/`);
//! - `assembly/` (directive tables, scope composition, the phase runner, the filter order,
//!   the connection loops) is the only code that names every module; so are the crate's
//!   root and its in-process test sessions (`testing`).
//!
//! What a module's directives set (its `settings` module) is data anyone may read. A path
//! is classified by the file it names: `crate::a::b::Item` names `a/b.rs` (or
//! `a/b/mod.rs`), else `a.rs` (or `a/mod.rs`). A file in none of the layers fails the test.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Imports against the layers that are known and have an issue-sized reason. The test
/// fails when one is mended and still listed, so the list only shrinks.
const KNOWN: &[(&str, &str, &str)] = &[];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Layer<'a> {
    Kernel,
    Module(&'a str),
    /// A module's `settings` (`settings.rs` or `settings/`): data, which names the kernel
    /// and other settings only.
    Settings(&'a str),
    Assembly,
    /// A file outside the three directories.
    Stray,
}

fn layer_of(file: &str) -> Layer<'_> {
    if file == "lib.rs" || file == "testing.rs" || file.starts_with("testing/") {
        return Layer::Assembly;
    }
    if file.starts_with("assembly/") {
        return Layer::Assembly;
    }
    if file.starts_with("kernel/") {
        return Layer::Kernel;
    }
    let Some(rest) = file.strip_prefix("modules/") else {
        return Layer::Stray;
    };
    if rest == "mod.rs" {
        return Layer::Assembly;
    }
    let name = match rest.split_once('/') {
        Some((name, _)) => name,
        None => rest.trim_end_matches(".rs"),
    };
    if file.ends_with("/settings.rs") || file.contains("/settings/") {
        return Layer::Settings(name);
    }
    Layer::Module(name)
}

/// Whether a file in `from` may name one in `to`.
fn allowed(from: Layer, to: Layer) -> bool {
    match (from, to) {
        (Layer::Stray, _) | (_, Layer::Stray) => false,
        (Layer::Assembly, _) => true,
        (_, Layer::Assembly) => false,
        (_, Layer::Kernel | Layer::Settings(_)) => true,
        // What a module's directives set is data: it names nothing of its module's code.
        (Layer::Settings(_), Layer::Module(_)) => false,
        (Layer::Module(a), Layer::Module(b)) => a == b,
        (Layer::Kernel, Layer::Module(_)) => false,
    }
}

/// The file a `crate::` path names: the longest prefix of its segments that is a file,
/// following the re-exports of a module (`pub use`) to the file that defines the item.
fn target_file(segments: &[&str], sources: &BTreeMap<String, String>) -> Option<String> {
    for len in (1..=segments.len()).rev() {
        let stem = &segments[..len];
        let joined = stem.join("/");
        for candidate in [format!("{joined}.rs"), format!("{joined}/mod.rs")] {
            let Some(source) = sources.get(&candidate) else {
                continue;
            };
            if let Some(item) = segments.get(len)
                && let Some(origin) = reexport(source, stem, item)
                && origin.as_slice() != segments
            {
                return target_file(&origin, sources).or(Some(candidate));
            }
            return Some(candidate);
        }
    }
    None
}

/// Where a module (`stem`) re-exports `item` from: the item's full path.
fn reexport<'a>(source: &'a str, stem: &[&'a str], item: &str) -> Option<Vec<&'a str>> {
    for statement in source.split(';') {
        let Some(path) = statement.trim().strip_prefix("pub use ") else {
            continue;
        };
        let mut members = Vec::new();
        match path.strip_prefix("crate::") {
            Some(rest) => expand(Vec::new(), rest, &mut members),
            None => expand(stem.to_vec(), path, &mut members),
        }
        if let Some(found) = members
            .into_iter()
            .find(|member| member.last() == Some(&item))
        {
            return Some(found);
        }
    }
    None
}

/// The paths a source names from the crate's root (`crate::`) or from its module's parent
/// (`super::`, taken from `file`), comments included (a doc link is a dependency of the
/// reader too), as segment lists; a group (`crate::a::{b, c::d}`) gives one path per
/// member.
fn crate_paths<'a>(file: &'a str, source: &'a str) -> Vec<Vec<&'a str>> {
    let module: Vec<&str> = file
        .trim_end_matches(".rs")
        .split('/')
        .filter(|segment| *segment != "mod")
        .collect();
    let parent = &module[..module.len().saturating_sub(1)];
    let mut paths = Vec::new();
    for (prefix, root) in [("crate::", &[][..]), ("super::", parent)] {
        let mut rest = source;
        while let Some(at) = rest.find(prefix) {
            let before = rest[..at].chars().next_back();
            rest = &rest[at + prefix.len()..];
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            expand(root.to_vec(), rest, &mut paths);
        }
    }
    paths
}

/// Adds the paths `text` starts with, below `prefix`.
fn expand<'a>(mut prefix: Vec<&'a str>, text: &'a str, paths: &mut Vec<Vec<&'a str>>) {
    let end = text
        .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
        .unwrap_or(text.len());
    prefix.extend(text[..end].split("::").filter(|s| !s.is_empty()));
    let rest = &text[end..];
    if text[..end].ends_with("::") && rest.starts_with('{') {
        expand_group(&prefix, rest, paths);
    } else if !prefix.is_empty() {
        paths.push(prefix);
    }
}

/// Adds the paths of a group's members (`{b, c::d}`) below `prefix`.
fn expand_group<'a>(prefix: &[&'a str], rest: &'a str, paths: &mut Vec<Vec<&'a str>>) {
    {
        let mut depth = 0;
        let mut start = 1;
        for (index, c) in rest.char_indices() {
            match c {
                '{' => depth += 1,
                '}' | ',' if depth == 1 => {
                    let member = rest[start..index].trim_start();
                    if !member.is_empty() && !member.starts_with("self") {
                        expand(prefix.to_vec(), member, paths);
                    }
                    start = index + 1;
                    if c == '}' {
                        break;
                    }
                }
                '}' => depth -= 1,
                _ => {}
            }
        }
    }
}

/// Every import against the layers: (importing file, imported file).
fn violations(sources: &[(String, String)]) -> BTreeSet<(String, String)> {
    let files: BTreeMap<String, String> = sources.iter().cloned().collect();
    let mut found = BTreeSet::new();
    for (file, source) in sources {
        // A file's own tests may reach anywhere.
        let source = match source.find("#[cfg(test)]\nmod ") {
            Some(at) => &source[..at],
            None => source.as_str(),
        };
        let from = layer_of(file);
        for segments in crate_paths(file, source) {
            let Some(target) = target_file(&segments, &files) else {
                continue;
            };
            if target != *file && !allowed(from, layer_of(&target)) {
                found.insert((file.clone(), target));
            }
        }
    }
    found
}

fn read_tree(root: &Path, dir: &Path, out: &mut Vec<(String, String)>) {
    for entry in std::fs::read_dir(dir).expect("the source tree is readable") {
        let path = entry.expect("the source tree is readable").path();
        if path.is_dir() {
            read_tree(root, &path, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            let relative = path
                .strip_prefix(root)
                .expect("a file under the root")
                .to_string_lossy()
                .into_owned();
            // Test files (`x/tests.rs`) belong to their module's tests.
            if !relative.ends_with("/tests.rs") {
                out.push((
                    relative,
                    std::fs::read_to_string(&path).expect("source files are UTF-8"),
                ));
            }
        }
    }
}

#[test]
fn imports_follow_the_layers() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut sources = Vec::new();
    read_tree(&root, &root, &mut sources);
    assert!(sources.len() > 50, "read {} files", sources.len());
    let stray: Vec<_> = sources
        .iter()
        .map(|(file, _)| file)
        .filter(|file| layer_of(file) == Layer::Stray)
        .collect();
    assert!(
        stray.is_empty(),
        "files outside kernel/, modules/ and assembly/: {stray:#?}"
    );
    let found = violations(&sources);
    let known: BTreeSet<(String, String)> = KNOWN
        .iter()
        .map(|(from, to, _)| (from.to_string(), to.to_string()))
        .collect();
    let new: Vec<_> = found.difference(&known).collect();
    let mended: Vec<_> = known.difference(&found).collect();
    assert!(
        new.is_empty() && mended.is_empty(),
        "imports against the layers (importing file, imported file): {new:#?}\n\
         listed in KNOWN but no longer found (remove them): {mended:#?}"
    );
}

fn fixture(files: &[(&str, &str)]) -> Vec<(String, String)> {
    files
        .iter()
        .map(|(file, source)| (file.to_string(), source.to_string()))
        .collect()
}

fn pairs(found: BTreeSet<(String, String)>) -> Vec<(&'static str, &'static str)> {
    found
        .into_iter()
        .map(|(from, to)| (&*from.leak(), &*to.leak()))
        .collect()
}

#[test]
fn a_kernel_file_naming_a_module_is_rejected() {
    let sources = fixture(&[
        (
            "kernel/request.rs",
            "use crate::modules::proxy::{handler::UpstreamInfo, Pass};\n",
        ),
        ("modules/proxy/mod.rs", "pub mod handler;\n"),
        ("modules/proxy/handler.rs", "pub struct UpstreamInfo;\n"),
    ]);
    assert_eq!(
        pairs(violations(&sources)),
        vec![
            ("kernel/request.rs", "modules/proxy/handler.rs"),
            ("kernel/request.rs", "modules/proxy/mod.rs"),
        ]
    );
}

#[test]
fn modules_read_each_others_settings_but_not_their_code() {
    let sources = fixture(&[
        (
            "modules/proxy/handler.rs",
            "use crate::modules::static_files::settings::Aio;\n\
             fn f() { crate::modules::rewrite::run::go(); }\n",
        ),
        (
            "modules/static_files/settings.rs",
            "pub type Try = crate::modules::static_files::try_files::TryFiles;\n",
        ),
        (
            "modules/static_files/try_files.rs",
            "pub struct TryFiles;\n",
        ),
        (
            "modules/static_files/mod.rs",
            "pub mod settings;\npub use settings::Try;\n",
        ),
        (
            "kernel/send/file.rs",
            "use crate::modules::static_files::Try;\n",
        ),
        ("modules/rewrite/run.rs", "pub fn go() {}\n"),
        ("modules/rewrite/mod.rs", "pub mod run;\n"),
        (
            "assembly/phases.rs",
            "use crate::modules::rewrite::run;\nuse crate::modules::proxy::handler;\n",
        ),
        (
            "kernel/file/mod.rs",
            "// [`crate::assembly::phases`] runs it.\n",
        ),
        (
            "kernel/send/body.rs",
            "fn f() { crate::modules::range::filter(); super::head::write(); }\n",
        ),
        ("modules/range.rs", "pub fn filter() {}\n"),
        ("kernel/send/head.rs", "pub fn write() {}\n"),
    ]);
    assert_eq!(
        pairs(violations(&sources)),
        vec![
            ("kernel/file/mod.rs", "assembly/phases.rs"),
            ("kernel/send/body.rs", "modules/range.rs"),
            ("modules/proxy/handler.rs", "modules/rewrite/run.rs"),
            // Settings are data: not even their own module's code.
            (
                "modules/static_files/settings.rs",
                "modules/static_files/try_files.rs"
            ),
        ]
    );
}

#[test]
fn a_file_outside_the_layers_names_and_is_named_by_nothing() {
    let sources = fixture(&[
        ("stray.rs", "use crate::kernel::request::Request;\n"),
        ("kernel/request.rs", "pub struct Request;\n"),
        ("assembly/phases.rs", "use crate::stray::X;\n"),
    ]);
    assert_eq!(layer_of("stray.rs"), Layer::Stray);
    assert_eq!(
        pairs(violations(&sources)),
        vec![
            ("assembly/phases.rs", "stray.rs"),
            ("stray.rs", "kernel/request.rs"),
        ]
    );
}

#[test]
fn a_file_s_own_tests_are_not_checked() {
    let sources = fixture(&[
        (
            "kernel/request.rs",
            "#[cfg(test)]\npub fn f() {}\n#[cfg(test)]\nmod tests { use crate::modules::proxy::X; }\n",
        ),
        ("modules/proxy/mod.rs", "pub struct X;\n"),
    ]);
    assert!(violations(&sources).is_empty());
}
