use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use super::*;
use crate::{Peer, PeerAddr};

/// Groups whose `hash` key is a plain string.
type Group = crate::Group<&'static str>;
type Balancer = crate::Balancer<&'static str>;

fn peer(port: u16, weight: u32) -> Peer {
    let address = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port);
    Peer {
        name: address.to_string().into(),
        server: address.to_string().into(),
        address: PeerAddr::Inet(address),
        weight,
        max_fails: 1,
        fail_timeout: Duration::from_secs(10),
        max_conns: 0,
        down: false,
        route: None,
        drain: false,
    }
}

fn group(peers: Vec<Peer>, backup: Vec<Peer>, balancer: Balancer) -> Group {
    Group::new("g".into(), peers, backup, balancer, None, false, None)
}

/// One request: choose, then release as a success.
fn pick(group: &Group, key: &SelectKey<'_>, now: Instant) -> Option<Selected> {
    let mut tried = Tried::new(group);
    let selected = group.select(&mut tried, key, now)?;
    group.release(selected, false, now);
    Some(selected)
}

fn ports(group: &Group, count: usize) -> Vec<u16> {
    let now = Instant::now();
    (0..count)
        .map(|_| {
            let selected = pick(group, &SelectKey::default(), now).unwrap();
            match group.peer(selected).expect("a member").address {
                PeerAddr::Inet(address) => address.port(),
                PeerAddr::Unix(_) => 0,
            }
        })
        .collect()
}

#[test]
fn crc32_is_ieee() {
    assert_eq!(crc32(b"123456789"), 0xcbf4_3926);
    assert_eq!(crc32(b""), 0);
}

#[test]
fn smooth_weighted_round_robin_interleaves() {
    // nginx's documented order for weights 5, 1, 1.
    let group = group(
        vec![peer(1, 5), peer(2, 1), peer(3, 1)],
        vec![],
        Balancer::RoundRobin,
    );
    assert_eq!(ports(&group, 7), [1, 1, 2, 1, 3, 1, 1]);
    assert_eq!(ports(&group, 7), [1, 1, 2, 1, 3, 1, 1]);
}

#[test]
fn a_failed_peer_rests_for_its_fail_timeout() {
    let group = group(vec![peer(1, 1), peer(2, 1)], vec![], Balancer::RoundRobin);
    let now = Instant::now();
    let mut tried = Tried::new(&group);
    let first = group
        .select(&mut tried, &SelectKey::default(), now)
        .unwrap();
    assert!(
        group.release(first, true, now),
        "max_fails=1 disables at once"
    );
    for _ in 0..4 {
        assert_ne!(pick(&group, &SelectKey::default(), now), Some(first));
    }
    // After fail_timeout the peer is tried again, and a success clears its failures.
    let later = now + Duration::from_secs(11);
    let seen: Vec<_> = (0..4)
        .map(|_| pick(&group, &SelectKey::default(), later).unwrap())
        .collect();
    assert!(seen.contains(&first));
}

#[test]
fn a_request_never_tries_the_same_peer_twice() {
    let group = group(
        vec![peer(1, 1), peer(2, 1), peer(3, 1)],
        vec![],
        Balancer::RoundRobin,
    );
    let now = Instant::now();
    let mut tried = Tried::new(&group);
    let mut seen = Vec::new();
    while let Some(selected) = group.select(&mut tried, &SelectKey::default(), now) {
        assert!(!seen.contains(&selected));
        seen.push(selected);
        // Not counted as a failure, so nothing gets disabled.
        group.release(selected, false, now);
    }
    assert_eq!(seen.len(), 3);
}

