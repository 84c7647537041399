//! Response heads: status line, header lines, chunk framing and HTTP dates as nginx writes them.

use crate::status::reason_phrase;

/// The last chunk and the empty trailer section of a chunked response.
pub const LAST_CHUNK: &[u8] = b"0\r\n\r\n";

/// Appends `HTTP/1.1 200 OK\r\n`. nginx always writes `HTTP/1.1`; a code without a phrase in
/// its table is written as three or more digits and a space: `HTTP/1.1 299 \r\n`.
pub fn write_status_line(out: &mut Vec<u8>, status: u16) {
    out.extend_from_slice(b"HTTP/1.1 ");
    if status < 100 {
        out.push(b'0');
    }
    if status < 10 {
        out.push(b'0');
    }
    out.extend_from_slice(itoa::Buffer::new().format(status).as_bytes());
    out.push(b' ');
    if let Some(phrase) = reason_phrase(status) {
        out.extend_from_slice(phrase.as_bytes());
    }
    out.extend_from_slice(b"\r\n");
}

/// Appends `Name: value\r\n`.
pub fn write_header(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    out.reserve(name.len() + value.len() + 4);
    out.extend_from_slice(name);
    out.extend_from_slice(b": ");
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
}

/// Appends a chunk-size line in lower-case hex, as nginx's chunked filter does: `1a\r\n`.
pub fn write_chunk_header(out: &mut Vec<u8>, len: usize) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut digits = [0u8; 16];
    let mut start = digits.len();
    let mut rest = len;
    loop {
        start -= 1;
        digits[start] = DIGITS[rest % 16];
        rest /= 16;
        if rest == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[start..]);
    out.extend_from_slice(b"\r\n");
}

const WEEKDAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// Appends an IMF-fixdate (RFC 9110 §5.6.7), e.g. `Sat, 21 Nov 2026 21:00:00 GMT`, as
/// nginx's `ngx_http_time` does for `Date`, `Last-Modified` and `Expires`.
pub fn write_http_date(out: &mut Vec<u8>, unix_seconds: i64) {
    let days = unix_seconds.div_euclid(86_400);
    let seconds_of_day = unix_seconds.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    // The epoch was a Thursday, the first entry of WEEKDAYS.
    let weekday = WEEKDAYS[days.rem_euclid(7) as usize];
    let mut numbers = itoa::Buffer::new();
    out.extend_from_slice(weekday.as_bytes());
    out.extend_from_slice(b", ");
    push_two_digits(out, day);
    out.push(b' ');
    out.extend_from_slice(MONTHS[(month - 1) as usize].as_bytes());
    out.push(b' ');
    out.extend_from_slice(numbers.format(year).as_bytes());
    out.push(b' ');
    push_two_digits(out, seconds_of_day / 3600);
    out.push(b':');
    push_two_digits(out, seconds_of_day / 60 % 60);
    out.push(b':');
    push_two_digits(out, seconds_of_day % 60);
    out.extend_from_slice(b" GMT");
}

fn push_two_digits(out: &mut Vec<u8>, value: i64) {
    out.push(b'0' + (value / 10 % 10) as u8);
    out.push(b'0' + (value % 10) as u8);
}

/// Converts days since 1970-01-01 to a proleptic Gregorian (year, month, day), using the
/// era-based method (400-year cycles of 146097 days).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let shifted = days + 719_468;
    let era = shifted.div_euclid(146_097);
    let day_of_era = shifted.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

mod date;

pub use date::parse_http_date;

#[cfg(test)]
mod tests {
    use super::{
        LAST_CHUNK, parse_http_date, write_chunk_header, write_header, write_http_date,
        write_status_line,
    };

    fn status_line(status: u16) -> String {
        let mut out = Vec::new();
        write_status_line(&mut out, status);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn status_lines_as_nginx_prints_them() {
        assert_eq!(status_line(200), "HTTP/1.1 200 OK\r\n");
        assert_eq!(status_line(302), "HTTP/1.1 302 Moved Temporarily\r\n");
        assert_eq!(status_line(299), "HTTP/1.1 299 \r\n");
        assert_eq!(status_line(494), "HTTP/1.1 494 \r\n");
        assert_eq!(status_line(5), "HTTP/1.1 005 \r\n");
        assert_eq!(status_line(1000), "HTTP/1.1 1000 \r\n");
    }

    #[test]
    fn header_and_chunk_framing() {
        let mut out = Vec::new();
        write_header(&mut out, b"Content-Type", b"text/html");
        write_chunk_header(&mut out, 26);
        write_chunk_header(&mut out, 0);
        write_chunk_header(&mut out, usize::MAX);
        out.extend_from_slice(LAST_CHUNK);
        assert_eq!(
            out,
            b"Content-Type: text/html\r\n1a\r\n0\r\nffffffffffffffff\r\n0\r\n\r\n".to_vec()
        );
    }

    #[test]
    fn http_dates_round_trip() {
        let cases = [
            (0, "Thu, 01 Jan 1970 00:00:00 GMT"),
            (784_111_777, "Sun, 06 Nov 1994 08:49:37 GMT"),
            (951_782_400, "Tue, 29 Feb 2000 00:00:00 GMT"),
            (1_795_294_800, "Sat, 21 Nov 2026 21:00:00 GMT"),
            (253_402_300_799, "Fri, 31 Dec 9999 23:59:59 GMT"),
        ];
        for (seconds, text) in cases {
            let mut out = Vec::new();
            write_http_date(&mut out, seconds);
            assert_eq!(String::from_utf8(out).unwrap(), text);
            assert_eq!(parse_http_date(text.as_bytes()), Some(seconds), "{text}");
        }
    }
}
