//! What the setters share while the `http` block is read: paths, templates, log files,
//! upstream groups, warnings, and the check of a directive against the modules' tables.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use conf::{ConfError, ConfErrorKind, Context, Directive, Span};
use logging::{ErrorLog, LogFile, LogFiles};

use crate::kernel::conf::HttpDirective;
use crate::kernel::core::TempPath;
use crate::kernel::variables::{HttpTemplate, VariableRegistry};
use crate::modules::log::settings::{COMBINED, Escape, LogFormat};

/// What loading the `http` block needs from the master.
pub struct LoadEnv<'a> {
    pub prefix: &'a Path,
    pub main_error_log: Arc<ErrorLog>,
    pub log_files: &'a mut LogFiles,
    /// The machine's host name (`$hostname`, `server_name $hostname`).
    pub hostname: String,
    /// Directives of the main and `events` contexts: used in `http` they are "not allowed
    /// here" rather than unknown, as nginx, which knows every directive, says.
    pub outer_directives: &'a [&'static str],
}

/// State shared by the setters while the `http` block is read.
pub struct LoadContext<'a> {
    pub prefix: &'a Path,
    /// `upstream` blocks and the groups `proxy_pass` names.
    pub upstreams: crate::kernel::upstream::UpstreamRegistry,
    pub variables: VariableRegistry,
    pub log_files: &'a mut LogFiles,
    pub log_formats: HashMap<String, Arc<LogFormat>>,
    pub hostname: String,
    pub warnings: Vec<ConfError>,
    /// Each pool `aio threads=NAME` names without variables, where it was named.
    pub thread_pools_used: Vec<(String, Span)>,
    pub(crate) access_log_slots: usize,
    pub(crate) outer_directives: &'a [&'static str],
    /// Every module's directive table (the assembly's), for the blocks modules read.
    pub(crate) tables: &'static [&'static [HttpDirective]],
}

impl LoadContext<'_> {
    /// Compiles a directive value into a template, resolving its variables.
    pub fn template(&mut self, text: &str, span: &Span) -> Result<HttpTemplate, ConfError> {
        let variables = &mut self.variables;
        HttpTemplate::compile(text, |name| Ok::<_, ConfError>(variables.resolve(name))).map_err(
            |error| match error {
                vars::TemplateError::Resolve(error) => error,
                other => ConfError::message(other.to_string(), span),
            },
        )
    }

    /// A path relative to the prefix unless absolute, as nginx resolves file names.
    pub fn path(&self, text: &str) -> PathBuf {
        let path = Path::new(text);
        if path.is_absolute() {
            path.to_owned()
        } else {
            self.prefix.join(path)
        }
    }

    /// Opens (once per configuration) the log file a directive names.
    pub(crate) fn open_log(&mut self, text: &str, span: &Span) -> Result<Arc<LogFile>, ConfError> {
        let path = self.path(text);
        self.log_files
            .open(&path)
            .map_err(|error| open_error(&path, &error, span))
    }

    pub(crate) fn open_stderr(&mut self, span: &Span) -> Result<Arc<LogFile>, ConfError> {
        self.log_files
            .stderr()
            .map_err(|error| open_error(Path::new("stderr"), &error, span))
    }

    pub fn log_format(&mut self, name: &str) -> Option<Arc<LogFormat>> {
        if let Some(format) = self.log_formats.get(name) {
            return Some(Arc::clone(format));
        }
        if name != "combined" {
            return None;
        }
        let template = self.template(COMBINED, &Span::CommandLine).ok()?;
        let format = Arc::new(LogFormat {
            name: "combined".to_owned(),
            escape: Escape::Default,
            template,
        });
        self.log_formats
            .insert("combined".to_owned(), Arc::clone(&format));
        Some(format)
    }

    /// A new per-worker buffer slot for a buffered `access_log`.
    pub(crate) fn next_access_log_slot(&mut self) -> usize {
        self.access_log_slots += 1;
        self.access_log_slots - 1
    }

    /// nginx's `"NAME" directive is duplicate`.
    pub fn duplicate(&self, directive: &Directive) -> ConfError {
        ConfError::at(
            ConfErrorKind::Duplicate {
                name: directive.name.clone(),
            },
            &directive.span,
        )
    }

    /// `on` / `off`, with nginx's error for anything else.
    pub fn flag(&self, directive: &Directive) -> Result<bool, ConfError> {
        conf::value::parse_flag(directive)
    }

    /// `*_temp_path PATH [L1 [L2 [L3]]]`.
    pub(crate) fn temp_path(&self, directive: &Directive) -> Result<TempPath, ConfError> {
        let mut levels = Vec::new();
        for argument in &directive.args[1..] {
            match argument.as_str().parse::<u8>() {
                Ok(level @ 1..=2) => levels.push(level),
                _ => {
                    return Err(ConfError::directive(
                        &directive.name,
                        "invalid value",
                        &directive.span,
                    ));
                }
            }
        }
        Ok(TempPath {
            path: self.path(directive.arg(0)),
            levels,
        })
    }

    pub fn warn(&mut self, message: String, span: &Span) {
        self.warnings.push(ConfError::message(message, span));
    }

    /// Checks a directive against every HTTP module's table (for the `http` block and the
    /// blocks modules read themselves); a name only the main context knows is "not allowed
    /// here".
    pub(crate) fn check_directive(
        &self,
        directive: &Directive,
        context: Context,
    ) -> Result<&'static HttpDirective, ConfError> {
        let directives = self.tables.iter().flat_map(|table| table.iter());
        conf::spec::check(directives, directive, context).map_err(|error| match error.kind {
            ConfErrorKind::UnknownDirective { name }
                if self.outer_directives.contains(&name.as_str()) =>
            {
                ConfError::at(ConfErrorKind::NotAllowedHere { name }, &directive.span)
            }
            _ => error,
        })
    }
}

/// A context for unit tests of setters and parsers.
#[cfg(test)]
pub(crate) fn test_context(log_files: &mut LogFiles) -> LoadContext<'_> {
    LoadContext {
        prefix: Path::new("/tmp"),
        upstreams: Default::default(),
        variables: VariableRegistry::default(),
        log_files,
        log_formats: HashMap::new(),
        hostname: "localhost".to_owned(),
        warnings: Vec::new(),
        thread_pools_used: Vec::new(),
        access_log_slots: 0,
        outer_directives: &[],
        tables: &[],
    }
}

fn open_error(path: &Path, error: &std::io::Error, span: &Span) -> ConfError {
    ConfError::at(
        ConfErrorKind::Io {
            call: "open",
            path: path.to_owned(),
            errno: error.raw_os_error().unwrap_or(0),
            text: runtime::sys::linux::strerror(error.raw_os_error().unwrap_or(0)),
        },
        span,
    )
}
