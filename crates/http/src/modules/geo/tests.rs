use std::net::IpAddr;

use super::settings::{GeoTable, Lookup};
use super::table::{NO_ADDRESS, parse_network, parse_range};

fn ip(text: &str) -> IpAddr {
    text.parse().expect("a valid test address")
}

fn networks(lines: &[(&str, &str)]) -> GeoTable {
    let mut table = GeoTable {
        values: vec![Box::from(&b""[..])],
        ..GeoTable::default()
    };
    for (network, value) in lines {
        let index = table.intern(value.as_bytes());
        if *network == "default" {
            table.default = index;
            continue;
        }
        let (network, _) = parse_network(network).expect("a valid test network");
        table.insert_network(network, index);
    }
    table
}

fn ranges(lines: &[(&str, &str)]) -> GeoTable {
    let mut table = GeoTable {
        values: vec![Box::from(&b""[..])],
        lookup: Lookup::Ranges(Vec::new()),
        ..GeoTable::default()
    };
    for (range, value) in lines {
        let index = table.intern(value.as_bytes());
        match *range {
            "default" => table.default = index,
            _ => match range.strip_prefix("delete ") {
                Some(range) => {
                    let (start, end) = parse_range(range).expect("a valid test range");
                    table.delete_range(start, end);
                }
                None => {
                    let (start, end) = parse_range(range).expect("a valid test range");
                    table.insert_range(start, end, index);
                }
            },
        }
    }
    table
}

fn find<'a>(table: &'a GeoTable, address: &str) -> &'a str {
    std::str::from_utf8(table.find(ip(address))).expect("a text value")
}

#[test]
fn networks_parse_with_nginx_rules() {
    let (network, cleared) = parse_network("10.0.0.1/8").unwrap();
    assert_eq!(network.address, ip("10.0.0.0"));
    assert_eq!(network.prefix, 8);
    assert!(cleared);
    assert_eq!(parse_network("192.0.2.1").unwrap().0.prefix, 32);
    assert_eq!(parse_network("2001:db8::/32").unwrap().0.prefix, 32);
    assert!(!parse_network("0.0.0.0/0").unwrap().1);
    for bad in [
        "10.0.0.0/33",
        "::/129",
        "10.0.0/8",
        "x",
        "10.0.0.0/",
        "10.0.0.0/+8",
        "",
    ] {
        assert!(parse_network(bad).is_none(), "{bad}");
    }
    assert_eq!(
        parse_range("127.0.0.0-127.0.0.255"),
        Some((0x7f00_0000, 0x7f00_00ff))
    );
    assert_eq!(parse_range("127.0.0.2-127.0.0.1"), None);
    assert_eq!(parse_range("127.0.0.1"), None);
}

#[test]
fn the_longest_network_wins() {
    let table = networks(&[
        ("127.0.0.0/8", "loopback"),
        ("127.0.0.0/24", "near"),
        ("192.0.2.0/24", "test"),
        ("0.0.0.0/0", "world"),
        ("2001:db8::/32", "doc6"),
        ("default", "none"),
    ]);
    assert_eq!(find(&table, "127.0.0.1"), "near");
    assert_eq!(find(&table, "127.1.0.1"), "loopback");
    assert_eq!(find(&table, "192.0.2.200"), "test");
    assert_eq!(find(&table, "10.0.0.1"), "world");
    assert_eq!(find(&table, "::ffff:192.0.2.1"), "test");
    assert_eq!(find(&table, "2001:db8::1"), "doc6");
    assert_eq!(find(&table, "::1"), "none");
}

#[test]
fn deleted_networks_fall_back() {
    let mut table = networks(&[("127.0.0.0/8", "loopback"), ("0.0.0.0/0", "world")]);
    let (network, _) = parse_network("127.0.0.0/8").unwrap();
    assert!(table.delete_network(network));
    assert!(!table.delete_network(network));
    assert_eq!(find(&table, "127.0.0.1"), "world");
    let empty = networks(&[]);
    assert_eq!(find(&empty, "127.0.0.1"), "");
}

