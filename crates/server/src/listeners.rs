//! The master's listening sockets, kept open across reloads so that no connection is
//! refused while one generation of workers hands over to the next, and handed to a new
//! binary on `USR2` (the `NGINX` variable, as nginx passes them) so that none is refused
//! while the binary changes either.

use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::Arc;
use std::time::Duration;

use runtime::{Inherited, ListenAddress, ListenError, ListenOptions, Listener};

/// nginx tries a busy address five times, half a second apart, before giving up.
const BIND_TRIES: usize = 5;
const BIND_RETRY_DELAY: Duration = Duration::from_millis(500);

/// The environment variable that lists the listening sockets a new binary inherits, as
/// `FD;FD;...;` (nginx's name and format, so that an nginx master's `USR2` can start
/// Portico in its place too).
pub const INHERITED_VARIABLE: &str = "NGINX";

/// Every listening socket any generation uses.
#[derive(Debug, Default)]
pub struct ListenerSet {
    open: Vec<Open>,
    /// Sockets inherited from the binary that started this one and not yet taken by a
    /// `listen` of the configuration.
    inherited: Vec<Inherited>,
}

#[derive(Debug)]
struct Open {
    address: ListenAddress,
    /// Which of a `reuseport` address's sockets (one per worker).
    slot: usize,
    listener: Arc<Listener>,
    /// Inherited from the binary that started this one.
    inherited: bool,
}

/// Whether closing a Unix socket may remove its file: not while another binary still
/// listens on it (the new one this master started, or the old one that started this
/// master), as nginx decides.
#[derive(Clone, Copy, Debug)]
pub struct UnixFiles {
    /// A new binary started by this master is running.
    pub new_binary_running: bool,
    /// The binary that started this one (and passed its sockets) is still this process's
    /// parent.
    pub old_binary_running: bool,
}

impl UnixFiles {
    /// No other binary shares the sockets.
    #[cfg(test)]
    pub const ALONE: UnixFiles = UnixFiles {
        new_binary_running: false,
        old_binary_running: false,
    };

    fn may_remove(self, open: &Open) -> bool {
        !(self.new_binary_running || (open.inherited && self.old_binary_running))
    }
}

/// The sockets of one generation, in the order of `HttpConf::sockets`; a `reuseport`
/// socket has one listener per worker.
pub type GenerationSockets = Vec<Vec<Arc<Listener>>>;

impl ListenerSet {
    /// The listeners for a configuration's sockets: kept ones where the address is already
    /// open with compatible options, new ones otherwise. `on_retry` is told about each
    /// busy-address retry (for the error log).
    pub fn acquire(
        &mut self,
        sockets: &[(ListenAddress, ListenOptions)],
        workers: usize,
        mut on_retry: impl FnMut(&ListenError),
    ) -> Result<GenerationSockets, ListenError> {
        let mut result = Vec::new();
        let mut opened = Vec::new();
        for (address, options) in sockets {
            let slots = if options.reuseport { workers.max(1) } else { 1 };
            let mut listeners = Vec::new();
            for slot in 0..slots {
                let existing = self.open.iter().find(|open| {
                    open.address == *address
                        && open.slot == slot
                        && open.listener.compatible_with(options)
                });
                if let Some(open) = existing {
                    if open.listener.options() != *options {
                        open.listener.apply(options)?;
                    }
                    listeners.push(Arc::clone(&open.listener));
                    continue;
                }
                let inherited = self.inherited.iter().position(|inherited| {
                    inherited.address == *address && inherited.datagram == options.datagram
                });
                let listener = match inherited {
                    Some(index) => Listener::adopt(self.inherited.remove(index), options)?,
                    None => open_with_retries(address, options, &mut on_retry)?,
                };
                let listener = Arc::new(listener);
                opened.push(Open {
                    address: address.clone(),
                    slot,
                    listener: Arc::clone(&listener),
                    inherited: inherited.is_some(),
                });
                listeners.push(listener);
            }
            result.push(listeners);
        }
        self.open.extend(opened);
        Ok(result)
    }

    /// Closes sockets no generation uses any more; removes their Unix socket files where
    /// `files` allows.
    pub fn prune(&mut self, files: UnixFiles) {
        self.open.retain(|open| {
            let used = Arc::strong_count(&open.listener) > 1;
            if !used && files.may_remove(open) {
                remove_unix_file(&open.address);
            }
            used
        });
    }

    /// Closes every socket (the master is exiting) and removes Unix socket files where
    /// `files` allows.
    pub fn close_all(&mut self, files: UnixFiles) {
        for open in self.open.drain(..) {
            if files.may_remove(&open) {
                remove_unix_file(&open.address);
            }
        }
    }

    /// Takes the sockets listed in [`INHERITED_VARIABLE`], if it is set: those a binary
    /// upgrade passed. Returns the variable's text (for the log) and what was wrong with
    /// any entry; an entry that is not an open socket is left alone.
    pub fn inherit_from_environment(&mut self) -> Option<(String, Vec<String>)> {
        let text = std::env::var(INHERITED_VARIABLE).ok()?;
        let problems = self.inherit(&text);
        Some((text, problems))
    }

