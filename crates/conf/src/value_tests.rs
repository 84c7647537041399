//! Tests for the value parsers, at and one past every limit.

use std::time::Duration;

use super::*;
use crate::ast::{Argument, Span};

const MAX: u64 = i64::MAX as u64;

#[test]
fn number_is_plain_decimal() {
    assert_eq!(parse_number("0"), Some(0));
    assert_eq!(parse_number("0042"), Some(42));
    assert_eq!(parse_number("9223372036854775807"), Some(MAX));
    assert_eq!(parse_number("9223372036854775808"), None);
    assert_eq!(parse_number("99999999999999999999999"), None);
    for bad in ["", "-1", "+1", " 1", "1 ", "1k", "0x10", "1.5", "١"] {
        assert_eq!(parse_number(bad), None, "{bad:?}");
    }
}

#[test]
fn size_units() {
    assert_eq!(parse_size("0"), Some(0));
    assert_eq!(parse_size("512"), Some(512));
    assert_eq!(parse_size("8k"), Some(8 * 1024));
    assert_eq!(parse_size("8K"), Some(8 * 1024));
    assert_eq!(parse_size("2m"), Some(2 * 1024 * 1024));
    assert_eq!(parse_size("2M"), Some(2 * 1024 * 1024));
    for bad in ["", "k", "m", "1g", "1G", "1kb", "1 k", "-1k", "1.5m", "kk"] {
        assert_eq!(parse_size(bad), None, "{bad:?}");
    }
}

#[test]
fn size_limits() {
    assert_eq!(parse_size("9223372036854775807"), Some(MAX));
    assert_eq!(parse_size("9223372036854775808"), None);
    let kilobytes_max = MAX / 1024;
    assert_eq!(
        parse_size(&format!("{kilobytes_max}k")),
        Some(kilobytes_max * 1024)
    );
    assert_eq!(parse_size(&format!("{}k", kilobytes_max + 1)), None);
    let megabytes_max = MAX / (1024 * 1024);
    assert_eq!(
        parse_size(&format!("{megabytes_max}m")),
        Some(megabytes_max * 1024 * 1024)
    );
    assert_eq!(parse_size(&format!("{}M", megabytes_max + 1)), None);
}

#[test]
fn offset_units_and_limits() {
    assert_eq!(parse_offset("10"), Some(10));
    assert_eq!(parse_offset("1k"), Some(1024));
    assert_eq!(parse_offset("1M"), Some(1024 * 1024));
    assert_eq!(parse_offset("3g"), Some(3 * 1024 * 1024 * 1024));
    assert_eq!(parse_offset("3G"), Some(3 * 1024 * 1024 * 1024));
    let gigabytes_max = MAX / (1024 * 1024 * 1024);
    assert_eq!(
        parse_offset(&format!("{gigabytes_max}g")),
        Some(gigabytes_max << 30)
    );
    assert_eq!(parse_offset(&format!("{}g", gigabytes_max + 1)), None);
    assert_eq!(parse_offset("9223372036854775808"), None);
    for bad in ["", "g", "1t", "1gb", "-1"] {
        assert_eq!(parse_offset(bad), None, "{bad:?}");
    }
}

fn ms(value: u64) -> Option<Duration> {
    Some(Duration::from_millis(value))
}

fn secs(value: u64) -> Option<Duration> {
    Some(Duration::from_secs(value))
}

#[test]
fn time_in_milliseconds_units() {
    assert_eq!(parse_time("0"), ms(0));
    assert_eq!(parse_time("60"), ms(60_000));
    assert_eq!(parse_time("500ms"), ms(500));
    assert_eq!(parse_time("3s"), ms(3_000));
    assert_eq!(parse_time("2m"), ms(120_000));
    assert_eq!(parse_time("1h"), ms(3_600_000));
    assert_eq!(parse_time("1d"), ms(86_400_000));
    assert_eq!(parse_time("1w"), ms(604_800_000));
    // nginx allows no months or years in milliseconds.
    assert_eq!(parse_time("1M"), None);
    assert_eq!(parse_time("1y"), None);
}