#[test]
fn later_ranges_win_where_they_overlap() {
    let insert = ranges(&[
        ("default", "default"),
        ("127.0.0.0-127.0.0.255", "test"),
        ("127.0.0.1-127.0.0.2", "test2"),
        ("127.0.0.1-127.0.0.1", "loopback"),
    ]);
    assert_eq!(find(&insert, "127.0.0.0"), "test");
    assert_eq!(find(&insert, "127.0.0.1"), "loopback");
    assert_eq!(find(&insert, "127.0.0.2"), "test2");
    assert_eq!(find(&insert, "127.0.0.3"), "test");
    assert_eq!(find(&insert, "127.0.1.0"), "default");
    assert_eq!(find(&insert, "::1"), "default");
    let before = ranges(&[
        ("127.0.0.1-127.0.0.255", "loopback"),
        ("127.0.0.0-127.0.0.0", "test"),
    ]);
    assert_eq!(find(&before, "127.0.0.0"), "test");
    assert_eq!(find(&before, "127.0.0.1"), "loopback");
}

#[test]
fn deleted_ranges_leave_nothing_behind() {
    let table = ranges(&[
        ("default", "default"),
        ("127.0.0.0-127.0.0.255", "test"),
        ("127.0.0.1-127.0.0.1", "loopback"),
        ("delete 127.0.0.0-127.0.0.0", ""),
        ("delete 127.0.0.2-127.0.0.255", ""),
        ("delete 127.0.0.1-127.0.0.1", ""),
    ]);
    assert_eq!(find(&table, "127.0.0.1"), "default");
    let two = ranges(&[
        ("10.10.3.0-10.11.2.255", "foo"),
        ("10.12.3.0-10.13.2.255", "foo2"),
        ("delete 10.10.3.0-10.11.2.255", ""),
    ]);
    assert_eq!(find(&two, "10.11.2.1"), "");
    assert_eq!(find(&two, "10.13.2.1"), "foo2");
    assert_eq!(find(&two, "255.255.255.255"), "");
    assert_eq!(two.find(NO_ADDRESS), b"");
}

#[test]
fn forwarded_addresses_from_trusted_proxies() {
    let mut table = networks(&[]);
    table.proxies.push(parse_network("127.0.0.1").unwrap().0);
    let local = ip("127.0.0.1");
    assert_eq!(
        table.forwarded(local, b"10.0.0.1, 192.0.2.1"),
        ip("192.0.2.1")
    );
    assert_eq!(
        table.forwarded(local, b"192.0.2.1, 127.0.0.1"),
        ip("127.0.0.1")
    );
    assert_eq!(
        table.forwarded(ip("10.9.9.9"), b"192.0.2.1"),
        ip("10.9.9.9")
    );
    assert_eq!(table.forwarded(local, b"garbage"), local);
    table.proxy_recursive = true;
    assert_eq!(
        table.forwarded(local, b"192.0.2.1, 127.0.0.1"),
        ip("192.0.2.1")
    );
    assert_eq!(table.forwarded(local, b"127.0.0.1, 127.0.0.1"), local);
}

#[test]
fn a_hundred_thousand_ranges_in_order() {
    let mut table = GeoTable {
        values: vec![Box::from(&b""[..])],
        lookup: Lookup::Ranges(Vec::new()),
        ..GeoTable::default()
    };
    for n in 0..100_001u32 {
        let address = 0x7f00_0000 + n;
        let index = table.intern(format!("range{n}").as_bytes());
        table.insert_range(address, address, index);
    }
    assert_eq!(find(&table, "127.0.0.1"), "range1");
    assert_eq!(find(&table, "127.1.134.160"), "range100000");
    assert_eq!(find(&table, "127.1.134.161"), "");
}
