//! Random configuration text read by nginx (`nginx -t`) and by this crate must give the same
//! first error at the same line. Skipped, with a message, where nginx is not installed.
//!
//! nginx stops at the first directive it does not know, which is every generated name but
//! `include`; so when nginx reports `unknown directive`, the check is that the first
//! directive read here has that name and line. Any other nginx message (a syntax error, or a
//! failed `include`, whose path shows the argument's unescaped value) must be exactly ours.

use std::path::{Path, PathBuf};
use std::process::Command;

use portico_conf::lexer::{Lexer, Origin, Token};
use portico_conf::{Directive, DiskSources, Span, parse_command_line, parse_file};

const NGINX: &str = "/usr/sbin/nginx";
const CASES: usize = 1500;
const SEED: u64 = 0x5eed_c0f1_9a11_0001;
/// Messages at least this long may have been cut by nginx.
const NGINX_MESSAGE_BYTES_MAX: usize = 900;

/// The pieces random text is made of: every character the reader treats specially, with
/// names nginx does not know.
const PIECES: &[&str] = &[
    "a", "b", "x", " ", " ", "\n", "\n", "\t", "\r", ";", ";", ";", "{", "{", "}", "}", "\"", "'",
    "\\", "$", "${", "#", ")", "\"q s\"", "'s'", "\\\"", "\\n", "\\;", "é", "$a{", "*", "?",
];

/// splitmix64: a small, seedable generator so a failure can be replayed.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, bound: usize) -> usize {
        (self.next() % bound as u64) as usize
    }
}

fn generate(random: &mut Random) -> String {
    let mut text = String::new();
    if random.below(3) == 0 {
        text.push_str("include ");
    }
    for _ in 0..random.below(14) {
        text.push_str(PIECES[random.below(PIECES.len())]);
        // Now and then a run long enough to meet nginx's 4096-byte buffer.
        if random.below(40) == 0 {
            let filler = if random.below(2) == 0 { "y" } else { "\\y" };
            text.push_str(&filler.repeat((4080 + random.below(40)) / filler.len()));
        }
    }
    text
}

/// The first `[emerg]` or `[crit]` message nginx printed, without its prefix; empty if none.
/// A message may span lines (a directive name can hold a line feed); it ends where nginx's
/// closing `configuration file ... test failed` line starts.
fn nginx_message(output: &[u8]) -> String {
    let output = String::from_utf8_lossy(output);
    let Some((position, level)) = ["[emerg] ", "[crit] "]
        .iter()
        .filter_map(|level| output.find(level).map(|position| (position, *level)))
        .min()
    else {
        return String::new();
    };
    let mut message = &output[position + level.len()..];
    // Log-file form: `PID#TID: message`.
    if message.starts_with(|c: char| c.is_ascii_digit()) {
        message = message.split_once(": ").map_or(message, |(_, rest)| rest);
    }
    let end = message
        .find("\nnginx: configuration file")
        .unwrap_or(message.len());
    message[..end].trim_end_matches('\n').to_owned()
}

/// The name and line of the first directive other than `include ...;` that the lexer reads,
/// if it reads one. (When nginx reports an unknown directive, every `include` before it
/// succeeded: the files it may name here hold no directives nginx would reach.)
fn first_directive(text: &str, origin: Origin) -> Option<(String, u32)> {
    let mut lexer = Lexer::new(text, origin);
    let mut name = None;
    loop {
        let lexeme = lexer.next_token().ok()?;
        match lexeme.token {
            Token::Word(word) => {
                name.get_or_insert(word.value);
            }
            Token::Semicolon if name.as_deref() == Some("include") => name = None,
            Token::Semicolon | Token::BlockStart => return name.map(|name| (name, lexeme.line)),
            Token::BlockEnd | Token::End => return None,
        }
    }
}

