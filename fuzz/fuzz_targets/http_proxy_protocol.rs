//! A PROXY protocol header (v1 text or v2 binary) and what follows it. No panic; a whole
//! header lies inside the input and within nginx's limit; every shorter prefix of it asks
//! for more bytes; judging the input as final changes nothing about a whole header; TLV
//! lookups by every kind of name stay inside the header.
#![no_main]

use libfuzzer_sys::fuzz_target;
use portico_shared::proxy_protocol::{MAX_HEADER, Parsed, TlvName, parse};

fuzz_target!(|data: &[u8]| {
    let Parsed::Done { len, header } = parse(data, false) else {
        // Judged as final, the bytes give a header or a refusal, never a wait.
        assert!(!matches!(parse(data, true), Parsed::Incomplete));
        return;
    };
    assert!(len <= data.len() && len <= MAX_HEADER);
    assert_eq!(
        parse(data, true),
        Parsed::Done {
            len,
            header: header.clone()
        }
    );
    for end in 0..len {
        assert_eq!(parse(&data[..end], false), Parsed::Incomplete, "prefix {end}");
    }
    if let Some(header) = header {
        for name in ["alpn", "ssl", "ssl_verify", "ssl_cn", "0x0", "0xff", "ssl_0x22"] {
            let mut out = Vec::new();
            if let Some(name) = TlvName::parse(name) {
                name.find(&header.tlvs, &mut out);
            }
            // A value, or the verify field in decimal.
            assert!(out.len() <= header.tlvs.len().max(10));
        }
    }
});
