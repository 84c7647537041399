//! Timestamps in the forms nginx's logs use. Pure formatting: the caller supplies the time
//! and the local UTC offset (the worker's cached clock knows both).

/// A moment, with the local time zone's offset from UTC at that moment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timestamp {
    pub unix_seconds: i64,
    pub milliseconds: u32,
    /// Seconds east of UTC (`+0100` is 3600).
    pub utc_offset_seconds: i32,
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// A broken-down civil date and time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Civil {
    pub year: i64,
    /// 1..=12
    pub month: u32,
    /// 1..=31
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
    /// 0 = Sunday
    pub weekday: u32,
}

impl Civil {
    /// The civil time `unix_seconds` seconds after the epoch (proleptic Gregorian calendar).
    pub fn from_unix(unix_seconds: i64) -> Civil {
        let days = unix_seconds.div_euclid(86_400);
        let seconds_of_day = unix_seconds.rem_euclid(86_400) as u32;
        let (year, month, day) = civil_from_days(days);
        Civil {
            year,
            month,
            day,
            hour: seconds_of_day / 3600,
            minute: seconds_of_day / 60 % 60,
            second: seconds_of_day % 60,
            // 1970-01-01 was a Thursday.
            weekday: (days + 4).rem_euclid(7) as u32,
        }
    }

    pub fn month_name(&self) -> &'static str {
        MONTHS[(self.month - 1) as usize]
    }
}

/// Days since 1970-01-01 to (year, month, day), by the era-based method: a 400-year era has
/// exactly 146097 days, and counting years from March puts the leap day last.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let shifted = days + 719_468;
    let era = shifted.div_euclid(146_097);
    let day_of_era = shifted.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * month_from_march + 2) / 5 + 1) as u32;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month as u32, day)
}

impl Timestamp {
    fn local(&self) -> Civil {
        Civil::from_unix(self.unix_seconds + i64::from(self.utc_offset_seconds))
    }

    /// `2026/11/21 21:06:57`, the error log's form (local time).
    pub fn write_error_log(&self, out: &mut Vec<u8>) {
        let c = self.local();
        push_number(out, c.year, 4);
        out.push(b'/');
        push_number(out, c.month.into(), 2);
        out.push(b'/');
        push_number(out, c.day.into(), 2);
        out.push(b' ');
        push_clock(out, &c);
    }

    /// `21/Nov/2026:21:06:57 +0000`, `$time_local`.
    pub fn write_time_local(&self, out: &mut Vec<u8>) {
        let c = self.local();
        push_number(out, c.day.into(), 2);
        out.push(b'/');
        out.extend_from_slice(c.month_name().as_bytes());
        out.push(b'/');
        push_number(out, c.year, 4);
        out.push(b':');
        push_clock(out, &c);
        out.push(b' ');
        self.push_offset(out, false);
    }

    /// `2026-11-21T21:06:57+00:00`, `$time_iso8601`.
    pub fn write_iso8601(&self, out: &mut Vec<u8>) {
        let c = self.local();
        push_number(out, c.year, 4);
        out.push(b'-');
        push_number(out, c.month.into(), 2);
        out.push(b'-');
        push_number(out, c.day.into(), 2);
        out.push(b'T');
        push_clock(out, &c);
        self.push_offset(out, true);
    }

    /// `Nov  9 21:06:57`, a syslog message's time (RFC 3164 §4.1.2: the day padded with a
    /// space; local time).
    pub fn write_syslog(&self, out: &mut Vec<u8>) {
        let c = self.local();
        out.extend_from_slice(c.month_name().as_bytes());
        out.push(b' ');
        if c.day < 10 {
            out.push(b' ');
        }
        push_number(out, c.day.into(), 1);
        out.push(b' ');
        push_clock(out, &c);
    }

    /// `1763759217.123`, `$msec`.
    pub fn write_msec(&self, out: &mut Vec<u8>) {
        push_number(out, self.unix_seconds, 1);
        out.push(b'.');
        push_number(out, self.milliseconds.into(), 3);
    }

    fn push_offset(&self, out: &mut Vec<u8>, colon: bool) {
        let offset = self.utc_offset_seconds;
        out.push(if offset < 0 { b'-' } else { b'+' });
        let minutes = offset.unsigned_abs() / 60;
        push_number(out, (minutes / 60).into(), 2);
        if colon {
            out.push(b':');
        }
        push_number(out, (minutes % 60).into(), 2);
    }
}

fn push_clock(out: &mut Vec<u8>, c: &Civil) {
    push_number(out, c.hour.into(), 2);
    out.push(b':');
    push_number(out, c.minute.into(), 2);
    out.push(b':');
    push_number(out, c.second.into(), 2);
}

/// Appends `value` in decimal, zero-padded to at least `width` digits.
pub fn push_number(out: &mut Vec<u8>, value: i64, width: usize) {
    let mut buffer = itoa::Buffer::new();
    let digits = buffer.format(value.unsigned_abs());
    if value < 0 {
        out.push(b'-');
    }
    for _ in digits.len()..width {
        out.push(b'0');
    }
    out.extend_from_slice(digits.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(f: fn(&Timestamp, &mut Vec<u8>), t: Timestamp) -> String {
        let mut out = Vec::new();
        f(&t, &mut out);
        String::from_utf8(out).unwrap()
    }

    // 2026-11-21 21:06:57 UTC
    const T: i64 = 1_795_295_217;

    #[test]
    fn civil_dates_match_known_days() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(11_017), (2000, 3, 1));
        let c = Civil::from_unix(T);
        assert_eq!(
            (c.year, c.month, c.day, c.hour, c.minute, c.second),
            (2026, 11, 21, 21, 6, 57)
        );
        assert_eq!(c.weekday, 6, "2026-11-21 is a Saturday");
    }

    #[test]
    fn formats_in_utc() {
        let t = Timestamp {
            unix_seconds: T,
            milliseconds: 7,
            utc_offset_seconds: 0,
        };
        assert_eq!(render(Timestamp::write_error_log, t), "2026/11/21 21:06:57");
        assert_eq!(
            render(Timestamp::write_time_local, t),
            "21/Nov/2026:21:06:57 +0000"
        );
        assert_eq!(
            render(Timestamp::write_iso8601, t),
            "2026-11-21T21:06:57+00:00"
        );
        assert_eq!(render(Timestamp::write_msec, t), "1795295217.007");
    }

    #[test]
    fn formats_with_offsets_across_midnight() {
        let east = Timestamp {
            unix_seconds: T,
            milliseconds: 0,
            utc_offset_seconds: 5 * 3600 + 1800,
        };
        assert_eq!(
            render(Timestamp::write_error_log, east),
            "2026/11/22 02:36:57"
        );
        assert_eq!(
            render(Timestamp::write_time_local, east),
            "22/Nov/2026:02:36:57 +0530"
        );
        let west = Timestamp {
            unix_seconds: T,
            milliseconds: 0,
            utc_offset_seconds: -8 * 3600,
        };
        assert_eq!(
            render(Timestamp::write_iso8601, west),
            "2026-11-21T13:06:57-08:00"
        );
    }
}
