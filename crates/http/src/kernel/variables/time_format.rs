//! `strftime`-style formatting for SSI's `config timefmt` and `$date_local`/`$date_gmt`,
//! and the date cookies carry.

use logging::time::{Civil, Timestamp, push_number};

/// nginx's SSI default `timefmt`.
pub const DEFAULT_TIME_FORMAT: &[u8] = b"%A, %d-%b-%Y %H:%M:%S %Z";

const DAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];
const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// Appends `now` formatted by `format` (the C library's conversions that SSI pages use),
/// in UTC (`gmt`) or local time. `%s` is the Unix time, as nginx special-cases it.
pub fn format_time(format: &[u8], now: &Timestamp, gmt: bool, out: &mut Vec<u8>) {
    let offset = if gmt { 0 } else { now.utc_offset_seconds };
    let unix = now.unix_seconds + i64::from(offset);
    let c = Civil::from_unix(unix);
    let mut bytes = format.iter();
    while let Some(&byte) = bytes.next() {
        if byte != b'%' {
            out.push(byte);
            continue;
        }
        let Some(&conversion) = bytes.next() else {
            out.push(b'%');
            break;
        };
        conversion_into(conversion, &c, now, gmt, offset, out);
    }
}

fn conversion_into(
    conversion: u8,
    c: &Civil,
    now: &Timestamp,
    gmt: bool,
    offset: i32,
    out: &mut Vec<u8>,
) {
    let day_name = DAYS[c.weekday as usize % 7];
    let month_name = MONTHS[(c.month as usize + 11) % 12];
    match conversion {
        b'A' => out.extend_from_slice(day_name.as_bytes()),
        b'a' => out.extend_from_slice(&day_name.as_bytes()[..3]),
        b'B' => out.extend_from_slice(month_name.as_bytes()),
        b'b' | b'h' => out.extend_from_slice(&month_name.as_bytes()[..3]),
        b'd' => push_number(out, c.day.into(), 2),
        b'e' => {
            if c.day < 10 {
                out.push(b' ');
            }
            push_number(out, c.day.into(), 1);
        }
        b'm' => push_number(out, c.month.into(), 2),
        b'Y' => push_number(out, c.year, 4),
        b'y' => push_number(out, c.year.rem_euclid(100), 2),
        b'H' => push_number(out, c.hour.into(), 2),
        b'I' => push_number(out, ((c.hour + 11) % 12 + 1).into(), 2),
        b'p' => out.extend_from_slice(if c.hour < 12 { b"AM" } else { b"PM" }),
        b'M' => push_number(out, c.minute.into(), 2),
        b'S' => push_number(out, c.second.into(), 2),
        b'j' => push_number(out, day_of_year(c).into(), 3),
        b'u' => push_number(out, (if c.weekday == 0 { 7 } else { c.weekday }).into(), 1),
        b'w' => push_number(out, c.weekday.into(), 1),
        b's' => push_number(out, now.unix_seconds, 1),
        b'T' => {
            for (index, part) in [c.hour, c.minute, c.second].into_iter().enumerate() {
                if index > 0 {
                    out.push(b':');
                }
                push_number(out, part.into(), 2);
            }
        }
        b'D' => {
            push_number(out, c.month.into(), 2);
            out.push(b'/');
            push_number(out, c.day.into(), 2);
            out.push(b'/');
            push_number(out, c.year.rem_euclid(100), 2);
        }
        b'F' => {
            push_number(out, c.year, 4);
            out.push(b'-');
            push_number(out, c.month.into(), 2);
            out.push(b'-');
            push_number(out, c.day.into(), 2);
        }
        b'Z' => out.extend_from_slice(if gmt || offset == 0 { b"GMT" } else { b"LOCAL" }),
        b'z' => {
            out.push(if offset < 0 { b'-' } else { b'+' });
            let minutes = offset.unsigned_abs() / 60;
            push_number(out, (minutes / 60).into(), 2);
            push_number(out, (minutes % 60).into(), 2);
        }
        b'n' => out.push(b'\n'),
        b't' => out.push(b'\t'),
        b'%' => out.push(b'%'),
        other => {
            out.push(b'%');
            out.push(other);
        }
    }
}

fn day_of_year(c: &Civil) -> u32 {
    const BEFORE: [u32; 12] = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334];
    let leap = (c.year % 4 == 0 && c.year % 100 != 0) || c.year % 400 == 0;
    BEFORE[(c.month as usize + 11) % 12] + c.day + u32::from(leap && c.month > 2)
}

/// nginx's cookie date: `Thu, 31-Dec-37 23:55:55 GMT`, a two-digit year up to 2037.
pub fn cookie_time(unix_seconds: i64) -> String {
    const WEEKDAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
    let civil = Civil::from_unix(unix_seconds);
    let year = if civil.year > 2037 {
        civil.year
    } else {
        civil.year % 100
    };
    format!(
        "{}, {:02}-{}-{:02} {:02}:{:02}:{:02} GMT",
        WEEKDAYS[civil.weekday as usize],
        civil.day,
        civil.month_name(),
        year,
        civil.hour,
        civil.minute,
        civil.second
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nginx_default_and_custom_formats() {
        let now = Timestamp {
            unix_seconds: 1_700_000_000,
            milliseconds: 0,
            utc_offset_seconds: 0,
        };
        let mut out = Vec::new();
        format_time(DEFAULT_TIME_FORMAT, &now, true, &mut out);
        assert_eq!(out, b"Tuesday, 14-Nov-2023 22:13:20 GMT");
        out.clear();
        format_time(b"%s|%a %e %j %I%p %F %T%%", &now, true, &mut out);
        assert_eq!(out, b"1700000000|Tue 14 318 10PM 2023-11-14 22:13:20%");
    }
}
