//! Free ports, and the mapping of a config's nominal ports to them.
//!
//! A config names nominal ports (`127.0.0.1:8080`, `[::1]:8081`, `%%PORT_8082%%`); each is
//! replaced by a port that was free on 127.0.0.1 ([`free_port`]). Ports handed out once are
//! never handed out again by this test process, so parallel tests cannot collide.

use std::collections::{BTreeMap, HashSet};
use std::net::TcpListener;
use std::sync::Mutex;

/// Nominal ports are in this range; other numbers in a config are left alone.
const NOMINAL_PORTS: std::ops::RangeInclusive<u16> = 8000..=9999;

/// The ports handed out, and the next one to try.
static HANDED_OUT: Mutex<Option<(HashSet<u16>, u16)>> = Mutex::new(None);

/// Locks on the ports this process handed out, held until it exits.
static CLAIMS: Mutex<Vec<std::fs::File>> = Mutex::new(Vec::new());

/// Claims `port` against other test processes on this machine: an exclusive `flock` on
/// `/tmp/portico-e2e-ports/PORT`, kept until this process exits. Two processes (the e2e
/// tests of two checkouts, say) each see a port free between its probe and the bind that
/// uses it, and the second bind failed with "Address already in use"; a port another
/// process has claimed is skipped. Without the directory, every port is claimable.
///
/// The claim comes before the probe: another process's probe of a port this one has claimed
/// but not yet bound would hold it for a moment, and this one's bind failed then.
fn claim(port: u16) -> Option<Claim> {
    let directory = std::path::Path::new("/tmp/portico-e2e-ports");
    if std::fs::create_dir_all(directory).is_err() {
        return Some(Claim(None));
    }
    let Ok(file) = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(directory.join(port.to_string()))
    else {
        return Some(Claim(None));
    };
    rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive)
        .ok()
        .map(|()| Claim(Some(file)))
}

/// A port's lock file while it is held; dropping it gives the port back.
struct Claim(Option<std::fs::File>);

impl Claim {
    /// Keeps the claim until the process exits.
    fn keep(self) {
        if let Some(file) = self.0 {
            CLAIMS
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .push(file);
        }
    }
}

/// A port that was free on 127.0.0.1 a moment ago and that no other test of this process got.
///
/// Taken below the kernel's ephemeral range (`ip_local_port_range`) when there is room: a port
/// from that range may become the local port of some outgoing connection (a test's client,
/// a server's upstream connection) between this hand-out and the bind that uses it, and the
/// bind then fails with "Address already in use". Each test process starts at its own offset,
/// so that two processes running at once rarely try the same ports, and a port is claimed
/// with a lock file ([`claim`]) so that they never hand out the same one.
pub fn free_port() -> u16 {
    let mut handed_out = HANDED_OUT
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let state = handed_out.get_or_insert_with(|| (HashSet::new(), first_port()));
    if let Some((low, high)) = below_ephemeral() {
        let span = u32::from(high - low);
        for _ in 0..span {
            let port = state.1;
            state.1 = if port + 1 >= high { low } else { port + 1 };
            if state.0.contains(&port) {
                continue;
            }
            let Some(claim) = claim(port) else { continue };
            if TcpListener::bind(("127.0.0.1", port)).is_ok() {
                claim.keep();
                state.0.insert(port);
                return port;
            }
        }
    }
    loop {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let port = listener.local_addr().expect("local_addr").port();
        if state.0.contains(&port) {
            continue;
        }
        if let Some(claim) = claim(port) {
            drop(listener);
            claim.keep();
            state.0.insert(port);
            return port;
        }
    }
}

/// The ports below the ephemeral range this allocator uses, `[low, high)`; `None` when the
/// range starts too low to leave room.
fn below_ephemeral() -> Option<(u16, u16)> {
    const LOW: u16 = 10_000;
    let text = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok()?;
    let ephemeral_low: u16 = text.split_whitespace().next()?.parse().ok()?;
    (ephemeral_low >= LOW + 2_000).then_some((LOW, ephemeral_low))
}

