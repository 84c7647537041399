//! The `-T` dump: every configuration file as it was read, and a tree written back as text.

use crate::ast::{Argument, ConfigTree, Directive};
use crate::lexer::{Lexer, Origin, Token};

/// The text `portico -T` prints after the test result, as `nginx -T` prints it: for every
/// file read, in the order first read and once per path, `# configuration file PATH:`, a line
/// feed, the file's bytes, and one more line feed. So a file ending with a line feed is
/// followed by a blank line, and one without gets its line ended.
pub fn render(tree: &ConfigTree) -> String {
    let mut dump = String::new();
    for file in &tree.files {
        dump.push_str("# configuration file ");
        dump.push_str(&file.path.to_string_lossy());
        dump.push_str(":\n");
        dump.push_str(&file.text);
        dump.push('\n');
    }
    dump
}

/// Writes directives back as configuration text that parses to the same directives: four
/// spaces of indent per block, one directive per line. An argument keeps its quoting when
/// that can be written; an unquoted value that no unquoted word can produce (an empty one,
/// or one with a bare space) is written in double quotes.
pub fn render_tree(directives: &[Directive]) -> String {
    let mut text = String::new();
    render_block(&mut text, directives, 0);
    text
}

fn render_block(text: &mut String, directives: &[Directive], depth: usize) {
    for directive in directives {
        push_indent(text, depth);
        push_word(text, &directive.name, false);
        for argument in &directive.args {
            text.push(' ');
            let Argument { value, quoted } = argument;
            push_word(text, value, *quoted);
        }
        match &directive.block {
            None => text.push_str(";\n"),
            Some(block) => {
                text.push_str(" {\n");
                render_block(text, block, depth + 1);
                push_indent(text, depth);
                text.push_str("}\n");
            }
        }
    }
}

fn push_indent(text: &mut String, depth: usize) {
    for _ in 0..depth {
        text.push_str("    ");
    }
}

/// Writes one word so that nginx's reader gives back `value`.
fn push_word(text: &mut String, value: &str, quoted: bool) {
    if !quoted {
        let bare = bare_word(value);
        if reads_back_as_bare(&bare, value) {
            text.push_str(&bare);
            return;
        }
    }
    text.push('"');
    for character in value.chars() {
        if character == '"' || character == '\\' {
            text.push('\\');
        }
        text.push(character);
    }
    text.push('"');
}

/// A candidate unquoted spelling of `value`. Backslashes, quotes and control characters are
/// escaped, except a backslash before a space, `;` or `{`: nginx keeps such a pair as
/// written, and the pair is the only way an unquoted word holds those characters. (Escaping
/// every other backslash keeps the next character visible to the reader, which matters for
/// `${`.)
fn bare_word(value: &str) -> String {
    let mut bare = String::with_capacity(value.len() + 2);
    let mut characters = value.chars().peekable();
    while let Some(character) = characters.next() {
        match character {
            '\\' => match characters.peek() {
                Some(&next @ (' ' | ';' | '{')) => {
                    bare.push('\\');
                    bare.push(next);
                    characters.next();
                }
                _ => bare.push_str("\\\\"),
            },
            '"' => bare.push_str("\\\""),
            '\'' => bare.push_str("\\'"),
            '\t' => bare.push_str("\\t"),
            '\r' => bare.push_str("\\r"),
            '\n' => bare.push_str("\\n"),
            _ => bare.push(character),
        }
    }
    bare
}

