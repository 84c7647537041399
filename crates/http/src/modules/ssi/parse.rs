//! The SSI command scanner: text and `<!--#command param="value" ... -->` commands, fed
//! in pieces as the body arrives (a command may be split across any two pieces), with
//! nginx's limits on names, parameters and values. Pure: no I/O, no logging.

/// Longest command and parameter name (nginx's `NGX_HTTP_SSI_COMMAND_LEN`, `PARAM_LEN`).
pub const NAME_LEN_MAX: usize = 32;
/// Parameters one command may have (`NGX_HTTP_SSI_PARAMS_N`).
pub const PARAMS_MAX: usize = 4;

const START: &[u8] = b"<!--#";

/// What the scanner found.
#[derive(Debug, PartialEq, Eq)]
pub enum Event {
    Text(Vec<u8>),
    Command(Command),
    /// A malformed command: the message to log; the command is skipped up to `-->`.
    Invalid(String),
}

/// A command with its parameters in the order written (names lower-cased).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Command {
    pub name: String,
    pub params: Vec<(String, Vec<u8>)>,
}

impl Command {
    pub fn param(&self, name: &str) -> Option<&[u8]> {
        self.params
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_slice())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Plain text; `matched` bytes of `<!--#` seen at its end.
    Text {
        matched: usize,
    },
    PreCommand,
    Name,
    PreParam,
    ParamName,
    PreEqual,
    PreValue,
    Value {
        quote: u8,
        escaped: bool,
    },
    PostValue,
    /// `-` seen, waiting for `->` (`dashes` of the closing `--` seen).
    End {
        dashes: usize,
    },
    /// After an error: everything up to `-->` is dropped.
    Skip {
        dashes: usize,
    },
}

/// The scanner's state between pieces.
#[derive(Debug)]
pub struct Scanner {
    state: State,
    value_len_max: usize,
    text: Vec<u8>,
    command: Command,
    param: String,
    value: Vec<u8>,
}

impl Scanner {
    /// A scanner with `ssi_value_length` as the longest parameter value.
    pub fn new(value_len_max: usize) -> Scanner {
        Scanner {
            state: State::Text { matched: 0 },
            value_len_max,
            text: Vec::new(),
            command: Command::default(),
            param: String::new(),
            value: Vec::new(),
        }
    }

    /// Scans `input`, appending what it completes to `events`.
    pub fn feed(&mut self, input: &[u8], events: &mut Vec<Event>) {
        let mut at = 0;
        while at < input.len() {
            if let State::Text { matched: 0 } = self.state {
                // The common case: copy text up to the next `<` at once.
                match memchr::memchr(b'<', &input[at..]) {
                    Some(offset) => {
                        self.text.extend_from_slice(&input[at..at + offset]);
                        at += offset;
                    }
                    None => {
                        self.text.extend_from_slice(&input[at..]);
                        return;
                    }
                }
            }
            self.step(input[at], events);
            at += 1;
        }
    }

    /// The body ended: text held back (a partial `<!--#`) is text after all; a command
    /// left open is dropped, as nginx drops it.
    pub fn finish(&mut self, events: &mut Vec<Event>) {
        if let State::Text { matched } = self.state {
            self.text.extend_from_slice(&START[..matched]);
        }
        self.state = State::Text { matched: 0 };
        self.flush_text(events);
    }

    fn flush_text(&mut self, events: &mut Vec<Event>) {
        if !self.text.is_empty() {
            events.push(Event::Text(std::mem::take(&mut self.text)));
        }
    }

    fn fail(&mut self, message: String, events: &mut Vec<Event>, byte: u8) {
        events.push(Event::Invalid(message));
        self.command = Command::default();
        self.state = State::Skip {
            dashes: usize::from(byte == b'-'),
        };
    }

