//! `ssl_ciphers` / `proxy_ssl_ciphers`: OpenSSL's cipher-list syntax mapped onto the TLS 1.2
//! suites rustls has. TLS 1.3 suites are not chosen by this list (as in OpenSSL, where
//! they have their own setting), so they are always offered.
//!
//! A list is a sequence of words separated by `:`, `,` or spaces; a word is a cipher name
//! or an alias, several joined by `+` meaning all of them at once (`ECDHE+AESGCM`), with an
//! optional prefix: none adds the matching suites, `-` removes them (they may come back),
//! `!` removes them for good, `+` moves them to the end. `@STRENGTH` and `@SECLEVEL=N`
//! are accepted and do nothing. Words that name only suites rustls lacks (CBC, RC4,
//! 3DES, DHE, PSK...) match nothing and are reported for a warning.

use rustls::SupportedCipherSuite;
use rustls::crypto::aws_lc_rs::cipher_suite as suite;

/// One TLS 1.2 suite with its OpenSSL name and the aliases that select it.
struct Known {
    name: &'static str,
    suite: SupportedCipherSuite,
    aliases: &'static [&'static str],
}

const COMMON: &[&str] = &[
    "ALL",
    "DEFAULT",
    "HIGH",
    "TLSv1.2",
    "SSLv3",
    "ECDHE",
    "EECDH",
    "kECDHE",
    "kEECDH",
    "AEAD",
    "FIPS",
    "COMPLEMENTOFDEFAULT",
];

fn table() -> [Known; 6] {
    [
        Known {
            name: "ECDHE-ECDSA-AES256-GCM-SHA384",
            suite: suite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
            aliases: &["aECDSA", "ECDSA", "AESGCM", "AES", "AES256", "SHA384"],
        },
        Known {
            name: "ECDHE-RSA-AES256-GCM-SHA384",
            suite: suite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
            aliases: &["aRSA", "RSA", "AESGCM", "AES", "AES256", "SHA384"],
        },
        Known {
            name: "ECDHE-ECDSA-CHACHA20-POLY1305",
            suite: suite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
            aliases: &["aECDSA", "ECDSA", "CHACHA20", "SHA256"],
        },
        Known {
            name: "ECDHE-RSA-CHACHA20-POLY1305",
            suite: suite::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
            aliases: &["aRSA", "RSA", "CHACHA20", "SHA256"],
        },
        Known {
            name: "ECDHE-ECDSA-AES128-GCM-SHA256",
            suite: suite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
            aliases: &["aECDSA", "ECDSA", "AESGCM", "AES", "AES128", "SHA256"],
        },
        Known {
            name: "ECDHE-RSA-AES128-GCM-SHA256",
            suite: suite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
            aliases: &["aRSA", "RSA", "AESGCM", "AES", "AES128", "SHA256"],
        },
    ]
}

/// The TLS 1.2 suites a cipher list selects, in order, and the words that selected
/// nothing rustls has.
#[derive(Clone, Debug)]
pub struct CipherList {
    pub(crate) suites: Vec<SupportedCipherSuite>,
    pub unsupported: Vec<String>,
}

impl CipherList {
    /// The OpenSSL names of the selected TLS 1.2 suites, in order.
    pub fn names(&self) -> Vec<&'static str> {
        let known = table();
        self.suites
            .iter()
            .filter_map(|selected| {
                known
                    .iter()
                    .find(|entry| entry.suite.suite() == selected.suite())
                    .map(|entry| entry.name)
            })
            .collect()
    }
}

fn matches(entry: &Known, word: &str) -> bool {
    word.split('+')
        .all(|part| part == entry.name || entry.aliases.contains(&part) || COMMON.contains(&part))
}

