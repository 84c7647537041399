//! The main context: worker threads, CPU affinity, `worker_rlimit_nofile`,
//! `worker_priority`, `user`, and the thread pool the static handler uses, observed through
//! `/proc`.

use crate::support::cli::assert_fails;
use crate::support::instance::Instance;

/// The threads of `pid` as (name, status file text).
fn threads(pid: u32) -> Vec<(String, String)> {
    let mut threads = Vec::new();
    for entry in
        std::fs::read_dir(format!("/proc/{pid}/task")).expect("the master's threads are listed")
    {
        let task = entry.expect("a task entry").path();
        let name = std::fs::read_to_string(task.join("comm"))
            .unwrap_or_default()
            .trim()
            .to_owned();
        let status = std::fs::read_to_string(task.join("status")).unwrap_or_default();
        threads.push((name, status));
    }
    threads
}

fn status_field<'a>(status: &'a str, field: &str) -> &'a str {
    status
        .lines()
        .find_map(|line| {
            line.strip_prefix(field)
                .map(|rest| rest.trim_start_matches(':').trim())
        })
        .unwrap_or_default()
}

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

const HTTP: &str =
    "http { server { listen 127.0.0.1:8080; location / { return 200 \"ok\\n\"; } } }";

#[test]
fn env_lines_are_checked_and_kept() {
    let server = Instance::start(&format!(
        "env TZ;\nenv PORTICO_E2E=1;\nevents {{\n}}\n{HTTP}\n"
    ));
    assert_eq!(server.get("/").status, 200);
    let failure = Instance::builder(&format!("env =1;\nevents {{\n}}\n{HTTP}\n"))
        .expect_log("[emerg]")
        .try_start()
        .expect_err("an empty name is refused");
    assert!(
        failure.stderr.contains("invalid parameter \"=1\""),
        "{}",
        failure.stderr
    );
}

#[test]
fn worker_processes_starts_that_many_worker_threads() {
    let server = Instance::start(&format!("worker_processes 3;\nevents {{\n}}\n{HTTP}\n"));
    assert_eq!(server.get("/").status, 200);
    let mut workers: Vec<String> = threads(server.pid())
        .into_iter()
        .map(|(name, _)| name)
        .filter(|name| name.starts_with("worker "))
        .collect();
    workers.sort();
    assert_eq!(workers, ["worker 1.0", "worker 1.1", "worker 1.2"]);
}

#[test]
fn worker_cpu_affinity_pins_each_worker() {
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    if cpus < 2 {
        eprintln!("skipped: worker_cpu_affinity needs two CPUs, this machine has {cpus}");
        return;
    }
    let server = Instance::start(&format!(
        "worker_processes 2;\nworker_cpu_affinity 01 10;\nevents {{\n}}\n{HTTP}\n"
    ));
    assert_eq!(server.get("/").status, 200);
    for (name, status) in threads(server.pid()) {
        let expected = match name.as_str() {
            "worker 1.0" => "0",
            "worker 1.1" => "1",
            _ => continue,
        };
        assert_eq!(
            status_field(&status, "Cpus_allowed_list"),
            expected,
            "{name}"
        );
    }
}

/// Pool threads stay off the CPUs the workers are pinned to, when the master has others: a
/// hash or copy a worker hands over then never runs where that worker would wait for it.
#[test]
fn pool_threads_leave_the_cpus_workers_are_pinned_to() {
    let allowed = status_field(
        &std::fs::read_to_string("/proc/self/status").expect("own status"),
        "Cpus_allowed_list",
    )
    .to_owned();
    if allowed != "0-1" && !allowed.starts_with("0-") {
        eprintln!("skipped: this test pins a worker to CPU 0 of CPUs 0-N, allowed here: {allowed}");
        return;
    }
    let last: usize = allowed[2..].parse().expect("a CPU number");
    let server = Instance::start(&format!(
        "worker_processes 1;\nworker_cpu_affinity 1;\nthread_pool default threads=2;\nevents {{\n}}\n{HTTP}\n"
    ));
    assert_eq!(server.get("/").status, 200);
    let rest = if last == 1 {
        "1".to_owned()
    } else {
        format!("1-{last}")
    };
    let mut pools = 0;
    for (name, status) in threads(server.pid()) {
        let cpus = status_field(&status, "Cpus_allowed_list");
        if name == "worker 1.0" {
            assert_eq!(cpus, "0", "{name}");
        } else if name.starts_with("pool ") {
            assert_eq!(cpus, rest, "{name}");
            pools += 1;
        }
    }
    assert_eq!(pools, 2, "two pool threads");
}