#[test]
fn backups_serve_when_primaries_fail_and_all_failed_is_no_live_upstreams() {
    let group = group(vec![peer(1, 1)], vec![peer(9, 1)], Balancer::RoundRobin);
    let now = Instant::now();
    let mut tried = Tried::new(&group);
    let primary = group
        .select(&mut tried, &SelectKey::default(), now)
        .unwrap();
    assert!(!primary.backup);
    group.release(primary, true, now);
    let backup = group
        .select(&mut tried, &SelectKey::default(), now)
        .unwrap();
    assert!(backup.backup);
    group.release(backup, true, now);
    assert_eq!(group.select(&mut tried, &SelectKey::default(), now), None);
    // nginx then counts them live again for a quick recovery.
    assert!(pick(&group, &SelectKey::default(), now).is_some());
}

#[test]
fn down_peers_are_never_chosen() {
    let mut down = peer(2, 1);
    down.down = true;
    let group = group(vec![peer(1, 1), down], vec![], Balancer::RoundRobin);
    assert_eq!(ports(&group, 5), [1, 1, 1, 1, 1]);
}

#[test]
fn least_conn_prefers_the_idle_peer() {
    let group = group(vec![peer(1, 1), peer(2, 1)], vec![], Balancer::LeastConn);
    let now = Instant::now();
    let mut busy = Tried::new(&group);
    let held = group.select(&mut busy, &SelectKey::default(), now).unwrap();
    for _ in 0..5 {
        let other = pick(&group, &SelectKey::default(), now).unwrap();
        assert_ne!(other, held);
    }
    group.release(held, false, now);
}

#[test]
fn max_conns_limits_a_peer() {
    let mut limited = peer(1, 1);
    limited.max_conns = 1;
    let group = group(vec![limited, peer(2, 1)], vec![], Balancer::RoundRobin);
    let now = Instant::now();
    let mut held = Vec::new();
    for _ in 0..4 {
        let mut tried = Tried::new(&group);
        held.push(
            group
                .select(&mut tried, &SelectKey::default(), now)
                .unwrap(),
        );
    }
    let first = held.iter().filter(|selected| selected.index == 0).count();
    assert_eq!(first, 1);
}

#[test]
fn ip_hash_keeps_a_network_on_one_peer() {
    let group = group(
        vec![peer(1, 1), peer(2, 1), peer(3, 1)],
        vec![],
        Balancer::IpHash,
    );
    let now = Instant::now();
    let client = |last: u8| SelectKey {
        client: Some(IpAddr::V4(Ipv4Addr::new(10, 1, 2, last))),
        hash: b"",
        sticky: b"",
        session: b"",
    };
    let first = pick(&group, &client(1), now).unwrap();
    for last in 2..50 {
        assert_eq!(pick(&group, &client(last), now), Some(first));
    }
    // nginx's arithmetic: 89, then (h * 113 + byte) % 6271 over 10.1.2.
    let mut hash = 89u64;
    for byte in [10u64, 1, 2] {
        hash = (hash * 113 + byte) % 6271;
    }
    assert_eq!(first.index as u64, hash % 3);
}

#[test]
fn hash_is_stable_per_key() {
    let key = "k";
    let group = group(
        vec![peer(1, 1), peer(2, 1), peer(3, 1)],
        vec![],
        Balancer::Hash {
            key,
            consistent: false,
        },
    );
    let now = Instant::now();
    for name in [&b"/a"[..], b"/b", b"/c", b"/d"] {
        let key = SelectKey {
            client: None,
            hash: name,
            sticky: b"",
            session: b"",
        };
        let first = pick(&group, &key, now);
        assert_eq!(pick(&group, &key, now), first);
        // nginx: ((crc32 >> 16) & 0x7fff) % total weight.
        let expected = ((crc32(name) >> 16) & 0x7fff) % 3;
        assert_eq!(first.unwrap().index as u32, expected);
    }
}

