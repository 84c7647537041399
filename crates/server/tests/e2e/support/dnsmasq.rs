//! A throwaway dnsmasq (Debian's `dnsmasq-base`): a name server on 127.0.0.1 and a given UDP
//! port that answers from a hosts file and nothing else, stopped by its pid.

use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use super::app_servers::{PATIENCE, Server, TempDir, find_program, running_as_root};
use super::dns;

/// A running dnsmasq.
pub struct Dnsmasq {
    // Dropped first: the server stops before its directory goes.
    _server: Server,
    _dir: TempDir,
}

impl Dnsmasq {
    /// The domain whose names come only from the hosts file: any other name in it is
    /// NXDOMAIN (`--local`), never asked of another server.
    pub const DOMAIN: &'static str = "portico.test";

    /// `dnsmasq`, or `None`, said on stderr with the package to install.
    #[allow(clippy::print_stderr, reason = "a skipped test says so")]
    pub fn find() -> Option<PathBuf> {
        let program = find_program(|name| name == "dnsmasq");
        if program.is_none() {
            eprintln!("skipped: dnsmasq not found (Debian: apt-get install dnsmasq-base)");
        }
        program
    }

    /// Starts dnsmasq on 127.0.0.1:`port` answering `hosts` (`ADDRESS NAME` lines, names
    /// in [`Dnsmasq::DOMAIN`]), and waits until it answers. No configuration file, no
    /// `/etc/hosts`, no upstream servers, no DHCP.
    pub fn start(program: &Path, port: u16, hosts: &str) -> Dnsmasq {
        let dir = TempDir::new("e2e-dnsmasq");
        let hosts_file = dir.write("hosts", hosts);
        let mut command = Command::new(program);
        command
            .args([
                "--keep-in-foreground",
                "--conf-file=/dev/null",
                "--log-facility=-",
            ])
            .args(["--no-resolv", "--no-hosts", "--no-poll"])
            .arg(format!("--addn-hosts={}", hosts_file.display()))
            .args(["--listen-address=127.0.0.1", "--bind-interfaces"])
            .arg(format!("--port={port}"))
            .arg(format!("--local=/{}/", Dnsmasq::DOMAIN))
            .arg(format!("--pid-file={}", dir.join("dnsmasq.pid").display()));
        if running_as_root() {
            // Otherwise it changes to a user Debian's dnsmasq-base may not have made.
            command.arg("--user=root");
        }
        let server = Server::spawn("dnsmasq", command, dir.join("dnsmasq.log"), "TERM");
        let dnsmasq = Dnsmasq {
            _server: server,
            _dir: dir,
        };
        dnsmasq.wait_answering(port);
        dnsmasq
    }

    /// Replaces the hosts file and has dnsmasq read it again (SIGHUP), by its pid.
    pub fn set_hosts(&self, hosts: &str) {
        self._dir.write("hosts", hosts);
        self._server.signal("HUP");
    }

    /// Asks the name server until it answers, at most [`PATIENCE`].
    fn wait_answering(&self, port: u16) {
        let client = UdpSocket::bind("127.0.0.1:0").expect("bind a client");
        client
            .set_read_timeout(Some(Duration::from_millis(50)))
            .expect("timeout");
        let question = dns::query(1, &format!("ready.{}", Dnsmasq::DOMAIN));
        let answered = super::wait::poll(PATIENCE, || {
            client.send_to(&question, ("127.0.0.1", port)).ok()?;
            let mut buf = [0u8; 512];
            client.recv(&mut buf).ok()
        });
        assert!(
            answered.is_some(),
            "dnsmasq did not answer on 127.0.0.1:{port} in time:\n{}",
            self._server.log_text()
        );
    }
}
