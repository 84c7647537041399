//! Running the binary for command-line tests: arguments in; exit code, stdout and stderr out.

use std::ffi::OsStr;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use super::instance::binary;
use super::log::matching_lines;
use super::prefix::TempPrefix;
use super::wait::poll;

/// How long one command may run: binding a busy port retries for about 2.5 s as nginx does.
const RUN_TIMEOUT: Duration = Duration::from_secs(30);

/// What a finished command printed and returned.
#[derive(Debug, Clone)]
pub struct CliOutput {
    /// The exit code; `None` if a signal ended the process.
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl CliOutput {
    /// Asserts the exit code, showing the output on failure.
    #[track_caller]
    pub fn assert_code(&self, code: i32) -> &CliOutput {
        assert_eq!(
            self.code,
            Some(code),
            "exit code; stdout:\n{}\nstderr:\n{}",
            self.stdout,
            self.stderr
        );
        self
    }
}

/// Runs `portico ARGUMENTS` in `directory` and waits for it (with a deadline).
pub fn run_in<S: AsRef<OsStr> + std::fmt::Debug>(directory: &Path, arguments: &[S]) -> CliOutput {
    let mut child = Command::new(binary())
        .args(arguments)
        .current_dir(directory)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn portico");
    let stdout = drain(child.stdout.take().expect("stdout is piped"));
    let stderr = drain(child.stderr.take().expect("stderr is piped"));
    let status = poll(RUN_TIMEOUT, || {
        child.try_wait().expect("try_wait on portico")
    });
    let Some(status) = status else {
        let _ = child.kill();
        let _ = child.wait();
        panic!("portico {arguments:?} still ran after {RUN_TIMEOUT:?}; killed it");
    };
    CliOutput {
        code: status.code(),
        stdout: stdout.join().expect("the stdout reader does not panic"),
        stderr: stderr.join().expect("the stderr reader does not panic"),
    }
}

/// Runs `portico ARGUMENTS` in the system temp directory.
pub fn run<S: AsRef<OsStr> + std::fmt::Debug>(arguments: &[S]) -> CliOutput {
    run_in(&std::env::temp_dir(), arguments)
}

fn drain(mut pipe: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

/// Runs `portico -t` on `config` (the whole file); returns the file's path and the output.
pub fn test_config(config: &str) -> (String, CliOutput) {
    let prefix = TempPrefix::new();
    prefix.write("portico.conf", config);
    let arguments = ["-p", &prefix.arg(), "-c", "portico.conf", "-t"];
    let output = run_in(prefix.path(), &arguments);
    (prefix.join("portico.conf").display().to_string(), output)
}

/// `portico -t` on `events {} http { BODY }`; BODY starts on line 4.
pub fn test_http_body(body: &str) -> (String, CliOutput) {
    test_config(&format!("events {{\n}}\nhttp {{\n{body}\n}}\n"))
}

/// Whether `text` has a line reporting `message` at `level`, as `portico: [LEVEL] MESSAGE`.
/// nginx's own form (a time, the level, `PID#TID: `, the message) is accepted too, so that
/// these tests can be run against nginx with `PORTICO_E2E_BINARY`.
pub fn reported(text: &str, level: &str, message: &str) -> bool {
    let pattern = format!(r"\[{level}\] (\d+#\d+: )?\Q{message}\E$");
    !matching_lines(&pattern, text).is_empty()
}

/// `-t` fails with `message` at `emerg`; `{conf}` in `message` stands for the file's path.
#[track_caller]
pub fn assert_fails(config: &str, message: &str) {
    let (conf, output) = test_config(config);
    output.assert_code(1);
    let message = message.replace("{conf}", &conf);
    assert!(
        reported(&output.stderr, "emerg", &message),
        "want [emerg] {message:?} in:\n{}",
        output.stderr
    );
}

#[track_caller]
pub fn assert_http_body_fails(body: &str, message: &str) {
    assert_fails(&format!("events {{\n}}\nhttp {{\n{body}\n}}\n"), message);
}