/// Compares one outcome: nginx's message, our tree or error, and the first directive as the
/// lexer reads it. Returns a description of the difference, if any.
fn compare(
    nginx: &str,
    ours: Result<Vec<Directive>, String>,
    first: Option<(String, u32)>,
    location: &str,
) -> Option<String> {
    if let Some(rest) = nginx.strip_prefix("unknown directive \"") {
        let describe = |(name, line): (String, u32)| {
            let line = if location == "command line" {
                String::new()
            } else {
                format!(":{line}")
            };
            format!("{name}\" in {location}{line}")
        };
        let expected = first.map(describe);
        if expected.as_deref() != Some(rest) {
            return Some(format!("first directive read as {expected:?}"));
        }
        // A complete parse must start with that directive too.
        let parsed_first = ours.ok()?.first().map(|directive| {
            let line = match &directive.span {
                Span::File { line, .. } => *line,
                Span::CommandLine => 0,
            };
            describe((directive.name.clone(), line))
        });
        return (parsed_first.as_deref() != Some(rest))
            .then(|| format!("first directive parsed as {parsed_first:?}"));
    }
    let ours = match ours {
        Ok(directives) if directives.is_empty() => String::new(),
        Ok(directives) => format!("parsed {} directives", directives.len()),
        Err(message) => message,
    };
    let nginx = if nginx == "no \"events\" section in configuration" {
        ""
    } else {
        nginx
    };
    // nginx prints only the first byte of a character after a closing quote; we print it
    // whole (a documented difference).
    if let Some(nginx_rest) = nginx.strip_prefix("unexpected \"\u{fffd}\"") {
        let mut characters = ours
            .strip_prefix("unexpected \"")
            .unwrap_or_default()
            .chars();
        let whole_character = characters.next().is_some_and(|c| !c.is_ascii());
        let same = whole_character && characters.as_str().strip_prefix('"') == Some(nginx_rest);
        return (!same).then(|| format!("ours: {ours:?}"));
    }
    (ours != nginx).then(|| format!("ours: {ours:?}"))
}

fn temp_dir() -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("portico-conf-differential-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("the temporary directory is writable");
    dir
}

fn run_nginx(dir: &Path, conf: &Path, command_line: Option<&str>) -> String {
    let mut command = Command::new(NGINX);
    command
        .arg("-t")
        .arg("-p")
        .arg(format!("{}/", dir.display()))
        .arg("-c")
        .arg(conf);
    if let Some(text) = command_line {
        command.arg("-g").arg(text);
    }
    nginx_message(
        &command
            .output()
            .expect("nginx was found, so it runs")
            .stderr,
    )
}

#[test]
fn random_text_reads_as_nginx_reads_it() {
    if !Path::new(NGINX).exists() {
        eprintln!("skipped: {NGINX} is not installed");
        return;
    }
    let dir = temp_dir();
    let conf = dir.join("x.conf");
    let valid = dir.join("valid.conf");
    std::fs::write(&valid, "events {}\n").unwrap();
    // Files an `include` may name: one with an error in it, one empty, one a directory.
    std::fs::write(dir.join("a"), "\n\"q\"x;").unwrap();
    std::fs::write(dir.join("b"), "").unwrap();
    std::fs::create_dir_all(dir.join("x")).unwrap();
    // Another seed can be tried with PORTICO_DIFFERENTIAL_SEED=<decimal>.
    let seed = std::env::var("PORTICO_DIFFERENTIAL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(SEED);
    let mut random = Random(seed);
    let mut failures = Vec::new();
    // Cases nginx accepted, stopped at an unknown directive, and rejected otherwise.
    let mut counts = [0usize; 3];
    for case in 0..CASES {
        let text = generate(&mut random);
        let on_command_line = case % 2 == 1 && !text.contains('\n') && !text.contains('\r');
        let (nginx, ours, first, location) = if on_command_line {
            let nginx = run_nginx(&dir, &valid, Some(&text));
            let ours = parse_command_line(&text, &dir, &DiskSources);
            (
                nginx,
                ours,
                first_directive(&text, Origin::CommandLine),
                "command line".to_owned(),
            )
        } else {
            std::fs::write(&conf, &text).unwrap();
            let nginx = run_nginx(&dir, &conf, None);
            let ours = parse_file(&conf, &DiskSources);
            let origin = Origin::File(conf.as_path().into());
            (
                nginx,
                ours,
                first_directive(&text, origin),
                conf.display().to_string(),
            )
        };
        let ours = ours
            .map(|tree| tree.directives)
            .map_err(|error| error.to_string());
        // nginx cuts messages longer than its 1024-byte buffer; those cannot be compared.
        if nginx.len() > NGINX_MESSAGE_BYTES_MAX {
            continue;
        }
        let kind = match nginx.as_str() {
            "" | "no \"events\" section in configuration" => 0,
            message if message.starts_with("unknown directive") => 1,
            _ => 2,
        };
        counts[kind] += 1;
        if let Some(difference) = compare(&nginx, ours, first, &location) {
            let text: String = text.chars().take(200).collect();
            failures.push(format!(
                "case {case}: {text:?}\n  nginx: {nginx:?}\n  {difference}"
            ));
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
    eprintln!(
        "accepted {}, unknown directive {}, other errors {}",
        counts[0], counts[1], counts[2]
    );
    assert!(
        failures.is_empty(),
        "seed {seed}, {} differences:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