    fn step(&mut self, byte: u8, events: &mut Vec<Event>) {
        let blank = matches!(byte, b' ' | b'\t' | b'\r' | b'\n');
        self.state = match self.state {
            State::Text { matched } => {
                if byte == START[matched] {
                    if matched + 1 == START.len() {
                        self.flush_text(events);
                        self.command = Command::default();
                        State::PreCommand
                    } else {
                        State::Text {
                            matched: matched + 1,
                        }
                    }
                } else {
                    self.text.extend_from_slice(&START[..matched]);
                    if byte == b'<' {
                        State::Text { matched: 1 }
                    } else {
                        self.text.push(byte);
                        State::Text { matched: 0 }
                    }
                }
            }
            State::PreCommand if blank => State::PreCommand,
            State::PreCommand | State::Name => return self.name_byte(byte, blank, events),
            State::PreParam if blank => State::PreParam,
            State::PreParam if byte == b'-' => State::End { dashes: 1 },
            State::PreParam => {
                if self.command.params.len() == PARAMS_MAX {
                    let message =
                        format!("too many SSI command parameters: \"{}\"", self.command.name);
                    return self.fail(message, events, byte);
                }
                self.param.clear();
                self.param.push(byte.to_ascii_lowercase() as char);
                State::ParamName
            }
            State::ParamName if blank => State::PreEqual,
            State::ParamName if byte == b'=' => State::PreValue,
            State::ParamName if byte == b'-' => {
                let message = format!(
                    "invalid \"{}\" parameter in \"{}\" SSI command",
                    self.param, self.command.name
                );
                return self.fail(message, events, byte);
            }
            State::ParamName => {
                if self.param.len() == NAME_LEN_MAX {
                    let message = format!(
                        "too long \"{}{}...\" parameter in \"{}\" SSI command",
                        self.param, byte as char, self.command.name
                    );
                    return self.fail(message, events, byte);
                }
                self.param.push(byte.to_ascii_lowercase() as char);
                State::ParamName
            }
            State::PreEqual if blank => State::PreEqual,
            State::PreEqual if byte == b'=' => State::PreValue,
            State::PreValue if blank => State::PreValue,
            State::PreValue if byte == b'"' || byte == b'\'' => {
                self.value.clear();
                State::Value {
                    quote: byte,
                    escaped: false,
                }
            }
            State::PreEqual | State::PreValue => {
                let message = format!(
                    "unexpected \"{}\" symbol after \"{}\" parameter in \"{}\" SSI command",
                    byte as char, self.param, self.command.name
                );
                return self.fail(message, events, byte);
            }
            State::Value { quote, escaped } => {
                return self.value_byte(byte, quote, escaped, events);
            }
            State::PostValue if blank => State::PreParam,
            State::PostValue if byte == b'-' => State::End { dashes: 1 },
            State::PostValue => {
                let message = format!(
                    "unexpected \"{}\" symbol after \"{}\" parameter in \"{}\" SSI command",
                    byte as char, self.param, self.command.name
                );
                return self.fail(message, events, byte);
            }
            State::End { dashes: 1 } if byte == b'-' => State::End { dashes: 2 },
            State::End { dashes: 2 } if byte == b'>' => {
                events.push(Event::Command(std::mem::take(&mut self.command)));
                State::Text { matched: 0 }
            }
            State::End { .. } => {
                let message = format!(
                    "unexpected \"{}\" symbol in \"{}\" SSI command",
                    byte as char, self.command.name
                );
                return self.fail(message, events, byte);
            }
            State::Skip { dashes } => match (dashes, byte) {
                (2.., b'>') => State::Text { matched: 0 },
                (_, b'-') => State::Skip { dashes: dashes + 1 },
                _ => State::Skip { dashes: 0 },
            },
        };
    }

    fn name_byte(&mut self, byte: u8, blank: bool, events: &mut Vec<Event>) {
        if blank {
            self.state = State::PreParam;
            return;
        }
        if byte == b'-' {
            if self.command.name.is_empty() {
                return self.fail("invalid SSI command".to_owned(), events, byte);
            }
            self.state = State::End { dashes: 1 };
            return;
        }
        if self.command.name.len() == NAME_LEN_MAX {
            let message = format!(
                "the \"{}{}...\" SSI command is too long",
                self.command.name, byte as char
            );
            return self.fail(message, events, byte);
        }
        self.command.name.push(byte.to_ascii_lowercase() as char);
        self.state = State::Name;
    }