    /// Takes the sockets `text` lists (`FD;FD;...;`); what was wrong with any entry.
    fn inherit(&mut self, text: &str) -> Vec<String> {
        let mut problems = Vec::new();
        let mut seen = Vec::new();
        for entry in text.split([';', ':']).filter(|entry| !entry.is_empty()) {
            let Ok(fd) = entry.parse::<i32>() else {
                problems.push(format!(
                    "invalid socket number \"{entry}\" in {INHERITED_VARIABLE} environment \
                     variable, ignoring the rest of the variable"
                ));
                break;
            };
            if seen.contains(&fd) {
                continue;
            }
            seen.push(fd);
            let Some(owned) = runtime::sys::linux::adopt_inherited_fd(fd) else {
                problems.push(format!("inherited socket #{fd} is not open, ignored"));
                continue;
            };
            match Inherited::from_fd(owned) {
                Ok(inherited) => self.inherited.push(inherited),
                Err(error) => problems.push(format!(
                    "getsockname() of the inherited socket #{fd} failed ({}), ignored",
                    runtime::sys::linux::error_text(&error)
                )),
            }
        }
        problems
    }

    /// Closes the inherited sockets no `listen` of the configuration took.
    pub fn close_unused_inherited(&mut self) {
        self.inherited.clear();
    }

    /// Copies of every open socket's descriptor without close-on-exec, for a new binary
    /// to inherit, and the [`INHERITED_VARIABLE`] value naming them. The caller drops the
    /// copies once the new binary has started.
    pub fn for_new_binary(&self) -> std::io::Result<(Vec<OwnedFd>, String)> {
        let mut copies = Vec::with_capacity(self.open.len());
        let mut text = String::new();
        for open in &self.open {
            let copy = rustix::io::dup(open.listener.as_fd())?;
            text.push_str(&format!("{};", copy.as_raw_fd()));
            copies.push(copy);
        }
        Ok((copies, text))
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.open.len()
    }

    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.open.is_empty()
    }
}

fn remove_unix_file(address: &ListenAddress) {
    if let ListenAddress::Unix(path) = address {
        let _ = std::fs::remove_file(path);
    }
}

fn open_with_retries(
    address: &ListenAddress,
    options: &ListenOptions,
    on_retry: &mut impl FnMut(&ListenError),
) -> Result<Listener, ListenError> {
    let mut tries = 0;
    loop {
        match Listener::open(address, options) {
            Ok(listener) => return Ok(listener),
            Err(error)
                if error.source.raw_os_error() == Some(libc::EADDRINUSE)
                    && tries + 1 < BIND_TRIES =>
            {
                on_retry(&error);
                tries += 1;
                std::thread::sleep(BIND_RETRY_DELAY);
            }
            Err(error) => return Err(error),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reload_keeps_sockets_and_prunes_unused() {
        let mut set = ListenerSet::default();
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let address = ListenAddress::Inet(probe.local_addr().unwrap());
        drop(probe);
        let sockets = vec![(address.clone(), ListenOptions::default())];
        let first = set.acquire(&sockets, 2, |_| {}).unwrap();
        let second = set.acquire(&sockets, 2, |_| {}).unwrap();
        assert!(
            Arc::ptr_eq(&first[0][0], &second[0][0]),
            "the same socket serves both generations"
        );
        drop(first);
        set.prune(UnixFiles::ALONE);
        assert_eq!(set.len(), 1);
        drop(second);
        set.prune(UnixFiles::ALONE);
        assert!(set.is_empty());
    }

    #[test]
    fn inherited_sockets_are_taken_and_bad_entries_reported() {
        let mut set = ListenerSet::default();
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let address = ListenAddress::Inet(probe.local_addr().unwrap());
        // The set owns what it inherits: hand it a descriptor of its own.
        let fd = std::os::fd::IntoRawFd::into_raw_fd(probe);
        let problems = set.inherit(&format!("{fd};999999;x;7;"));
        assert_eq!(
            problems,
            [
                "inherited socket #999999 is not open, ignored".to_owned(),
                "invalid socket number \"x\" in NGINX environment variable, ignoring the rest \
                 of the variable"
                    .to_owned(),
            ]
        );
        // The listen address the socket is bound to takes it instead of binding again.
        let sockets = set
            .acquire(&[(address.clone(), ListenOptions::default())], 1, |_| {})
            .unwrap();
        assert_eq!(sockets[0][0].address, address);
        assert_eq!(
            sockets[0][0].as_fd().as_raw_fd(),
            fd,
            "the inherited descriptor itself listens"
        );
    }

    #[test]
    fn reuseport_opens_one_socket_per_worker() {
        let mut set = ListenerSet::default();
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let address = ListenAddress::Inet(probe.local_addr().unwrap());
        drop(probe);
        let options = ListenOptions {
            reuseport: true,
            ..ListenOptions::default()
        };
        let sockets = set.acquire(&[(address, options)], 3, |_| {}).unwrap();
        assert_eq!(sockets[0].len(), 3);
    }
}
