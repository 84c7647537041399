//! The master's listening sockets, kept open across reloads so that no connection is
//! refused while one generation of workers hands over to the next.

use std::sync::Arc;
use std::time::Duration;

use runtime::{ListenAddress, ListenError, ListenOptions, Listener};

/// nginx tries a busy address five times, half a second apart, before giving up.
const BIND_TRIES: usize = 5;
const BIND_RETRY_DELAY: Duration = Duration::from_millis(500);

/// Every listening socket any generation uses.
#[derive(Debug, Default)]
pub struct ListenerSet {
    /// (address, reuseport slot, socket).
    open: Vec<(ListenAddress, usize, Arc<Listener>)>,
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
                let existing = self
                    .open
                    .iter()
                    .find(|(open_address, open_slot, listener)| {
                        open_address == address
                            && *open_slot == slot
                            && listener.compatible_with(options)
                    });
                if let Some((_, _, listener)) = existing {
                    if listener.options() != *options {
                        listener.apply(options)?;
                    }
                    listeners.push(Arc::clone(listener));
                    continue;
                }
                match open_with_retries(address, options, &mut on_retry) {
                    Ok(listener) => {
                        let listener = Arc::new(listener);
                        opened.push((address.clone(), slot, Arc::clone(&listener)));
                        listeners.push(listener);
                    }
                    Err(error) => return Err(error),
                }
            }
            result.push(listeners);
        }
        self.open.extend(opened);
        Ok(result)
    }

    /// Closes sockets no generation uses any more; removes their Unix socket files.
    pub fn prune(&mut self) {
        self.open.retain(|(address, _, listener)| {
            let used = Arc::strong_count(listener) > 1;
            if !used && let ListenAddress::Unix(path) = address {
                let _ = std::fs::remove_file(path);
            }
            used
        });
    }

    /// Closes every socket and removes Unix socket files (the master is exiting).
    pub fn close_all(&mut self) {
        for (address, _, _) in self.open.drain(..) {
            if let ListenAddress::Unix(path) = address {
                let _ = std::fs::remove_file(path);
            }
        }
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
        set.prune();
        assert_eq!(set.len(), 1);
        drop(second);
        set.prune();
        assert!(set.is_empty());
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
