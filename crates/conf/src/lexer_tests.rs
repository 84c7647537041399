//! Tests for the lexer. Expected values and lines were checked against nginx 1.22 (`nginx -t`
//! on the same text, reading names and `include` paths back from its error messages).

use std::path::Path;
use std::sync::Arc;

use super::*;

/// A token written compactly: `w:value`, `q:value` (quoted), `;`, `{`, `}` or `end`, with
/// its line.
fn show(lexeme: &Lexeme) -> String {
    let token = match &lexeme.token {
        Token::Word(Argument {
            value,
            quoted: false,
        }) => format!("w:{value}"),
        Token::Word(Argument {
            value,
            quoted: true,
        }) => format!("q:{value}"),
        Token::Semicolon => ";".to_owned(),
        Token::BlockStart => "{".to_owned(),
        Token::BlockEnd => "}".to_owned(),
        Token::End => "end".to_owned(),
    };
    format!("{token}@{}", lexeme.line)
}

fn file_origin() -> Origin {
    Origin::File(Arc::from(Path::new("/c/x.conf")))
}

/// All tokens up to the end, or the error text where lexing stopped.
fn lex_with(text: &str, origin: Origin) -> Result<Vec<String>, String> {
    let mut lexer = Lexer::new(text, origin);
    let mut tokens = Vec::new();
    loop {
        let lexeme = lexer.next_token().map_err(|error| error.to_string())?;
        tokens.push(show(&lexeme));
        if lexeme.token == Token::End {
            return Ok(tokens);
        }
    }
}

fn lex(text: &str) -> Vec<String> {
    lex_with(text, file_origin()).unwrap()
}

fn lex_error(text: &str) -> String {
    lex_with(text, file_origin()).unwrap_err()
}

#[test]
fn words_and_terminators() {
    assert_eq!(lex("a b;"), ["w:a@1", "w:b@1", ";@1", "end@1"]);
    assert_eq!(
        lex("a\tb\r\n{\n}\n"),
        ["w:a@1", "w:b@1", "{@2", "}@3", "end@4"]
    );
    assert_eq!(lex("a{}"), ["w:a@1", "{@1", "}@1", "end@1"]);
    // `}` inside a word is text; only at a token's start does it close a block.
    assert_eq!(lex("a b}"), ["w:a@1", "w:b}@1", "end@1"]);
    assert_eq!(lex(""), ["end@1"]);
    // Form feed and vertical tab are not whitespace to nginx.
    assert_eq!(lex("a\x0cb;"), ["w:a\x0cb@1", ";@1", "end@1"]);
}

#[test]
fn comments_start_only_where_a_token_could() {
    assert_eq!(lex("# x ; { }\na;"), ["w:a@2", ";@2", "end@2"]);
    assert_eq!(lex("a#b;"), ["w:a#b@1", ";@1", "end@1"]);
    assert_eq!(lex("a #b;\n;"), ["w:a@1", ";@2", "end@2"]);
    assert_eq!(lex("a; # no newline at end"), ["w:a@1", ";@1", "end@1"]);
}

#[test]
fn quotes() {
    assert_eq!(lex("\"a b\";"), ["q:a b@1", ";@1", "end@1"]);
    assert_eq!(
        lex("'a \"b\"' c;"),
        ["q:a \"b\"@1", "w:c@1", ";@1", "end@1"]
    );
    assert_eq!(lex("\"\" x;"), ["q:@1", "w:x@1", ";@1", "end@1"]);
    assert_eq!(lex("\"a;{}#\"{"), ["q:a;{}#@1", "{@1", "end@1"]);
    assert_eq!(lex("\"a\nb\";"), ["q:a\nb@2", ";@2", "end@2"]);
    // A quote inside a word is an ordinary character.
    assert_eq!(lex("a\"b\"c;"), ["w:a\"b\"c@1", ";@1", "end@1"]);
    // `)` after a closing quote starts a new word.
    assert_eq!(
        lex("if ($a = \"b\") {"),
        [
            "w:if@1", "w:($a@1", "w:=@1", "q:b@1", "w:)@1", "{@1", "end@1"
        ]
    );
    assert_eq!(lex("\"b\")c;"), ["q:b@1", "w:)c@1", ";@1", "end@1"]);
}

