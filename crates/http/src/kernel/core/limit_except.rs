//! `limit_except METHOD ... { ... }`: the methods a location serves with its own settings;
//! requests with any other method are served with the block's.

use http1::Method;

/// The methods `limit_except` can name, as nginx lists them.
const NAMED: &[Method] = &[
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
];

/// A set of methods.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Methods(u32);

impl Methods {
    fn bit(method: Method) -> u32 {
        1 << method as u32
    }

    /// Parses `limit_except`'s arguments; the error is the name nginx rejects. Allowing
    /// GET allows HEAD too.
    pub fn parse<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<Methods, &'a str> {
        let mut set = Methods::default();
        for name in names {
            let method = NAMED
                .iter()
                .find(|method| method.as_str().eq_ignore_ascii_case(name))
                .ok_or(name)?;
            set.0 |= Methods::bit(*method);
        }
        if set.contains(Method::Get) {
            set.0 |= Methods::bit(Method::Head);
        }
        Ok(set)
    }

    pub fn contains(self, method: Method) -> bool {
        self.0 & Methods::bit(method) != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn get_allows_head() {
        let set = Methods::parse(["get", "POST"]).unwrap();
        assert!(set.contains(Method::Get));
        assert!(set.contains(Method::Head));
        assert!(set.contains(Method::Post));
        assert!(!set.contains(Method::Put));
        assert!(!set.contains(Method::Other));
    }

    #[test]
    fn head_alone_does_not_allow_get() {
        let set = Methods::parse(["HEAD"]).unwrap();
        assert!(set.contains(Method::Head));
        assert!(!set.contains(Method::Get));
    }

    #[test]
    fn unknown_and_unlisted_methods_are_refused() {
        assert_eq!(Methods::parse(["GET", "FOO"]), Err("FOO"));
        // nginx's list has no TRACE or CONNECT.
        assert_eq!(Methods::parse(["TRACE"]), Err("TRACE"));
    }
}
