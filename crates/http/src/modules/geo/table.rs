//! Building and searching a `geo` table: networks by longest prefix, or sorted ranges.

use std::net::{IpAddr, Ipv4Addr};

use crate::modules::geo::settings::{GeoTable, Lookup, Network, Range, mask_v4, mask_v6};

/// nginx's address for a client that has none (a Unix socket) or a source that is not one.
pub const NO_ADDRESS: IpAddr = IpAddr::V4(Ipv4Addr::BROADCAST);

/// A network as written (`ADDR` or `ADDR/BITS`); `None` if malformed. The flag says that
/// bits were set beyond the prefix (cleared here, warned about by the caller).
pub fn parse_network(text: &str) -> Option<(Network, bool)> {
    let (address, prefix) = match text.split_once('/') {
        Some((address, bits)) => {
            if bits.is_empty() || !bits.bytes().all(|byte| byte.is_ascii_digit()) {
                return None;
            }
            (address, Some(bits.parse::<u8>().ok()?))
        }
        None => (text, None),
    };
    let address: IpAddr = address.parse().ok()?;
    let (network, cleared) = match address {
        IpAddr::V4(v4) => {
            let prefix = prefix.unwrap_or(32);
            if prefix > 32 {
                return None;
            }
            let bits = u32::from(v4);
            let masked = bits & mask_v4(prefix);
            let network = Network {
                address: IpAddr::V4(masked.into()),
                prefix,
            };
            (network, masked != bits)
        }
        IpAddr::V6(v6) => {
            let prefix = prefix.unwrap_or(128);
            if prefix > 128 {
                return None;
            }
            let bits = u128::from(v6);
            let masked = bits & mask_v6(prefix);
            let network = Network {
                address: IpAddr::V6(masked.into()),
                prefix,
            };
            (network, masked != bits)
        }
    };
    Some((network, cleared))
}

/// `A-B`, two IPv4 addresses with `A <= B`.
pub fn parse_range(text: &str) -> Option<(u32, u32)> {
    let (start, end) = text.split_once('-')?;
    let start: Ipv4Addr = start.parse().ok()?;
    let end: Ipv4Addr = end.parse().ok()?;
    let (start, end) = (u32::from(start), u32::from(end));
    (start <= end).then_some((start, end))
}

impl GeoTable {
    /// The index of `value`, added if new.
    pub fn intern(&mut self, value: &[u8]) -> usize {
        if self.value_index.is_empty() {
            for (index, known) in self.values.iter().enumerate() {
                self.value_index.insert(known.clone(), index);
            }
        }
        if let Some(index) = self.value_index.get(value) {
            return *index;
        }
        self.values.push(value.into());
        self.value_index.insert(value.into(), self.values.len() - 1);
        self.values.len() - 1
    }

    /// Sets `network`'s value; the old value's index if the network was there.
    pub fn insert_network(&mut self, network: Network, value: usize) -> Option<usize> {
        let Lookup::Networks { v4, v6 } = &mut self.lookup else {
            return None;
        };
        match network.address {
            IpAddr::V4(address) => v4
                .entry(network.prefix)
                .or_default()
                .insert(address.into(), value),
            IpAddr::V6(address) => v6
                .entry(network.prefix)
                .or_default()
                .insert(address.into(), value),
        }
    }

    /// Removes `network`; whether it was there.
    pub fn delete_network(&mut self, network: Network) -> bool {
        let Lookup::Networks { v4, v6 } = &mut self.lookup else {
            return false;
        };
        match network.address {
            IpAddr::V4(address) => v4
                .get_mut(&network.prefix)
                .is_some_and(|map| map.remove(&u32::from(address)).is_some()),
            IpAddr::V6(address) => v6
                .get_mut(&network.prefix)
                .is_some_and(|map| map.remove(&u128::from(address)).is_some()),
        }
    }

    /// Gives `start..=end` the value `value`: a later range wins where it overlaps
    /// earlier ones, which keep what lies outside it.
    pub fn insert_range(&mut self, start: u32, end: u32, value: usize) {
        self.delete_range(start, end);
        if let Lookup::Ranges(ranges) = &mut self.lookup {
            let at = ranges.partition_point(|range| range.start < start);
            ranges.insert(at, Range { start, end, value });
        }
    }

    /// Removes every address of `start..=end` from the ranges; whether any was there.
    /// Only the ranges that overlap it are touched (found by binary search), so a block
    /// of ranges written in order builds in linear time.
    pub fn delete_range(&mut self, start: u32, end: u32) -> bool {
        let Lookup::Ranges(ranges) = &mut self.lookup else {
            return false;
        };
        let first = ranges.partition_point(|range| range.end < start);
        let last = first + ranges[first..].partition_point(|range| range.start <= end);
        if first == last {
            return false;
        }
        let mut kept = Vec::with_capacity(2);
        let (head, tail) = (ranges[first], ranges[last - 1]);
        if head.start < start {
            kept.push(Range {
                end: start - 1,
                ..head
            });
        }
        if tail.end > end {
            kept.push(Range {
                start: end + 1,
                ..tail
            });
        }
        ranges.splice(first..last, kept);
        true
    }

    /// The value for `address` (IPv4-mapped IPv6 addresses are looked up as IPv4).
    pub fn find(&self, address: IpAddr) -> &[u8] {
        let address = match address {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(address, IpAddr::V4),
            v4 => v4,
        };
        let index = match (&self.lookup, address) {
            (Lookup::Networks { v4, .. }, IpAddr::V4(address)) => {
                let bits = u32::from(address);
                v4.iter()
                    .rev()
                    .find_map(|(prefix, map)| map.get(&(bits & mask_v4(*prefix))).copied())
            }
            (Lookup::Networks { v6, .. }, IpAddr::V6(address)) => {
                let bits = u128::from(address);
                v6.iter()
                    .rev()
                    .find_map(|(prefix, map)| map.get(&(bits & mask_v6(*prefix))).copied())
            }
            (Lookup::Ranges(ranges), address) => {
                let bits = match address {
                    IpAddr::V4(v4) => u32::from(v4),
                    IpAddr::V6(_) => u32::MAX,
                };
                let at = ranges.partition_point(|range| range.start <= bits);
                at.checked_sub(1)
                    .map(|at| ranges[at])
                    .filter(|range| range.end >= bits)
                    .map(|range| range.value)
            }
        };
        &self.values[index.unwrap_or(self.default)]
    }

    /// The address `X-Forwarded-For` gives when `address` is a trusted `proxy`: its last
    /// address, or with `proxy_recursive` the last one that is not trusted itself.
    pub fn forwarded(&self, address: IpAddr, forwarded_for: &[u8]) -> IpAddr {
        if !self.is_proxy(address) {
            return address;
        }
        let text = String::from_utf8_lossy(forwarded_for);
        let mut found = address;
        for entry in text.rsplit(',') {
            let Ok(entry) = entry.trim().parse::<IpAddr>() else {
                return found;
            };
            found = entry;
            if !self.proxy_recursive || !self.is_proxy(entry) {
                break;
            }
        }
        found
    }

    fn is_proxy(&self, address: IpAddr) -> bool {
        let address = match address {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(address, IpAddr::V4),
            v4 => v4,
        };
        self.proxies.iter().any(|proxy| proxy.contains(address))
    }
}