/// Whether `bare`, read on its own, is exactly one unquoted word with value `value`.
fn reads_back_as_bare(bare: &str, value: &str) -> bool {
    let mut lexer = Lexer::new(bare, Origin::CommandLine);
    let first = lexer.next_token().map(|lexeme| lexeme.token);
    let second = lexer.next_token().map(|lexeme| lexeme.token);
    let expected = Argument {
        value: value.to_owned(),
        quoted: false,
    };
    matches!((first, second), (Ok(Token::Word(word)), Ok(Token::End)) if word == expected)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ast::{SourceFile, Span};
    use std::path::{Path, PathBuf};

    fn argument(value: &str, quoted: bool) -> Argument {
        Argument {
            value: value.to_owned(),
            quoted,
        }
    }

    fn directive(name: &str, args: Vec<Argument>, block: Option<Vec<Directive>>) -> Directive {
        Directive {
            name: name.to_owned(),
            args,
            block,
            span: Span::CommandLine,
        }
    }

    #[test]
    fn render_matches_nginx_dump_format() {
        let tree = ConfigTree {
            directives: Vec::new(),
            files: vec![
                SourceFile {
                    path: PathBuf::from("/c/main.conf"),
                    text: "events {}\n".into(),
                },
                SourceFile {
                    path: PathBuf::from("/c/a.conf"),
                    text: "# no newline".into(),
                },
                SourceFile {
                    path: PathBuf::from("/c/empty.conf"),
                    text: String::new(),
                },
            ],
        };
        assert_eq!(
            render(&tree),
            "# configuration file /c/main.conf:\nevents {}\n\n\
             # configuration file /c/a.conf:\n# no newline\n\
             # configuration file /c/empty.conf:\n\n"
        );
        assert_eq!(render(&ConfigTree::default()), "");
    }

    #[test]
    fn render_tree_writes_blocks_and_quotes() {
        let tree = vec![
            directive("user", vec![argument("www", false)], None),
            directive(
                "http",
                Vec::new(),
                Some(vec![directive(
                    "return",
                    vec![argument("200", false), argument("hello \"world\"", true)],
                    None,
                )]),
            ),
        ];
        assert_eq!(
            render_tree(&tree),
            "user www;\nhttp {\n    return 200 \"hello \\\"world\\\"\";\n}\n"
        );
    }

    /// Parsed, rendered and parsed again: the same names, arguments, quoting and blocks.
    #[test]
    fn render_tree_round_trips() {
        use crate::parser::parse_command_line;
        use crate::sources::MemorySources;
        let inputs = [
            "a b \"c d\" 'e' \"\" ${x} a\\;b c\\ d e\\{ \\\"q\\\";",
            // Found by fuzzing: a backslash pair before `${`.
            "a onf/\\\\${\\\\\\\\\\s x\\\\$y;",
            "\\\\\\t x\\n\\r \"\\t\" a\\0 $ $$ ${{{ \\#a a#b a} );",
            "\"\" \"a b\" \"#\" \"}\" \"{\" \";\";",
        ];
        let sources = MemorySources::new();
        for input in inputs {
            let first = parse_command_line(input, Path::new("/"), &sources).unwrap();
            let rendered = render_tree(&first.directives);
            let second = parse_command_line(&rendered, Path::new("/"), &sources).unwrap();
            assert_eq!(
                first.directives, second.directives,
                "{input:?} rendered as {rendered:?}"
            );
        }
    }

    #[test]
    fn bare_words_escape_what_nginx_unescapes() {
        let bare = |value: &str| {
            let mut text = String::new();
            push_word(&mut text, value, false);
            text
        };
        assert_eq!(bare("a\tb"), "a\\tb");
        assert_eq!(bare("a\\;b"), "a\\;b");
        assert_eq!(bare("a\\b"), "a\\\\b");
        assert_eq!(bare("a\\ b"), "a\\ b");
        assert_eq!(bare("a\\{"), "a\\{");
        // Found by fuzzing: `\${` must keep `${` visible to the reader.
        assert_eq!(bare("\\${x}"), "\\\\${x}");
        assert_eq!(bare("a\\nb"), "a\\\\nb");
        assert_eq!(bare("\"x\""), "\\\"x\\\"");
        assert_eq!(bare("${a}"), "${a}");
        assert_eq!(bare("a}"), "a}");
        // Values no unquoted word can have fall back to quotes.
        assert_eq!(bare(""), "\"\"");
        assert_eq!(bare("a b"), "\"a b\"");
        assert_eq!(bare("a{"), "\"a{\"");
        assert_eq!(bare("#a"), "\"#a\"");
        assert_eq!(bare("}"), "\"}\"");
    }
}
