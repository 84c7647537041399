//! What the WebDAV directives set.

use crate::settings;

/// The methods `dav_methods` lets the module handle, as bits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DavMethods(u8);

impl DavMethods {
    /// `dav_methods off`.
    pub const NONE: DavMethods = DavMethods(0);

    /// The bit of `method`, if the module can handle it.
    fn bit(method: http1::Method) -> u8 {
        match method {
            http1::Method::Put => 1,
            http1::Method::Delete => 2,
            http1::Method::Mkcol => 4,
            http1::Method::Copy => 8,
            http1::Method::Move => 16,
            _ => 0,
        }
    }

    /// The method named in `dav_methods` (`PUT`, `DELETE`, `MKCOL`, `COPY`, `MOVE`).
    pub fn named(name: &str) -> Option<http1::Method> {
        let method = http1::Method::from_bytes(name.as_bytes());
        (DavMethods::bit(method) != 0).then_some(method)
    }

    pub fn with(self, method: http1::Method) -> DavMethods {
        DavMethods(self.0 | DavMethods::bit(method))
    }

    pub fn contains(self, method: http1::Method) -> bool {
        self.0 & DavMethods::bit(method) != 0
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
}

settings! {
    /// The WebDAV module's settings per location.
    pub struct DavConf => Dav (env) {
        /// `dav_methods`
        methods: DavMethods = DavMethods::NONE,
        /// `dav_access`, as the mode of the files the module makes; directories get
        /// search rights wherever they may be read.
        access: u32 = 0o600,
        /// `create_full_put_path`
        create_full_put_path: bool = false,
        /// `min_delete_depth`
        min_delete_depth: u64 = 0,
    }
}

impl Dav {
    /// The mode of a directory the module makes: `dav_access` with search rights wherever
    /// it gives read rights.
    pub fn directory_access(&self) -> u32 {
        self.access | (self.access & 0o444) >> 2
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn methods_are_a_set_of_the_five() {
        let methods = DavMethods::NONE
            .with(http1::Method::Put)
            .with(http1::Method::Move);
        assert!(methods.contains(http1::Method::Put) && methods.contains(http1::Method::Move));
        assert!(!methods.contains(http1::Method::Delete));
        assert!(!methods.contains(http1::Method::Get));
        assert_eq!(DavMethods::named("MKCOL"), Some(http1::Method::Mkcol));
        assert_eq!(DavMethods::named("GET"), None);
        assert_eq!(DavMethods::named("put"), None);
    }
}
