//! Free ports, and the mapping of a config's nominal ports to them.
//!
//! A config names nominal ports (`127.0.0.1:8080`, `[::1]:8081`, `%%PORT_8082%%`); each is
//! replaced by a port the kernel just handed out on 127.0.0.1. Ports handed out once are
//! never handed out again by this test process, so parallel tests cannot collide.

use std::collections::{BTreeMap, HashSet};
use std::net::TcpListener;
use std::sync::Mutex;

/// Nominal ports are in this range; other numbers in a config are left alone.
const NOMINAL_PORTS: std::ops::RangeInclusive<u16> = 8000..=9999;

static HANDED_OUT: Mutex<Option<HashSet<u16>>> = Mutex::new(None);

/// A port that was free on 127.0.0.1 a moment ago and that no other test of this process got.
pub fn free_port() -> u16 {
    let mut handed_out = HANDED_OUT
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let handed_out = handed_out.get_or_insert_with(HashSet::new);
    loop {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let port = listener.local_addr().expect("local_addr").port();
        if handed_out.insert(port) {
            return port;
        }
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
