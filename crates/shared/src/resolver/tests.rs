//! The resolver against a scripted name server: what it must take, what it must ignore,
//! and how it gets through servers that are down, slow, or lying.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::{Duration, Instant};

use super::fake::{Action, Fake, FakeDns, Proto, answer, question_of};
use super::wire::{TYPE_A, TYPE_SRV};
use super::*;

fn conf(servers: &[SocketAddr]) -> ResolverConf {
    ResolverConf {
        servers: servers.to_vec(),
        valid: None,
        ipv4: true,
        ipv6: false,
        state: Default::default(),
    }
}

fn run<T>(future: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(future)
}

fn ip(last: u8) -> Ipv4Addr {
    Ipv4Addr::new(10, 0, 0, last)
}

/// A port nothing listens on (UDP there gets ICMP port unreachable).
fn dead_port() -> SocketAddr {
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind");
    socket.local_addr().expect("address")
}

#[test]
fn an_answer_is_cached_for_its_ttl_and_a_ttl_of_0_is_not_cached() {
    let dns = FakeDns::start(|query, _| {
        let ttl = if question_of(query).name.starts_with("zero") {
            0
        } else {
            60
        };
        let name: &'static str = if ttl == 0 { "zero.test" } else { "cached.test" };
        vec![Action::Send(answer(
            query,
            0,
            false,
            &[Fake::A(name, ttl, ip(1))],
            &[],
        ))]
    });
    let conf = conf(&[dns.address]);
    let mut notes = Vec::new();
    run(async {
        for _ in 0..3 {
            let found = resolve(&conf, Duration::from_secs(2), "Cached.Test", &mut notes).await;
            assert_eq!(found, Ok(vec![IpAddr::from(ip(1))]));
        }
        assert_eq!(dns.questions(), 1, "answers are cached for their TTL");
        for _ in 0..3 {
            let found = resolve(&conf, Duration::from_secs(2), "zero.test", &mut notes).await;
            assert_eq!(found, Ok(vec![IpAddr::from(ip(1))]));
        }
        assert_eq!(dns.questions(), 4, "a TTL of 0 is asked every time");
    });
    assert!(notes.is_empty(), "{notes:?}");
}

#[test]
fn a_truncated_answer_is_asked_again_over_tcp_and_hundreds_of_addresses_come_back() {
    let dns = FakeDns::start(|query, proto| {
        let records: Vec<Fake> = (0..300u16)
            .map(|n| {
                Fake::A(
                    "many.test",
                    30,
                    Ipv4Addr::new(10, 1, (n >> 8) as u8, n as u8),
                )
            })
            .collect();
        let reply = match proto {
            Proto::Udp => answer(query, 0, true, &records[..20], &[]),
            Proto::Tcp => answer(query, 0, false, &records, &[]),
        };
        vec![Action::Send(reply)]
    });
    let mut notes = Vec::new();
    let found = run(lookup(
        &conf(&[dns.address]),
        Duration::from_secs(2),
        "many.test",
        &mut notes,
    ))
    .expect("resolved");
    assert_eq!(found.addresses.len(), 300);
    assert_eq!(
        found.addresses[299],
        IpAddr::from(Ipv4Addr::new(10, 1, 1, 43))
    );
    assert_eq!(found.valid, Duration::from_secs(30));
    let asked = dns.asked.lock().expect("lock").clone();
    assert_eq!(
        asked.iter().map(|(_, proto)| *proto).collect::<Vec<_>>(),
        vec![Proto::Udp, Proto::Tcp]
    );
    assert!(
        matches!(notes.as_slice(), [Note::Truncated { .. }]),
        "{notes:?}"
    );
}

