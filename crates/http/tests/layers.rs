//! The layers of the `http` crate, checked over its source (ARCHITECTURE.md, "Layers"):
//!
//! - the kernel (requests, responses, the worker, configuration machinery, variables, file
//!   access, the send path's primitives) names no feature;
//! - a feature (static files, proxy, rewrite, ...) names the kernel and itself, never
//!   another feature;
//! - the assembly (directive tables, scope composition, the phase runner, the filter order,
//!   the connection loop) is the only code that names every module.
//!
//! What a feature's directives set (its `settings` module) is data anyone may read. A path
//! is classified by the file it names: `crate::a::b::Item` names `a/b.rs` (or
//! `a/b/mod.rs`), else `a.rs` (or `a/mod.rs`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Files of the assembly layer, relative to `src/`.
const ASSEMBLY: &[&str] = &[
    "lib.rs",
    "modules.rs",
    "phases.rs",
    "connection.rs",
    "connection_open.rs",
    "conf/load.rs",
    "send/mod.rs",
    "send/filters.rs",
    "v2/body.rs",
    "v2/connection.rs",
    "v2/stream.rs",
    // The in-process test sessions drive the whole server, as a connection does.
    "testing.rs",
    "testing/tests.rs",
];

/// Features by file prefix (a directory with `/`, or one file); every other file is kernel.
const FEATURES: &[(&str, &str)] = &[
    ("access/", "access"),
    ("addition/", "addition"),
    ("auth_basic/", "auth_basic"),
    ("auth_request/", "auth_request"),
    ("charset/", "charset"),
    ("gunzip/", "gunzip"),
    ("gzip/", "gzip"),
    // FastCGI, uwsgi and SCGI: the proxy with other protocols on the wire.
    ("gateway/", "proxy"),
    ("headers/", "headers"),
    ("limit/", "limit"),
    ("log/", "log"),
    ("mirror/", "mirror"),
    ("not_modified.rs", "not_modified"),
    ("observe/", "observe"),
    ("proxy/", "proxy"),
    ("realip/", "realip"),
    ("rewrite/", "rewrite"),
    ("ssi/", "ssi"),
    ("sub_filter/", "sub_filter"),
    ("send/ranges.rs", "range"),
    ("send/upstream.rs", "proxy"),
    ("send/attach.rs", "proxy"),
    ("send/slice.rs", "proxy"),
    ("send/tunnel.rs", "proxy"),
    ("static_files/", "static_files"),
    ("stub_status/", "stub_status"),
    // The `upstream` block's directives; the groups (the `upstream` crate's, as the kernel
    // uses them) and `$upstream_*` data are kernel.
    ("upstream/directives.rs", "upstream"),
    ("v2/", "v2"),
];

/// Imports against the layers that are known and have an issue-sized reason. The test
/// fails when one is mended and still listed, so the list only shrinks.
const KNOWN: &[(&str, &str, &str)] = &[];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Layer {
    Kernel,
    Feature(&'static str),
    /// A feature's `settings` (`settings.rs` or `settings/`): data, which names the kernel
    /// and other settings only.
    Settings(&'static str),
    Assembly,
}

fn layer_of(file: &str) -> Layer {
    if ASSEMBLY.contains(&file) {
        return Layer::Assembly;
    }
    for (prefix, feature) in FEATURES {
        if file.starts_with(prefix) {
            if file.ends_with("/settings.rs") || file.contains("/settings/") {
                return Layer::Settings(feature);
            }
            return Layer::Feature(feature);
        }
    }
    Layer::Kernel
}

/// Whether a file in `from` may name one in `to`.
fn allowed(from: Layer, to: Layer) -> bool {
    match (from, to) {
        (Layer::Assembly, _) => true,
        (_, Layer::Assembly) => false,
        (_, Layer::Kernel | Layer::Settings(_)) => true,
        // What a feature's directives set is data: it names nothing of its feature's code.
        (Layer::Settings(_), Layer::Feature(_)) => false,
        (Layer::Feature(a), Layer::Feature(b)) => a == b,
        (Layer::Kernel, Layer::Feature(_)) => false,
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

#[test]
fn a_kernel_file_naming_a_feature_is_rejected() {
    let sources = fixture(&[
        (
            "request.rs",
            "use crate::proxy::{handler::UpstreamInfo, Pass};\n",
        ),
        ("proxy/mod.rs", "pub mod handler;\n"),
        ("proxy/handler.rs", "pub struct UpstreamInfo;\n"),
    ]);
    let found = violations(&sources);
    assert_eq!(
        found.into_iter().collect::<Vec<_>>(),
        vec![
            ("request.rs".to_string(), "proxy/handler.rs".to_string()),
            ("request.rs".to_string(), "proxy/mod.rs".to_string()),
        ]
    );
}

#[test]
fn features_read_each_others_settings_but_not_their_code() {
    let sources = fixture(&[
        (
            "proxy/handler.rs",
            "use crate::static_files::settings::Aio;\nfn f() { crate::rewrite::run::go(); }\n",
        ),
        (
            "static_files/settings.rs",
            "pub type Try = crate::static_files::try_files::TryFiles;\n",
        ),
        ("static_files/try_files.rs", "pub struct TryFiles;\n"),
        (
            "static_files/mod.rs",
            "pub mod settings;\npub use settings::Try;\n",
        ),
        ("send/file.rs", "use crate::static_files::Try;\n"),
        ("rewrite/run.rs", "pub fn go() {}\n"),
        ("rewrite/mod.rs", "pub mod run;\n"),
        (
            "phases.rs",
            "use crate::rewrite::run;\nuse crate::proxy::handler;\n",
        ),
        ("file/mod.rs", "// [`crate::phases`] runs it.\n"),
        (
            "send/body.rs",
            "fn f() { super::ranges::filter(); super::head::write(); }\n",
        ),
        ("send/ranges.rs", "pub fn filter() {}\n"),
        ("send/head.rs", "pub fn write() {}\n"),
    ]);
    let found: Vec<_> = violations(&sources).into_iter().collect();
    assert_eq!(
        found,
        vec![
            ("file/mod.rs".to_string(), "phases.rs".to_string()),
            ("proxy/handler.rs".to_string(), "rewrite/run.rs".to_string()),
            ("send/body.rs".to_string(), "send/ranges.rs".to_string()),
            // Settings are data: not even their own feature's code.
            (
                "static_files/settings.rs".to_string(),
                "static_files/try_files.rs".to_string()
            ),
        ]
    );
}

#[test]
fn a_file_s_own_tests_are_not_checked() {
    let sources = fixture(&[
        (
            "request.rs",
            "#[cfg(test)]\npub fn f() {}\n#[cfg(test)]\nmod tests { use crate::proxy::X; }\n",
        ),
        ("proxy/mod.rs", "pub struct X;\n"),
    ]);
    assert!(violations(&sources).is_empty());
}
