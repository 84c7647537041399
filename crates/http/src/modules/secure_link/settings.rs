//! What the secure link directives set.

use crate::kernel::variables::HttpTemplate;
use crate::settings;

settings! {
    /// The secure link module's settings per location. A level that sets
    /// `secure_link_secret` clears `secure_link` and `secure_link_md5` for itself and the
    /// levels below, and one that sets either of those clears the secret: nginx's merge,
    /// where a secret is inherited only where neither of the others is.
    pub struct SecureLinkConf => SecureLink (env) {
        /// `secure_link`: the checksum, then optionally `,` and the expiry time.
        variable: Option<HttpTemplate> = None,
        /// `secure_link_md5`: the text whose MD5 the checksum must be.
        md5: Option<HttpTemplate> = None,
        /// `secure_link_secret`: the word of the older mode (`/PREFIX/HASH/LINK`).
        secret: Option<Box<[u8]>> = None,
    }
}
