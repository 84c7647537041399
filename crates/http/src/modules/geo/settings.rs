//! What a `geo` block builds: its networks or ranges and their values (plain data).

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;

/// One `geo` block.
#[derive(Debug, Default)]
pub struct GeoTable {
    /// Without `$address`: the client's address (after realip), not the source's text.
    pub from_client: bool,
    /// `proxy`: addresses whose `X-Forwarded-For` is believed.
    pub proxies: Vec<Network>,
    /// `proxy_recursive`
    pub proxy_recursive: bool,
    /// Every distinct value, once; the tables hold indexes.
    pub values: Vec<Box<[u8]>>,
    /// Each value's index in `values`, for building the table in linear time.
    pub value_index: HashMap<Box<[u8]>, usize>,
    /// `default`'s value index (0, the empty value, without it).
    pub default: usize,
    pub lookup: Lookup,
}

/// How addresses are found.
#[derive(Debug)]
pub enum Lookup {
    /// Networks: the longest prefix wins.
    Networks {
        v4: BTreeMap<u8, HashMap<u32, usize>>,
        v6: BTreeMap<u8, HashMap<u128, usize>>,
    },
    /// `ranges`: IPv4 ranges, kept sorted and without overlap.
    Ranges(Vec<Range>),
}

impl Default for Lookup {
    fn default() -> Lookup {
        Lookup::Networks {
            v4: BTreeMap::new(),
            v6: BTreeMap::new(),
        }
    }
}

/// An IPv4 range and its value index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Range {
    pub start: u32,
    pub end: u32,
    pub value: usize,
}

/// An address with a prefix length, its host bits cleared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Network {
    pub address: IpAddr,
    pub prefix: u8,
}

impl Network {
    pub fn contains(&self, address: IpAddr) -> bool {
        match (self.address, address) {
            (IpAddr::V4(network), IpAddr::V4(address)) => {
                let mask = mask_v4(self.prefix);
                u32::from(address) & mask == u32::from(network)
            }
            (IpAddr::V6(network), IpAddr::V6(address)) => {
                let mask = mask_v6(self.prefix);
                u128::from(address) & mask == u128::from(network)
            }
            _ => false,
        }
    }
}

pub fn mask_v4(prefix: u8) -> u32 {
    u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0)
}

pub fn mask_v6(prefix: u8) -> u128 {
    u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0)
}
