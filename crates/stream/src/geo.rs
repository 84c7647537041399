//! `geo [SOURCE] $name { ... }`: a value chosen by the client's address (or an address a
//! template gives), by the longest matching network, or with `ranges` by the address
//! range it falls in. An address that is not one (a unix client, text) is looked up as
//! 255.255.255.255, as nginx does.

use std::net::IpAddr;

use conf::{ConfError, Directive};
use runtime::PeerAddress;

use crate::conf::Loader;
use crate::variables::{Eval, SlotKind, StreamTemplate};

/// One `geo` block.
#[derive(Debug)]
pub struct Geo {
    /// `None`: the client's address.
    pub source: Option<StreamTemplate>,
    pub default: Box<[u8]>,
    pub lookup: Lookup,
}

/// How the block's addresses are kept.
#[derive(Debug)]
pub enum Lookup {
    /// Networks, the longest match wins: IPv4 (address, mask) and IPv6.
    Networks {
        inet: Vec<(u32, u32, Box<[u8]>)>,
        inet6: Vec<(u128, u128, Box<[u8]>)>,
    },
    /// `ranges`: IPv4 ranges, sorted, not overlapping (a later one replaces what it covers).
    Ranges(Vec<(u32, u32, Box<[u8]>)>),
}

const NONE_ADDRESS: u32 = u32::MAX;

fn address_of(value: &[u8]) -> Option<IpAddr> {
    std::str::from_utf8(value).ok()?.parse().ok()
}

/// The value of `geo` for the session `eval` reads.
pub fn evaluate(geo: &Geo, eval: &mut Eval<'_>, out: &mut Vec<u8>) {
    let address = match &geo.source {
        Some(template) => address_of(&eval.render(template)),
        None => match eval.vars.remote {
            PeerAddress::Inet(address) => Some(address.ip()),
            PeerAddress::Unix => None,
        },
    };
    let address = match address {
        Some(IpAddr::V6(v6)) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(v6),
        },
        Some(other) => other,
        None => IpAddr::V4(NONE_ADDRESS.into()),
    };
    out.extend_from_slice(find(geo, address).unwrap_or(&geo.default));
}

fn find(geo: &Geo, address: IpAddr) -> Option<&[u8]> {
    match (&geo.lookup, address) {
        (Lookup::Networks { inet, .. }, IpAddr::V4(ip)) => {
            let ip = u32::from(ip);
            inet.iter()
                .filter(|(network, mask, _)| ip & mask == *network)
                .max_by_key(|(_, mask, _)| mask.count_ones())
                .map(|(_, _, value)| &value[..])
        }
        (Lookup::Networks { inet6, .. }, IpAddr::V6(ip)) => {
            let ip = u128::from(ip);
            inet6
                .iter()
                .filter(|(network, mask, _)| ip & mask == *network)
                .max_by_key(|(_, mask, _)| mask.count_ones())
                .map(|(_, _, value)| &value[..])
        }
        (Lookup::Ranges(ranges), IpAddr::V4(ip)) => {
            let ip = u32::from(ip);
            let index = ranges.partition_point(|(_, end, _)| *end < ip);
            ranges
                .get(index)
                .filter(|(start, _, _)| *start <= ip)
                .map(|(_, _, value)| &value[..])
        }
        (Lookup::Ranges(_), IpAddr::V6(_)) => None,
    }
}

/// Declares the variable a `geo` block fills.
pub fn declare(loader: &mut Loader<'_>, directive: &Directive) -> Result<(), ConfError> {
    let target = directive
        .args
        .last()
        .map(|argument| argument.as_str())
        .unwrap_or("");
    let Some(name) = target.strip_prefix('$') else {
        return Err(ConfError::message(
            format!("invalid variable name \"{target}\""),
            &directive.span,
        ));
    };
    let kind = SlotKind::Geo(loader.geos_declared);
    loader.geos_declared += 1;
    loader
        .registry
        .define(name, kind)
        .map(|_| ())
        .map_err(|message| ConfError::message(message, &directive.span))
}

