//! The command line: help, version, bad options, `-t`/`-T`/`-q`, `-g`, `-s`, `daemon on`.

use std::path::Path;
use std::process::{Command, Stdio};

use rustix::process::{Pid, Signal};

use crate::support::cli::{CliOutput, run, run_in};
use crate::support::ports::free_port;
use crate::support::{Client, Instance, PATIENCE, TempPrefix, get, poll, wait_until};

const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Writes `config` as `PREFIX/portico.conf` (plus `files`) and runs `-p PREFIX/ -c
/// portico.conf ARGUMENTS`.
fn run_with_config(
    config: &str,
    files: &[(&str, &str)],
    arguments: &[&str],
) -> (TempPrefix, CliOutput) {
    let prefix = TempPrefix::new();
    prefix.write("portico.conf", config);
    for (path, text) in files {
        prefix.write(path, text);
    }
    let mut all = vec![
        "-p".to_owned(),
        prefix.arg(),
        "-c".to_owned(),
        "portico.conf".to_owned(),
    ];
    all.extend(arguments.iter().map(|argument| (*argument).to_owned()));
    let output = run_in(prefix.path(), &all);
    (prefix, output)
}

fn conf_path(prefix: &TempPrefix) -> String {
    prefix.join("portico.conf").display().to_string()
}

/// `-t` must fail with `portico: [emerg] MESSAGE` where `{conf}` and `{prefix}` in
/// `message` stand for the config path and the prefix directory.
#[track_caller]
fn assert_test_fails(config: &str, files: &[(&str, &str)], arguments: &[&str], message: &str) {
    let mut all = vec!["-t"];
    all.extend_from_slice(arguments);
    let (prefix, output) = run_with_config(config, files, &all);
    let conf = conf_path(&prefix);
    let message = message
        .replace("{conf}", &conf)
        .replace("{prefix}", &prefix.path().display().to_string());
    output.assert_code(1);
    assert!(
        output
            .stderr
            .contains(&format!("portico: [emerg] {message}\n")),
        "expected `portico: [emerg] {message}` on stderr, got:\n{}",
        output.stderr
    );
    assert!(
        output
            .stderr
            .contains(&format!("portico: configuration file {conf} test failed\n")),
        "stderr: {}",
        output.stderr
    );
    assert_eq!(output.stdout, "");
}

#[test]
fn help_goes_to_stderr() {
    for flag in ["-h", "-?"] {
        let output = run(&[flag]);
        output.assert_code(0);
        assert_eq!(output.stdout, "");
        let mut lines = output.stderr.lines();
        assert_eq!(
            lines.next(),
            Some(format!("portico version: portico/{VERSION}").as_str())
        );
        assert_eq!(
            lines.next(),
            Some("Usage: portico [-?hvVtTq] [-s signal] [-p prefix]")
        );
        for option in [
            "-?,-h",
            "-v",
            "-V",
            "-t",
            "-T",
            "-q",
            "-s signal",
            "-p prefix",
            "-e filename",
            "-c filename",
            "-g directives",
        ] {
            assert!(
                output.stderr.contains(&format!("  {option} ")),
                "help lists {option}:\n{}",
                output.stderr
            );
        }
    }
}

#[test]
fn version() {
    let output = run(&["-v"]);
    output.assert_code(0);
    assert_eq!(
        output.stderr,
        format!("portico version: portico/{VERSION}\n")
    );
    assert_eq!(output.stdout, "");
}

#[test]
fn version_and_build_details() {
    let output = run(&["-V"]);
    output.assert_code(0);
    let mut lines = output.stderr.lines();
    assert_eq!(
        lines.next(),
        Some(format!("portico version: portico/{VERSION}").as_str())
    );
    assert!(
        lines.next().is_some(),
        "-V prints build details after the version:\n{}",
        output.stderr
    );
    assert_eq!(output.stdout, "");
}

#[test]
fn bad_options() {
    let cases: &[(&[&str], &str)] = &[
        (&["x"], "invalid option: \"x\""),
        (&["-x"], "invalid option: \"x\""),
        (&["-s"], "option \"-s\" requires parameter"),
        (&["-s", "foo"], "invalid option: \"-s foo\""),
        (&["-p"], "option \"-p\" requires directory name"),
        (&["-c"], "option \"-c\" requires file name"),
        (&["-e"], "option \"-e\" requires file name"),
        (&["-g"], "option \"-g\" requires parameter"),
    ];
    for (arguments, message) in cases {
        let output = run(arguments);
        assert_eq!(output.code, Some(1), "exit code of {arguments:?}");
        assert_eq!(
            output.stderr,
            format!("portico: {message}\n"),
            "stderr of {arguments:?}"
        );
        assert_eq!(output.stdout, "", "stdout of {arguments:?}");
    }
}