#[test]
fn consistent_hash_moves_only_the_keys_of_a_removed_server() {
    let key = "k";
    let make = |ports: &[u16]| {
        group(
            ports.iter().map(|&port| peer(port, 1)).collect(),
            vec![],
            Balancer::Hash {
                key,
                consistent: true,
            },
        )
    };
    let four = make(&[1, 2, 3, 4]);
    let three = make(&[1, 2, 3]);
    let now = Instant::now();
    let port = |group: &Group, name: &[u8]| {
        let selected = pick(
            group,
            &SelectKey {
                client: None,
                hash: name,
                sticky: b"",
                session: b"",
            },
            now,
        )
        .unwrap();
        group.peer(selected).expect("a member").name.to_string()
    };
    let mut moved = 0;
    for n in 0..200 {
        let name = format!("/key/{n}");
        let before = port(&four, name.as_bytes());
        let after = port(&three, name.as_bytes());
        if !before.ends_with(":4") {
            assert_eq!(before, after, "{name} moved although its server stayed");
        } else {
            moved += 1;
        }
    }
    assert!(
        moved > 0 && moved < 120,
        "{moved} keys were on the removed server"
    );
    assert_eq!(four.members().ring.len(), 4 * 160);
}

/// `random two` compares two different peers: with one of two peers busy, every request
/// goes to the other (a pick of the same peer twice would send one in four to the busy
/// one).
#[test]
fn random_two_compares_two_different_peers() {
    let group = group(
        vec![peer(1, 1), peer(2, 1)],
        vec![],
        Balancer::Random { two: true },
    );
    let now = Instant::now();
    let mut tried = Tried::new(&group);
    let busy = group
        .select(&mut tried, &SelectKey::default(), now)
        .expect("a peer");
    let busy_port = match group.peer(busy).expect("a member").address {
        PeerAddr::Inet(address) => address.port(),
        PeerAddr::Unix(_) => 0,
    };
    // `busy` keeps its connection while the others come and go.
    let others = ports(&group, 200);
    assert!(
        others.iter().all(|port| *port != busy_port),
        "a request went to the busy peer {busy_port}: {others:?}"
    );
    group.release(busy, false, now);
}

#[test]
fn random_spreads_over_every_peer() {
    let group = group(
        vec![peer(1, 1), peer(2, 1)],
        vec![],
        Balancer::Random { two: false },
    );
    let seen = ports(&group, 64);
    assert!(seen.contains(&1) && seen.contains(&2));
}

/// A group with one fixed server and one `resolve` server whose answers the test gives.
fn resolving_group(balancer: Balancer) -> Group {
    let resolver = std::sync::Arc::new(shared::resolver::ResolverConf {
        servers: vec![SocketAddr::from(([127, 0, 0, 1], 53))],
        valid: None,
        ipv4: true,
        ipv6: false,
        state: Default::default(),
    });
    let template = peer(0, 1);
    crate::Group::with_sources(
        "g".into(),
        vec![
            crate::Source::Fixed {
                peers: vec![peer(1, 1)],
                backup: false,
            },
            crate::Source::Resolve(crate::Resolvable {
                host: "cache.test".into(),
                port: 80,
                service: None,
                template,
                backup: false,
            }),
        ],
        balancer,
        None,
        (resolver, Duration::from_secs(1)),
        Instant::now(),
    )
}

#[test]
fn resolved_members_come_and_go_and_requests_in_flight_keep_their_peer() {
    let group = resolving_group(Balancer::LeastConn);
    assert_eq!(
        ports(&group, 3),
        vec![1, 1, 1],
        "only the fixed server at first"
    );
    let with = |ports: &[u16]| ports.iter().map(|port| (peer(*port, 1), false)).collect();
    assert!(group.update_resolved(0, with(&[2, 3])));
    assert!(
        !group.update_resolved(0, with(&[2, 3])),
        "the same answer changes nothing"
    );
    let mut seen = ports(&group, 6);
    seen.sort_unstable();
    assert_eq!(seen, vec![1, 1, 2, 2, 3, 3]);
    // A request holds port 3; DNS then drops it and adds port 4.
    let now = Instant::now();
    let mut tried = Tried::new(&group);
    let key = SelectKey::default();
    let (held, peer_ref) = loop {
        let (selected, peer_ref) = group.select_peer(&mut tried, &key, now).expect("a peer");
        if peer_ref.address == peer(3, 1).address {
            break (selected, peer_ref);
        }
        group.release(selected, false, now);
    };
    // Port 2 keeps its serial and its count of connections across the change.
    let two = group.members().serials[1];
    assert!(group.update_resolved(0, with(&[2, 4])));
    assert_eq!(group.members().serials[1], two);
    assert_eq!(
        peer_ref.address,
        peer(3, 1).address,
        "the request still has its peer"
    );
    assert!(group.peer(held).is_none(), "port 3 is no member any more");
    assert!(
        !group.release(held, true, now),
        "nothing to count for a removed peer"
    );
    let mut seen = ports(&group, 6);
    seen.sort_unstable();
    assert_eq!(seen, vec![1, 1, 2, 2, 4, 4]);
    // NXDOMAIN: the name's members go, the fixed server stays.
    assert!(group.update_resolved(0, Vec::new()));
    assert_eq!(ports(&group, 2), vec![1, 1]);
}