/// Parses `A.B.C.D/N`, `ADDRESS` (a host) or an IPv6 network.
enum Network {
    Inet(u32, u32),
    Inet6(u128, u128),
}

fn parse_network(text: &str) -> Option<Network> {
    let (address, bits) = match text.split_once('/') {
        Some((address, bits)) => (address, Some(bits.parse::<u32>().ok()?)),
        None => (text, None),
    };
    match address.parse::<IpAddr>().ok()? {
        IpAddr::V4(ip) => {
            let bits = bits.unwrap_or(32);
            if bits > 32 {
                return None;
            }
            let mask = if bits == 0 {
                0
            } else {
                u32::MAX << (32 - bits)
            };
            Some(Network::Inet(u32::from(ip) & mask, mask))
        }
        IpAddr::V6(ip) => {
            let bits = bits.unwrap_or(128);
            if bits > 128 {
                return None;
            }
            let mask = if bits == 0 {
                0
            } else {
                u128::MAX << (128 - bits)
            };
            Some(Network::Inet6(u128::from(ip) & mask, mask))
        }
    }
}

fn parse_range(text: &str) -> Option<(u32, u32)> {
    let (start, end) = text.split_once('-')?;
    let start: std::net::Ipv4Addr = start.parse().ok()?;
    let end: std::net::Ipv4Addr = end.parse().ok()?;
    let (start, end) = (u32::from(start), u32::from(end));
    (start <= end).then_some((start, end))
}

/// Removes `[start, end]` from sorted, non-overlapping ranges, splitting those it cuts.
/// Only the ranges it overlaps are touched, so ranges written in order (a generated file
/// of a hundred thousand) load in linear time.
fn cut(ranges: &mut Vec<(u32, u32, Box<[u8]>)>, start: u32, end: u32) {
    let first = ranges.partition_point(|(_, to, _)| *to < start);
    let last = ranges.partition_point(|(from, _, _)| *from <= end);
    if first >= last {
        return;
    }
    let mut kept = Vec::with_capacity(2);
    let (from, _, value) = &ranges[first];
    if *from < start {
        kept.push((*from, start - 1, value.clone()));
    }
    let (_, to, value) = &ranges[last - 1];
    if *to > end {
        kept.push((end + 1, *to, value.clone()));
    }
    ranges.splice(first..last, kept);
}