/// Where this process starts looking: spread over the range by its pid.
fn first_port() -> u16 {
    match below_ephemeral() {
        Some((low, high)) => {
            let span = u32::from(high - low);
            low + u16::try_from(std::process::id().wrapping_mul(7_919) % span).unwrap_or(0)
        }
        None => 0,
    }
}

/// Nominal port to real port, fixed for one instance's life (reloads keep the mapping).
#[derive(Debug, Default, Clone)]
pub struct PortMap {
    ports: BTreeMap<u16, u16>,
}

impl PortMap {
    /// The real port for `nominal`, picked on first use.
    pub fn port(&mut self, nominal: u16) -> u16 {
        *self.ports.entry(nominal).or_insert_with(free_port)
    }

    /// The real port for a nominal port the config already used.
    pub fn get(&self, nominal: u16) -> Option<u16> {
        self.ports.get(&nominal).copied()
    }

    /// Replaces `%%PORT_N%%`, `127.0.0.1:N`, `[::1]:N` and `localhost:N` for nominal `N`.
    pub fn expand(&mut self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while !rest.is_empty() {
            if let Some((nominal, length)) = placeholder(rest) {
                out.push_str(&self.port(nominal).to_string());
                rest = &rest[length..];
                continue;
            }
            if let Some((host, nominal, length)) = host_and_port(rest) {
                out.push_str(host);
                out.push_str(&self.port(nominal).to_string());
                rest = &rest[length..];
                continue;
            }
            let mut chars = rest.chars();
            out.push(chars.next().expect("rest is not empty"));
            rest = chars.as_str();
        }
        out
    }
}

/// `%%PORT_N%%` at the start of `text`: the nominal port and the placeholder's length.
fn placeholder(text: &str) -> Option<(u16, usize)> {
    let digits = text.strip_prefix("%%PORT_")?;
    let end = digits.find("%%")?;
    let nominal = digits[..end].parse().ok()?;
    Some((nominal, "%%PORT_".len() + end + 2))
}

/// `HOST:N` at the start of `text` for the hosts tests use, with `N` nominal and not
/// followed by another digit.
fn host_and_port(text: &str) -> Option<(&'static str, u16, usize)> {
    for host in ["127.0.0.1:", "[::1]:", "localhost:"] {
        let Some(after) = text.strip_prefix(host) else {
            continue;
        };
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 || digits > 5 {
            return None;
        }
        let nominal: u16 = after[..digits].parse().ok()?;
        if !NOMINAL_PORTS.contains(&nominal) {
            return None;
        }
        return Some((host, nominal, host.len() + digits));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_port_claimed_elsewhere_is_not_claimed_again() {
        // A privileged port is never handed out (the allocator's range starts above them);
        // one per process, so that two test processes do not meet here. A lock taken
        // through another open file stands for another process's claim: `flock` locks
        // belong to open files, so they conflict within one process too.
        let port = 1 + u16::try_from(std::process::id() % 1_000).expect("below 1000");
        std::fs::create_dir_all("/tmp/portico-e2e-ports").expect("the claims directory");
        let other = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(format!("/tmp/portico-e2e-ports/{port}"))
            .expect("open the claim");
        rustix::fs::flock(&other, rustix::fs::FlockOperation::NonBlockingLockExclusive)
            .expect("lock it");
        assert!(claim(port).is_none(), "claimed by the other open file");
        drop(other);
        let ours = claim(port).expect("free once the other lock is gone");
        assert!(claim(port).is_none(), "held while our claim lives");
        drop(ours);
        assert!(claim(port).is_some(), "given back when a claim is dropped");
    }

    #[test]
    fn nominal_ports_are_mapped_consistently() {
        let mut map = PortMap::default();
        let text = map.expand(
            "listen 127.0.0.1:8080; listen [::1]:8080; x %%PORT_8081%% 127.0.0.1:80 127.0.0.1:8080",
        );
        let a = map.get(8080).unwrap();
        let b = map.get(8081).unwrap();
        assert_ne!(a, b);
        assert_eq!(
            text,
            format!("listen 127.0.0.1:{a}; listen [::1]:{a}; x {b} 127.0.0.1:80 127.0.0.1:{a}")
        );
    }
}
