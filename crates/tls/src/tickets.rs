//! Session resumption: the server-side session cache (`ssl_session_cache`), shared by every
//! worker thread of a generation, and session tickets (`ssl_session_tickets`,
//! `ssl_session_ticket_key`).

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use aws_lc_rs::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use aws_lc_rs::hmac;
use aws_lc_rs::rand::{SecureRandom, SystemRandom};
use rustls::server::{ProducesTickets, StoresServerSessions};

use crate::TlsError;

/// A bounded store of sessions, oldest evicted first, each valid for `timeout`.
#[derive(Debug)]
pub struct SessionCache {
    capacity: usize,
    timeout: Duration,
    state: Mutex<CacheState>,
}

#[derive(Debug, Default)]
struct CacheState {
    entries: HashMap<Vec<u8>, (Vec<u8>, Instant)>,
    order: VecDeque<Vec<u8>>,
}

impl SessionCache {
    /// A cache of at most `capacity` sessions (`builtin:N`, or about 4000 per megabyte of
    /// `shared:NAME:SIZE`, as nginx's zone holds).
    pub fn new(capacity: usize, timeout: Duration) -> SessionCache {
        SessionCache {
            capacity: capacity.max(1),
            timeout,
            state: Mutex::new(CacheState::default()),
        }
    }

    /// How many sessions are stored now.
    pub fn len(&self) -> usize {
        self.state.lock().map_or(0, |state| state.entries.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl StoresServerSessions for SessionCache {
    fn put(&self, key: Vec<u8>, value: Vec<u8>) -> bool {
        let Ok(mut state) = self.state.lock() else {
            return false;
        };
        while state.entries.len() >= self.capacity {
            let Some(oldest) = state.order.pop_front() else {
                break;
            };
            state.entries.remove(&oldest);
        }
        if state
            .entries
            .insert(key.clone(), (value, Instant::now()))
            .is_none()
        {
            state.order.push_back(key);
        }
        true
    }

    fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        let state = self.state.lock().ok()?;
        let (value, stored) = state.entries.get(key)?;
        (stored.elapsed() < self.timeout).then(|| value.clone())
    }

    fn take(&self, key: &[u8]) -> Option<Vec<u8>> {
        let mut state = self.state.lock().ok()?;
        let (value, stored) = state.entries.remove(key)?;
        state.order.retain(|entry| entry.as_slice() != key);
        (stored.elapsed() < self.timeout).then_some(value)
    }

    fn can_cache(&self) -> bool {
        true
    }
}

const NAME_LEN: usize = 16;

/// One ticket key: its 16-byte name and the AEAD key derived from its secret parts.
struct TicketKey {
    name: [u8; NAME_LEN],
    key: LessSafeKey,
}

/// The keys that seal session tickets: the first seals new tickets, all open them, as with
/// several `ssl_session_ticket_key` files (the first is the current key, the others
/// previous ones still accepted while clients hold tickets made with them).
pub struct TicketKeys {
    keys: Vec<TicketKey>,
    lifetime: u32,
    random: SystemRandom,
}

impl std::fmt::Debug for TicketKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TicketKeys")
            .field("keys", &self.keys.len())
            .field("lifetime", &self.lifetime)
            .finish()
    }
}

impl TicketKeys {
    /// Keys from nginx's key files: 48 bytes (16 name, 16 HMAC secret, 16 AES key) or 80
    /// (16, 32, 32). `files` are (name for messages, contents).
    pub fn from_files(
        files: &[(String, Vec<u8>)],
        lifetime: Duration,
    ) -> Result<TicketKeys, TlsError> {
        let mut keys = Vec::new();
        for (name, bytes) in files {
            let secret_len = match bytes.len() {
                48 => 16,
                80 => 32,
                _ => {
                    return Err(TlsError(format!("\"{name}\" must be 48 or 80 bytes")));
                }
            };
            keys.push(ticket_key(bytes, secret_len)?);
        }
        Ok(TicketKeys {
            keys,
            lifetime: lifetime.as_secs().min(u64::from(u32::MAX)) as u32,
            random: SystemRandom::new(),
        })
    }

