//! `map` keys and `split_clients` buckets: a configuration's keys and a client's value.
//! No panic; an exact key that was accepted is found again in any case; a value is always
//! found by the exact key equal to it; a bucket choice is one of the configured values.
#![no_main]

use libfuzzer_sys::fuzz_target;
use portico_shared::map::keys::MapKeys;
use portico_shared::map::split_clients::{Part, Parts};
use portico_shared::regex::Captures;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, input)) = data.split_first() else { return };
    let Ok(text) = std::str::from_utf8(input) else { return };
    let mut lines: Vec<&str> = text.split('\n').collect();
    let Some(value) = lines.pop() else { return };
    let mut keys = MapKeys::default();
    keys.hostnames = selector & 1 != 0;
    let mut exact = Vec::new();
    for (index, key) in lines.iter().enumerate() {
        let plain = !key.contains('*') && !key.starts_with('.');
        if keys.add(key, index).is_ok() && (plain || !keys.hostnames) {
            exact.push((key.to_ascii_uppercase(), index));
        }
    }
    let mut captures = Captures::default();
    for (key, index) in &exact {
        let found = keys.find(key.as_bytes(), &mut captures).map(|found| found.value);
        assert_eq!(found, Some(*index), "exact key {key:?}");
    }
    keys.find(value.as_bytes(), &mut captures);

    let parts: Vec<Part> = lines
        .iter()
        .filter_map(|line| {
            let (percent, value) = line.split_once(' ').unwrap_or((line, ""));
            Part::parse(percent, value.as_bytes()).ok()
        })
        .collect();
    let values: Vec<Vec<u8>> = parts.iter().map(|part| part.value.to_vec()).collect();
    if let Ok(parts) = Parts::build(parts) {
        let chosen = parts.choose(value.as_bytes());
        assert!(chosen.is_empty() || values.iter().any(|value| value == chosen));
    }
});
