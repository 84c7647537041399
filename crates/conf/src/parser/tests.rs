//! Tests for the parser and `include`. Every expected error text and line was first produced
//! by nginx 1.22 (`nginx -t -c` on the same files).

use std::path::{Path, PathBuf};

use super::*;
use crate::sources::MemorySources;

const MAIN: &str = "/c/main.conf";

/// Writes a tree compactly: `name arg 'quoted'@line`, blocks in braces.
fn show(directives: &[Directive]) -> String {
    let mut parts = Vec::new();
    for directive in directives {
        let mut part = directive.name.clone();
        for argument in &directive.args {
            part.push(' ');
            if argument.quoted {
                part.push_str(&format!("'{}'", argument.value));
            } else {
                part.push_str(&argument.value);
            }
        }
        match &directive.span {
            Span::File { path, line } if path.as_ref() == Path::new(MAIN) => {
                part.push_str(&format!("@{line}"));
            }
            Span::File { path, line } => part.push_str(&format!("@{}:{line}", path.display())),
            Span::CommandLine => {}
        }
        if let Some(block) = &directive.block {
            part.push_str(&format!(" {{{}}}", show(block)));
        }
        parts.push(part);
    }
    parts.join("; ")
}

fn parse_with(main: &str, sources: MemorySources) -> Result<ConfigTree, String> {
    parse_file(Path::new(MAIN), &sources.with(MAIN, main)).map_err(|error| error.to_string())
}

fn parse(main: &str) -> String {
    show(&parse_with(main, MemorySources::new()).unwrap().directives)
}

fn parse_error(main: &str) -> String {
    parse_with(main, MemorySources::new()).unwrap_err()
}

fn parse_line(text: &str, sources: &MemorySources) -> Result<String, String> {
    parse_command_line(text, Path::new("/c"), sources)
        .map(|tree| show(&tree.directives))
        .map_err(|error| error.to_string())
}

#[test]
fn directives_and_blocks() {
    assert_eq!(
        parse("user www;\nevents {\n  worker_connections 10;\n}\n"),
        "user www@1; events@2 {worker_connections 10@3}"
    );
    assert_eq!(parse("a \"b c\" 'd';"), "a 'b c' 'd'@1");
    assert_eq!(parse("a { b { c; } }"), "a@1 {b@1 {c@1}}");
    assert_eq!(parse("a {}"), "a@1 {}");
    assert_eq!(parse(""), "");
    assert_eq!(parse("# only a comment"), "");
    assert_eq!(parse("\"\";"), "@1");
}

#[test]
fn span_is_the_line_of_the_terminator() {
    assert_eq!(parse("\n\nfoo\n  bar\n ;\n"), "foo bar@5");
    assert_eq!(parse("server\n\n{\n}"), "server@3 {}");
    assert_eq!(parse("a \"x\ny\";"), "a 'x\ny'@2");
}

#[test]
fn stray_terminators() {
    assert_eq!(parse_error("}\n"), "unexpected \"}\" in /c/main.conf:1");
    assert_eq!(parse_error("a;\n\n;"), "unexpected \";\" in /c/main.conf:3");
    assert_eq!(parse_error("\n{"), "unexpected \"{\" in /c/main.conf:2");
    assert_eq!(parse_error("a { ; }"), "unexpected \";\" in /c/main.conf:1");
    assert_eq!(
        parse_error("a {\n b }"),
        "unexpected \"}\" in /c/main.conf:2"
    );
    assert_eq!(
        parse_error("a {\n b}"),
        "unexpected end of file, expecting \";\" or \"}\" in /c/main.conf:2"
    );
    assert_eq!(
        parse_error("a {\n b\n }"),
        "unexpected \"}\" in /c/main.conf:3"
    );
    assert_eq!(parse_error("a { } }"), "unexpected \"}\" in /c/main.conf:1");
}

#[test]
fn end_of_file() {
    assert_eq!(
        parse_error("a b\n"),
        "unexpected end of file, expecting \";\" or \"}\" in /c/main.conf:2"
    );
    assert_eq!(
        parse_error("a b"),
        "unexpected end of file, expecting \";\" or \"}\" in /c/main.conf:1"
    );
    assert_eq!(
        parse_error("abc"),
        "unexpected end of file, expecting \";\" or \"}\" in /c/main.conf:1"
    );
    assert_eq!(
        parse_error("a \"b"),
        "unexpected end of file, expecting \";\" or \"}\" in /c/main.conf:1"
    );
    assert_eq!(
        parse_error("a # c"),
        "unexpected end of file, expecting \";\" or \"}\" in /c/main.conf:1"
    );
    assert_eq!(
        parse_error("events {\n"),
        "unexpected end of file, expecting \"}\" in /c/main.conf:2"
    );
    assert_eq!(
        parse_error("events {\n\n"),
        "unexpected end of file, expecting \"}\" in /c/main.conf:3"
    );
    assert_eq!(
        parse_error("a { b { c; }"),
        "unexpected end of file, expecting \"}\" in /c/main.conf:1"
    );
}

