//! SHA-384 and HMAC-SHA384 from aws-lc and from RustCrypto's `sha2`, timed with std only:
//! `cargo bench -p portico-tls --bench hash`. Prints nanoseconds per operation.
// A bench reports on stdout; that is its whole job.
#![allow(clippy::print_stdout)]

use std::hint::black_box;
use std::time::Instant;

use hmac::Mac;
use sha2::Digest;

fn time(name: &str, iterations: u32, mut operation: impl FnMut()) {
    for _ in 0..iterations / 10 {
        operation();
    }
    let start = Instant::now();
    for _ in 0..iterations {
        operation();
    }
    let nanos = start.elapsed().as_nanos() / u128::from(iterations);
    println!("{name:<44} {nanos:>8} ns/op");
}

fn main() {
    for size in [64usize, 1024] {
        let input = vec![7u8; size];
        time(&format!("SHA-384 {size} B, aws-lc"), 200_000, || {
            black_box(aws_lc_rs::digest::digest(
                &aws_lc_rs::digest::SHA384,
                black_box(&input),
            ));
        });
        time(&format!("SHA-384 {size} B, sha2"), 200_000, || {
            black_box(sha2::Sha384::digest(black_box(&input)));
        });
    }
    let secret = [3u8; 48];
    let message = [5u8; 64];
    let aws_key = aws_lc_rs::hmac::Key::new(aws_lc_rs::hmac::HMAC_SHA384, &secret);
    time("HMAC-SHA384 64 B, keyed once, aws-lc", 200_000, || {
        black_box(aws_lc_rs::hmac::sign(&aws_key, black_box(&message)));
    });
    let rust_key = hmac::Hmac::<sha2::Sha384>::new_from_slice(&secret).expect("any key size");
    time("HMAC-SHA384 64 B, keyed once, sha2", 200_000, || {
        let mut mac = rust_key.clone();
        mac.update(black_box(&message));
        black_box(mac.finalize());
    });
    time("HMAC-SHA384 64 B, new key, aws-lc", 200_000, || {
        let key = aws_lc_rs::hmac::Key::new(aws_lc_rs::hmac::HMAC_SHA384, black_box(&secret));
        black_box(aws_lc_rs::hmac::sign(&key, black_box(&message)));
    });
    time("HMAC-SHA384 64 B, new key, sha2", 200_000, || {
        let mut mac =
            hmac::Hmac::<sha2::Sha384>::new_from_slice(black_box(&secret)).expect("any key size");
        mac.update(black_box(&message));
        black_box(mac.finalize());
    });
}
