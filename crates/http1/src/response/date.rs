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
    let text = Text { value };
    let (format, mut p) = text.format_and_start()?;
    let (day, month, year, after) = text.date(format, p)?;
    p = after;
    let (hour, minute, second) = text.time_of_day(p)?;
    let year = match year {
        Some(year) => year,
        // asctime puts the year last: " 1994" after "08:49:37".
        None if text.at(p + 9) == b' ' => text.digits(p + 10, 4)?,
        None => return None,
    };

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

/// The date text with nginx's way of reading it.
struct Text<'a> {
    value: &'a [u8],
}

impl Text<'_> {
    /// nginx reads past short input into the string's terminating NUL; a 0 byte fails
    /// every check that matters in the same way.
    fn at(&self, i: usize) -> u8 {
        self.value.get(i).copied().unwrap_or(0)
    }

    fn digits(&self, start: usize, count: usize) -> Option<u64> {
        (start..start + count).try_fold(0u64, |number, i| {
            let byte = self.at(i);
            byte.is_ascii_digit()
                .then(|| number * 10 + u64::from(byte - b'0'))
        })
    }

    /// Skips the weekday: up to a `,` (RFC 1123, RFC 850) or a space (asctime), then
    /// spaces. `None` for the format means "not asctime", decided by the next separator.
    fn format_and_start(&self) -> Option<(Option<Format>, usize)> {
        let end = self.value.len();
        let mut format = None;
        let mut p = self
            .value
            .iter()
            .position(|&b| b == b',' || b == b' ')
            .unwrap_or(end);
        if self.at(p) == b' ' && p < end {
            format = Some(Format::Asctime);
        }
        p += 1;
        while p < end && self.value[p] == b' ' {
            p += 1;
        }
        if p > end || end - p < 18 {
            return None;
        }
        Some((format, p))
    }

    /// Day, month (0-based), year (`None` for asctime, whose year comes last) and the
    /// offset of the space before the time.
    fn date(&self, format: Option<Format>, mut p: usize) -> Option<(u64, u64, Option<u64>, usize)> {
        let end = self.value.len();
        let mut day = 0;
        let format = match format {
            Some(Format::Asctime) => Format::Asctime,
            _ => {
                day = self.digits(p, 2)?;
                p += 2;
                let format = match self.at(p) {
                    b' ' if end - p >= 18 => Format::Rfc1123,
                    b'-' => Format::Rfc850,
                    _ => return None,
                };
                p += 1;
                format
            }
        };
        let month = self.month(p)?;
        p += 3;
        match (format, self.at(p)) {
            (Format::Rfc1123, b' ') | (Format::Rfc850, b'-') | (Format::Asctime, _) => {}
            _ => return None,
        }
        p += 1;
        let year = match format {
            Format::Rfc1123 => {
                p += 4;
                Some(self.digits(p - 4, 4)?)
            }
            Format::Rfc850 => {
                let year = self.digits(p, 2)?;
                p += 2;
                Some(year + if year < 70 { 2000 } else { 1900 })
            }
            Format::Asctime => {
                if self.at(p) == b' ' {
                    p += 1;
                }
                day = self.digits(p, 1)?;
                p += 1;
                if self.at(p) != b' ' {
                    day = day * 10 + self.digits(p, 1)?;
                    p += 1;
                }
                if p > end || end - p < 14 {
                    return None;
                }
                None
            }
        };
        Some((day, month, year, p))
    }

    /// The month by its first letters, as nginx tells them apart (0 = January).
    fn month(&self, p: usize) -> Option<u64> {
        let month = match self.at(p) {
            b'J' if self.at(p + 1) == b'a' => 0,
            b'J' if self.at(p + 2) == b'n' => 5,
            b'J' => 6,
            b'F' => 1,
            b'M' if self.at(p + 2) == b'r' => 2,
            b'M' => 4,
            b'A' if self.at(p + 1) == b'p' => 3,
            b'A' => 7,
            b'S' => 8,
            b'O' => 9,
            b'N' => 10,
            b'D' => 11,
            _ => return None,
        };
        Some(month)
    }

    /// ` HH:MM:SS` starting at the space at `p`.
    fn time_of_day(&self, p: usize) -> Option<(u64, u64, u64)> {
        if self.at(p) != b' ' || self.at(p + 3) != b':' || self.at(p + 6) != b':' {
            return None;
        }
        Some((
            self.digits(p + 1, 2)?,
            self.digits(p + 4, 2)?,
            self.digits(p + 7, 2)?,
        ))
    }
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