#[test]
fn test_succeeds() {
    let (prefix, output) = run_with_config("events {\n}\n", &[], &["-t"]);
    let conf = conf_path(&prefix);
    output.assert_code(0);
    assert_eq!(
        output.stderr,
        format!(
            "portico: the configuration file {conf} syntax is ok\n\
             portico: configuration file {conf} test is successful\n"
        )
    );
    assert_eq!(output.stdout, "");
}

#[test]
fn test_binds_each_listen_address_and_lets_it_go() {
    // 192.0.2.0/24 is for documentation: no machine has it, so bind() fails with 99.
    assert_test_fails(
        "events {\n}\nhttp {\n    server {\n        listen 192.0.2.1:8080;\n    }\n}\n",
        &[],
        &[],
        "bind() to 192.0.2.1:8080 failed (99: Cannot assign requested address)",
    );
    // An address in use (the running server's) is fine; a Unix socket's file is removed.
    let busy = std::net::TcpListener::bind("127.0.0.1:0").expect("a probe socket");
    let port = busy.local_addr().expect("its address").port();
    let socket = std::env::temp_dir().join(format!("portico-t-{}.sock", std::process::id()));
    let config = format!(
        "events {{\n}}\nhttp {{\n    server {{\n        listen 127.0.0.1:{port};\n        \
         listen unix:{};\n    }}\n}}\n",
        socket.display()
    );
    let (_prefix, output) = run_with_config(&config, &[], &["-t", "-q"]);
    output.assert_code(0);
    assert_eq!(output.stderr, "");
    assert!(!socket.exists(), "the probe's socket file is gone");
}

#[test]
fn test_quiet_is_silent() {
    let (_prefix, output) = run_with_config("events {\n}\n", &[], &["-tq"]);
    output.assert_code(0);
    assert_eq!(output.stderr, "");
    assert_eq!(output.stdout, "");
}

#[test]
fn dump_prints_every_file() {
    let main = "events {\n}\ninclude conf.d/*.conf;\n";
    let files = [
        ("conf.d/a.conf", "worker_processes 1;\n"),
        ("conf.d/b.conf", "# only a comment\n"),
    ];
    let (prefix, output) = run_with_config(main, &files, &["-T"]);
    let conf = conf_path(&prefix);
    let directory = prefix.path().display().to_string();
    output.assert_code(0);
    assert_eq!(
        output.stdout,
        format!(
            "# configuration file {conf}:\n{main}\n\
             # configuration file {directory}/conf.d/a.conf:\nworker_processes 1;\n\n\
             # configuration file {directory}/conf.d/b.conf:\n# only a comment\n\n"
        )
    );
    assert!(
        output.stderr.contains("syntax is ok"),
        "stderr: {}",
        output.stderr
    );
}

#[test]
fn test_unknown_directive() {
    assert_test_fails(
        "events {\n}\nfoo;\n",
        &[],
        &[],
        "unknown directive \"foo\" in {conf}:3",
    );
}

#[test]
fn test_directive_not_allowed_here() {
    assert_test_fails(
        "events {\n}\nroot /tmp;\n",
        &[],
        &[],
        "\"root\" directive is not allowed here in {conf}:3",
    );
}

#[test]
fn test_invalid_number_of_arguments() {
    assert_test_fails(
        "events {\n}\nhttp {\n    server {\n        listen;\n    }\n}\n",
        &[],
        &[],
        "invalid number of arguments in \"listen\" directive in {conf}:5",
    );
}

#[test]
fn test_duplicate_directive() {
    assert_test_fails(
        "events {\n}\nhttp {\n    root a;\n    root b;\n}\n",
        &[],
        &[],
        "\"root\" directive is duplicate in {conf}:5",
    );
}