    /// One random key, made when the configuration loads: tickets survive until a reload.
    pub fn random(lifetime: Duration) -> Result<TicketKeys, TlsError> {
        let mut bytes = [0u8; 80];
        SystemRandom::new()
            .fill(&mut bytes)
            .map_err(|_| TlsError("RAND_bytes() failed".to_owned()))?;
        TicketKeys::from_files(&[("random".to_owned(), bytes.to_vec())], lifetime)
    }
}

fn ticket_key(bytes: &[u8], secret_len: usize) -> Result<TicketKey, TlsError> {
    let mut name = [0u8; NAME_LEN];
    name.copy_from_slice(&bytes[..NAME_LEN]);
    let hmac_secret = &bytes[NAME_LEN..NAME_LEN + secret_len];
    let aes_secret = &bytes[NAME_LEN + secret_len..];
    // The AEAD key is derived from both secret parts, so a file's every byte matters.
    let derived = hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, hmac_secret), aes_secret);
    let unbound = UnboundKey::new(&AES_256_GCM, derived.as_ref())
        .map_err(|_| TlsError("cannot make a ticket key".to_owned()))?;
    Ok(TicketKey {
        name,
        key: LessSafeKey::new(unbound),
    })
}

impl ProducesTickets for TicketKeys {
    fn enabled(&self) -> bool {
        !self.keys.is_empty()
    }

    fn lifetime(&self) -> u32 {
        self.lifetime
    }

    fn encrypt(&self, plain: &[u8]) -> Option<Vec<u8>> {
        let current = self.keys.first()?;
        let mut nonce = [0u8; NONCE_LEN];
        self.random.fill(&mut nonce).ok()?;
        let mut sealed = plain.to_vec();
        current
            .key
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(current.name),
                &mut sealed,
            )
            .ok()?;
        let mut ticket = Vec::with_capacity(NAME_LEN + NONCE_LEN + sealed.len());
        ticket.extend_from_slice(&current.name);
        ticket.extend_from_slice(&nonce);
        ticket.extend_from_slice(&sealed);
        Some(ticket)
    }

    fn decrypt(&self, cipher: &[u8]) -> Option<Vec<u8>> {
        let name = cipher.get(..NAME_LEN)?;
        let nonce = cipher.get(NAME_LEN..NAME_LEN + NONCE_LEN)?;
        let key = self.keys.iter().find(|key| key.name == name)?;
        let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
        let mut sealed = cipher.get(NAME_LEN + NONCE_LEN..)?.to_vec();
        let plain = key
            .key
            .open_in_place(nonce, Aad::from(key.name), &mut sealed)
            .ok()?;
        Some(plain.to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(seed: u8, len: usize) -> (String, Vec<u8>) {
        (
            format!("key{seed}"),
            (0..len).map(|i| seed ^ i as u8).collect(),
        )
    }

    #[test]
    fn the_first_key_seals_and_every_key_opens() {
        let hour = Duration::from_secs(3600);
        let old = TicketKeys::from_files(&[file(1, 48)], hour).expect("valid");
        let rotated = TicketKeys::from_files(&[file(2, 80), file(1, 48)], hour).expect("valid");
        let ticket = old.encrypt(b"session").expect("sealed");
        assert_eq!(rotated.decrypt(&ticket).as_deref(), Some(&b"session"[..]));
        let new_ticket = rotated.encrypt(b"next").expect("sealed");
        assert_eq!(old.decrypt(&new_ticket), None);
        assert_eq!(&new_ticket[..16], &file(2, 80).1[..16]);
    }

    #[test]
    fn a_key_file_of_another_size_is_refused() {
        let error = TicketKeys::from_files(&[file(1, 47)], Duration::from_secs(1)).unwrap_err();
        assert_eq!(error.0, "\"key1\" must be 48 or 80 bytes");
    }

    #[test]
    fn the_cache_evicts_the_oldest_and_forgets_after_the_timeout() {
        let cache = SessionCache::new(2, Duration::from_secs(60));
        for key in [b"a", b"b", b"c"] {
            cache.put(key.to_vec(), key.to_vec());
        }
        assert_eq!(cache.get(b"a"), None);
        assert_eq!(cache.get(b"c"), Some(b"c".to_vec()));
        let expired = SessionCache::new(2, Duration::ZERO);
        expired.put(b"a".to_vec(), b"a".to_vec());
        assert_eq!(expired.get(b"a"), None);
    }
}
