//! What a session writes to its logs: the context that follows an error-log message
//! (` while proxying connection, client: 127.0.0.1, server: 127.0.0.1:8080, upstream:
//! "127.0.0.1:8081"`), and its access-log lines, rendered with `log_format`'s escaping.

use logging::LogContext;
use vars::Evaluator;

use crate::conf::{Escape, LogFormat};
use crate::variables::{Eval, Protocol, Variable};

/// The context of one session's error-log lines.
pub struct SessionContext<'a> {
    pub action: Option<&'static str>,
    pub protocol: Protocol,
    pub client: &'a [u8],
    pub server: &'a str,
    pub upstream: Option<&'a str>,
}

impl LogContext for SessionContext<'_> {
    fn write_context(&self, out: &mut Vec<u8>) {
        use std::io::Write as _;
        if let Some(action) = self.action {
            out.extend_from_slice(b" while ");
            out.extend_from_slice(action.as_bytes());
        }
        out.extend_from_slice(match self.protocol {
            Protocol::Tcp => b", client: ",
            Protocol::Udp => b", udp client: ",
        });
        out.extend_from_slice(self.client);
        out.extend_from_slice(b", server: ");
        out.extend_from_slice(self.server.as_bytes());
        if let Some(upstream) = self.upstream {
            let _ = write!(out, ", upstream: \"{upstream}\"");
        }
    }
}

/// Renders a `log_format` line (newline included), escaping each variable's value as
/// the format says; the literal text is written as it is.
pub fn render_line(format: &LogFormat, eval: &mut Eval<'_>) -> Vec<u8> {
    let mut out = Vec::with_capacity(128);
    let mut escaping = Escaping {
        inner: eval,
        escape: format.escape,
        scratch: Vec::new(),
    };
    format.template.evaluate(&mut escaping, &mut out);
    out.push(b'\n');
    out
}

struct Escaping<'e, 'a> {
    inner: &'e mut Eval<'a>,
    escape: Escape,
    scratch: Vec<u8>,
}

impl Evaluator<Variable> for Escaping<'_, '_> {
    fn variable(&mut self, variable: &Variable, out: &mut Vec<u8>) {
        self.scratch.clear();
        self.inner.variable(variable, &mut self.scratch);
        escape_into(self.escape, &self.scratch, out);
    }

    fn capture(&mut self, index: u8, out: &mut Vec<u8>) {
        self.scratch.clear();
        self.inner.capture(index, &mut self.scratch);
        escape_into(self.escape, &self.scratch, out);
    }
}

/// A variable's value as the stream block's access log writes it: `-` for an empty
/// value under the default escaping, then `log_format`'s `escape=` (`logging::escape`).
pub fn escape_into(escape: Escape, value: &[u8], out: &mut Vec<u8>) {
    // A variable without a value is `-` under the default escaping; JSON and `none`
    // write nothing.
    if value.is_empty() && escape == Escape::Default {
        out.push(b'-');
        return;
    }
    logging::escape::escape(escape, value, out);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn escaped(escape: Escape, value: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        escape_into(escape, value, &mut out);
        out
    }

    #[test]
    fn default_escaping_writes_quotes_backslashes_and_controls_in_hex() {
        assert_eq!(
            escaped(Escape::Default, b"a\"b\\c\x01\xff"),
            b"a\\x22b\\x5Cc\\x01\\xFF"
        );
        assert_eq!(
            escaped(Escape::Json, b"a\"b\\c\x01\n"),
            b"a\\\"b\\\\c\\u0001\\n"
        );
        assert_eq!(escaped(Escape::None, b"a\"\x01"), b"a\"\x01");
    }

    #[test]
    fn the_context_names_the_client_server_and_upstream() {
        let context = SessionContext {
            action: Some("proxying connection"),
            protocol: Protocol::Tcp,
            client: b"127.0.0.1",
            server: "127.0.0.1:8080",
            upstream: Some("127.0.0.1:8081"),
        };
        let mut out = Vec::new();
        context.write_context(&mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            " while proxying connection, client: 127.0.0.1, server: 127.0.0.1:8080, \
             upstream: \"127.0.0.1:8081\""
        );
    }
}
