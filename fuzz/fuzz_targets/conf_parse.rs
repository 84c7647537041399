//! Configuration text: parsing never panics, and a parsed tree written back as text parses
//! to the same tree.

#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use portico_conf::dump::{render, render_tree};
use portico_conf::{ConfErrorKind, Directive, MemorySources, parse_command_line, parse_file};

fuzz_target!(|data: &[u8]| {
    // The input is the main file; two fixed files let `include` succeed, and including the
    // main file itself exercises the include limits.
    let sources = MemorySources::new()
        .with("/fuzz/main.conf", data.to_vec())
        .with("/fuzz/simple.conf", "included value;\n")
        .with("/fuzz/block.d/b.conf", "b {\n    c \"d e\" 'f';\n}\n");
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = parse_command_line(text, Path::new("/fuzz"), &sources);
    }
    let Ok(tree) = parse_file(Path::new("/fuzz/main.conf"), &sources) else {
        return;
    };
    let _ = render(&tree);
    let rendered = render_tree(&tree.directives);
    let again = MemorySources::new().with("/fuzz/rendered.conf", rendered.clone());
    match parse_file(Path::new("/fuzz/rendered.conf"), &again) {
        Ok(reparsed) => assert!(
            same_directives(&tree.directives, &reparsed.directives),
            "round trip changed the tree:\n{rendered}"
        ),
        // Escaping can lengthen a word past nginx's 4096-byte token limit.
        Err(error) if is_too_long(&error.kind) => {}
        Err(error) => panic!("rendered tree does not parse: {error}\n{rendered}"),
    }
});

fn is_too_long(kind: &ConfErrorKind) -> bool {
    matches!(
        kind,
        ConfErrorKind::TooLongParameter { .. } | ConfErrorKind::TooLongQuotedParameter { .. }
    )
}

/// Equal names, arguments (with their quoting) and blocks; spans differ by construction.
fn same_directives(left: &[Directive], right: &[Directive]) -> bool {
    left.len() == right.len()
        && left.iter().zip(right).all(|(left, right)| {
            left.name == right.name
                && left.args == right.args
                && match (&left.block, &right.block) {
                    (None, None) => true,
                    (Some(left), Some(right)) => same_directives(left, right),
                    _ => false,
                }
        })
}
