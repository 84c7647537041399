//! `modern_browser`, `ancient_browser`, their `_value` directives and the variables
//! `$modern_browser`, `$ancient_browser` and `$msie` (nginx's ngx_http_browser_module):
//! old and new browsers told apart by their `User-Agent`.
//!
//! A `User-Agent` is judged in nginx's order: the first `modern_browser` family whose
//! marker it has (Opera before MSIE) decides by the version after the marker; else an
//! `ancient_browser` substring (or `netscape4`) makes it ancient; else it is unlisted,
//! modern with `modern_browser unlisted` and ancient without. A request without
//! `User-Agent` is unlisted. A location with no browser directive at all judges nothing,
//! and both variables are empty.

pub mod directives;
pub mod settings;
pub mod variables;

use settings::Browser;

/// What a `User-Agent` was judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Age {
    Modern,
    Ancient,
}

/// Parses `X`, `X.X`, `X.X.X` or `X.X.X.X` into one number (the first part in millions,
/// each next part in hundredths of the one before); `None` for anything else or beyond
/// nginx's maxima (4000.99.99.99).
pub fn parse_version(text: &[u8]) -> Option<u64> {
    let parts: Vec<&[u8]> = text.split(|&byte| byte == b'.').collect();
    if parts.len() > 4 {
        return None;
    }
    let mut version = 0;
    let mut scale = 1_000_000;
    for (index, part) in parts.iter().enumerate() {
        if part.is_empty() || part.len() > 4 || !part.iter().all(u8::is_ascii_digit) {
            return None;
        }
        let value: u64 = std::str::from_utf8(part).ok()?.parse().ok()?;
        let limit = if index == 0 { 4000 } else { 99 };
        if value > limit {
            return None;
        }
        version += value * scale;
        scale /= 100;
    }
    Some(version)
}

/// The judgement of `user_agent` under `browser`, or `None` when the location lists no
/// browser at all.
pub fn judge(browser: &Browser, user_agent: Option<&[u8]>) -> Option<Age> {
    let listed = !browser.modern.is_empty()
        || !browser.ancient.is_empty()
        || browser.netscape4
        || browser.unlisted_modern;
    if !listed {
        return None;
    }
    let unlisted = if browser.unlisted_modern {
        Age::Modern
    } else {
        Age::Ancient
    };
    let Some(agent) = user_agent else {
        return Some(unlisted);
    };
    for modern in &browser.modern {
        let (marker, skip) = modern.family.marker();
        let Some(from) = agent.get(skip..) else {
            continue;
        };
        let Some(at) = find(from, marker) else {
            continue;
        };
        let version_text = &from[at + marker.len()..];
        return Some(if version_at_least(version_text, modern.version) {
            Age::Modern
        } else {
            Age::Ancient
        });
    }
    let netscape4 = browser.netscape4
        && agent.len() > "Mozilla/x.x ".len()
        && agent.starts_with(b"Mozilla/")
        && (b'1'..=b'4').contains(&agent[8]);
    if netscape4
        || browser
            .ancient
            .iter()
            .any(|substring| find(agent, substring).is_some())
    {
        return Some(Age::Ancient);
    }
    Some(unlisted)
}

