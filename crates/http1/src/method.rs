//! Request methods nginx knows by name.

/// A request method. nginx recognises these names exactly (upper case); any other name made
/// of `A-Z`, `_` and `-` is [`Method::Other`] and keeps its bytes in
/// [`crate::RequestHead::method_bytes`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Method {
    #[default]
    Get,
    Head,
    Post,
    Put,
    Delete,
    Mkcol,
    Copy,
    Move,
    Options,
    Propfind,
    Proppatch,
    Lock,
    Unlock,
    Patch,
    Trace,
    Connect,
    Other,
}

impl Method {
    /// The method named exactly by `bytes` (case-sensitive, as nginx compares them).
    pub fn from_bytes(bytes: &[u8]) -> Method {
        match bytes {
            b"GET" => Method::Get,
            b"HEAD" => Method::Head,
            b"POST" => Method::Post,
            b"PUT" => Method::Put,
            b"DELETE" => Method::Delete,
            b"MKCOL" => Method::Mkcol,
            b"COPY" => Method::Copy,
            b"MOVE" => Method::Move,
            b"OPTIONS" => Method::Options,
            b"PROPFIND" => Method::Propfind,
            b"PROPPATCH" => Method::Proppatch,
            b"LOCK" => Method::Lock,
            b"UNLOCK" => Method::Unlock,
            b"PATCH" => Method::Patch,
            b"TRACE" => Method::Trace,
            b"CONNECT" => Method::Connect,
            _ => Method::Other,
        }
    }

    /// The method's name; empty for [`Method::Other`], whose name is in the request bytes.
    pub fn as_str(&self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Head => "HEAD",
            Method::Post => "POST",
            Method::Put => "PUT",
            Method::Delete => "DELETE",
            Method::Mkcol => "MKCOL",
            Method::Copy => "COPY",
            Method::Move => "MOVE",
            Method::Options => "OPTIONS",
            Method::Propfind => "PROPFIND",
            Method::Proppatch => "PROPPATCH",
            Method::Lock => "LOCK",
            Method::Unlock => "UNLOCK",
            Method::Patch => "PATCH",
            Method::Trace => "TRACE",
            Method::Connect => "CONNECT",
            Method::Other => "",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Method;

    #[test]
    fn names_round_trip() {
        let all = [
            Method::Get,
            Method::Head,
            Method::Post,
            Method::Put,
            Method::Delete,
            Method::Mkcol,
            Method::Copy,
            Method::Move,
            Method::Options,
            Method::Propfind,
            Method::Proppatch,
            Method::Lock,
            Method::Unlock,
            Method::Patch,
            Method::Trace,
            Method::Connect,
        ];
        for method in all {
            assert_eq!(Method::from_bytes(method.as_str().as_bytes()), method);
        }
    }

    #[test]
    fn unknown_and_lower_case_names_are_other() {
        assert_eq!(Method::from_bytes(b"get"), Method::Other);
        assert_eq!(Method::from_bytes(b"FOO"), Method::Other);
        assert_eq!(Method::from_bytes(b""), Method::Other);
        assert_eq!(Method::Other.as_str(), "");
    }
}
