//! Session resumption: the server-side session cache (`ssl_session_cache`), shared by every
//! worker thread of a generation, and session tickets (`ssl_session_tickets`,
//! `ssl_session_ticket_key`).

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use aws_lc_rs::cipher::{
    AES_128, AES_256, Algorithm, DecryptionContext, PaddedBlockDecryptingKey,
    PaddedBlockEncryptingKey, UnboundCipherKey,
};
use aws_lc_rs::hmac;
use aws_lc_rs::iv::FixedLength;
use aws_lc_rs::rand::{SecureRandom, SystemRandom};
use rustls::server::{ProducesTickets, StoresServerSessions};

use crate::TlsError;

/// A bounded store of sessions, oldest evicted first, each valid for `timeout`. Servers
/// naming the same shared cache hold views of one store, each with its own timeout
/// ([`SessionCache::with_timeout`]), as nginx's timeout belongs to the server.
#[derive(Debug)]
pub struct SessionCache {
    capacity: usize,
    timeout: Duration,
    state: std::sync::Arc<Mutex<CacheState>>,
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
            state: std::sync::Arc::new(Mutex::new(CacheState::default())),
        }
    }

    /// The same store, its sessions valid for `timeout`.
    pub fn with_timeout(&self, timeout: Duration) -> SessionCache {
        SessionCache {
            capacity: self.capacity,
            timeout,
            state: self.state.clone(),
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
const IV_LEN: usize = 16;
const MAC_LEN: usize = 32;

/// One ticket key, as nginx splits a key file: a 16-byte name, an HMAC-SHA256 secret and an
/// AES key (128 bits from a 48-byte file, 256 from an 80-byte one). A ticket is laid out
/// as nginx's: name, IV, the AES-CBC-encrypted session, and the HMAC of all that.
struct TicketKey {
    name: [u8; NAME_LEN],
    hmac: hmac::Key,
    aes: Vec<u8>,
    algorithm: &'static Algorithm,
}

/// The keys that seal session tickets: the first seals new tickets, all open them, as with
/// several `ssl_session_ticket_key` files (the first is the current key, the others
/// previous ones still accepted while clients hold tickets made with them).
///
/// Random keys (no key files) made for a shared session cache rotate, as nginx's do: a new
/// current key every `lifetime`, the previous one still accepted.
pub struct TicketKeys {
    keys: std::sync::Arc<std::sync::RwLock<Vec<TicketKey>>>,
    lifetime: u32,
    /// When the current key was made, for keys that rotate.
    rotation: Option<std::sync::Arc<Mutex<Instant>>>,
}

impl std::fmt::Debug for TicketKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TicketKeys")
            .field("keys", &self.keys.read().map_or(0, |keys| keys.len()))
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
            keys: std::sync::Arc::new(std::sync::RwLock::new(keys)),
            lifetime: lifetime.as_secs().min(u64::from(u32::MAX)) as u32,
            rotation: None,
        })
    }

    /// A random key, made when the configuration loads; with `rotate`, replaced by a new
    /// one every `lifetime`.
    pub fn random(lifetime: Duration, rotate: bool) -> Result<TicketKeys, TlsError> {
        let mut keys = TicketKeys::from_files(&[random_key_file()?], lifetime)?;
        if rotate {
            keys.rotation = Some(std::sync::Arc::new(Mutex::new(Instant::now())));
        }
        Ok(keys)
    }

    /// The same keys (rotating together), tickets valid for `lifetime`.
    pub fn with_lifetime(&self, lifetime: Duration) -> TicketKeys {
        TicketKeys {
            keys: self.keys.clone(),
            lifetime: lifetime.as_secs().min(u64::from(u32::MAX)) as u32,
            rotation: self.rotation.clone(),
        }
    }

    /// Makes a new current key when the current one is older than the lifetime.
    fn rotate(&self) {
        let Some(rotation) = &self.rotation else {
            return;
        };
        let Ok(mut made) = rotation.lock() else {
            return;
        };
        if made.elapsed() < Duration::from_secs(u64::from(self.lifetime).max(1)) {
            return;
        }
        let Ok((_, bytes)) = random_key_file() else {
            return;
        };
        let Ok(key) = ticket_key(&bytes, 32) else {
            return;
        };
        if let Ok(mut keys) = self.keys.write() {
            keys.insert(0, key);
            keys.truncate(2);
        }
        *made = Instant::now();
    }
}

