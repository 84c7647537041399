use super::*;

fn v2(family: u8, body: &[u8]) -> Vec<u8> {
    let mut header = V2_SIGNATURE.to_vec();
    header.push(0x21);
    header.push(family);
    header.extend_from_slice(&(body.len() as u16).to_be_bytes());
    header.extend_from_slice(body);
    header
}

fn done(buf: &[u8]) -> (usize, Option<ProxyHeader>) {
    match parse(buf, false) {
        Parsed::Done { len, header } => (len, header),
        other => panic!("{other:?}"),
    }
}

#[test]
fn v1_tcp4_and_tcp6() {
    let line = b"PROXY TCP4 192.0.2.1 192.0.2.2 123 5678\r\nGET /";
    let (len, header) = done(line);
    assert_eq!(len, line.len() - 5);
    let header = header.unwrap();
    assert_eq!(&*header.source_addr, b"192.0.2.1");
    assert_eq!((header.source_port, header.destination_port), (123, 5678));
    assert_eq!(&*header.destination_addr, b"192.0.2.2");
    let (_, header) = done(b"PROXY TCP6 2001:Db8::1 2001:Db8::2 123 5678\r\n");
    assert_eq!(&*header.unwrap().source_addr, b"2001:Db8::1");
}

#[test]
fn v1_unknown_has_no_addresses() {
    assert_eq!(done(b"PROXY UNKNOWN\r\n"), (15, None));
    assert_eq!(done(b"PROXY UNKNOWN 1 2 3 4 5 6\r\n").1, None);
}

#[test]
fn v1_every_prefix_is_incomplete_until_the_line_ends() {
    let line = b"PROXY TCP4 192.0.2.1 192.0.2.2 123 5678\r\n";
    for end in 0..line.len() {
        assert_eq!(parse(&line[..end], false), Parsed::Incomplete, "{end}");
    }
    assert!(matches!(parse(line, false), Parsed::Done { .. }));
}

#[test]
fn v1_broken_lines() {
    let broken = |text: &[u8]| match parse(text, false) {
        Parsed::Invalid(broken) => broken.to_string(),
        other => panic!("{other:?}"),
    };
    assert_eq!(
        broken(b"GET / HTTP/1.0\r\n"),
        "broken header: \"GET / HTTP/1.0\""
    );
    assert_eq!(
        broken(b"PROXY TCP4 192.0.2.1 192.0.2.2 123 70000\r\n"),
        "broken header: \"PROXY TCP4 192.0.2.1 192.0.2.2 123 70000\""
    );
    assert!(broken(b"PROXY TCP5 1.1.1.1 1.1.1.1 1 1\r\n").starts_with("broken header"));
    assert!(broken(b"PROXY TCP4 1.1.1.x 1.1.1.1 1 1\r\n").starts_with("broken header"));
    assert!(broken(b"PROXY TCP4 1.1.1.1 1.1.1.1 1\r\n").starts_with("broken header"));
    assert!(broken(b"PROXY TCP4 1.1.1.1 1.1.1.1 1 1\n").starts_with("broken header"));
    // No LF within the protocol's 107 bytes.
    assert!(broken(&[b"PROXY ".as_slice(), &[b'1'; 120]].concat()).starts_with("broken"));
    // A partial line the client stopped sending is judged as it is.
    assert!(matches!(parse(b"PROXY TCP4 1.1", true), Parsed::Invalid(_)));
}

#[test]
fn v2_inet_inet6_and_tlvs() {
    let mut body = vec![192, 0, 2, 1, 192, 0, 2, 2, 0, 123, 0x16, 0x2e];
    let (len, header) = done(&v2(0x11, &body));
    assert_eq!(len, 28);
    let header = header.unwrap();
    assert_eq!(&*header.source_addr, b"192.0.2.1");
    assert_eq!((header.source_port, header.destination_port), (123, 5678));
    body.extend_from_slice(&[0x01, 0, 3, b'h', b'2', b'x']);
    let header = done(&v2(0x11, &body)).1.unwrap();
    let mut out = Vec::new();
    TlvName::parse("alpn").unwrap().find(&header.tlvs, &mut out);
    assert_eq!(out, b"h2x");
    let mut six = [0u8; 36];
    six[..4].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
    six[15] = 1;
    six[32..34].copy_from_slice(&[0, 123]);
    let header = done(&v2(0x21, &six)).1.unwrap();
    assert_eq!(&*header.source_addr, b"2001:db8::1");
}