#[test]
fn cname_chains_are_followed_in_the_answer_and_by_asking_again() {
    let dns = FakeDns::start(|query, _| {
        let question = question_of(query);
        let reply = match question.name.as_str() {
            "www.test" => answer(
                query,
                0,
                false,
                &[
                    Fake::Cname("www.test", 100, "edge.test"),
                    Fake::Cname("edge.test", 40, "host.test"),
                    Fake::A("host.test", 70, ip(7)),
                    Fake::A("unrelated.test", 70, ip(99)),
                ],
                &[],
            ),
            "alias.test" => answer(
                query,
                0,
                false,
                &[Fake::Cname("alias.test", 20, "far.test")],
                &[],
            ),
            "far.test" => answer(query, 0, false, &[Fake::A("far.test", 50, ip(8))], &[]),
            "loop.test" => answer(
                query,
                0,
                false,
                &[Fake::Cname("loop.test", 5, "loop.test")],
                &[],
            ),
            _ => answer(query, 3, false, &[], &[]),
        };
        vec![Action::Send(reply)]
    });
    let conf = conf(&[dns.address]);
    let mut notes = Vec::new();
    run(async {
        let found = lookup(&conf, Duration::from_secs(2), "www.test", &mut notes).await;
        assert_eq!(
            found,
            Ok(Addresses {
                addresses: vec![IpAddr::from(ip(7))],
                valid: Duration::from_secs(40)
            })
        );
        let found = lookup(&conf, Duration::from_secs(2), "alias.test", &mut notes).await;
        assert_eq!(
            found.expect("resolved").addresses,
            vec![IpAddr::from(ip(8))]
        );
        let found = lookup(&conf, Duration::from_secs(2), "loop.test", &mut notes).await;
        assert_eq!(found, Err(ResolveError::NOT_FOUND));
    });
    assert_eq!(dns.questions(), 1 + 2 + 1);
}

#[test]
fn forged_ids_and_other_questions_are_ignored_and_noted() {
    let dns = FakeDns::start(|query, _| {
        let mut forged = answer(query, 0, false, &[Fake::A("real.test", 60, ip(66))], &[]);
        forged[0] ^= 0x55;
        let other_name = {
            let mut other = query.to_vec();
            // Same id, another name of the same length.
            other[13] = b'f';
            answer(&other, 0, false, &[Fake::A("feal.test", 60, ip(67))], &[])
        };
        let other_type = {
            let mut other = query.to_vec();
            let at = other.len() - 3;
            other[at] = 28;
            answer(&other, 0, false, &[], &[])
        };
        let mut not_response = answer(query, 0, false, &[Fake::A("real.test", 60, ip(68))], &[]);
        not_response[2] &= 0x7f;
        vec![
            Action::Send(forged),
            Action::Send(other_name),
            Action::Send(other_type),
            Action::Send(not_response),
            Action::Send(vec![0, 1, 2]),
            Action::Send(answer(
                query,
                0,
                false,
                &[Fake::A("real.test", 60, ip(1))],
                &[],
            )),
        ]
    });
    let mut notes = Vec::new();
    let found = run(lookup(
        &conf(&[dns.address]),
        Duration::from_secs(2),
        "real.test",
        &mut notes,
    ));
    assert_eq!(
        found.expect("resolved").addresses,
        vec![IpAddr::from(ip(1))]
    );
    assert!(matches!(notes[0], Note::WrongId { .. }), "{notes:?}");
    assert!(matches!(notes[1], Note::WrongQuestion { .. }), "{notes:?}");
    assert!(matches!(notes[2], Note::WrongQuestion { .. }), "{notes:?}");
    assert!(matches!(notes[3], Note::WrongQuestion { .. }), "{notes:?}");
    assert!(matches!(notes[4], Note::Malformed { .. }), "{notes:?}");
    assert_eq!(notes.len(), 5);
    assert!(
        notes[0].to_string().starts_with("wrong ident "),
        "{}",
        notes[0]
    );
}

#[test]
fn nxdomain_and_server_errors_are_nginx_s_errors() {
    let dns = FakeDns::start(|query, _| {
        let rcode = if question_of(query).name == "gone.test" {
            3
        } else {
            5
        };
        vec![Action::Send(answer(query, rcode, false, &[], &[]))]
    });
    let conf = conf(&[dns.address]);
    let mut notes = Vec::new();
    run(async {
        let found = lookup(&conf, Duration::from_secs(2), "gone.test", &mut notes).await;
        assert_eq!(
            found.map_err(|error| error.to_string()),
            Err("3: Host not found".into())
        );
        let found = lookup(&conf, Duration::from_secs(2), "refused.test", &mut notes).await;
        assert_eq!(
            found.map_err(|error| error.to_string()),
            Err("5: Operation refused".into())
        );
    });
    // An empty NOERROR answer is no address either.
    let empty = FakeDns::start(|query, _| vec![Action::Send(answer(query, 0, false, &[], &[]))]);
    let found = run(lookup(
        &conf_of(empty.address),
        Duration::from_secs(2),
        "x.test",
        &mut notes,
    ));
    assert_eq!(found, Err(ResolveError::NOT_FOUND));
}