#[test]
fn consistent_hash_keeps_keys_on_the_addresses_that_stay() {
    let group = resolving_group(Balancer::Hash {
        key: "",
        consistent: true,
    });
    let with = |ports: &[u16]| ports.iter().map(|port| (peer(*port, 1), false)).collect();
    group.update_resolved(0, with(&[2, 3, 4]));
    let keys: Vec<String> = (0..300).map(|n| format!("/key/{n}")).collect();
    let owner = |group: &Group, key: &str| {
        let select = SelectKey {
            client: None,
            hash: key.as_bytes(),
            sticky: b"",
            session: b"",
        };
        let selected = pick(group, &select, Instant::now()).expect("a peer");
        match group.peer(selected).expect("a member").address {
            PeerAddr::Inet(address) => address.port(),
            PeerAddr::Unix(_) => 0,
        }
    };
    let before: Vec<u16> = keys.iter().map(|key| owner(&group, key)).collect();
    group.update_resolved(0, with(&[2, 4]));
    let after: Vec<u16> = keys.iter().map(|key| owner(&group, key)).collect();
    let moved = before.iter().zip(&after).filter(|(b, a)| b != a).count();
    let on_three = before.iter().filter(|port| **port == 3).count();
    assert_eq!(moved, on_three, "only the removed address's keys move");
    assert!(on_three > 0 && after.iter().all(|port| *port != 3));
    group.update_resolved(0, with(&[2, 3, 4]));
    let back: Vec<u16> = keys.iter().map(|key| owner(&group, key)).collect();
    assert_eq!(back, before, "adding it back returns its keys");
}

/// A group with `sticky route`, its peers named by the routes given.
fn sticky_group(
    routes: &[(u16, Option<&str>)],
    backup: &[(u16, &str)],
    balancer: Balancer,
) -> Group {
    let routed = |port: u16, route: Option<&str>| Peer {
        route: route.map(std::sync::Arc::from),
        ..peer(port, 1)
    };
    let primary = routes
        .iter()
        .map(|(port, route)| routed(*port, *route))
        .collect();
    let backup = backup
        .iter()
        .map(|(port, route)| routed(*port, Some(route)))
        .collect();
    Group::new("g".into(), primary, backup, balancer, None, false, None)
        .with_sticky(crate::sticky::Sticky::Route(Vec::new()))
}

fn port_of(group: &Group, selected: Selected) -> u16 {
    match group.peer(selected).expect("a member").address {
        PeerAddr::Inet(address) => address.port(),
        PeerAddr::Unix(_) => 0,
    }
}

fn bound(route: &[u8]) -> SelectKey<'_> {
    SelectKey {
        sticky: route,
        ..SelectKey::default()
    }
}

