//! `map` key lookup and `split_clients` bucket choice, timed with std only:
//! `cargo bench -p portico-shared --bench map_lookup`. Prints nanoseconds per lookup for
//! exact keys, host-name wildcards and regexes in maps of realistic sizes.
// A bench reports on stdout; that is its whole job.
#![allow(clippy::print_stdout)]

use std::hint::black_box;
use std::time::Instant;

use portico_shared::captures::{NamedCaptures, NamedSlot};
use portico_shared::map::keys::MapKeys;
use portico_shared::map::split_clients::{Part, Parts};
use portico_shared::regex::{Captures, Regex};

fn time(name: &str, iterations: u32, mut operation: impl FnMut()) {
    for _ in 0..iterations / 10 {
        operation();
    }
    let start = Instant::now();
    for _ in 0..iterations {
        operation();
    }
    let nanos = start.elapsed().as_nanos() / u128::from(iterations);
    println!("{name:<48} {nanos:>8} ns/op");
}

fn lookup(name: &str, keys: &MapKeys, key: &[u8], expected: Option<usize>) {
    let mut captures = Captures::default();
    time(name, 200_000, || {
        let found = keys
            .find(black_box(key), &mut captures)
            .map(|found| found.value);
        assert_eq!(found, expected);
    });
}

fn main() {
    let mut exact = MapKeys::default();
    for index in 0..10_000 {
        exact
            .add(&format!("/path/number/{index}"), index)
            .expect("distinct keys");
    }
    lookup(
        "exact, 10k keys, hit",
        &exact,
        b"/PATH/number/5000",
        Some(5000),
    );
    lookup("exact, 10k keys, miss", &exact, b"/path/number/x", None);

    let mut hosts = MapKeys::default();
    hosts.hostnames = true;
    for index in 0..10_000 {
        hosts
            .add(&format!("*.site{index}.example.com"), index)
            .expect("distinct wildcards");
        hosts
            .add(&format!("www.site{index}.*"), 20_000 + index)
            .expect("distinct wildcards");
    }
    lookup(
        "hostnames, 20k wildcards, head hit",
        &hosts,
        b"a.b.site77.example.com",
        Some(77),
    );
    lookup(
        "hostnames, 20k wildcards, tail hit",
        &hosts,
        b"www.site77.co.uk",
        Some(20_077),
    );
    lookup(
        "hostnames, 20k wildcards, miss",
        &hosts,
        b"www.other.example.org",
        None,
    );

    let mut regexes = MapKeys::default();
    for index in 0..10 {
        let regex = Regex::compile(&format!("^/app{index}/(.*)$"), false).expect("valid");
        regexes.add_regex(NamedCaptures::new(regex, |_| NamedSlot(0)), index);
    }
    lookup("10 regexes, last matches", &regexes, b"/app9/x/y", Some(9));
    lookup("10 regexes, none matches", &regexes, b"/other/x/y", None);

    let parts = Parts::build(vec![
        Part::parse("33.3%", b"1").expect("valid"),
        Part::parse("33.3%", b"2").expect("valid"),
        Part::parse("*", b"3").expect("valid"),
    ])
    .expect("under 100%");
    let uri = b"/media/videos/2026/11/clip-000123.mp4";
    time("split_clients, 3 parts, 37-byte key", 1_000_000, || {
        black_box(parts.choose(black_box(uri)));
    });
}