/// The setters every module shares (`set_once!`) give nginx's error in each context.
#[test]
fn test_duplicate_directive_in_every_module() {
    for (lines, name) in [
        (
            "server_names_hash_max_size 512;\n    server_names_hash_max_size 1024;",
            "server_names_hash_max_size",
        ),
        (
            "server { merge_slashes on; merge_slashes off; }",
            "merge_slashes",
        ),
        ("sendfile on;\n    sendfile off;", "sendfile"),
        (
            "open_file_cache off;\n    open_file_cache off;",
            "open_file_cache",
        ),
        (
            "proxy_connect_timeout 1s;\n    proxy_connect_timeout 2s;",
            "proxy_connect_timeout",
        ),
        ("rewrite_log on;\n    rewrite_log off;", "rewrite_log"),
        (
            "source_charset koi8-r;\n    source_charset utf-8;",
            "source_charset",
        ),
        (
            "upstream u { server 127.0.0.1:1; keepalive_timeout 1s; keepalive_timeout 2s; }",
            "keepalive_timeout",
        ),
    ] {
        let line = 4 + lines.matches('\n').count();
        assert_test_fails(
            &format!("events {{\n}}\nhttp {{\n    {lines}\n}}\n"),
            &[],
            &[],
            &format!("\"{name}\" directive is duplicate in {{conf}}:{line}"),
        );
    }
}

#[test]
fn test_unexpected_closing_brace() {
    assert_test_fails("events {\n}\n}\n", &[], &[], "unexpected \"}\" in {conf}:3");
}

#[test]
fn test_unexpected_end_of_file_in_a_directive() {
    assert_test_fails(
        "events {\n}\nhttp {\n    server {\n        listen 80",
        &[],
        &[],
        "unexpected end of file, expecting \";\" or \"}\" in {conf}:5",
    );
}

#[test]
fn test_unexpected_end_of_file_in_a_block() {
    assert_test_fails(
        "events {\n}\nhttp {\n    server {\n",
        &[],
        &[],
        "unexpected end of file, expecting \"}\" in {conf}:5",
    );
}

#[test]
fn test_block_without_opening_brace() {
    assert_test_fails(
        "events {\n}\nhttp {\n    server;\n}\n",
        &[],
        &[],
        "directive \"server\" has no opening \"{\" in {conf}:4",
    );
}

#[test]
fn test_without_events() {
    assert_test_fails(
        "http {\n}\n",
        &[],
        &[],
        "no \"events\" section in configuration",
    );
}

#[test]
fn test_unknown_variable() {
    assert_test_fails(
        "events {\n}\nhttp {\n    add_header X-Test $foo;\n}\n",
        &[],
        &[],
        "unknown \"foo\" variable",
    );
}

#[test]
fn test_include_of_a_missing_file() {
    assert_test_fails(
        "events {\n}\ninclude missing.conf;\n",
        &[],
        &[],
        "open() \"{prefix}/missing.conf\" failed (2: No such file or directory) in {conf}:3",
    );
}

#[test]
fn test_include_glob_reports_errors_in_the_included_file() {
    assert_test_fails(
        "events {\n}\ninclude conf.d/*.conf;\n",
        &[
            ("conf.d/a.conf", "worker_processes 1;\n"),
            ("conf.d/b.conf", "\nbogus;\n"),
        ],
        &[],
        "unknown directive \"bogus\" in {prefix}/conf.d/b.conf:2",
    );
}

#[test]
fn test_include_glob_without_matches_is_fine() {
    let (_prefix, output) = run_with_config("events {\n}\ninclude nothing/*.conf;\n", &[], &["-t"]);
    output.assert_code(0);
}

#[test]
fn test_command_line_directive_duplicating_the_file() {
    assert_test_fails(
        "events {\n}\ndaemon on;\n",
        &[],
        &["-g", "daemon off;"],
        "\"daemon\" directive is duplicate in {conf}:3",
    );
}

#[test]
fn test_command_line_errors() {
    assert_test_fails(
        "events {\n}\n",
        &[],
        &["-g", "foo;"],
        "unknown directive \"foo\" in command line",
    );
    assert_test_fails(
        "events {\n}\n",
        &[],
        &["-g", "daemon off"],
        "unexpected end of parameter, expecting \";\" in command line",
    );
    assert_test_fails(
        "events {\n}\n",
        &[],
        &["-g", "http {}"],
        "block directives are not supported in -g option in command line",
    );
}

#[test]
fn signal_without_a_running_master() {
    let (prefix, output) = run_with_config("events {\n}\n", &[], &["-s", "reload"]);
    output.assert_code(1);
    let pid_path = prefix.join("logs/portico.pid");
    assert_eq!(
        output.stderr,
        format!(
            "portico: [error] open() \"{}\" failed (2: No such file or directory)\n",
            pid_path.display()
        )
    );
}