#[test]
fn errors_stop_at_the_first_problem() {
    // A lexer error before a later parser error wins, and the reverse.
    assert_eq!(
        parse_error("a \"b\"c; }"),
        "unexpected \"c\" in /c/main.conf:1"
    );
    assert_eq!(
        parse_error("}\na \"b\"c;"),
        "unexpected \"}\" in /c/main.conf:1"
    );
}

#[test]
fn block_depth_is_limited() {
    let nested = |depth: usize| format!("{}{}", "a {".repeat(depth), "}".repeat(depth));
    assert!(parse_with(&nested(BLOCK_DEPTH_MAX), MemorySources::new()).is_ok());
    assert_eq!(
        parse_error(&nested(BLOCK_DEPTH_MAX + 1)),
        "blocks are nested too deeply (more than 64 levels) in /c/main.conf:1"
    );
    // Blocks in included files count as well.
    let sources = MemorySources::new().with("/c/inner.conf", nested(2));
    let outer = format!(
        "{}include inner.conf;{}",
        "a {".repeat(BLOCK_DEPTH_MAX - 1),
        "}".repeat(BLOCK_DEPTH_MAX - 1)
    );
    assert_eq!(
        parse_with(&outer, sources).unwrap_err(),
        "blocks are nested too deeply (more than 64 levels) in /c/inner.conf:1"
    );
}

#[test]
fn main_file_errors_have_no_position() {
    let sources = MemorySources::new();
    let error = parse_file(Path::new("/c/missing.conf"), &sources).unwrap_err();
    assert_eq!(
        error.to_string(),
        "open() \"/c/missing.conf\" failed (2: No such file or directory)"
    );
    assert_eq!(error.span, None);
}

#[test]
fn invalid_utf8_is_reported_at_its_line() {
    let sources = MemorySources::new().with(MAIN, b"a;\nb \xff;\n".to_vec());
    let error = parse_file(Path::new(MAIN), &sources).unwrap_err();
    assert_eq!(
        error.kind,
        ConfErrorKind::InvalidUtf8 {
            path: PathBuf::from(MAIN)
        }
    );
    assert_eq!(
        error.to_string(),
        "configuration file \"/c/main.conf\" is not valid UTF-8 in /c/main.conf:2"
    );
}

#[test]
fn command_line() {
    let sources = MemorySources::new();
    assert_eq!(
        parse_line("daemon off; worker_processes 2;", &sources).unwrap(),
        "daemon off; worker_processes 2"
    );
    assert_eq!(parse_line("", &sources).unwrap(), "");
    assert_eq!(parse_line("# c", &sources).unwrap(), "");
    let error = |text: &str| parse_line(text, &sources).unwrap_err();
    assert_eq!(
        error("daemon off"),
        "unexpected end of parameter, expecting \";\" in command line"
    );
    assert_eq!(
        error("\"a\""),
        "unexpected end of parameter, expecting \";\" in command line"
    );
    assert_eq!(
        error("a # c"),
        "unexpected end of parameter, expecting \";\" in command line"
    );
    assert_eq!(
        error("a {"),
        "block directives are not supported in -g option in command line"
    );
    assert_eq!(
        error("a {}"),
        "block directives are not supported in -g option in command line"
    );
    assert_eq!(
        error("include x {"),
        "block directives are not supported in -g option in command line"
    );
    assert_eq!(error("a }"), "unexpected \"}\" in command line");
    assert_eq!(error("}"), "unexpected \"}\" in command line");
    assert_eq!(error(";"), "unexpected \";\" in command line");
    assert_eq!(error("{"), "unexpected \"{\" in command line");
    assert_eq!(error("include \"x\"y;"), "unexpected \"y\" in command line");
}

