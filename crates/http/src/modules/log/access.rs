//! Writing access-log lines: rendering a format with its escaping.

use vars::Segment;

use std::os::unix::ffi::OsStrExt;

use crate::kernel::log_buffers::LogBuffers;
use crate::kernel::variables::RequestVariables;
use crate::modules::log::{AccessLogTarget, Escape, LogFormat, LogPath};

/// A line for a log whose path has variables: the file is opened, written and closed on a
/// pool (nginx opens it per request), so the caller hands this on.
#[derive(Debug)]
pub struct PathLine {
    pub path: std::path::PathBuf,
    pub line: Vec<u8>,
}

/// Writes the request's line to every target whose condition holds, through the worker's
/// buffers; the lines for paths with variables are returned, to be written on a pool.
pub fn log(
    buffers: &mut LogBuffers,
    targets: &[AccessLogTarget],
    variables: &RequestVariables<'_>,
    now: &runtime::clock::Now,
) -> Vec<PathLine> {
    let mut deferred = Vec::new();
    let LogBuffers { line, scratch, .. } = buffers;
    let (mut line, mut scratch) = (std::mem::take(line), std::mem::take(scratch));
    for target in targets {
        if let LogPath::File(file) = &target.path
            && file.paused()
        {
            continue;
        }
        if let Some(condition) = &target.condition {
            scratch.clear();
            condition.evaluate(&mut ConditionEvaluator(variables), &mut scratch);
            if scratch.is_empty() || scratch == b"0" {
                continue;
            }
        }
        line.clear();
        render(&target.format, variables, &mut line, &mut scratch);
        line.push(b'\n');
        match &target.path {
            LogPath::File(file) if file.as_syslog().is_some() => file.append_line(&line, &now.wall),
            LogPath::File(file) => buffers.write(file, target.buffering, &line, now.monotonic),
            LogPath::Template(template) => {
                scratch.clear();
                template.evaluate(&mut ConditionEvaluator(variables), &mut scratch);
                deferred.push(PathLine {
                    path: std::path::PathBuf::from(std::ffi::OsStr::from_bytes(&scratch)),
                    line: line.clone(),
                });
            }
        }
    }
    buffers.line = line;
    buffers.scratch = scratch;
    deferred
}

struct ConditionEvaluator<'a, 'b>(&'a RequestVariables<'b>);

impl vars::Evaluator<crate::kernel::variables::Variable> for ConditionEvaluator<'_, '_> {
    fn variable(&mut self, variable: &crate::kernel::variables::Variable, out: &mut Vec<u8>) {
        self.0.append(variable, out);
    }

    fn capture(&mut self, index: u8, out: &mut Vec<u8>) {
        if let Some(group) = self.0.request.matches.borrow().captures.group(index.into()) {
            out.extend_from_slice(group);
        }
    }
}

/// Renders one line: literal text as written, variable values escaped as the format says,
/// and `-` for a variable that is not found.
pub fn render(
    format: &LogFormat,
    variables: &RequestVariables<'_>,
    out: &mut Vec<u8>,
    scratch: &mut Vec<u8>,
) {
    for segment in format.template.segments() {
        match segment {
            Segment::Literal(bytes) => out.extend_from_slice(bytes),
            Segment::Variable(variable) => {
                scratch.clear();
                if !variables.append(variable, scratch) {
                    // nginx writes `-` for a missing value only with the default escaping.
                    if format.escape == Escape::Default {
                        out.push(b'-');
                    }
                    continue;
                }
                escape(format.escape, scratch, out);
            }
            Segment::Capture(index) => {
                if let Some(group) = variables
                    .request
                    .matches
                    .borrow()
                    .captures
                    .group((*index).into())
                {
                    escape(format.escape, group, out);
                }
            }
        }
    }
}

const HEX: &[u8; 16] = b"0123456789ABCDEF";

/// nginx's access-log escaping.
pub fn escape(mode: Escape, value: &[u8], out: &mut Vec<u8>) {
    match mode {
        Escape::None => out.extend_from_slice(value),
        Escape::Default => {
            for &byte in value {
                if byte == b'"' || byte == b'\\' || !(0x20..0x7f).contains(&byte) {
                    out.extend_from_slice(b"\\x");
                    out.push(HEX[usize::from(byte >> 4)]);
                    out.push(HEX[usize::from(byte & 0xf)]);
                } else {
                    out.push(byte);
                }
            }
        }
        Escape::Json => {
            for &byte in value {
                match byte {
                    b'"' => out.extend_from_slice(b"\\\""),
                    b'\\' => out.extend_from_slice(b"\\\\"),
                    b'\n' => out.extend_from_slice(b"\\n"),
                    b'\r' => out.extend_from_slice(b"\\r"),
                    b'\t' => out.extend_from_slice(b"\\t"),
                    0x08 => out.extend_from_slice(b"\\b"),
                    0x0c => out.extend_from_slice(b"\\f"),
                    0..0x20 => {
                        out.extend_from_slice(b"\\u00");
                        out.push(HEX[usize::from(byte >> 4)]);
                        out.push(HEX[usize::from(byte & 0xf)]);
                    }
                    _ => out.push(byte),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn escaped(mode: Escape, value: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        escape(mode, value, &mut out);
        out
    }

    #[test]
    fn default_escaping_matches_nginx() {
        assert_eq!(
            escaped(Escape::Default, b"a\"b\\c\x01\xff"),
            b"a\\x22b\\x5Cc\\x01\\xFF"
        );
        assert_eq!(escaped(Escape::Default, b"plain text"), b"plain text");
    }

    #[test]
    fn json_escaping() {
        assert_eq!(
            escaped(Escape::Json, b"a\"b\\c\n\x01"),
            b"a\\\"b\\\\c\\n\\u0001"
        );
        assert_eq!(escaped(Escape::Json, "é".as_bytes()), "é".as_bytes());
    }

    #[test]
    fn no_escaping() {
        assert_eq!(escaped(Escape::None, b"\"\x01"), b"\"\x01");
    }
}