#[test]
fn escapes() {
    assert_eq!(
        lex(r#""a\"b" 'c\'d' "e\\f";"#),
        ["q:a\"b@1", "q:c'd@1", "q:e\\f@1", ";@1", "end@1"]
    );
    assert_eq!(
        lex(r#""\t\r\n" "\x\$";"#),
        ["q:\t\r\n@1", "q:\\x\\$@1", ";@1", "end@1"]
    );
    // Outside quotes the same rules apply to the value; the escaped byte never ends a word.
    assert_eq!(
        lex(r"a\;b c\ d e\{;"),
        ["w:a\\;b@1", "w:c\\ d@1", "w:e\\{@1", ";@1", "end@1"]
    );
    assert_eq!(
        lex(r#"a\tb \\ \";"#),
        ["w:a\tb@1", "w:\\@1", "w:\"@1", ";@1", "end@1"]
    );
    assert_eq!(lex(r"\#a;"), ["w:\\#a@1", ";@1", "end@1"]);
    // An escaped line feed still counts as a line.
    assert_eq!(lex("a\\\nb;"), ["w:a\\\nb@2", ";@2", "end@2"]);
    // A trailing backslash escapes nothing; the word is cut by the end of the text.
    assert_eq!(lex("a\\"), ["w:a\\@1", "end@1"]);
}

#[test]
fn dollar_brace_stays_in_the_word() {
    assert_eq!(lex("a${b}c x;"), ["w:a${b}c@1", "w:x@1", ";@1", "end@1"]);
    assert_eq!(lex("${a};"), ["w:${a}@1", ";@1", "end@1"]);
    // Every `{` right after `$` stays, however many.
    assert_eq!(lex("a${{{b;"), ["w:a${{{b@1", ";@1", "end@1"]);
    // An escaped `$` does not count, nor does a `{` after anything else.
    assert_eq!(lex(r"a\${b;"), ["w:a\\$@1", "{@1", "w:b@1", ";@1", "end@1"]);
    assert_eq!(lex("a$x{b;"), ["w:a$x@1", "{@1", "w:b@1", ";@1", "end@1"]);
    assert_eq!(lex("\"${\";"), ["q:${@1", ";@1", "end@1"]);
}

#[test]
fn after_a_closing_quote() {
    assert_eq!(lex_error("a \"b\"c;"), "unexpected \"c\" in /c/x.conf:1");
    assert_eq!(lex_error("a \"b\"#c;"), "unexpected \"#\" in /c/x.conf:1");
    assert_eq!(lex_error("a 'b''c';"), "unexpected \"'\" in /c/x.conf:1");
    assert_eq!(lex_error("\n\"b\"\\"), "unexpected \"\\\" in /c/x.conf:2");
    assert_eq!(lex_error("\"b\"é"), "unexpected \"é\" in /c/x.conf:1");
    assert_eq!(lex_error("a \"b\"}"), "unexpected \"}\" in /c/x.conf:1");
    assert_eq!(lex("'a';"), ["q:a@1", ";@1", "end@1"]);
    assert_eq!(lex("'a'{"), ["q:a@1", "{@1", "end@1"]);
    assert_eq!(lex("'a'\n;"), ["q:a@1", ";@2", "end@2"]);
    assert_eq!(lex("'a'"), ["q:a@1", "end@1"]);
}

#[test]
fn unterminated_quote_is_a_word_cut_by_the_end() {
    assert_eq!(lex("a \"b\nc"), ["w:a@1", "q:b\nc@2", "end@2"]);
}

#[test]
fn too_long_parameters_in_files() {
    let long = |length: usize| "x".repeat(length);
    // nginx fails once a token fills its 4096-byte buffer and more of the file follows.
    assert_eq!(lex(&format!("a {};\n", long(4095))).len(), 4);
    assert_eq!(
        lex_error(&format!("a {};\n", long(4096))),
        "too long parameter \"xxxxxxxxxx...\" started in /c/x.conf:1"
    );
    // At the very end of the file there is no buffer refill and so no error.
    assert_eq!(lex(&long(4096)).len(), 2);
    assert!(lex_error(&format!("{};", long(4096))).starts_with("too long parameter \"x"));
    // The whitespace ending an unquoted word does not restart the count.
    assert!(lex_error(&format!("a {} ;", long(4095))).starts_with("too long parameter"));
    assert_eq!(lex(&format!("a {} ;", long(4094))).len(), 4);
    assert_eq!(
        lex_error(&format!("\n\na \"{}\";", long(4096))),
        "too long parameter, probably missing terminating \"\"\" character in /c/x.conf:3"
    );
    assert_eq!(
        lex_error(&format!("a '{}';", long(5000))),
        "too long parameter, probably missing terminating \"'\" character in /c/x.conf:1"
    );
    // After a closing quote, the count goes on through the next byte.
    assert!(lex_error(&format!("\"{}\";\n", long(4095))).starts_with("too long parameter \"x"));
    assert!(lex_error(&format!("a \"{}\" ;\n", long(4094))).starts_with("too long parameter"));
    assert_eq!(lex(&format!("a \"{}\" ;\n", long(4093))).len(), 4);
    // Comments count too, from their `#` to their line feed.
    assert_eq!(lex(&format!("#{}\nfoo;\n", long(4094))).len(), 3);
    assert_eq!(
        lex_error(&format!("#{}\nfoo;\n", long(4095))),
        "too long parameter \"#xxxxxxxxx...\" started in /c/x.conf:1"
    );
    // Whitespace restarts it with every byte.
    assert_eq!(lex(&format!("{}foo;\n", " ".repeat(10_000))).len(), 3);
    // The line reported is where the token started.
    assert!(lex_error(&format!("\n\na {}\n;", long(5000))).ends_with("/c/x.conf:3"));
}

#[test]
fn command_line_has_no_length_limit_and_no_file() {
    let text = format!("a {};", "x".repeat(10_000));
    let tokens = lex_with(&text, Origin::CommandLine).unwrap();
    assert_eq!(tokens.len(), 4);
    let error = lex_with("a \"b\"c;", Origin::CommandLine).unwrap_err();
    assert_eq!(error, "unexpected \"c\" in command line");
}

#[test]
fn end_repeats() {
    let mut lexer = Lexer::new("a", Origin::CommandLine);
    assert!(matches!(lexer.next_token().unwrap().token, Token::Word(_)));
    assert_eq!(lexer.next_token().unwrap().token, Token::End);
    assert_eq!(lexer.next_token().unwrap().token, Token::End);
}

#[test]
fn unescape_rules() {
    assert_eq!(unescape(r#"\"\'\\\t\r\n"#), "\"'\\\t\r\n");
    assert_eq!(unescape(r"\a\;\$\"), "\\a\\;\\$\\");
    assert_eq!(unescape(r"\\\\"), "\\\\");
    assert_eq!(unescape("é\\té"), "é\té");
}