fn random_key_file() -> Result<(String, Vec<u8>), TlsError> {
    let mut bytes = [0u8; 80];
    SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| TlsError("RAND_bytes() failed".to_owned()))?;
    Ok(("random".to_owned(), bytes.to_vec()))
}

/// Seconds since the epoch, as sealed into tickets.
fn now_seconds() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs())
}

fn ticket_key(bytes: &[u8], secret_len: usize) -> Result<TicketKey, TlsError> {
    let mut name = [0u8; NAME_LEN];
    name.copy_from_slice(&bytes[..NAME_LEN]);
    let hmac_secret = &bytes[NAME_LEN..NAME_LEN + secret_len];
    Ok(TicketKey {
        name,
        hmac: hmac::Key::new(hmac::HMAC_SHA256, hmac_secret),
        aes: bytes[NAME_LEN + secret_len..].to_vec(),
        algorithm: if secret_len == 16 { &AES_128 } else { &AES_256 },
    })
}

impl TicketKey {
    fn seal(&self, plain: &[u8]) -> Option<Vec<u8>> {
        let key = UnboundCipherKey::new(self.algorithm, &self.aes).ok()?;
        let encrypting = PaddedBlockEncryptingKey::cbc_pkcs7(key).ok()?;
        let mut sealed = plain.to_vec();
        let DecryptionContext::Iv128(iv) = encrypting.encrypt(&mut sealed).ok()? else {
            return None;
        };
        let mut ticket = Vec::with_capacity(NAME_LEN + IV_LEN + sealed.len() + MAC_LEN);
        ticket.extend_from_slice(&self.name);
        ticket.extend_from_slice(iv.as_ref());
        ticket.extend_from_slice(&sealed);
        let mac = hmac::sign(&self.hmac, &ticket);
        ticket.extend_from_slice(mac.as_ref());
        Some(ticket)
    }

    fn open(&self, ticket: &[u8]) -> Option<Vec<u8>> {
        let (signed, mac) = ticket.split_at_checked(ticket.len().checked_sub(MAC_LEN)?)?;
        hmac::verify(&self.hmac, signed, mac).ok()?;
        let iv: [u8; IV_LEN] = signed.get(NAME_LEN..NAME_LEN + IV_LEN)?.try_into().ok()?;
        let mut sealed = signed.get(NAME_LEN + IV_LEN..)?.to_vec();
        let key = UnboundCipherKey::new(self.algorithm, &self.aes).ok()?;
        let decrypting = PaddedBlockDecryptingKey::cbc_pkcs7(key).ok()?;
        let context = DecryptionContext::Iv128(FixedLength::from(iv));
        decrypting
            .decrypt(&mut sealed, context)
            .ok()
            .map(|plain| plain.to_vec())
    }
}

impl ProducesTickets for TicketKeys {
    fn enabled(&self) -> bool {
        self.keys.read().is_ok_and(|keys| !keys.is_empty())
    }

    fn lifetime(&self) -> u32 {
        self.lifetime
    }

    fn encrypt(&self, plain: &[u8]) -> Option<Vec<u8>> {
        self.rotate();
        let keys = self.keys.read().ok()?;
        let current = keys.first()?;
        // The ticket carries when it was made: it is refused after `lifetime`.
        let mut state = now_seconds().to_be_bytes().to_vec();
        state.extend_from_slice(plain);
        current.seal(&state)
    }

    fn decrypt(&self, cipher: &[u8]) -> Option<Vec<u8>> {
        let name = cipher.get(..NAME_LEN)?;
        let keys = self.keys.read().ok()?;
        let key = keys.iter().find(|key| key.name == name)?;
        let plain = key.open(cipher)?;
        let (made, session) = plain.split_at_checked(8)?;
        let made = u64::from_be_bytes(made.try_into().ok()?);
        if now_seconds().saturating_sub(made) >= u64::from(self.lifetime) {
            return None;
        }
        Some(session.to_vec())
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
        assert_eq!(
            TicketKeys::from_files(&[file(1, 48)], Duration::ZERO)
                .expect("valid")
                .encrypt(b"s")
                .and_then(
                    |ticket| TicketKeys::from_files(&[file(1, 48)], Duration::ZERO)
                        .expect("valid")
                        .decrypt(&ticket)
                ),
            None,
            "an expired ticket is refused"
        );
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