/// Reads a `geo` block.
pub fn load(loader: &mut Loader<'_>, directive: &Directive) -> Result<Geo, ConfError> {
    let source = if directive.args.len() == 2 {
        Some(loader.template(directive.arg(0), &directive.span)?)
    } else {
        None
    };
    let lines = directive.block.as_deref().unwrap_or_default();
    let ranges = lines
        .iter()
        .any(|line| line.name == "ranges" && line.args.is_empty());
    let mut default: Box<[u8]> = Box::default();
    let mut inet = Vec::new();
    let mut inet6 = Vec::new();
    let mut range_list: Vec<(u32, u32, Box<[u8]>)> = Vec::new();
    for line in lines {
        if line.block.is_some() {
            return Err(ConfError::message("unexpected \"{\"", &line.span));
        }
        let key = line.name.as_str();
        if key == "ranges" && line.args.is_empty() {
            continue;
        }
        if line.args.len() != 1 {
            return Err(ConfError::message(
                "invalid number of the geo parameters",
                &line.span,
            ));
        }
        let value: Box<[u8]> = line.arg(0).as_bytes().into();
        let invalid = |what: &str, text: &str| {
            ConfError::message(format!("invalid {what} \"{text}\""), &line.span)
        };
        match key {
            "default" if !ranges => {
                default = value.clone();
                inet.retain(|(_, mask, _): &(u32, u32, Box<[u8]>)| *mask != 0);
                inet.push((0, 0, value));
            }
            "default" => default = value,
            "delete" if ranges => {
                let (start, end) =
                    parse_range(line.arg(0)).ok_or_else(|| invalid("range", line.arg(0)))?;
                cut(&mut range_list, start, end);
            }
            "delete" => {
                match parse_network(line.arg(0)).ok_or_else(|| invalid("network", line.arg(0)))? {
                    Network::Inet(network, mask) => {
                        inet.retain(|(known, known_mask, _)| {
                            !(*known == network && *known_mask == mask)
                        });
                    }
                    Network::Inet6(network, mask) => {
                        inet6.retain(|(known, known_mask, _)| {
                            !(*known == network && *known_mask == mask)
                        });
                    }
                }
            }
            _ if ranges => {
                let (start, end) = parse_range(key).ok_or_else(|| invalid("range", key))?;
                cut(&mut range_list, start, end);
                let at = range_list.partition_point(|(from, _, _)| *from < start);
                range_list.insert(at, (start, end, value));
            }
            _ => match parse_network(key).ok_or_else(|| invalid("network", key))? {
                Network::Inet(network, mask) => {
                    inet.retain(|(known, known_mask, _)| {
                        !(*known == network && *known_mask == mask)
                    });
                    inet.push((network, mask, value));
                }
                Network::Inet6(network, mask) => {
                    inet6.retain(|(known, known_mask, _)| {
                        !(*known == network && *known_mask == mask)
                    });
                    inet6.push((network, mask, value));
                }
            },
        }
    }
    let lookup = if ranges {
        Lookup::Ranges(range_list)
    } else {
        Lookup::Networks { inet, inet6 }
    };
    Ok(Geo {
        source,
        default,
        lookup,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranges(list: &[(&str, &str)]) -> Geo {
        let mut ranges = Vec::new();
        for (range, value) in list {
            let (start, end) = parse_range(range).unwrap();
            cut(&mut ranges, start, end);
            let at = ranges.partition_point(|(from, _, _)| *from < start);
            ranges.insert(at, (start, end, value.as_bytes().into()));
        }
        Geo {
            source: None,
            default: b"default".as_slice().into(),
            lookup: Lookup::Ranges(ranges),
        }
    }

    fn at(geo: &Geo, address: &str) -> String {
        let found = find(geo, address.parse().unwrap()).unwrap_or(&geo.default);
        String::from_utf8(found.to_vec()).unwrap()
    }

    #[test]
    fn a_later_range_replaces_what_it_covers() {
        let geo = ranges(&[
            ("127.0.0.0-127.0.0.255", "test"),
            ("127.0.0.1-127.0.0.2", "test2"),
            ("127.0.0.1-127.0.0.1", "loopback"),
        ]);
        assert_eq!(at(&geo, "127.0.0.1"), "loopback");
        assert_eq!(at(&geo, "127.0.0.2"), "test2");
        assert_eq!(at(&geo, "127.0.0.3"), "test");
        assert_eq!(at(&geo, "10.0.0.1"), "default");
    }

    #[test]
    fn ranges_in_order_load_quickly_and_a_range_inside_another_splits_it() {
        let mut ranges = Vec::new();
        for start in 0..100_000u32 {
            cut(&mut ranges, start * 2, start * 2 + 1);
            let at = ranges.partition_point(|(from, _, _)| *from < start * 2);
            ranges.insert(at, (start * 2, start * 2 + 1, Box::default()));
        }
        assert_eq!(ranges.len(), 100_000);
        let mut ranges = vec![(10, 20, Box::from(&b"outer"[..]))];
        cut(&mut ranges, 12, 14);
        assert_eq!(ranges.len(), 2);
        assert_eq!((ranges[0].0, ranges[0].1), (10, 11));
        assert_eq!((ranges[1].0, ranges[1].1), (15, 20));
    }

    #[test]
    fn the_longest_network_wins() {
        let mut inet = Vec::new();
        for (text, value) in [("0.0.0.0/0", "world"), ("127.0.0.0/8", "loopback")] {
            let Some(Network::Inet(network, mask)) = parse_network(text) else {
                panic!("an IPv4 network");
            };
            inet.push((network, mask, value.as_bytes().into()));
        }
        let geo = Geo {
            source: None,
            default: Box::default(),
            lookup: Lookup::Networks {
                inet,
                inet6: Vec::new(),
            },
        };
        assert_eq!(at(&geo, "127.1.2.3"), "loopback");
        assert_eq!(at(&geo, "192.0.2.1"), "world");
    }
}
