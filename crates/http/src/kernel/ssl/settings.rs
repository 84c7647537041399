//! What the `ssl_*` directives set: per virtual server, inherited from `http`.

use std::time::Duration;

pub use shared::ssl::{SessionCacheSetting, VerifyClient};

use crate::settings;

pub use shared::certificate_cache::CertificateCacheConf;

/// A value given as a file name or `data:`, and whether it has variables (not loadable
/// at configuration time).
pub type Names = Vec<String>;

settings! {
    /// The TLS settings of a virtual server.
    pub struct SslServerConf => SslServer (env) {
        /// `ssl on` (deprecated): where it was written; every `listen` of the server
        /// speaks TLS.
        enable: Option<conf::Span> = None,
        /// `ssl_certificate` (several: one pair per key type).
        certificates: Names = Vec::new(),
        /// `ssl_certificate_key`, matched with the certificates by position.
        certificate_keys: Names = Vec::new(),
        /// `ssl_certificate_cache`, for names with variables; `None` is `off`.
        certificate_cache: Option<CertificateCacheConf> = Some(CertificateCacheConf::DEFAULT),
        /// `ssl_password_file`: the passwords it holds, tried in order.
        passwords: Vec<Vec<u8>> = Vec::new(),
        /// `ssl_protocols`
        protocols: tls::Protocols = tls::Protocols::default(),
        /// `ssl_ciphers`
        ciphers: String = "HIGH:!aNULL:!MD5".to_owned(),
        /// `ssl_prefer_server_ciphers`
        prefer_server_ciphers: bool = false,
        /// `ssl_ecdh_curve`
        ecdh_curve: String = "auto".to_owned(),
        /// `ssl_session_cache`
        session_cache: SessionCacheSetting = SessionCacheSetting::None,
        /// `ssl_session_timeout`
        session_timeout: Duration = Duration::from_secs(300),
        /// `ssl_session_tickets`
        session_tickets: bool = true,
        /// `ssl_conf_command`s that mean something to rustls, in order: applied over the
        /// other settings, as OpenSSL applies them last.
        conf_commands: Vec<(String, String)> = Vec::new(),
        /// `ssl_session_ticket_key`: key files, the first the current one.
        session_ticket_keys: Names = Vec::new(),
        /// `ssl_buffer_size`
        buffer_size: u64 = 16 * 1024,
        /// `ssl_handshake_timeout`
        handshake_timeout: Duration = Duration::from_secs(60),
        /// `ssl_reject_handshake`
        reject_handshake: bool = false,
        /// `ssl_early_data`
        early_data: bool = false,
        /// `ssl_verify_client`
        verify_client: VerifyClient = VerifyClient::Off,
        /// `ssl_verify_depth`
        verify_depth: u64 = 1,
        /// `ssl_client_certificate`
        client_certificate: Option<String> = None,
        /// `ssl_trusted_certificate`
        trusted_certificate: Option<String> = None,
        /// `ssl_crl`
        crl: Option<String> = None,
        /// `ssl_stapling`
        stapling: bool = false,
        /// `ssl_stapling_file`: a DER OCSP response stapled to every certificate's handshakes.
        stapling_file: Option<String> = None,
        /// `ssl_stapling_responder`: the OCSP responder asked instead of the certificate's.
        stapling_responder: Option<String> = None,
        /// `ssl_stapling_verify`
        stapling_verify: bool = false,
    }
}