    fn value_byte(&mut self, byte: u8, quote: u8, escaped: bool, events: &mut Vec<Event>) {
        if !escaped && byte == quote {
            let param = std::mem::take(&mut self.param);
            let value = std::mem::take(&mut self.value);
            self.command.params.push((param, value));
            self.state = State::PostValue;
            return;
        }
        if !escaped && byte == b'\\' {
            self.state = State::Value {
                quote,
                escaped: true,
            };
            return;
        }
        // A backslash escapes the quote only; before anything else it is kept.
        if escaped && byte != quote {
            self.value.push(b'\\');
        }
        if self.value.len() >= self.value_len_max {
            let message = format!(
                "too long \"{}\" value of \"{}\" parameter in \"{}\" SSI command",
                String::from_utf8_lossy(&self.value),
                self.param,
                self.command.name
            );
            return self.fail(message, events, byte);
        }
        self.value.push(byte);
        self.state = State::Value {
            quote,
            escaped: false,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan_in_pieces(input: &[u8], split: usize) -> Vec<Event> {
        let mut scanner = Scanner::new(256);
        let mut events = Vec::new();
        let (first, second) = input.split_at(split);
        scanner.feed(first, &mut events);
        scanner.feed(second, &mut events);
        scanner.finish(&mut events);
        // Adjacent text events are one text.
        let mut merged: Vec<Event> = Vec::new();
        for event in events {
            match (merged.last_mut(), event) {
                (Some(Event::Text(text)), Event::Text(more)) => text.extend_from_slice(&more),
                (_, event) => merged.push(event),
            }
        }
        merged
    }

    fn command(name: &str, params: &[(&str, &str)]) -> Event {
        Event::Command(Command {
            name: name.to_owned(),
            params: params
                .iter()
                .map(|(key, value)| ((*key).to_owned(), value.as_bytes().to_vec()))
                .collect(),
        })
    }

    #[test]
    fn commands_split_at_every_byte() {
        let input = b"a<!--#include virtual=\"/x?a=1\" set='v' -->b<!-- c --><!--#endif-->";
        for split in 0..=input.len() {
            assert_eq!(
                scan_in_pieces(input, split),
                vec![
                    Event::Text(b"a".to_vec()),
                    command("include", &[("virtual", "/x?a=1"), ("set", "v")]),
                    Event::Text(b"b<!-- c -->".to_vec()),
                    command("endif", &[]),
                ],
                "split at {split}"
            );
        }
    }

    #[test]
    fn escapes_and_case() {
        let events = scan_in_pieces(br#"<!--# ECHO Var="a\"b\c" -->"#, 3);
        assert_eq!(events, vec![command("echo", &[("var", "a\"b\\c")])]);
    }

    #[test]
    fn malformed_commands_are_skipped_with_a_message() {
        let events = scan_in_pieces(b"x<!--#echo var=a -->y<!--#-->z", 0);
        assert!(matches!(&events[1], Event::Invalid(message) if message.contains("unexpected")));
        assert_eq!(events[2], Event::Text(b"y".to_vec()));
        assert!(matches!(&events[3], Event::Invalid(_)));
        assert_eq!(events[4], Event::Text(b"z".to_vec()));
    }

    #[test]
    fn limits_are_nginx_s() {
        let long_name = format!("<!--#{} -->ok", "a".repeat(NAME_LEN_MAX + 1));
        let events = scan_in_pieces(long_name.as_bytes(), 0);
        assert!(matches!(&events[0], Event::Invalid(message) if message.contains("too long")));
        assert_eq!(events[1], Event::Text(b"ok".to_vec()));
        let many = b"<!--#x a='' b='' c='' d='' e='' -->";
        assert!(matches!(&scan_in_pieces(many, 0)[0], Event::Invalid(_)));
        let mut scanner = Scanner::new(3);
        let mut events = Vec::new();
        scanner.feed(b"<!--#echo var=\"abcd\" -->", &mut events);
        assert!(matches!(&events[0], Event::Invalid(message) if message.contains("too long")));
    }

    #[test]
    fn an_unfinished_start_is_text() {
        assert_eq!(
            scan_in_pieces(b"a<!-", 2),
            vec![Event::Text(b"a<!-".to_vec())]
        );
    }
}