/// Whether the version at the start of `text` (digits and dots, read until anything
/// else) is at least `wanted`, compared as nginx compares it.
fn version_at_least(text: &[u8], wanted: u64) -> bool {
    let mut version: u64 = 0;
    let mut part: u64 = 0;
    let mut scale: u64 = 1_000_000;
    for &byte in text {
        match byte {
            b'0'..=b'9' => {
                part = part
                    .saturating_mul(10)
                    .saturating_add(u64::from(byte - b'0'))
            }
            b'.' => {
                version = version.saturating_add(part.saturating_mul(scale));
                if version > wanted {
                    return true;
                }
                part = 0;
                scale /= 100;
            }
            _ => break,
        }
    }
    version.saturating_add(part.saturating_mul(scale)) >= wanted
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() {
        return Some(0);
    }
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

#[cfg(test)]
mod tests {
    use super::settings::{Family, ModernBrowser};
    use super::*;

    fn browser() -> Browser {
        let mut modern = vec![
            ModernBrowser {
                family: Family::Msie,
                version: parse_version(b"5.5").unwrap(),
            },
            ModernBrowser {
                family: Family::Gecko,
                version: parse_version(b"1.0.0").unwrap(),
            },
            ModernBrowser {
                family: Family::Opera,
                version: parse_version(b"9.0").unwrap(),
            },
            ModernBrowser {
                family: Family::Safari,
                version: parse_version(b"413").unwrap(),
            },
        ];
        modern.sort_by_key(|browser| browser.family);
        Browser {
            modern,
            unlisted_modern: false,
            ancient: vec![Box::from(&b"Lynx"[..])],
            netscape4: true,
            modern_value: Box::from(&b"modern."[..]),
            ancient_value: Box::from(&b"1"[..]),
        }
    }

    fn age(browser: &Browser, agent: &str) -> Option<Age> {
        judge(browser, Some(agent.as_bytes()))
    }

    #[test]
    fn versions_parse_with_nginx_limits() {
        assert_eq!(parse_version(b"5"), Some(5_000_000));
        assert_eq!(parse_version(b"5.5"), Some(5_050_000));
        assert_eq!(parse_version(b"1.0.2.3"), Some(1_000_203));
        assert_eq!(parse_version(b"4000.99.99.99"), Some(4_000_999_999));
        for bad in ["4001", "1.100", "1.2.3.4.5", "", "1.", "a", "1..2"] {
            assert_eq!(parse_version(bad.as_bytes()), None, "{bad}");
        }
    }

    #[test]
    fn modern_browsers_by_version() {
        let browser = browser();
        let msie = |version: &str| {
            age(
                &browser,
                &format!("Mozilla/4.0 (compatible; MSIE {version}; Windows NT 5.1)"),
            )
        };
        assert_eq!(msie("6.0"), Some(Age::Modern));
        assert_eq!(msie("5.5"), Some(Age::Modern));
        assert_eq!(msie("5.01"), Some(Age::Ancient));
        assert_eq!(msie("10.0"), Some(Age::Modern));
        assert_eq!(
            age(&browser, "Mozilla/5.0 (X11; rv:0.9.4) Gecko/20011128"),
            Some(Age::Ancient)
        );
        assert_eq!(
            age(
                &browser,
                "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"
            ),
            Some(Age::Modern)
        );
    }

    #[test]
    fn opera_is_looked_for_before_msie() {
        let browser = browser();
        assert_eq!(
            age(
                &browser,
                "Mozilla/4.0 (compatible; MSIE 6.0; Windows NT 5.1) Opera 8.50"
            ),
            Some(Age::Ancient)
        );
        assert_eq!(
            age(
                &browser,
                "Mozilla/4.0 (compatible; MSIE 6.0; Windows NT 5.1) Opera 9.10"
            ),
            Some(Age::Modern)
        );
    }

    #[test]
    fn ancient_substrings_netscape4_and_unlisted() {
        let mut browser = browser();
        assert_eq!(
            age(&browser, "Lynx/2.8.9rel.1 libwww-FM/2.14"),
            Some(Age::Ancient)
        );
        assert_eq!(
            age(&browser, "Mozilla/4.08 [en] (WinNT; U)"),
            Some(Age::Ancient)
        );
        assert_eq!(age(&browser, "curl/8.5.0"), Some(Age::Ancient));
        assert_eq!(judge(&browser, None), Some(Age::Ancient));
        browser.unlisted_modern = true;
        assert_eq!(age(&browser, "curl/8.5.0"), Some(Age::Modern));
        assert_eq!(judge(&browser, None), Some(Age::Modern));
        assert_eq!(age(&browser, "Lynx/2.8.9rel.1"), Some(Age::Ancient));
    }

    #[test]
    fn a_location_without_directives_judges_nothing() {
        let browser = Browser {
            modern: Vec::new(),
            unlisted_modern: false,
            ancient: Vec::new(),
            netscape4: false,
            modern_value: Box::from(&b"1"[..]),
            ancient_value: Box::from(&b"1"[..]),
        };
        assert_eq!(age(&browser, "Lynx/2.8"), None);
    }
}