#[test]
fn command_line_includes_resolve_against_the_conf_prefix() {
    let sources = MemorySources::new().with("/c/extra.conf", "events {\n}\n");
    let tree = parse_command_line("include extra.conf;", Path::new("/c"), &sources).unwrap();
    assert_eq!(show(&tree.directives), "events@/c/extra.conf:1 {}");
    assert_eq!(tree.files.len(), 1);
    assert_eq!(tree.files[0].path, PathBuf::from("/c/extra.conf"));
    assert_eq!(
        parse_line("include nothere;", &sources).unwrap_err(),
        "open() \"/c/nothere\" failed (2: No such file or directory) in command line"
    );
}

#[test]
fn include_is_expanded_in_place_in_any_context() {
    let sources = MemorySources::new()
        .with("/c/a.conf", "a1;\na2 { a3; }\n")
        .with("/c/b.conf", "b1;");
    let tree = parse_with(
        "x;\nhttp {\n include a.conf;\n server { include b.conf; }\n}\ny;",
        sources,
    )
    .unwrap();
    assert_eq!(
        show(&tree.directives),
        "x@1; http@2 {a1@/c/a.conf:1; a2@/c/a.conf:2 {a3@/c/a.conf:2}; \
         server@4 {b1@/c/b.conf:1}}; y@6"
    );
    let paths: Vec<_> = tree
        .files
        .iter()
        .map(|file| file.path.display().to_string())
        .collect();
    assert_eq!(paths, [MAIN, "/c/a.conf", "/c/b.conf"]);
    assert_eq!(tree.files[2].text, "b1;");
}

#[test]
fn include_paths() {
    let sources = MemorySources::new()
        .with("/c/conf.d/a.conf", "inner;\ninclude conf.d/b.conf;")
        .with("/c/conf.d/b.conf", "deepest;")
        .with("/abs/x.conf", "absolute;")
        .with("/c/./conf.d/b.conf", "dotted;");
    // Relative includes resolve against the conf prefix, even from an included file.
    let tree = parse_with(
        "include conf.d/a.conf; include /abs/x.conf; include ./conf.d/b.conf;",
        sources,
    )
    .unwrap();
    assert_eq!(
        show(&tree.directives),
        "inner@/c/conf.d/a.conf:1; deepest@/c/conf.d/b.conf:1; absolute@/abs/x.conf:1; \
         dotted@/c/./conf.d/b.conf:1"
    );
    // Paths are kept as written: nginx lists `./conf.d/b.conf` separately in `-T`.
    assert_eq!(tree.files.len(), 5);
}

#[test]
fn include_globs_are_sorted_and_may_match_nothing() {
    let sources = MemorySources::new()
        .with("/c/conf.d/b.conf", "b;")
        .with("/c/conf.d/a.conf", "a;")
        .with("/c/conf.d/[x.conf", "bracket;")
        .with("/c/conf.d/.hidden.conf", "hidden;")
        .with("/c/conf.d/a.conf.bak", "backup;")
        .with("/c/sites/B/s.conf", "site_b;")
        .with("/c/sites/a/s.conf", "site_a;");
    let tree = parse_with(
        "include conf.d/*.conf;\ninclude none/*.conf;\n\
         include sites/*/s.conf;\ninclude conf.d/?.conf;",
        sources,
    )
    .unwrap();
    assert_eq!(
        show(&tree.directives),
        "bracket@/c/conf.d/[x.conf:1; a@/c/conf.d/a.conf:1; b@/c/conf.d/b.conf:1; \
         site_b@/c/sites/B/s.conf:1; site_a@/c/sites/a/s.conf:1; \
         a@/c/conf.d/a.conf:1; b@/c/conf.d/b.conf:1"
    );
    // A file included twice is listed once for `-T`.
    assert_eq!(tree.files.len(), 6);
}

#[test]
fn include_glob_with_odd_brackets_matches_nothing() {
    // Found by fuzzing: `[:]` inside a bracket made the matcher panic.
    let sources = MemorySources::new().with("/c/simple.conf", "x;");
    let tree = parse_with("include simple.co[}[[[[:][[[\0@conf;", sources).unwrap();
    assert!(tree.directives.is_empty());
}