#[test]
fn worker_rlimit_nofile_sets_the_process_limit() {
    let server = Instance::start(&format!(
        "worker_rlimit_nofile 4321;\nevents {{\n}}\n{HTTP}\n"
    ));
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", server.pid()))
        .expect("limits are readable");
    let line = limits
        .lines()
        .find(|line| line.starts_with("Max open files"))
        .expect("an open-files line");
    let numbers: Vec<&str> = line
        .split_whitespace()
        .filter(|word| word.bytes().all(|b| b.is_ascii_digit()))
        .collect();
    assert_eq!(numbers, ["4321", "4321"], "{line}");
}

/// A number from each thread's `/proc/PID/task/TID/sched` (`prio`), with the thread's name.
fn sched_field(pid: u32, name: &str) -> Vec<(String, Option<i64>)> {
    let mut fields = Vec::new();
    for entry in std::fs::read_dir(format!("/proc/{pid}/task")).expect("the threads are listed") {
        let task = entry.expect("a task entry").path();
        let comm = std::fs::read_to_string(task.join("comm")).unwrap_or_default();
        let sched = std::fs::read_to_string(task.join("sched")).unwrap_or_default();
        let value = sched
            .lines()
            .find(|line| line.starts_with(name))
            .and_then(|line| line.rsplit(':').next())
            .and_then(|value| value.trim().parse().ok());
        fields.push((comm.trim().to_owned(), value));
    }
    fields
}

/// `worker_priority` is the nice value of the worker and pool threads (nginx's pool threads
/// inherit their worker process's); the master keeps its own. 15 is above any nice value a
/// test runner is likely to be started with, so no privilege is needed.
#[test]
fn worker_priority_sets_the_nice_value_of_workers_and_pools() {
    let server = Instance::start(&format!(
        "worker_priority 15;\nworker_processes 1;\nthread_pool default threads=1;\nevents {{\n}}\n{HTTP}\n"
    ));
    assert_eq!(server.get("/").status, 200);
    let prios = sched_field(server.pid(), "prio");
    let own_prio = sched_field(std::process::id(), "prio")
        .into_iter()
        .find_map(|(_, prio)| prio);
    let mut seen = 0;
    for (name, prio) in &prios {
        if name.starts_with("worker ") || name.starts_with("pool ") {
            assert_eq!(*prio, Some(135), "{name} runs at nice 15");
            seen += 1;
        } else if name == "portico" {
            assert_eq!(
                *prio, own_prio,
                "the master keeps the nice value it was started with"
            );
        }
    }
    assert_eq!(seen, 2, "one worker and one pool thread: {prios:?}");
}

/// A negative priority needs root's privilege: it is set before the threads switch to
/// `user` (nobody, by default, for a master running as root).
#[test]
fn worker_priority_below_zero_is_set_before_user_drops_root() {
    if !is_root() {
        eprintln!("skipped: a negative worker_priority needs a master running as root");
        return;
    }
    let server = Instance::start(&format!(
        "worker_priority -3;\nworker_processes 1;\nevents {{\n}}\n{HTTP}\n"
    ));
    assert_eq!(server.get("/").status, 200);
    let workers: Vec<_> = sched_field(server.pid(), "prio")
        .into_iter()
        .filter(|(name, _)| name.starts_with("worker "))
        .collect();
    assert_eq!(workers.len(), 1);
    assert_eq!(workers[0].1, Some(117), "{workers:?}");
    let log = server.error_log();
    assert!(!log.contains("setpriority"), "{log}");
}

