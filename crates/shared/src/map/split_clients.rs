//! `split_clients`: buckets of the 32-bit MurmurHash2 range, each with a fixed value.

use super::murmur::murmur_hash2;

/// The parts of one `split_clients` block, in the order written.
#[derive(Clone, Debug, Default)]
pub struct Parts {
    /// Each part's upper bound (exclusive) on the hash, or 0 for "the rest" (`*`, or the
    /// part that brings the total to exactly 100%), and its value.
    parts: Vec<(u32, Box<[u8]>)>,
}

/// Why a block's percentages were refused, in nginx's words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PartsError {
    /// `invalid percent value "TEXT"`
    InvalidPercent(String),
    /// `percent total is greater than 100%`
    TotalOver100,
}

impl std::fmt::Display for PartsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PartsError::InvalidPercent(text) => write!(f, "invalid percent value \"{text}\""),
            PartsError::TotalOver100 => f.write_str("percent total is greater than 100%"),
        }
    }
}

/// One line as written: hundredths of a percent (0 for `*`) and the value.
#[derive(Clone, Debug)]
pub struct Part {
    pub hundredths: u32,
    pub value: Box<[u8]>,
}

impl Part {
    /// Reads `PERCENT%` or `*`.
    pub fn parse(percent: &str, value: &[u8]) -> Result<Part, PartsError> {
        let hundredths = if percent == "*" {
            0
        } else {
            let number = percent
                .strip_suffix('%')
                .and_then(parse_hundredths)
                .filter(|number| *number != 0)
                .ok_or_else(|| PartsError::InvalidPercent(percent.to_owned()))?;
            // nginx keeps the percentage in 32 bits.
            number as u32
        };
        Ok(Part {
            hundredths,
            value: value.into(),
        })
    }
}

impl Parts {
    /// Turns the percentages into hash bounds, as nginx does: each part covers its share of
    /// `0..=0xffffffff` after the parts before it; `*`, or reaching exactly 100%, takes the
    /// rest. A total over 100% is an error.
    pub fn build(lines: Vec<Part>) -> Result<Parts, PartsError> {
        const WHOLE: u32 = 10_000;
        let mut total: u32 = 0;
        let mut bound: u32 = 0;
        let mut parts = Vec::with_capacity(lines.len());
        for line in lines {
            total = if line.hundredths == 0 {
                WHOLE
            } else {
                total.wrapping_add(line.hundredths)
            };
            let mut hundredths = line.hundredths;
            if total == WHOLE {
                hundredths = 0;
            }
            if total > WHOLE {
                return Err(PartsError::TotalOver100);
            }
            let upper = if hundredths == 0 {
                0
            } else {
                let share = u64::from(hundredths) * u64::from(u32::MAX) / u64::from(WHOLE);
                bound = bound.wrapping_add(share as u32);
                bound
            };
            parts.push((upper, line.value));
        }
        Ok(Parts { parts })
    }

    /// The value for `key`: the first part whose bound is above the key's hash; empty
    /// when the percentages leave the hash uncovered.
    pub fn choose(&self, key: &[u8]) -> &[u8] {
        let hash = murmur_hash2(key);
        self.parts
            .iter()
            .find(|(upper, _)| hash < *upper || *upper == 0)
            .map_or(&b""[..], |(_, value)| value)
    }
}

/// A percentage with at most two decimals, in hundredths, as nginx's `ngx_atofp(.., 2)`
/// reads it: digits with at most one dot; `None` for anything else or an overflow.
fn parse_hundredths(text: &str) -> Option<i64> {
    if text.is_empty() {
        return None;
    }
    let mut value: i64 = 0;
    let mut decimals_left: u32 = 2;
    let mut seen_dot = false;
    for byte in text.bytes() {
        if decimals_left == 0 {
            return None;
        }
        if byte == b'.' {
            if seen_dot {
                return None;
            }
            seen_dot = true;
            continue;
        }
        if !byte.is_ascii_digit() {
            return None;
        }
        value = value.checked_mul(10)?.checked_add(i64::from(byte - b'0'))?;
        if seen_dot {
            decimals_left -= 1;
        }
    }
    value.checked_mul(10_i64.pow(decimals_left))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(lines: &[(&str, &str)]) -> Result<Parts, PartsError> {
        let lines = lines
            .iter()
            .map(|(percent, value)| Part::parse(percent, value.as_bytes()))
            .collect::<Result<Vec<_>, _>>()?;
        Parts::build(lines)
    }

    #[test]
    fn percentages_read_like_nginx() {
        assert_eq!(parse_hundredths("51.2"), Some(5120));
        assert_eq!(parse_hundredths("10"), Some(1000));
        assert_eq!(parse_hundredths("0.01"), Some(1));
        assert_eq!(parse_hundredths("5."), Some(500));
        assert_eq!(parse_hundredths("1.234"), None);
        assert_eq!(parse_hundredths("1.2.3"), None);
        assert_eq!(parse_hundredths("x"), None);
        assert_eq!(parse_hundredths(""), None);
        let error = Part::parse("0%", b"a").unwrap_err();
        assert_eq!(error.to_string(), "invalid percent value \"0%\"");
        assert!(Part::parse("5", b"a").is_err());
        assert!(Part::parse("%", b"a").is_err());
    }

    #[test]
    fn totals_over_100_percent_fail() {
        let error = parts(&[("50%", "a"), ("60%", "b")]).unwrap_err();
        assert_eq!(error.to_string(), "percent total is greater than 100%");
        // Nothing may follow `*`.
        assert!(parts(&[("*", "a"), ("1%", "b")]).is_err());
        assert!(parts(&[("50%", "a"), ("50%", "b")]).is_ok());
    }

    #[test]
    fn buckets_follow_the_hash() {
        // nginx-tests split_clients.t: keys "1".."20" ($connection) fall 12/2/6.
        let split = parts(&[("51.2%", ".one"), ("10%", ".two"), ("*", ".three")]).unwrap();
        let mut counts = [0; 3];
        for connection in 1..=20 {
            match split.choose(connection.to_string().as_bytes()) {
                b".one" => counts[0] += 1,
                b".two" => counts[1] += 1,
                b".three" => counts[2] += 1,
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(counts, [12, 2, 6]);
    }

    #[test]
    fn uncovered_hashes_get_an_empty_value_and_100_percent_covers_all() {
        // "a" hashes to 0x92685f5e, 57% of the range.
        let low = parts(&[("50%", "low")]).unwrap();
        assert_eq!(low.choose(b"a"), b"");
        let high = parts(&[("50%", "low"), ("7.5%", "high")]).unwrap();
        assert_eq!(high.choose(b"a"), b"high");
        let whole = parts(&[("40%", "x"), ("60%", "y")]).unwrap();
        assert_eq!(whole.choose(b"a"), b"y");
    }
}