#[test]
fn include_errors() {
    assert_eq!(
        parse_error("include \n\n nothere\n\n;\n"),
        "open() \"/c/nothere\" failed (2: No such file or directory) in /c/main.conf:5"
    );
    assert_eq!(
        parse_error("include;"),
        "invalid number of arguments in \"include\" directive in /c/main.conf:1"
    );
    assert_eq!(
        parse_error("include a b;"),
        "invalid number of arguments in \"include\" directive in /c/main.conf:1"
    );
    assert_eq!(
        parse_error("include \"b\");"),
        "invalid number of arguments in \"include\" directive in /c/main.conf:1"
    );
    assert_eq!(
        parse_error("include a {\n"),
        "directive \"include\" is not terminated by \";\" in /c/main.conf:1"
    );
    assert_eq!(
        parse_error("include a {}"),
        "directive \"include\" is not terminated by \";\" in /c/main.conf:1"
    );
    // Escapes are processed before the path is used.
    assert_eq!(
        parse_error("include 'q\\'x\\\\y\\z';"),
        "open() \"/c/q'x\\y\\z\" failed (2: No such file or directory) in /c/main.conf:1"
    );
    // An error inside an included file is reported there.
    let sources = MemorySources::new().with("/c/bad.conf", "\nok;\n}");
    assert_eq!(
        parse_with("a { include bad.conf; }", sources).unwrap_err(),
        "unexpected \"}\" in /c/bad.conf:3"
    );
}

#[test]
fn blocks_do_not_span_files() {
    let open = MemorySources::new().with("/c/open.conf", "server {\n");
    assert_eq!(
        parse_with("include open.conf;\n}", open).unwrap_err(),
        "unexpected end of file, expecting \"}\" in /c/open.conf:2"
    );
    let close = MemorySources::new().with("/c/close.conf", "}\n");
    assert_eq!(
        parse_with("a {\ninclude close.conf;\n}", close).unwrap_err(),
        "unexpected \"}\" in /c/close.conf:1"
    );
}

#[test]
fn include_cycles_end_at_the_depth_limit() {
    let sources = MemorySources::new()
        .with("/c/a.conf", "include b.conf;\n")
        .with("/c/b.conf", "x;\ninclude a.conf;\n");
    let error = parse_with("include a.conf;", sources).unwrap_err();
    assert_eq!(
        error,
        "include of \"/c/a.conf\" is nested too deeply (more than 32 levels), \
         probably an include cycle in /c/b.conf:2"
    );
    let error = parse_with("include main.conf;", MemorySources::new()).unwrap_err();
    assert!(
        error.starts_with("include of \"/c/main.conf\" is nested too deeply"),
        "{error}"
    );
    // A chain just at the limit is fine.
    let mut sources = MemorySources::new();
    for level in 1..INCLUDE_DEPTH_MAX {
        sources.insert(
            format!("/c/{level}.conf"),
            format!("include {}.conf;", level + 1),
        );
    }
    sources.insert(format!("/c/{INCLUDE_DEPTH_MAX}.conf"), "last;");
    assert_eq!(
        show(&parse_with("include 1.conf;", sources).unwrap().directives),
        "last@/c/32.conf:1"
    );
}

#[test]
fn multiplying_includes_end_at_the_file_limit() {
    // Each level includes the next twice: 2^20 reads without a limit.
    let mut sources = MemorySources::new();
    for level in 0..20 {
        sources.insert(
            format!("/c/{level}.conf"),
            format!("include {0}.conf; include {0}.conf;", level + 1),
        );
    }
    sources.insert("/c/20.conf", "x;");
    let error = parse_with("include 0.conf;", sources).unwrap_err();
    assert!(
        error.starts_with("too many configuration files (more than 65536) in /c/"),
        "{error}"
    );
}

/// A source whose glob and reads fail as a real file system can.
struct FailingSources;

impl Sources for FailingSources {
    fn read(&self, path: &Path) -> std::io::Result<Vec<u8>> {
        match path.to_str() {
            Some(MAIN) => Ok(b"include dir;\n".to_vec()),
            Some("/c/glob.conf") => Ok(b"include *.conf;\n".to_vec()),
            _ => Err(std::io::Error::from(std::io::ErrorKind::IsADirectory)),
        }
    }

    fn glob(&self, _pattern: &Path) -> std::io::Result<Vec<PathBuf>> {
        Err(std::io::Error::other("too many matching paths"))
    }
}

#[test]
fn read_and_glob_failures() {
    let error = parse_file(Path::new(MAIN), &FailingSources).unwrap_err();
    // nginx opens a directory fine, fails in pread(), and prints no position.
    assert!(
        error.to_string().starts_with("pread() \"/c/dir\" failed ("),
        "{error}"
    );
    assert_eq!(error.span, None);
    let error = parse_file(Path::new("/c/glob.conf"), &FailingSources).unwrap_err();
    assert_eq!(
        error.to_string(),
        "glob() \"/c/*.conf\" failed (too many matching paths) in /c/glob.conf:1"
    );
}