#[test]
fn sticky_requests_go_to_their_peer_with_every_balancer() {
    for balancer in [
        Balancer::RoundRobin,
        Balancer::LeastConn,
        Balancer::IpHash,
        Balancer::Hash {
            key: "k",
            consistent: true,
        },
        Balancer::Random { two: true },
    ] {
        let group = sticky_group(
            &[(1, Some("a")), (2, Some("b")), (3, Some("c"))],
            &[],
            balancer,
        );
        let now = Instant::now();
        for _ in 0..6 {
            let selected = pick(&group, &bound(b"b"), now).unwrap();
            assert_eq!(port_of(&group, selected), 2);
        }
        // An unknown route and no route are the balancer's.
        assert!(pick(&group, &bound(b"zzz"), now).is_some());
        assert_eq!(
            group
                .sticky_id(pick(&group, &bound(b"c"), now).unwrap())
                .as_deref(),
            Some("c")
        );
    }
}

#[test]
fn sticky_requests_leave_round_robin_as_it_was() {
    let group = sticky_group(
        &[(1, Some("a")), (2, Some("b")), (3, Some("c"))],
        &[],
        Balancer::RoundRobin,
    );
    let now = Instant::now();
    let mut order = Vec::new();
    for round in 0..6 {
        // Bound requests in between do not move the turn.
        for _ in 0..round {
            pick(&group, &bound(b"a"), now).unwrap();
        }
        order.push(port_of(
            &group,
            pick(&group, &SelectKey::default(), now).unwrap(),
        ));
    }
    assert_eq!(order, [1, 2, 3, 1, 2, 3]);
}

#[test]
fn a_bound_peer_that_cannot_take_the_request_falls_back_to_the_balancer() {
    let now = Instant::now();
    // Failed: max_fails=1 reached.
    let group = sticky_group(&[(1, Some("a")), (2, Some("b"))], &[], Balancer::RoundRobin);
    let mut tried = Tried::new(&group);
    let first = group.select(&mut tried, &bound(b"a"), now).unwrap();
    assert_eq!(port_of(&group, first), 1);
    group.release(first, true, now);
    assert_eq!(port_of(&group, pick(&group, &bound(b"a"), now).unwrap()), 2);
    // Already tried by this request: the next try goes elsewhere.
    let group = sticky_group(&[(1, Some("a")), (2, Some("b"))], &[], Balancer::LeastConn);
    let mut tried = Tried::new(&group);
    let first = group.select(&mut tried, &bound(b"a"), now).unwrap();
    group.release(first, false, now);
    let second = group.select(&mut tried, &bound(b"a"), now).unwrap();
    assert_eq!(port_of(&group, second), 2);
    // Full: max_conns=1 held by another request.
    let mut limited = peer(1, 1);
    limited.max_conns = 1;
    limited.route = Some("a".into());
    let group = Group::new(
        "g".into(),
        vec![limited, peer(2, 1)],
        vec![],
        Balancer::RoundRobin,
        None,
        false,
        None,
    )
    .with_sticky(crate::sticky::Sticky::Route(Vec::new()));
    let mut holder = Tried::new(&group);
    let held = group.select(&mut holder, &bound(b"a"), now).unwrap();
    assert_eq!(port_of(&group, held), 1);
    assert_eq!(port_of(&group, pick(&group, &bound(b"a"), now).unwrap()), 2);
    group.release(held, false, now);
    assert_eq!(port_of(&group, pick(&group, &bound(b"a"), now).unwrap()), 1);
    // Down.
    let mut down = peer(1, 1);
    down.down = true;
    down.route = Some("a".into());
    let group = Group::new(
        "g".into(),
        vec![down, peer(2, 1)],
        vec![],
        Balancer::RoundRobin,
        None,
        false,
        None,
    )
    .with_sticky(crate::sticky::Sticky::Route(Vec::new()));
    assert_eq!(port_of(&group, pick(&group, &bound(b"a"), now).unwrap()), 2);
}

#[test]
fn a_draining_peer_takes_only_bound_requests() {
    let mut draining = peer(1, 1);
    draining.drain = true;
    draining.route = Some("a".into());
    let group = Group::new(
        "g".into(),
        vec![draining, peer(2, 1), peer(3, 1)],
        vec![],
        Balancer::RoundRobin,
        None,
        false,
        None,
    )
    .with_sticky(crate::sticky::Sticky::Route(Vec::new()));
    let now = Instant::now();
    for _ in 0..6 {
        assert_ne!(
            port_of(&group, pick(&group, &SelectKey::default(), now).unwrap()),
            1
        );
        assert_eq!(port_of(&group, pick(&group, &bound(b"a"), now).unwrap()), 1);
    }
}

