use super::*;

const ID: [u8; 16] = [
    127, 0, 0, 1, 0x69, 0x2b, 0x1c, 0x00, 0x5c, 0x12, 0x34, 0x01, 0x03, 0x03, 0x03, 0x02,
];

#[test]
fn cookie_values_are_base64_with_the_mark() {
    let plain = cookie_text(&ID, None);
    assert_eq!(plain.len(), 24);
    assert!(plain.ends_with("=="), "{plain}");
    assert_eq!(decode_cookie(plain.as_bytes()), Some(ID));
    let marked = cookie_text(&ID, Some(b't'));
    assert!(marked.ends_with("t="), "{marked}");
    // The mark is past the 22 characters that are read back.
    assert_eq!(decode_cookie(marked.as_bytes()), Some(ID));
}

#[test]
fn cookies_that_hold_no_identifier() {
    assert_eq!(decode_cookie(b"short"), None);
    assert_eq!(decode_cookie(b"!!!!!!!!!!!!!!!!!!!!!!=="), None);
    let zero_sequence = cookie_text(
        &[1; 12]
            .iter()
            .chain(&[0; 4])
            .copied()
            .collect::<Vec<_>>()
            .try_into()
            .unwrap(),
        None,
    );
    assert_eq!(decode_cookie(zero_sequence.as_bytes()), None);
}

#[test]
fn words_print_as_nginx_prints_them_on_little_endian_machines() {
    assert_eq!(hex_words(&ID), "0100007F001C2B690134125C02030303");
}

#[test]
fn cookie_dates_have_two_digit_years_until_2037() {
    assert_eq!(cookie_time(0), "Thu, 01-Jan-70 00:00:00 GMT");
    assert_eq!(cookie_time(2_145_916_555), "Thu, 31-Dec-37 23:55:55 GMT");
    assert_eq!(cookie_time(2_208_988_800), "Sun, 01-Jan-2040 00:00:00 GMT");
}
