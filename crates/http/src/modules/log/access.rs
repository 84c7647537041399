//! Writing access-log lines: rendering a format with its escaping.

use logging::escape::escape;
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
