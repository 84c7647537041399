//! Address validation tokens (NEW_TOKEN, RFC 9000 §8.1.3): a client that comes back with the
//! token of an earlier connection skips the Retry round trip of `quic_retry on`. A token is
//! good once: the nonces of the tokens used are kept until the tokens expire, for every
//! endpoint of the process (the workers, and the generations of a reload).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime};

use quinn_proto::{TokenLog, TokenReuseError};

/// How long a NEW_TOKEN token may be used (nginx's lifetime for them).
pub const TOKEN_LIFETIME: Duration = Duration::from_secs(600);

/// Tokens sent to a client once its address is validated.
pub const TOKENS_SENT: u32 = 1;

/// Nonces of used tokens kept at most: past it a token is refused (the client then goes
/// through a Retry, which is always allowed), never taken twice.
const USED_MAX: usize = 100_000;

/// The nonces of the tokens used, with when each token expires.
#[derive(Debug, Default)]
pub struct UsedTokens {
    used: Mutex<HashMap<u128, SystemTime>>,
}

impl UsedTokens {
    /// The process's log, shared by every endpoint.
    pub fn shared() -> Arc<UsedTokens> {
        static SHARED: OnceLock<Arc<UsedTokens>> = OnceLock::new();
        Arc::clone(SHARED.get_or_init(Arc::default))
    }
}

impl TokenLog for UsedTokens {
    fn check_and_insert(
        &self,
        nonce: u128,
        issued: SystemTime,
        lifetime: Duration,
    ) -> Result<(), TokenReuseError> {
        let now = SystemTime::now();
        let expires = issued + lifetime;
        if expires <= now {
            return Err(TokenReuseError);
        }
        let mut used = self
            .used
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        if used.len() >= USED_MAX {
            used.retain(|_, expires| *expires > now);
            if used.len() >= USED_MAX {
                return Err(TokenReuseError);
            }
        }
        match used.entry(nonce) {
            std::collections::hash_map::Entry::Occupied(_) => Err(TokenReuseError),
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert(expires);
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_good_once_and_not_after_it_expired() {
        let log = UsedTokens::default();
        let now = SystemTime::now();
        assert!(log.check_and_insert(1, now, TOKEN_LIFETIME).is_ok());
        assert!(
            log.check_and_insert(1, now, TOKEN_LIFETIME).is_err(),
            "reused"
        );
        assert!(log.check_and_insert(2, now, TOKEN_LIFETIME).is_ok());
        let long_ago = now - TOKEN_LIFETIME - Duration::from_secs(1);
        assert!(
            log.check_and_insert(3, long_ago, TOKEN_LIFETIME).is_err(),
            "expired"
        );
    }
}
