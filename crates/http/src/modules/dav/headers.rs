//! The WebDAV request headers (RFC 4918 §10): `Depth`, `Overwrite` and `Destination`,
//! read as nginx reads them. Pure.

/// `Depth` (RFC 4918 §10.2); absent is infinity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Depth {
    Zero,
    One,
    Infinity,
}

/// The `Depth` header's value, or `Err` for one that is none of `0`, `1`, `infinity`.
pub fn depth(value: Option<&[u8]>) -> Result<Depth, ()> {
    match value {
        None | Some(b"infinity") => Ok(Depth::Infinity),
        Some(b"0") => Ok(Depth::Zero),
        Some(b"1") => Ok(Depth::One),
        Some(_) => Err(()),
    }
}

/// `Overwrite` (RFC 4918 §10.6): `T` or `F` in either case; absent is `T`.
pub fn overwrite(value: Option<&[u8]>) -> Result<bool, ()> {
    match value {
        None | Some(b"T" | b"t") => Ok(true),
        Some(b"F" | b"f") => Ok(false),
        Some(_) => Err(()),
    }
}

/// Why a `Destination` was refused (400 either way, with different lines).
#[derive(Debug, PartialEq, Eq)]
pub enum DestinationError {
    Invalid,
    /// An absolute URI naming another host than the request's.
    OtherHost,
}

/// The path a `Destination` names (RFC 4918 §10.3): an absolute path, or an `http` or
/// `https` URI whose host (its port aside) is the request's `host`. The path is decoded
/// and its dot segments resolved as a request's `$uri` is; one that would climb above `/`,
/// a bad escape or `%00` is refused, so a destination never leaves the root.
pub fn destination(value: &[u8], host: &[u8]) -> Result<Vec<u8>, DestinationError> {
    let path = if value.starts_with(b"/") {
        value
    } else {
        let rest = value
            .strip_prefix(b"http://")
            .or_else(|| value.strip_prefix(b"https://"))
            .ok_or(DestinationError::Invalid)?;
        let slash = rest
            .iter()
            .position(|&byte| byte == b'/')
            .ok_or(DestinationError::Invalid)?;
        if !authority_host(&rest[..slash]).eq_ignore_ascii_case(host) {
            return Err(DestinationError::OtherHost);
        }
        &rest[slash..]
    };
    let path = path
        .iter()
        .position(|&byte| byte == b'?' || byte == b'#')
        .map_or(path, |end| &path[..end]);
    let mut decoded = Vec::with_capacity(path.len());
    http1::uri::normalize(path, false, &mut decoded).map_err(|_| DestinationError::Invalid)?;
    Ok(decoded)
}

/// The host of `host[:port]` or `[v6]:port`, without a trailing dot.
fn authority_host(authority: &[u8]) -> &[u8] {
    let host = if authority.starts_with(b"[") {
        authority
            .iter()
            .position(|&byte| byte == b']')
            .map_or(authority, |end| &authority[..=end])
    } else {
        authority
            .iter()
            .position(|&byte| byte == b':')
            .map_or(authority, |colon| &authority[..colon])
    };
    host.strip_suffix(b".").unwrap_or(host)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_and_overwrite_take_exactly_their_values() {
        assert_eq!(depth(None), Ok(Depth::Infinity));
        assert_eq!(depth(Some(b"infinity")), Ok(Depth::Infinity));
        assert_eq!(depth(Some(b"0")), Ok(Depth::Zero));
        assert_eq!(depth(Some(b"1")), Ok(Depth::One));
        assert_eq!(depth(Some(b"2")), Err(()));
        assert_eq!(depth(Some(b"bogus")), Err(()));
        assert_eq!(overwrite(None), Ok(true));
        assert_eq!(overwrite(Some(b"t")), Ok(true));
        assert_eq!(overwrite(Some(b"F")), Ok(false));
        assert_eq!(overwrite(Some(b"TRUE")), Err(()));
        assert_eq!(overwrite(Some(b"")), Err(()));
    }

    #[test]
    fn destinations_are_paths_on_this_host() {
        let ok = |value: &[u8]| destination(value, b"localhost").unwrap();
        assert_eq!(ok(b"/a%20b"), b"/a b");
        assert_eq!(ok(b"http://localhost/full"), b"/full");
        assert_eq!(ok(b"http://LocalHost:8080/port"), b"/port");
        assert_eq!(ok(b"https://localhost./x?y"), b"/x");
        assert_eq!(ok(b"/a/./b/../c"), b"/a/c");
        let refused = |value: &[u8]| destination(value, b"localhost").unwrap_err();
        assert_eq!(refused(b"ftp://localhost/x"), DestinationError::Invalid);
        assert_eq!(refused(b"http://localhost"), DestinationError::Invalid);
        assert_eq!(refused(b"relative"), DestinationError::Invalid);
        assert_eq!(
            refused(b"http://otherhost/file"),
            DestinationError::OtherHost
        );
        assert_eq!(refused(b"/../etc/passwd"), DestinationError::Invalid);
        assert_eq!(refused(b"/a/%2e%2e/%2e%2e/etc"), DestinationError::Invalid);
        assert_eq!(refused(b"/a%00b"), DestinationError::Invalid);
        assert_eq!(refused(b"/a%zz"), DestinationError::Invalid);
        assert_eq!(
            destination(b"http://[::1]:8080/v6", b"[::1]").unwrap(),
            b"/v6"
        );
    }
}