fn conf_of(server: SocketAddr) -> ResolverConf {
    conf(&[server])
}

#[test]
fn a_dead_server_is_passed_over_at_once_and_a_slow_one_after_its_share_of_the_timeout() {
    let good = FakeDns::start(|query, _| {
        vec![Action::Send(answer(
            query,
            0,
            false,
            &[Fake::A("up.test", 60, ip(3))],
            &[],
        ))]
    });
    let silent = FakeDns::start(|_, _| vec![Action::Sleep(Duration::from_secs(10))]);
    let mut notes = Vec::new();
    run(async {
        // Questions take the servers in turn: both orders are tried.
        let dead_first = conf(&[dead_port(), good.address]);
        for _ in 0..2 {
            let started = Instant::now();
            let conf = &dead_first;
            let found = lookup(conf, Duration::from_secs(5), "up.test", &mut notes).await;
            assert_eq!(
                found.expect("resolved").addresses,
                vec![IpAddr::from(ip(3))]
            );
            assert!(
                started.elapsed() < Duration::from_secs(1),
                "{:?}",
                started.elapsed()
            );
        }
        let started = Instant::now();
        let conf = conf(&[silent.address, good.address]);
        for _ in 0..2 {
            let found = lookup(&conf, Duration::from_secs(1), "up.test", &mut notes).await;
            assert_eq!(
                found.expect("resolved").addresses,
                vec![IpAddr::from(ip(3))]
            );
        }
        assert!(
            started.elapsed() < Duration::from_millis(1500),
            "{:?}",
            started.elapsed()
        );
        let started = Instant::now();
        let found = lookup(
            &conf_of(silent.address),
            Duration::from_millis(600),
            "up.test",
            &mut notes,
        )
        .await;
        assert_eq!(found, Err(ResolveError::TIMED_OUT));
        let took = started.elapsed();
        assert!(
            took >= Duration::from_millis(550) && took < Duration::from_secs(2),
            "{took:?}"
        );
    });
    assert!(
        notes
            .iter()
            .any(|note| matches!(note, Note::Unreachable { .. })),
        "{notes:?}"
    );
    assert!(
        notes
            .iter()
            .any(|note| matches!(note, Note::TimedOut { .. })),
        "{notes:?}"
    );
}