const SIGNALLED: &str = "server {
    listen 127.0.0.1:8080;
    access_log logs/access.log;
    location / {
        return 200 \"generation one\\n\";
    }
}";

#[test]
fn signal_reload() {
    let mut server = Instance::http(SIGNALLED);
    assert_eq!(server.get("/").body_text(), "generation one\n");
    server.write_config(&SIGNALLED.replace("generation one", "generation two"));
    run_in(server.prefix().path(), &server.cli_args(&["-s", "reload"])).assert_code(0);
    wait_until("the reloaded config to serve", PATIENCE, || {
        server.get("/").body_text() == "generation two\n"
    });
}

#[test]
fn signal_reopen() {
    let server = Instance::http(SIGNALLED);
    server.get("/before");
    server.wait_for_line("logs/access.log", "GET /before");
    let rotated = server.prefix().join("logs/access.log.1");
    std::fs::rename(server.prefix().join("logs/access.log"), &rotated).unwrap();
    run_in(server.prefix().path(), &server.cli_args(&["-s", "reopen"])).assert_code(0);
    wait_until("the reopened access log", PATIENCE, || {
        server.prefix().join("logs/access.log").exists()
    });
    server.get("/after");
    let line = server.wait_for_line("logs/access.log", "GET /after");
    assert!(!line.contains("/before"));
    assert!(!std::fs::read_to_string(rotated).unwrap().contains("/after"));
}

#[test]
fn signal_quit_and_stop() {
    for signal in ["quit", "stop"] {
        let mut server = Instance::http(SIGNALLED);
        run_in(server.prefix().path(), &server.cli_args(&["-s", signal])).assert_code(0);
        let status = server
            .wait_exit(PATIENCE)
            .unwrap_or_else(|| panic!("still running after -s {signal}"));
        assert!(status.success(), "exit status after -s {signal}: {status}");
        assert!(
            !server.prefix().join("logs/portico.pid").exists(),
            "the pid file is removed on exit"
        );
    }
}

/// A daemon we started; killed on drop if a failed test left it running.
struct Daemon(Option<Pid>);

impl Daemon {
    fn is_alive(&self) -> bool {
        self.0.is_some_and(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid.as_raw_nonzero()));
            // A zombie waiting for init to reap it has exited.
            stat.is_ok_and(|stat| {
                !stat
                    .rsplit(')')
                    .next()
                    .unwrap_or_default()
                    .trim_start()
                    .starts_with('Z')
            })
        })
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(pid) = self.0
            && self.is_alive()
        {
            let _ = rustix::process::kill_process(pid, Signal::KILL);
        }
    }
}

#[test]
fn daemon_on() {
    let prefix = TempPrefix::new();
    let port = free_port();
    prefix.write(
        "portico.conf",
        format!(
            "daemon on;\nworker_processes 1;\npid logs/daemon.pid;\nerror_log logs/error.log info;\n\
             events {{\n}}\nhttp {{\n    server {{\n        listen 127.0.0.1:{port};\n        \
             return 200 \"daemon\\n\";\n    }}\n}}\n"
        ),
    );
    let mut child = Command::new(crate::support::instance::binary())
        .args(["-p", &prefix.arg(), "-c", "portico.conf"])
        .current_dir(prefix.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let parent_pid = child.id();
    let status =
        poll(PATIENCE, || child.try_wait().unwrap()).expect("the foreground process returns");
    assert!(status.success(), "status {status}");
    let pid_path = prefix.join("logs/daemon.pid");
    let pid: i32 = poll(PATIENCE, || read_pid(&pid_path)).expect("the daemon writes its pid file");
    let mut daemon = Daemon(Pid::from_raw(pid));
    assert_ne!(
        pid as u32, parent_pid,
        "the pid file names the forked daemon"
    );
    assert!(daemon.is_alive());
    let response = Client::connect(port).request(get("/"));
    assert_eq!(response.body_text(), "daemon\n");
    rustix::process::kill_process(daemon.0.unwrap(), Signal::QUIT).unwrap();
    wait_until("the daemon to exit after QUIT", PATIENCE, || {
        !daemon.is_alive()
    });
    daemon.0 = None;
    let log = prefix.read("logs/error.log");
    for marker in ["[alert]", "[crit]", "[emerg]", "panicked"] {
        assert!(!log.contains(marker), "error log:\n{log}");
    }
}

fn read_pid(path: &Path) -> Option<i32> {
    let text = std::fs::read_to_string(path).ok()?;
    text.strip_suffix('\n')?.parse().ok()
}