/// Parses an OpenSSL cipher list. Fails only when the list selects no suite at all and
/// names nothing OpenSSL would know either (nginx's `SSL_CTX_set_cipher_list() failed`).
pub fn parse_cipher_list(text: &str) -> Result<CipherList, String> {
    let known = table();
    let mut selected: Vec<usize> = Vec::new();
    let mut banned: Vec<usize> = Vec::new();
    let mut unsupported = Vec::new();
    for word in text.split([':', ',', ' ']).filter(|word| !word.is_empty()) {
        if word.starts_with('@') {
            continue;
        }
        let (prefix, body) = match word.as_bytes()[0] {
            b'!' | b'-' | b'+' => (word.as_bytes()[0], &word[1..]),
            _ => (0, word),
        };
        let hits: Vec<usize> = (0..known.len())
            .filter(|&index| matches(&known[index], body))
            .collect();
        if hits.is_empty() && prefix == 0 && !body.contains("NULL") {
            unsupported.push(body.to_owned());
        }
        match prefix {
            b'!' => {
                banned.extend(&hits);
                selected.retain(|index| !hits.contains(index));
            }
            b'-' => selected.retain(|index| !hits.contains(index)),
            b'+' => {
                let moved: Vec<usize> = selected
                    .iter()
                    .copied()
                    .filter(|index| hits.contains(index))
                    .collect();
                selected.retain(|index| !hits.contains(index));
                selected.extend(moved);
            }
            _ => {
                for index in hits {
                    if !selected.contains(&index) && !banned.contains(&index) {
                        selected.push(index);
                    }
                }
            }
        }
    }
    if selected.is_empty() && !unsupported.is_empty() && unsupported.len() == text_words(text) {
        return Err(format!(
            "SSL_CTX_set_cipher_list(\"{text}\") failed (SSL: error:0A0000B9:SSL routines::no \
             cipher match)"
        ));
    }
    Ok(CipherList {
        suites: selected.iter().map(|&index| known[index].suite).collect(),
        unsupported,
    })
}

fn text_words(text: &str) -> usize {
    text.split([':', ',', ' '])
        .filter(|word| !word.is_empty() && !word.starts_with('@'))
        .count()
}

/// The OpenSSL name of a negotiated suite (`$ssl_cipher`).
pub(crate) fn openssl_name(negotiated: SupportedCipherSuite) -> &'static str {
    use rustls::CipherSuite as Id;
    match negotiated.suite() {
        Id::TLS13_AES_128_GCM_SHA256 => "TLS_AES_128_GCM_SHA256",
        Id::TLS13_AES_256_GCM_SHA384 => "TLS_AES_256_GCM_SHA384",
        Id::TLS13_CHACHA20_POLY1305_SHA256 => "TLS_CHACHA20_POLY1305_SHA256",
        other => table()
            .into_iter()
            .find(|entry| entry.suite.suite() == other)
            .map_or("UNKNOWN", |entry| entry.name),
    }
}

/// The OpenSSL name of a suite a client offered (`$ssl_ciphers`), if Portico knows it.
pub(crate) fn offered_name(id: rustls::CipherSuite) -> Option<&'static str> {
    crate::shared_provider()
        .cipher_suites
        .iter()
        .find(|known| known.suite() == id)
        .map(|found| openssl_name(*found))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nginx_default_list_selects_every_gcm_and_chacha_suite() {
        let list = parse_cipher_list("HIGH:!aNULL:!MD5").expect("valid");
        assert_eq!(list.suites.len(), 6);
        assert!(list.unsupported.is_empty());
    }

    #[test]
    fn aliases_join_with_plus_and_bans_stick() {
        let list = parse_cipher_list("ECDHE+AESGCM:!AES256:AES256").expect("valid");
        assert_eq!(
            list.names(),
            [
                "ECDHE-ECDSA-AES128-GCM-SHA256",
                "ECDHE-RSA-AES128-GCM-SHA256"
            ]
        );
    }

    #[test]
    fn unknown_names_are_reported_and_a_list_of_only_those_fails() {
        let list = parse_cipher_list("AES128-SHA:ECDHE-RSA-AES128-GCM-SHA256").expect("valid");
        assert_eq!(list.unsupported, ["AES128-SHA"]);
        assert_eq!(list.names(), ["ECDHE-RSA-AES128-GCM-SHA256"]);
        assert!(parse_cipher_list("RC4-SHA").is_err());
    }
}
