//! nginx's session id context: a session resumes only on a server configured with the same
//! certificates (their names, when the names have variables) and client CAs as the one it
//! began on, even when servers share a session cache or ticket keys. rustls has no such
//! context, so the session cache's keys and the tickets' plaintext carry it.

use std::sync::Arc;

use aws_lc_rs::digest;
use rustls::server::{ProducesTickets, StoresServerSessions};

/// A digest of what a session is bound to.
pub(crate) type Context = [u8; 32];

/// The context of a server: its leaf certificates, or else its certificate names, and the
/// names of the client CAs it asks for.
pub(crate) fn context<'a>(
    certificates: impl Iterator<Item = &'a [u8]>,
    names: &[String],
    client_authorities: &[rustls::DistinguishedName],
) -> Context {
    let mut digest = digest::Context::new(&digest::SHA256);
    digest.update(b"HTTP");
    let mut any = false;
    for certificate in certificates {
        any = true;
        digest.update(&(certificate.len() as u64).to_be_bytes());
        digest.update(certificate);
    }
    if !any {
        for name in names {
            digest.update(&(name.len() as u64).to_be_bytes());
            digest.update(name.as_bytes());
        }
    }
    for authority in client_authorities {
        digest.update(authority.as_ref());
    }
    let mut context = [0; 32];
    context.copy_from_slice(digest.finish().as_ref());
    context
}

/// A session store whose keys are prefixed with the server's context.
#[derive(Debug)]
pub(crate) struct ContextSessions {
    pub(crate) inner: Arc<dyn StoresServerSessions>,
    pub(crate) context: Context,
}

impl ContextSessions {
    fn key(&self, key: &[u8]) -> Vec<u8> {
        [self.context.as_slice(), key].concat()
    }
}

impl StoresServerSessions for ContextSessions {
    fn put(&self, key: Vec<u8>, value: Vec<u8>) -> bool {
        self.inner.put(self.key(&key), value)
    }

    fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        self.inner.get(&self.key(key))
    }

    fn take(&self, key: &[u8]) -> Option<Vec<u8>> {
        self.inner.take(&self.key(key))
    }

    fn can_cache(&self) -> bool {
        self.inner.can_cache()
    }
}

/// Tickets whose plaintext starts with the server's context; a ticket made under another
/// context does not decrypt to a session.
#[derive(Debug)]
pub(crate) struct ContextTickets {
    pub(crate) inner: Arc<dyn ProducesTickets>,
    pub(crate) context: Context,
}

impl ProducesTickets for ContextTickets {
    fn enabled(&self) -> bool {
        self.inner.enabled()
    }

    fn lifetime(&self) -> u32 {
        self.inner.lifetime()
    }

    fn encrypt(&self, plain: &[u8]) -> Option<Vec<u8>> {
        self.inner
            .encrypt(&[self.context.as_slice(), plain].concat())
    }

    fn decrypt(&self, cipher: &[u8]) -> Option<Vec<u8>> {
        let plain = self.inner.decrypt(cipher)?;
        plain
            .strip_prefix(self.context.as_slice())
            .map(<[u8]>::to_vec)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use rustls::server::{ProducesTickets, StoresServerSessions};

    use super::{ContextSessions, ContextTickets, context};
    use crate::{SessionCache, TicketKeys};

    #[test]
    fn certificates_decide_and_names_count_only_without_them() {
        let names = ["$one.crt".to_owned()];
        let one = context([b"one".as_slice()].into_iter(), &names, &[]);
        let two = context([b"two".as_slice()].into_iter(), &names, &[]);
        assert_ne!(one, two);
        let other_names = ["$two.crt".to_owned()];
        assert_eq!(
            one,
            context([b"one".as_slice()].into_iter(), &other_names, &[])
        );
        let by_name = context(std::iter::empty(), &names, &[]);
        assert_ne!(by_name, context(std::iter::empty(), &other_names, &[]));
        assert_eq!(by_name, context(std::iter::empty(), &names, &[]));
    }

    #[test]
    fn a_shared_cache_keeps_contexts_apart() {
        let cache = Arc::new(SessionCache::new(10, Duration::from_secs(60)));
        let first = ContextSessions {
            inner: cache.clone(),
            context: [1; 32],
        };
        let second = ContextSessions {
            inner: cache,
            context: [2; 32],
        };
        assert!(first.put(b"id".to_vec(), b"session".to_vec()));
        assert_eq!(second.get(b"id"), None);
        assert_eq!(second.take(b"id"), None);
        assert_eq!(first.get(b"id"), Some(b"session".to_vec()));
        assert_eq!(first.take(b"id"), Some(b"session".to_vec()));
    }

    #[test]
    fn shared_ticket_keys_keep_contexts_apart() {
        let keys: Arc<dyn ProducesTickets> =
            Arc::new(TicketKeys::random(Duration::from_secs(60), true).expect("keys"));
        let first = ContextTickets {
            inner: keys.clone(),
            context: [1; 32],
        };
        let second = ContextTickets {
            inner: keys,
            context: [2; 32],
        };
        let ticket = first.encrypt(b"session").expect("a ticket");
        assert_eq!(first.decrypt(&ticket), Some(b"session".to_vec()));
        assert_eq!(second.decrypt(&ticket), None);
    }
}