#[test]
fn worker_priority_takes_a_signed_number() {
    assert_fails(
        &format!("worker_priority -x;\nevents {{\n}}\n{HTTP}\n"),
        "\"worker_priority\" directive invalid number in {conf}:1",
    );
    assert_fails(
        &format!("worker_priority 1;\nworker_priority 2;\nevents {{\n}}\n{HTTP}\n"),
        "\"worker_priority\" directive is duplicate in {conf}:2",
    );
}

#[test]
fn workers_run_as_nobody_while_the_master_keeps_root() {
    if !is_root() {
        eprintln!("skipped: the user directive needs a master running as root");
        return;
    }
    let server = Instance::start(&format!("events {{\n}}\n{HTTP}\n"));
    assert_eq!(server.get("/").status, 200);
    let nobody = runtime_uid("nobody");
    for (name, status) in threads(server.pid()) {
        let uid = status_field(&status, "Uid")
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .to_owned();
        if name.starts_with("worker ") || name.starts_with("pool ") {
            assert_eq!(uid, nobody, "{name} runs as nobody");
        } else if name == "portico" {
            assert_eq!(uid, "0", "the master keeps root");
        }
    }
}

#[test]
fn user_root_keeps_workers_as_root() {
    if !is_root() {
        eprintln!("skipped: the user directive needs a master running as root");
        return;
    }
    let server = Instance::start(&format!("user root;\nevents {{\n}}\n{HTTP}\n"));
    assert_eq!(server.get("/").status, 200);
    for (name, status) in threads(server.pid()) {
        if name.starts_with("worker ") {
            let uid = status_field(&status, "Uid")
                .split_whitespace()
                .next()
                .unwrap_or_default()
                .to_owned();
            assert_eq!(uid, "0", "{name}");
        }
    }
}

/// As each nginx worker process has its own pools, each worker thread has its own
/// instance of a declared pool: `threads=3` with two workers is six pool threads.
#[test]
fn declared_default_pool_sets_the_file_threads() {
    let server = Instance::start(&format!(
        "worker_processes 2;\nthread_pool default threads=3 max_queue=16;\n\
         events {{\n}}\n{HTTP}\n"
    ));
    assert_eq!(server.get("/").status, 200);
    let pool_threads = threads(server.pid())
        .into_iter()
        .filter(|(name, _)| name == "pool default")
        .count();
    assert_eq!(pool_threads, 6);
}

/// A user's uid from the passwd file.
fn runtime_uid(user: &str) -> String {
    let passwd = std::fs::read_to_string("/etc/passwd").expect("/etc/passwd is readable");
    passwd
        .lines()
        .find_map(|line| {
            let fields: Vec<&str> = line.split(':').collect();
            (fields.first() == Some(&user))
                .then(|| fields.get(2).copied().unwrap_or_default().to_owned())
        })
        .expect("the user exists")
}

/// The error log's first lines name Portico's version and the nginx version it follows
/// (nginx writes its own at start, and tools look for it there).
#[test]
fn the_start_notices_name_both_versions() {
    let server = Instance::start(&format!("events {{\n}}\n{HTTP}\n"));
    let started =
        server.wait_for_error_log(&format!("portico/{} started", env!("CARGO_PKG_VERSION")));
    assert!(started.contains("[notice]"), "{started}");
    let follows = server.wait_for_error_log(&format!(
        "nginx compatibility: nginx/{}",
        shared::NGINX_COMPATIBLE_VERSION
    ));
    assert!(follows.contains("[notice]"), "{follows}");
}
