//! The password formats of an `auth_basic_user_file`, as nginx accepts them: `{PLAIN}`,
//! `{SHA}` and `{SSHA}` (base64 of SHA-1, salted after the password for `{SSHA}`),
//! Apache's `$apr1$` (MD5-crypt with its own magic), and whatever the system's `crypt`
//! knows (`$1$`, `$5$`, `$6$`, DES, ...). Verification is slow by design: it runs on a pool.

use md5::{Digest as _, Md5};
use sha1::Sha1;

use crate::kernel::variables::evaluate::decode_base64;

/// Whether `password` matches the stored `hash`.
pub(crate) fn verify(password: &[u8], hash: &[u8]) -> bool {
    if let Some(plain) = hash.strip_prefix(b"{PLAIN}") {
        return constant_time_eq(plain, password);
    }
    if let Some(encoded) = hash.strip_prefix(b"{SHA}") {
        let Some(stored) = decode_base64(encoded) else {
            return false;
        };
        return constant_time_eq(&stored, &Sha1::digest(password));
    }
    if let Some(encoded) = hash.strip_prefix(b"{SSHA}") {
        let Some(stored) = decode_base64(encoded).filter(|stored| stored.len() > 20) else {
            return false;
        };
        let (digest, salt) = stored.split_at(20);
        let mut sha = Sha1::new();
        sha.update(password);
        sha.update(salt);
        return constant_time_eq(digest, &sha.finalize());
    }
    if let Some(rest) = hash.strip_prefix(b"$apr1$") {
        let salt = rest.split(|b| *b == b'$').next().unwrap_or_default();
        return constant_time_eq(&md5_crypt(password, salt, b"$apr1$"), hash);
    }
    match runtime::sys::linux::crypt(password, hash) {
        Some(hashed) => constant_time_eq(&hashed, hash),
        None => false,
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

const ITOA64: &[u8; 64] = b"./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// MD5-crypt (Poul-Henning Kamp's algorithm) with `magic` (`$1$`, or Apache's `$apr1$`):
/// `MAGIC SALT $ HASH`.
pub(crate) fn md5_crypt(password: &[u8], salt: &[u8], magic: &[u8]) -> Vec<u8> {
    let salt = &salt[..salt.len().min(8)];
    let mut context = Md5::new();
    context.update(password);
    context.update(magic);
    context.update(salt);
    let mut alternate = Md5::new();
    alternate.update(password);
    alternate.update(salt);
    alternate.update(password);
    let alternate = alternate.finalize();
    let mut left = password.len();
    while left > 0 {
        context.update(&alternate[..left.min(16)]);
        left = left.saturating_sub(16);
    }
    let mut bits = password.len();
    while bits > 0 {
        if bits & 1 == 1 {
            context.update([0u8]);
        } else {
            context.update(&password[..1]);
        }
        bits >>= 1;
    }
    let mut digest = context.finalize();
    for round in 0..1000 {
        let mut next = Md5::new();
        if round & 1 == 1 {
            next.update(password);
        } else {
            next.update(digest);
        }
        if round % 3 != 0 {
            next.update(salt);
        }
        if round % 7 != 0 {
            next.update(password);
        }
        if round & 1 == 1 {
            next.update(digest);
        } else {
            next.update(password);
        }
        digest = next.finalize();
    }
    let mut out = Vec::with_capacity(magic.len() + salt.len() + 23);
    out.extend_from_slice(magic);
    out.extend_from_slice(salt);
    out.push(b'$');
    let d = |i: usize| u32::from(digest[i]);
    for (a, b, c) in [(0, 6, 12), (1, 7, 13), (2, 8, 14), (3, 9, 15), (4, 10, 5)] {
        push64(&mut out, (d(a) << 16) | (d(b) << 8) | d(c), 4);
    }
    push64(&mut out, d(11), 2);
    out
}

fn push64(out: &mut Vec<u8>, mut value: u32, count: usize) {
    for _ in 0..count {
        out.push(ITOA64[(value & 0x3f) as usize]);
        value >>= 6;
    }
}

#[cfg(test)]
mod tests {
    use super::{md5_crypt, verify};

    // Vectors made with `openssl passwd -apr1 -salt abcdefgh secret` and
    // `openssl passwd -1 -salt xyz secret`.
    #[test]
    fn md5_crypt_matches_openssl() {
        assert_eq!(
            md5_crypt(b"secret", b"abcdefgh", b"$apr1$"),
            b"$apr1$abcdefgh$h9FWgUz3n9YxylKLlR5SQ/"
        );
        assert_eq!(
            md5_crypt(b"secret", b"xyz", b"$1$"),
            b"$1$xyz$Qia9Wq6FxQkYcwNWMk/RM0"
        );
    }

    #[test]
    fn formats() {
        assert!(verify(b"secret", b"{PLAIN}secret"));
        assert!(!verify(b"secreT", b"{PLAIN}secret"));
        // SHA-1 of "secret", base64.
        assert!(verify(b"secret", b"{SHA}5en6G6MezRroT3XKqkdPOmY/BfQ="));
        assert!(verify(b"secret", b"$apr1$abcdefgh$h9FWgUz3n9YxylKLlR5SQ/"));
        assert!(!verify(b"other", b"$apr1$abcdefgh$h9FWgUz3n9YxylKLlR5SQ/"));
        assert!(
            verify(b"secret", b"$1$xyz$Qia9Wq6FxQkYcwNWMk/RM0"),
            "through crypt(3)"
        );
        assert!(!verify(b"secret", b"garbage"));
    }
}