#[test]
fn a_bound_backup_is_reached_only_once_the_primaries_are_out() {
    let group = sticky_group(
        &[(1, None), (2, None)],
        &[(8, "x"), (9, "y")],
        Balancer::RoundRobin,
    );
    let now = Instant::now();
    // Live primaries: the route to a backup is not followed.
    for _ in 0..4 {
        assert!(!pick(&group, &bound(b"y"), now).unwrap().backup);
    }
    let mut tried = Tried::new(&group);
    for _ in 0..2 {
        let primary = group.select(&mut tried, &bound(b"y"), now).unwrap();
        group.release(primary, true, now);
    }
    let backup = group.select(&mut tried, &bound(b"y"), now).unwrap();
    assert!(backup.backup);
    assert_eq!(port_of(&group, backup), 9);
}

#[test]
fn resolved_members_are_named_for_sticky_as_they_change() {
    let group =
        resolving_group(Balancer::RoundRobin).with_sticky(crate::sticky::Sticky::Route(Vec::new()));
    group.update_resolved(0, vec![(peer(5, 1), false), (peer(2, 1), false)]);
    let id = crate::sticky::peer_id(&peer(2, 1));
    let now = Instant::now();
    for _ in 0..4 {
        let selected = pick(&group, &bound(id.as_bytes()), now).unwrap();
        assert_eq!(port_of(&group, selected), 2);
    }
    // The bound address leaves DNS: the balancer takes the request.
    group.update_resolved(0, vec![(peer(5, 1), false), (peer(3, 1), false)]);
    let selected = pick(&group, &bound(id.as_bytes()), now).unwrap();
    assert_ne!(port_of(&group, selected), 2);
}

/// `least_time last_byte`, two peers (the first with `fail_timeout` as given); `inflight`
/// as given.
fn least_time_group_with(inflight: bool, fail_timeout: Duration) -> Group {
    let mut first = peer(1, 1);
    first.fail_timeout = fail_timeout;
    group(
        vec![first, peer(2, 1)],
        vec![],
        Balancer::LeastTime {
            measure: crate::server_line::TimeMeasure::LastByte,
            inflight,
        },
    )
}

fn least_time_group(inflight: bool) -> Group {
    least_time_group_with(inflight, Duration::from_secs(10))
}

/// One request measured at `took`, ending at `now`.
fn timed(group: &Group, now: Instant, took: Duration) -> u16 {
    let selected = pick(group, &SelectKey::default(), now).unwrap();
    group.note_time(selected, took, now);
    port_of(group, selected)
}

#[test]
fn least_time_prefers_the_faster_peer_and_tries_a_slow_one_again_later() {
    // `fail_timeout=0`: the slow peer's average fades over 3 seconds.
    let group = least_time_group_with(false, Duration::ZERO);
    let start = Instant::now();
    // Unmeasured peers tie: round robin; the first is slow.
    assert_eq!(timed(&group, start, Duration::from_secs(4)), 1);
    let fast: Vec<u16> = (0..9)
        .map(|_| timed(&group, start, Duration::from_micros(300)))
        .collect();
    assert_eq!(fast, [2; 9]);
    // Two seconds on, the slow peer's average has not faded enough.
    let soon = start + Duration::from_secs(2);
    assert_eq!(timed(&group, soon, Duration::from_micros(300)), 2);
    // Past the fade the averages tie and the slow peer gets one try; the old average
    // still counts in the new one, so the fast peer has the rest.
    let later = soon + Duration::from_secs(4);
    let ports: Vec<u16> = (0..10)
        .map(|_| timed(&group, later, Duration::from_micros(300)))
        .collect();
    assert_eq!(
        ports.iter().filter(|port| **port == 1).count(),
        1,
        "{ports:?}"
    );
}