#[test]
fn v2_local_unspec_and_unknown_family_keep_the_socket_addresses() {
    let mut local = v2(0x00, &[]);
    local[12] = 0x20;
    assert_eq!(done(&local), (16, None));
    assert_eq!(done(&v2(0x01, &[])), (16, None));
    assert_eq!(done(&v2(0x41, &[1, 2, 3, 4])), (20, None));
}

#[test]
fn v2_truncated_too_large_and_bad_version() {
    let whole = v2(0x11, &[192, 0, 2, 1, 192, 0, 2, 2, 0, 123, 0x16, 0x2e]);
    for end in 1..whole.len() {
        assert_eq!(parse(&whole[..end], false), Parsed::Incomplete, "{end}");
        assert!(
            matches!(parse(&whole[..end], true), Parsed::Invalid(_)),
            "{end}"
        );
    }
    let mut large = v2(0x11, &[]);
    large[14..16].copy_from_slice(&5000u16.to_be_bytes());
    assert_eq!(parse(&large, false), Parsed::Invalid(Broken::TooLarge));
    let mut version = whole.clone();
    version[12] = 0x11;
    assert_eq!(parse(&version, false), Parsed::Invalid(Broken::Version(1)));
    assert_eq!(
        Broken::Version(1).to_string(),
        "unknown PROXY protocol version: 1"
    );
    assert_eq!(
        parse(&v2(0x11, &[1, 2, 3]), false),
        Parsed::Invalid(Broken::Addresses)
    );
}

#[test]
fn tlv_names() {
    assert_eq!(TlvName::parse("0x000ae"), Some(TlvName::Top(0xae)));
    assert_eq!(TlvName::parse("0x3"), Some(TlvName::Top(3)));
    assert_eq!(TlvName::parse("ssl_0x21"), Some(TlvName::Ssl(0x21)));
    assert_eq!(TlvName::parse("0x100"), None);
    assert_eq!(TlvName::parse("nonsense"), None);
    // SSL: client byte, verify (4 bytes), then sub-TLVs.
    let mut ssl = vec![0x01, 0, 0, 0, 255, 0x21, 0, 3, b'v', b'1', b'2'];
    let mut tlvs = vec![0x20, 0, ssl.len() as u8];
    tlvs.append(&mut ssl);
    let mut out = Vec::new();
    TlvName::SslVerify.find(&tlvs, &mut out);
    assert_eq!(out, b"255");
    out.clear();
    TlvName::parse("ssl_version").unwrap().find(&tlvs, &mut out);
    assert_eq!(out, b"v12");
    out.clear();
    TlvName::Top(0x05).find(&tlvs, &mut out);
    assert!(out.is_empty());
}

/// The fuzz target's properties (`fuzz/fuzz_targets/http_proxy_protocol.rs`) over seeded
/// mutations of valid headers: a failure prints its seed and case.
#[test]
fn mutated_headers_keep_the_parser_properties() {
    let seeds: Vec<Vec<u8>> = vec![
        b"PROXY TCP4 192.0.2.1 192.0.2.2 123 5678\r\nGET /".to_vec(),
        b"PROXY UNKNOWN\r\n".to_vec(),
        v2(
            0x11,
            &[
                192, 0, 2, 1, 192, 0, 2, 2, 0, 123, 0x16, 0x2e, 0x01, 0, 2, b'h', b'2',
            ],
        ),
        v2(0x21, &[0; 36]),
    ];
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for case in 0..4000 {
        let mut data = seeds[case % seeds.len()].clone();
        for _ in 0..(next() % 3) {
            let at = (next() as usize) % data.len();
            data[at] = next() as u8;
        }
        data.truncate(data.len() - (next() as usize % 4).min(data.len()));
        let Parsed::Done { len, header } = parse(&data, false) else {
            assert!(
                !matches!(parse(&data, true), Parsed::Incomplete),
                "case {case}"
            );
            continue;
        };
        assert!(len <= data.len() && len <= MAX_HEADER, "case {case}");
        assert_eq!(
            parse(&data, true),
            Parsed::Done {
                len,
                header: header.clone()
            },
            "case {case}"
        );
        for end in 0..len {
            assert_eq!(
                parse(&data[..end], false),
                Parsed::Incomplete,
                "case {case}, {end}"
            );
        }
        if let Some(header) = header {
            for name in [
                "alpn",
                "ssl",
                "ssl_verify",
                "ssl_cn",
                "0x0",
                "0xff",
                "ssl_0x22",
            ] {
                let mut out = Vec::new();
                TlvName::parse(name).unwrap().find(&header.tlvs, &mut out);
                assert!(out.len() <= header.tlvs.len().max(10), "case {case}");
            }
        }
    }
}