#[test]
fn srv_records_give_ports_weights_and_their_targets_addresses() {
    let dns = FakeDns::start(|query, _| {
        let question = question_of(query);
        let reply = match (question.name.as_str(), question.kind) {
            ("_http._tcp.svc.test", TYPE_SRV) => answer(
                query,
                0,
                false,
                &[
                    Fake::Srv("_http._tcp.svc.test", 90, [10, 5, 8081], "a.svc.test"),
                    Fake::Srv("_http._tcp.svc.test", 90, [20, 1, 8082], "b.svc.test"),
                    Fake::Srv("_http._tcp.svc.test", 90, [10, 2, 8083], "gone.svc.test"),
                ],
                &[Fake::A("a.svc.test", 30, ip(1))],
            ),
            ("b.svc.test", TYPE_A) => {
                answer(query, 0, false, &[Fake::A("b.svc.test", 45, ip(2))], &[])
            }
            _ => answer(query, 3, false, &[], &[]),
        };
        vec![Action::Send(reply)]
    });
    let mut notes = Vec::new();
    let mut failed = Vec::new();
    let found = run(lookup_services(
        &conf(&[dns.address]),
        Duration::from_secs(2),
        "_http._tcp.svc.test",
        &mut notes,
        &mut failed,
    ))
    .expect("resolved");
    assert_eq!(found.valid, Duration::from_secs(30));
    let summary: Vec<_> = found
        .services
        .iter()
        .map(|service| {
            (
                service.priority,
                service.weight,
                service.port,
                service.addresses.clone(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            (10, 5, 8081, vec![IpAddr::from(ip(1))]),
            (20, 1, 8082, vec![IpAddr::from(ip(2))])
        ]
    );
    assert_eq!(
        failed,
        vec![("gone.svc.test".to_owned(), ResolveError::NOT_FOUND)]
    );
    let asked = dns.asked.lock().expect("lock").clone();
    assert!(
        asked
            .iter()
            .all(|(question, _)| question.name != "a.svc.test"),
        "{asked:?}"
    );
    assert!(asked.iter().any(|(question, _)| question.kind == TYPE_A));
}

#[test]
fn one_failed_question_fails_the_lookup_and_both_go_to_the_same_server_first() {
    use super::wire::TYPE_AAAA;
    let dns = FakeDns::start(|query, _| {
        let question = question_of(query);
        let reply = match (question.name.as_str(), question.kind) {
            (_, TYPE_A) => answer(query, 0, false, &[Fake::A("half.test", 60, ip(1))], &[]),
            ("half.test", TYPE_AAAA) => answer(query, 2, false, &[], &[]),
            _ => answer(query, 0, false, &[], &[]),
        };
        vec![Action::Send(reply)]
    });
    let other = FakeDns::start(|query, _| {
        let reply = match question_of(query).kind {
            TYPE_A => answer(query, 0, false, &[Fake::A("v4only.test", 60, ip(2))], &[]),
            _ => answer(query, 0, false, &[], &[]),
        };
        vec![Action::Send(reply)]
    });
    let conf = ResolverConf {
        ipv6: true,
        ..conf(&[dns.address, other.address])
    };
    let mut notes = Vec::new();
    run(async {
        let found = lookup(&conf, Duration::from_secs(2), "half.test", &mut notes).await;
        assert_eq!(found, Err(ResolveError::from_rcode(2)));
        // No AAAA record at all is no failure: the A records stand.
        let found = lookup(&conf, Duration::from_secs(2), "v4only.test", &mut notes).await;
        assert_eq!(
            found.expect("resolved").addresses,
            vec![IpAddr::from(ip(2))]
        );
    });
    assert_eq!(
        dns.questions(),
        2,
        "both questions of the first lookup went to it"
    );
    assert_eq!(
        other.questions(),
        2,
        "both of the second went to the other first"
    );
}

#[test]
fn a_server_that_takes_tcp_and_never_answers_is_passed_over_after_its_share() {
    // Truncates over UDP, accepts TCP connections and says nothing on them.
    let mute_tcp = FakeDns::start(|query, proto| match proto {
        Proto::Udp => vec![Action::Send(answer(query, 0, true, &[], &[]))],
        Proto::Tcp => vec![Action::Sleep(Duration::from_secs(10))],
    });
    let good = FakeDns::start(|query, _| {
        vec![Action::Send(answer(
            query,
            0,
            false,
            &[Fake::A("tcp.test", 60, ip(5))],
            &[],
        ))]
    });
    let conf = conf(&[mute_tcp.address, good.address]);
    let mut notes = Vec::new();
    run(async {
        let started = Instant::now();
        let found = lookup(&conf, Duration::from_secs(4), "tcp.test", &mut notes).await;
        assert_eq!(
            found.expect("resolved by the second server").addresses,
            vec![IpAddr::from(ip(5))]
        );
        // Each server's share is 2 s of the 4: the mute TCP exchange ends at its share.
        let took = started.elapsed();
        assert!(
            took >= Duration::from_millis(1900) && took < Duration::from_secs(3),
            "{took:?}"
        );
    });
    assert!(
        notes
            .iter()
            .any(|note| matches!(note, Note::TimedOut { server } if *server == mute_tcp.address)),
        "{notes:?}"
    );
}

#[test]
fn with_both_types_asked_the_aaaa_answer_decides_where_a_cname_leads() {
    let dns = FakeDns::start(|query, _| {
        let question = question_of(query);
        let a = question.kind == TYPE_A;
        let records: Vec<Fake> = match (question.name.as_str(), a) {
            // A: a bare CNAME; AAAA: nothing. Nothing is found.
            ("c-z.test", true) => vec![Fake::Cname("c-z.test", 60, "alias.test")],
            ("c-z.test", false) => vec![],
            // Both bare CNAMEs to different names: AAAA's is followed.
            ("c1-c2.test", true) => vec![Fake::Cname("c1-c2.test", 60, "four.test")],
            ("c1-c2.test", false) => vec![Fake::Cname("c1-c2.test", 60, "six.test")],
            // A: nothing; AAAA: a CNAME. The whole lookup moves to its target.
            ("z-c.test", true) => vec![],
            ("z-c.test", false) => vec![Fake::Cname("z-c.test", 60, "alias.test")],
            ("alias.test", true) => vec![Fake::A("alias.test", 60, ip(1))],
            ("alias.test", false) => vec![Fake::Aaaa("alias.test", 60, Ipv6Addr::LOCALHOST)],
            ("four.test", true) => vec![Fake::A("four.test", 60, ip(4))],
            ("six.test", false) => vec![Fake::Aaaa("six.test", 60, Ipv6Addr::LOCALHOST)],
            _ => vec![],
        };
        vec![Action::Send(answer(query, 0, false, &records, &[]))]
    });
    let conf = ResolverConf {
        ipv6: true,
        ..conf(&[dns.address])
    };
    let mut notes = Vec::new();
    run(async {
        let found = lookup(&conf, Duration::from_secs(2), "c-z.test", &mut notes).await;
        assert_eq!(found, Err(ResolveError::NOT_FOUND));
        let found = lookup(&conf, Duration::from_secs(2), "c1-c2.test", &mut notes).await;
        assert_eq!(
            found.expect("six.test").addresses,
            vec![IpAddr::from(Ipv6Addr::LOCALHOST)]
        );
        let found = lookup(&conf, Duration::from_secs(2), "z-c.test", &mut notes).await;
        assert_eq!(
            found.expect("alias.test").addresses,
            vec![IpAddr::from(ip(1)), IpAddr::from(Ipv6Addr::LOCALHOST)]
        );
    });
}

#[test]
fn a_status_zone_counts_lookups_and_answers_by_code() {
    let dns = FakeDns::start(|query, _| {
        let question = question_of(query);
        let reply = match question.name.as_str() {
            "ok.test" => answer(query, 0, false, &[Fake::A("ok.test", 60, ip(1))], &[]),
            "gone.test" => answer(query, 3, false, &[], &[]),
            "broken.test" => answer(query, 2, false, &[], &[]),
            "odd.test" => answer(query, 9, false, &[], &[]),
            _ => return vec![Action::Sleep(Duration::from_secs(5))],
        };
        vec![Action::Send(reply)]
    });
    let directive = conf::Directive {
        name: "resolver".to_owned(),
        args: [
            dns.address.to_string(),
            "ipv6=off".to_owned(),
            "status_zone=tests-resolver-zone".to_owned(),
        ]
        .into_iter()
        .map(|value| conf::Argument {
            value,
            quoted: false,
        })
        .collect(),
        block: None,
        span: conf::Span::CommandLine,
    };
    let conf = parse(&directive).expect("parsed");
    let mut notes = Vec::new();
    run(async {
        for name in [
            "ok.test",
            "gone.test",
            "broken.test",
            "odd.test",
            "silent.test",
        ] {
            let _ = lookup(&conf, Duration::from_millis(400), name, &mut notes).await;
        }
    });
    let (_, counted) = zone::zones()
        .into_iter()
        .find(|(name, _)| name == "tests-resolver-zone")
        .expect("the zone is listed");
    assert_eq!(
        counted,
        zone::ZoneSnapshot {
            name: 5,
            noerror: 1,
            nxdomain: 1,
            servfail: 1,
            unknown: 1,
            timedout: 1,
            ..Default::default()
        }
    );
    // Named again (a reload), the zone goes on counting.
    let again = parse(&directive).expect("parsed");
    assert!(Arc::ptr_eq(
        again.state.zone.as_ref().expect("zone"),
        conf.state.zone.as_ref().expect("zone")
    ));
}