#[test]
fn least_time_fades_a_slow_average_over_the_peers_fail_timeout() {
    // The slow peer (1 s, default `fail_timeout` of 10 s) keeps losing to the fast one
    // 7 s later, when a 3 s fade would have let it tie; 10 s on, it gets a try.
    let group = least_time_group(false);
    let start = Instant::now();
    assert_eq!(timed(&group, start, Duration::from_secs(1)), 1);
    assert_eq!(timed(&group, start, Duration::from_micros(300)), 2);
    let later = start + Duration::from_secs(7);
    let ports: Vec<u16> = (0..10)
        .map(|_| timed(&group, later, Duration::from_micros(300)))
        .collect();
    assert_eq!(ports, [2; 10]);
    let faded = start + Duration::from_secs(10);
    let ports: Vec<u16> = (0..10)
        .map(|_| timed(&group, faded, Duration::from_micros(300)))
        .collect();
    assert!(ports.contains(&1), "{ports:?}");
}

#[test]
fn least_time_counts_requests_in_flight_and_with_inflight_their_age() {
    let now = Instant::now();
    // Without measures, a peer busy with a request loses to an idle one.
    let group = least_time_group(false);
    let mut tried = Tried::new(&group);
    let held = group
        .select(&mut tried, &SelectKey::default(), now)
        .unwrap();
    for _ in 0..3 {
        assert_ne!(pick(&group, &SelectKey::default(), now), Some(held));
    }
    // A peer whose request has been in flight for 2 s, unmeasured, against one measured
    // at 1 s and idle: only with inflight does the age of the request count.
    for inflight in [false, true] {
        let group = least_time_group(inflight);
        let mut first = Tried::new(&group);
        let stuck = group
            .select(&mut first, &SelectKey::default(), now)
            .unwrap();
        let other = pick(&group, &SelectKey::default(), now).unwrap();
        assert_ne!(stuck, other);
        group.note_time(other, Duration::from_secs(1), now);
        let later = now + Duration::from_secs(2);
        let chosen = pick(&group, &SelectKey::default(), later).unwrap();
        assert_eq!(chosen == other, inflight, "inflight {inflight}");
        group.release(stuck, false, later);
    }
}

#[test]
fn a_learned_session_lives_on_while_it_chooses_a_peer_that_does_not_drain() {
    let sessions = std::sync::Arc::new(crate::sticky::Sessions::new(
        "z".into(),
        1 << 20,
        Duration::from_secs(2),
    ));
    let mut draining = peer(3, 1);
    draining.drain = true;
    let group = Group::new(
        "g".into(),
        vec![peer(1, 1), peer(2, 1), draining.clone()],
        vec![],
        Balancer::RoundRobin,
        None,
        false,
        None,
    )
    .with_sticky(crate::sticky::Sticky::Learn(crate::sticky::LearnConf {
        create: "c",
        lookup: "l",
        header: false,
        sessions: std::sync::Arc::clone(&sessions),
    }));
    let start = Instant::now();
    let (two, three) = (
        crate::sticky::peer_id(&peer(2, 1)),
        crate::sticky::peer_id(&draining),
    );
    sessions.learn(b"live", std::sync::Arc::clone(&two), start);
    sessions.learn(b"drained", std::sync::Arc::clone(&three), start);
    let used = start + Duration::from_millis(1500);
    for (session, id) in [(&b"live"[..], &two), (b"drained", &three)] {
        let key = SelectKey {
            sticky: id.as_bytes(),
            session,
            ..SelectKey::default()
        };
        let selected = pick(&group, &key, used).unwrap();
        assert_eq!(group.sticky_id(selected).as_deref(), Some(&**id));
    }
    // Renewed at 1.5 s, the first lives past 2 s; the draining peer's runs out.
    let later = start + Duration::from_millis(2500);
    assert!(sessions.lookup(b"live", later).is_some());
    assert!(sessions.lookup(b"drained", later).is_none());
}
