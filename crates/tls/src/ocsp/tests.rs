use super::*;

#[test]
fn generalized_times_are_read() {
    let at = time(b"20261130041500Z").expect("a time");
    assert_eq!(
        at.duration_since(UNIX_EPOCH).expect("after 1970").as_secs(),
        1_796_012_100
    );
    assert_eq!(
        time(b"19700101000000Z"),
        Some(UNIX_EPOCH),
        "the epoch itself"
    );
    assert_eq!(time(b"20261330000000Z"), None, "month 13");
    assert_eq!(time(b"20261130041500"), None, "no Z");
    assert_eq!(time(b"2026"), None, "cut short");
}

#[test]
fn der_values_are_written_with_short_and_long_lengths() {
    assert_eq!(der(0x04, &[vec![1, 2]]), [0x04, 0x02, 1, 2]);
    let long = der(0x04, &[vec![7; 300]]);
    assert_eq!(&long[..4], &[0x04, 0x82, 0x01, 0x2c]);
    let mut reader = Reader::new(&long);
    assert_eq!(reader.expect(0x04).map(<[u8]>::len), Some(300));
    assert!(reader.any().is_none(), "nothing after it");
}

#[test]
fn every_cut_of_a_response_is_refused_without_a_panic() {
    // A successful basic response's outer layers around an empty BasicOCSPResponse.
    let basic = der(0x30, &[]);
    let bytes = der(
        0x30,
        &[der(0x06, &[OID_OCSP_BASIC.to_vec()]), der(0x04, &[basic])],
    );
    let response = der(0x30, &[der(0x0a, &[vec![0]]), der(0xa0, &[bytes])]);
    let query = OcspQuery {
        request: Vec::new(),
        responder: String::new(),
        name_hash: vec![1; 20],
        key_hash: vec![2; 20],
        serial: vec![3],
        issuer: Vec::new(),
    };
    for end in 0..=response.len() {
        let checked = check(&query, &response[..end], false, SystemTime::now());
        assert!(checked.is_err(), "cut at {end}");
    }
    let try_later = der(0x30, &[der(0x0a, &[vec![3]])]);
    assert_eq!(
        check(&query, &try_later, false, SystemTime::now()),
        Err("OCSP response not successful (3: trylater)".to_owned())
    );
}

#[test]
fn the_request_goes_in_a_get_path_base64_and_escaped() {
    let query = |request: Vec<u8>| OcspQuery {
        request,
        responder: String::new(),
        name_hash: Vec::new(),
        key_hash: Vec::new(),
        serial: Vec::new(),
        issuer: Vec::new(),
    };
    assert_eq!(query(vec![0xfb, 0xff, 0xfe]).path_segment(), "%2B%2F%2F%2B");
    assert_eq!(query(b"a".to_vec()).path_segment(), "YQ%3D%3D");
}