#[test]
fn time_combinations() {
    assert_eq!(parse_time("1h 30m"), ms(5_400_000));
    assert_eq!(parse_time("1h30m"), ms(5_400_000));
    assert_eq!(parse_time("1m30s500ms"), ms(90_500));
    assert_eq!(parse_time("1h   5"), ms(3_605_000));
    assert_eq!(parse_time("1w 1d 1h 1m 1s 1ms"), ms(694_861_001));
    // A bare number then a space counts as seconds, and one more bare number may follow.
    assert_eq!(parse_time("5 5"), ms(10_000));
    assert_eq!(parse_time(" 5"), ms(5_000));
    assert_eq!(parse_time("5 "), ms(5_000));
    // Units go from largest to smallest, each at most once.
    for bad in [
        "30m 1h", "1h 1h", "1s 1m", "1ms 1s", "1ms1ms", "5 5 5", "5 1h",
    ] {
        assert_eq!(parse_time(bad), None, "{bad:?}");
    }
}

#[test]
fn time_bad_input() {
    for bad in [
        "", " ", "h", "ms", "1x", "1.5s", "-1s", "1S", "1H", "1 h", "1hh",
    ] {
        assert_eq!(parse_time(bad), None, "{bad:?}");
    }
    // A unit with no number before it counts as zero, as in nginx, once some digit is seen.
    assert_eq!(parse_time("h5"), ms(5_000));
    assert_eq!(parse_time("s1"), ms(1_000));
}

#[test]
fn time_in_milliseconds_limits() {
    assert_eq!(parse_time("9223372036854775807ms"), ms(MAX));
    assert_eq!(parse_time("9223372036854775808ms"), None);
    let seconds_max = MAX / 1000;
    assert_eq!(
        parse_time(&format!("{seconds_max}")),
        ms(seconds_max * 1000)
    );
    assert_eq!(parse_time(&format!("{}", seconds_max + 1)), None);
    assert_eq!(
        parse_time(&format!("{seconds_max}s")),
        ms(seconds_max * 1000)
    );
    assert_eq!(parse_time(&format!("{}s", seconds_max + 1)), None);
    let weeks_max = MAX / (604_800 * 1000);
    assert_eq!(
        parse_time(&format!("{weeks_max}w")),
        ms(weeks_max * 604_800_000)
    );
    assert_eq!(parse_time(&format!("{}w", weeks_max + 1)), None);
    // The sum may not pass the limit either.
    let ms_part = MAX - seconds_max * 1000;
    assert_eq!(parse_time(&format!("{seconds_max}s {ms_part}ms")), ms(MAX));
    assert_eq!(
        parse_time(&format!("{seconds_max}s {}ms", ms_part + 1)),
        None
    );
}

#[test]
fn time_in_seconds() {
    assert_eq!(parse_time_seconds("10"), secs(10));
    assert_eq!(parse_time_seconds("10s"), secs(10));
    assert_eq!(parse_time_seconds("1m"), secs(60));
    assert_eq!(parse_time_seconds("1M"), secs(30 * 86_400));
    assert_eq!(parse_time_seconds("1y"), secs(365 * 86_400));
    assert_eq!(parse_time_seconds("1y 1M 1w 1d 1h 1m 1s"), secs(34_822_861));
    assert_eq!(parse_time_seconds("1M 1y"), None);
    assert_eq!(parse_time_seconds("1ms"), None);
    assert_eq!(parse_time_seconds("1s 1ms"), None);
    assert_eq!(parse_time_seconds("9223372036854775807"), secs(MAX));
    assert_eq!(parse_time_seconds("9223372036854775807s"), secs(MAX));
    assert_eq!(parse_time_seconds("9223372036854775808"), None);
    let years_max = MAX / (365 * 86_400);
    assert_eq!(
        parse_time_seconds(&format!("{years_max}y")),
        secs(years_max * 365 * 86_400)
    );
    assert_eq!(parse_time_seconds(&format!("{}y", years_max + 1)), None);
    assert_eq!(parse_time_seconds(&format!("{years_max}y {MAX}")), None);
}

fn flag_directive(value: &str) -> Directive {
    Directive {
        name: "sendfile".to_owned(),
        args: vec![Argument {
            value: value.to_owned(),
            quoted: false,
        }],
        block: None,
        span: Span::CommandLine,
    }
}

#[test]
fn flag_values() {
    for on in ["on", "ON", "On"] {
        assert_eq!(parse_flag(&flag_directive(on)), Ok(true));
    }
    for off in ["off", "OFF", "oFf"] {
        assert_eq!(parse_flag(&flag_directive(off)), Ok(false));
    }
    for bad in ["yes", "1", "", "on ", "onn"] {
        let error = parse_flag(&flag_directive(bad)).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!(
                "invalid value \"{bad}\" in \"sendfile\" directive, it must be \"on\" or \"off\" \
                 in command line"
            )
        );
    }
}
