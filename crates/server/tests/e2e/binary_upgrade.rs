//! Changing the binary on the fly, as an nginx operator does it: `USR2` starts the binary
//! again on the same sockets beside the running one; `QUIT` to the old master finishes the
//! upgrade, `TERM` to the new one goes back. No connection is refused in between, and a
//! Unix socket's file stays while either binary listens on it.

use std::path::Path;

use crate::support::{Client, Instance, PATIENCE, Signal, get, poll, wait_until};

const CONFIG: &str = "server {
    listen 127.0.0.1:8080;
    listen unix:%%PREFIX%%/upgrade.sock;
    location / { return 200 \"pid $pid\\n\"; }
}";

fn pid_file(instance: &Instance) -> Option<u32> {
    std::fs::read_to_string(instance.prefix().join(crate::support::instance::PID_FILE))
        .ok()?
        .trim()
        .parse()
        .ok()
}

fn oldbin(instance: &Instance) -> std::path::PathBuf {
    let mut path = instance
        .prefix()
        .join(crate::support::instance::PID_FILE)
        .into_os_string();
    path.push(".oldbin");
    path.into()
}

/// Whether a process is gone (or only a zombie waiting for its new parent to reap it).
fn exited(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z')),
    }
}

fn signal_pid(pid: u32, signal: Signal) {
    let target = rustix::process::Pid::from_raw(pid as i32).expect("a positive pid");
    rustix::process::kill_process(target, signal).expect("signal the new master");
}

/// Kills a new master the test did not get to stop (a failed assertion), so that no
/// server outlives its test.
struct StopOnDrop(u32);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        if !exited(self.0) {
            signal_pid(self.0, Signal::KILL);
        }
    }
}

fn answer_over_unix(socket: &Path) -> String {
    Client::connect_unix(socket).request(get("/")).body_text()
}

/// `USR2` on an instance: the new master's pid once it has written the pid file.
fn change_binary(instance: &Instance) -> u32 {
    let old = instance.pid();
    instance.signal(Signal::USR2);
    poll(PATIENCE, || {
        pid_file(instance).filter(|pid| *pid != old && oldbin(instance).exists())
    })
    .expect("a new master's pid file and PID.oldbin after USR2")
}

#[test]
fn usr2_then_quit_hands_the_sockets_to_the_new_binary() {
    let mut instance = Instance::http(CONFIG);
    let old = instance.pid();
    let socket = instance.prefix().join("upgrade.sock");
    assert_eq!(instance.get("/").body_text(), format!("pid {old}\n"));
    let new = change_binary(&instance);
    let _stop = StopOnDrop(new);
    // Both masters accept on the same sockets: the new one's workers answer too.
    wait_until(
        "the new binary to answer on the old socket",
        PATIENCE,
        || instance.get("/").body_text() == format!("pid {new}\n"),
    );
    instance.wait_for_error_log("using inherited sockets from");
    let log = instance.error_log();
    assert!(
        log.contains("signal 12 (SIGUSR2) received, changing binary")
            && log.contains(&format!("start new binary process {new}"))
            && log.contains("using inherited sockets from"),
        "{log}"
    );
    // A second USR2 while the new binary runs is refused, as nginx refuses it.
    instance.signal(Signal::USR2);
    instance.wait_for_error_log("the changing binary signal is ignored");

    assert!(instance.stop().success());
    assert!(
        socket.exists(),
        "the old master left the socket file to the new one"
    );
    for _ in 0..5 {
        assert_eq!(instance.get("/").body_text(), format!("pid {new}\n"));
        assert_eq!(answer_over_unix(&socket), format!("pid {new}\n"));
    }
    assert_eq!(pid_file(&instance), Some(new));

    // The new master is alone now: stopping it removes the socket file and the pid file.
    signal_pid(new, Signal::QUIT);
    wait_until("the new master to exit", PATIENCE, || exited(new));
    assert!(!socket.exists(), "the last master removes its socket file");
    assert_eq!(pid_file(&instance), None);
}

#[test]
fn term_to_the_new_binary_goes_back() {
    let mut instance = Instance::http(CONFIG);
    let old = instance.pid();
    let socket = instance.prefix().join("upgrade.sock");
    let new = change_binary(&instance);
    let _stop = StopOnDrop(new);
    signal_pid(new, Signal::TERM);
    wait_until("PID.oldbin to be renamed back", PATIENCE, || {
        !oldbin(&instance).exists() && pid_file(&instance) == Some(old)
    });
    instance.wait_for_error_log(&format!("new binary process {new} exited with code 0"));
    assert!(exited(new));
    assert!(
        socket.exists(),
        "the new master left the socket file to the old one"
    );
    for _ in 0..3 {
        assert_eq!(instance.get("/").body_text(), format!("pid {old}\n"));
        assert_eq!(answer_over_unix(&socket), format!("pid {old}\n"));
    }
    assert!(instance.stop().success());
    assert!(!socket.exists());
}
