//! The TLS 1.3 suites' HKDF, built on HMAC keys that are set up once per secret.
//!
//! rustls's aws-lc-rs suites run a whole aws-lc `HKDF` for each label derived from a secret:
//! the HMAC key is set up again every time (its two padded blocks hashed), and a secret that
//! comes from an extraction is extracted again for every label taken from it. With rustls's
//! `HkdfUsingHmac` over an HMAC key kept per secret, a label costs two calls of the hash's
//! compression function. The suites are otherwise aws-lc-rs's (names, AEADs, transcript
//! hashes, limits), and derive the same keys, so clients see no difference. The gain is
//! measured with `benches/handshake.rs`; see docs/tls.md, "Handshake cost".

use std::sync::LazyLock;

use rustls::SupportedCipherSuite;
use rustls::crypto::CipherSuiteCommon;
use rustls::crypto::hmac::{Hmac, Key, Tag};
use rustls::crypto::tls13::HkdfUsingHmac;

/// HMAC with aws-lc, the key's inner and outer states computed when the key is made.
struct AwsLcHmac(aws_lc_rs::hmac::Algorithm);

struct AwsLcHmacKey(aws_lc_rs::hmac::Key);

impl Hmac for AwsLcHmac {
    fn with_key(&self, key: &[u8]) -> Box<dyn Key> {
        Box::new(AwsLcHmacKey(aws_lc_rs::hmac::Key::new(self.0, key)))
    }

    fn hash_output_len(&self) -> usize {
        self.0.digest_algorithm().output_len()
    }
}

impl Key for AwsLcHmacKey {
    fn sign_concat(&self, first: &[u8], middle: &[&[u8]], last: &[u8]) -> Tag {
        let mut context = aws_lc_rs::hmac::Context::with_key(&self.0);
        context.update(first);
        for part in middle {
            context.update(part);
        }
        context.update(last);
        Tag::new(context.sign().as_ref())
    }

    fn tag_len(&self) -> usize {
        self.0.algorithm().digest_algorithm().output_len()
    }
}

static HMAC_SHA256: AwsLcHmac = AwsLcHmac(aws_lc_rs::hmac::HMAC_SHA256);
static HMAC_SHA384: AwsLcHmac = AwsLcHmac(aws_lc_rs::hmac::HMAC_SHA384);
static HKDF_SHA256: HkdfUsingHmac<'static> = HkdfUsingHmac(&HMAC_SHA256);
static HKDF_SHA384: HkdfUsingHmac<'static> = HkdfUsingHmac(&HMAC_SHA384);

/// aws-lc-rs's three TLS 1.3 suites with the HKDF above, in aws-lc-rs's order.
static TLS13_SUITES: LazyLock<Vec<rustls::Tls13CipherSuite>> = LazyLock::new(|| {
    use rustls::crypto::aws_lc_rs::cipher_suite as aws;
    [
        aws::TLS13_AES_256_GCM_SHA384,
        aws::TLS13_AES_128_GCM_SHA256,
        aws::TLS13_CHACHA20_POLY1305_SHA256,
    ]
    .into_iter()
    .filter_map(|suite| match suite {
        SupportedCipherSuite::Tls13(base) => Some(with_hmac_hkdf(base)),
        SupportedCipherSuite::Tls12(_) => None,
    })
    .collect()
});

fn with_hmac_hkdf(base: &rustls::Tls13CipherSuite) -> rustls::Tls13CipherSuite {
    let hkdf: &'static HkdfUsingHmac<'static> = match base.common.hash_provider.output_len() {
        48 => &HKDF_SHA384,
        _ => &HKDF_SHA256,
    };
    rustls::Tls13CipherSuite {
        common: CipherSuiteCommon {
            suite: base.common.suite,
            hash_provider: base.common.hash_provider,
            confidentiality_limit: base.common.confidentiality_limit,
        },
        hkdf_provider: hkdf,
        aead_alg: base.aead_alg,
        quic: base.quic,
    }
}

/// `suite` with the HKDF above when it is a TLS 1.3 suite, else as it is.
pub(crate) fn faster_hkdf(suite: SupportedCipherSuite) -> SupportedCipherSuite {
    if let SupportedCipherSuite::Tls13(base) = suite
        && let Some(replaced) = TLS13_SUITES
            .iter()
            .find(|candidate| candidate.common.suite == base.common.suite)
    {
        return SupportedCipherSuite::Tls13(replaced);
    }
    suite
}

#[cfg(test)]
mod tests {
    use rustls::crypto::tls13::{Hkdf, OkmBlock};

    use super::*;

    /// RFC 5869's test case 1, and for each TLS 1.3 suite the same outputs as aws-lc-rs's
    /// own HKDF: extractions, expansions of one block and of more, HMAC.
    #[test]
    fn the_hmac_hkdf_derives_what_aws_lc_derives() {
        let ikm = [0x0b; 22];
        let salt: Vec<u8> = (0x00..=0x0c).collect();
        let info: Vec<u8> = (0xf0..=0xf9).collect();
        let mut okm = [0u8; 42];
        HKDF_SHA256
            .extract_from_secret(Some(&salt), &ikm)
            .expand_slice(&[&info], &mut okm)
            .expect("42 bytes is a valid length");
        assert_eq!(
            okm[..8],
            [0x3c, 0xb2, 0x5f, 0x25, 0xfa, 0xac, 0xd5, 0x7a],
            "RFC 5869 A.1"
        );
        let ours = TLS13_SUITES.iter().map(|suite| suite.hkdf_provider);
        let theirs = rustls::crypto::aws_lc_rs::default_provider()
            .cipher_suites
            .into_iter()
            .filter_map(|suite| match suite {
                SupportedCipherSuite::Tls13(base) => Some(base.hkdf_provider),
                SupportedCipherSuite::Tls12(_) => None,
            });
        for (ours, theirs) in ours.zip(theirs) {
            let secret = [7u8; 48];
            let labels: [&[u8]; 2] = [b"tls13 derived", b"context"];
            for (left, right) in [
                (
                    ours.extract_from_secret(Some(&salt), &secret),
                    theirs.extract_from_secret(Some(&salt), &secret),
                ),
                (
                    ours.extract_from_zero_ikm(None),
                    theirs.extract_from_zero_ikm(None),
                ),
            ] {
                assert_eq!(
                    left.expand_block(&labels).as_ref(),
                    right.expand_block(&labels).as_ref()
                );
                let mut long_left = [0u8; 100];
                let mut long_right = [0u8; 100];
                left.expand_slice(&labels, &mut long_left)
                    .expect("valid length");
                right
                    .expand_slice(&labels, &mut long_right)
                    .expect("valid length");
                assert_eq!(long_left, long_right);
            }
            let block = OkmBlock::new(&[9u8; 48][..ours.extract_from_zero_ikm(None).hash_len()]);
            assert_eq!(
                ours.expander_for_okm(&block).expand_block(&labels).as_ref(),
                theirs
                    .expander_for_okm(&block)
                    .expand_block(&labels)
                    .as_ref()
            );
            assert_eq!(
                ours.hmac_sign(&block, b"message").as_ref(),
                theirs.hmac_sign(&block, b"message").as_ref()
            );
        }
    }
}
