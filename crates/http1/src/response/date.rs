//! HTTP date parsing with the leniency of nginx's `ngx_parse_http_time`.

/// Days in each month of a common year, January first.
const MONTH_DAYS: [u64; 12] = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

#[derive(Clone, Copy, PartialEq)]
enum Format {
    /// `Sun, 06 Nov 1994 08:49:37 GMT` (IMF-fixdate, RFC 1123).
    Rfc1123,
    /// `Sunday, 06-Nov-94 08:49:37 GMT`
    Rfc850,
    /// `Sun Nov  6 08:49:37 1994`
    Asctime,
}

/// Parses `If-Modified-Since` and similar dates to Unix seconds as nginx does (RFC 9110
/// §5.6.7 lists the three formats). Like nginx it ignores the weekday and the zone name,
/// tells months apart by the fewest letters needed, accepts day 0, reads two-digit RFC 850
/// years below 70 as 20xx, and cannot return -1 (nginx's error value).
pub fn parse_http_date(value: &[u8]) -> Option<i64> {
    // nginx reads past short input into the string's terminating NUL; a 0 byte fails every
    // check that matters in the same way.
    let at = |i: usize| value.get(i).copied().unwrap_or(0);
    let digits = |i: usize, count: usize| -> Option<u64> {
        (i..i + count).try_fold(0u64, |number, j| {
            let byte = at(j);
            byte.is_ascii_digit()
                .then(|| number * 10 + u64::from(byte - b'0'))
        })
    };
    let end = value.len();

    let mut format = None;
    let mut p = 0;
    while p < end {
        match value[p] {
            b',' => break,
            b' ' => {
                format = Some(Format::Asctime);
                break;
            }
            _ => p += 1,
        }
    }
    p += 1;
    while p < end && value[p] == b' ' {
        p += 1;
    }
    if p > end || end - p < 18 {
        return None;
    }

    let mut day = 0;
    if format != Some(Format::Asctime) {
        day = digits(p, 2)?;
        p += 2;
        format = match at(p) {
            b' ' if end - p >= 18 => Some(Format::Rfc1123),
            b'-' => Some(Format::Rfc850),
            _ => return None,
        };
        p += 1;
    }

    let month: u64 = match at(p) {
        b'J' if at(p + 1) == b'a' => 0,
        b'J' if at(p + 2) == b'n' => 5,
        b'J' => 6,
        b'F' => 1,
        b'M' if at(p + 2) == b'r' => 2,
        b'M' => 4,
        b'A' if at(p + 1) == b'p' => 3,
        b'A' => 7,
        b'S' => 8,
        b'O' => 9,
        b'N' => 10,
        b'D' => 11,
        _ => return None,
    };
    p += 3;
    match (format, at(p)) {
        (Some(Format::Rfc1123), b' ') | (Some(Format::Rfc850), b'-') => {}
        (Some(Format::Asctime), _) => {}
        _ => return None,
    }
    p += 1;

    let mut year = 0;
    match format {
        Some(Format::Rfc1123) => {
            year = digits(p, 4)?;
            p += 4;
        }
        Some(Format::Rfc850) => {
            year = digits(p, 2)?;
            year += if year < 70 { 2000 } else { 1900 };
            p += 2;
        }
        _ => {
            if at(p) == b' ' {
                p += 1;
            }
            day = digits(p, 1)?;
            p += 1;
            if at(p) != b' ' {
                day = day * 10 + digits(p, 1)?;
                p += 1;
            }
            if p > end || end - p < 14 {
                return None;
            }
        }
    }

    if at(p) != b' ' || at(p + 3) != b':' || at(p + 6) != b':' {
        return None;
    }
    let hour = digits(p + 1, 2)?;
    let minute = digits(p + 4, 2)?;
    let second = digits(p + 7, 2)?;
    p += 9;
    if format == Some(Format::Asctime) {
        if at(p) != b' ' {
            return None;
        }
        year = digits(p + 1, 4)?;
    }

    if hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    if day == 29 && month == 1 {
        if !leap {
            return None;
        }
    } else if day > MONTH_DAYS[month as usize] {
        return None;
    }

    let seconds = days_since_epoch(year, month, day)
        .wrapping_mul(86_400)
        .wrapping_add(hour * 3600 + minute * 60 + second);
    // Same bits as nginx's time_t; -1 is its error value.
    let seconds = seconds as i64;
    (seconds != -1).then_some(seconds)
}

/// Days from 1970-01-01 with Gauss's formula on a year starting in March, computed with
/// nginx's unsigned wrap-around so that even year 0000 gives nginx's answer.
fn days_since_epoch(year: u64, month: u64, day: u64) -> u64 {
    // Months count from March = 1; January and February belong to the previous year.
    let (year, month) = if month <= 1 {
        (year.wrapping_sub(1), month + 11)
    } else {
        (year, month - 1)
    };
    year.wrapping_mul(365)
        .wrapping_add(year / 4)
        .wrapping_sub(year / 100)
        .wrapping_add(year / 400)
        .wrapping_add(367 * month / 12)
        .wrapping_sub(30)
        .wrapping_add(day)
        .wrapping_sub(1)
        .wrapping_sub(719_527)
        .wrapping_add(31 + 28)
}

#[cfg(test)]
mod tests {
    use super::parse_http_date;

    #[test]
    fn three_formats() {
        let expected = Some(784_111_777);
        assert_eq!(parse_http_date(b"Sun, 06 Nov 1994 08:49:37 GMT"), expected);
        assert_eq!(parse_http_date(b"Sunday, 06-Nov-94 08:49:37 GMT"), expected);
        assert_eq!(parse_http_date(b"Sun Nov  6 08:49:37 1994"), expected);
        assert_eq!(parse_http_date(b"Sun Nov 06 08:49:37 1994"), expected);
    }

    #[test]
    fn nginx_leniency() {
        // Weekday and zone are not checked; RFC 850 years below 70 are 20xx.
        assert_eq!(
            parse_http_date(b"Xyz, 06 Nov 1994 08:49:37 XYZ"),
            Some(784_111_777)
        );
        assert_eq!(
            parse_http_date(b"Monday, 01-Jan-01 00:00:00 GMT"),
            Some(978_307_200)
        );
        // Day 0 is accepted and means the last day of the previous month.
        assert_eq!(
            parse_http_date(b"Sun, 00 Jan 1970 00:00:00 GMT"),
            Some(-86_400)
        );
        // One second before the epoch is nginx's error value.
        assert_eq!(parse_http_date(b"Wed, 31 Dec 1969 23:59:59 GMT"), None);
    }

    #[test]
    fn invalid_dates() {
        let cases: [&[u8]; 9] = [
            b"",
            b"garbage",
            b"Sun, 06 Nov 1994 24:00:00 GMT",
            b"Sun, 06 Nov 1994 08:60:37 GMT",
            b"Sun, 31 Nov 1994 08:49:37 GMT",
            b"Sun, 29 Feb 1900 08:49:37 GMT",
            b"Sun, 06 Xov 1994 08:49:37 GMT",
            b"Sun, 6 Nov 1994 08:49:37 GMT",
            b"Sun, 06 Nov 1994 08:49",
        ];
        for value in cases {
            assert_eq!(
                parse_http_date(value),
                None,
                "{}",
                String::from_utf8_lossy(value)
            );
        }
        assert_eq!(
            parse_http_date(b"Tue, 29 Feb 2000 00:00:00 GMT"),
            Some(951_782_400)
        );
    }
}
