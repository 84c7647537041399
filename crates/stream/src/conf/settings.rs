//! What the directives of the `stream` block and its servers set: one struct of `Option`s
//! filled per level, merged from the `stream` level into each server, then resolved with
//! nginx's defaults. The defaults are written here and nowhere else.

use std::sync::Arc;
use std::time::Duration;

use logging::{ErrorLog, Level};
use shared::access::Rules;
use shared::realip::Trusted;
use shared::ssl::{SessionCacheSetting, VerifyClient};

use crate::variables::StreamTemplate;

/// Declares the unresolved struct (`Option` fields), its merge and its resolution.
macro_rules! stream_settings {
    ($(#[$meta:meta])* pub struct $name:ident => $resolved:ident ($env:ident) {
        $( $(#[$field_meta:meta])* $field:ident : $ty:ty = $default:expr, )*
    }) => {
        $(#[$meta])*
        #[derive(Clone, Debug, Default)]
        pub struct $name {
            $( pub $field: Option<$ty>, )*
        }

        /// The settings of a server with every default applied.
        #[derive(Clone, Debug)]
        pub struct $resolved {
            $( $(#[$field_meta])* pub $field: $ty, )*
        }

        impl $name {
            /// Fills what this level left unset from the enclosing level.
            pub fn merge_from(&mut self, outer: &$name) {
                $( if self.$field.is_none() { self.$field = outer.$field.clone(); } )*
            }

            /// Applies the defaults; `$env` is the main error log, the default `error_log`.
            pub fn resolve(self, $env: &Arc<ErrorLog>) -> $resolved {
                $resolved {
                    $( $field: self.$field.unwrap_or_else(|| $default), )*
                }
            }
        }
    };
}

/// `proxy_bind ADDRESS [transparent] | off`.
#[derive(Clone, Debug)]
pub struct Bind {
    pub address: StreamTemplate,
    pub transparent: bool,
}

/// One `limit_conn ZONE NUMBER`.
#[derive(Clone, Debug)]
pub struct LimitConn {
    pub name: Arc<str>,
    /// Index into `StreamConf::limit_zones`, set once the block is read.
    pub zone: usize,
    pub number: u32,
}

/// One `access_log PATH FORMAT [...]`.
#[derive(Clone, Debug)]
pub struct AccessLog {
    /// Index into `StreamConf::access_logs`.
    pub target: usize,
    /// Index into `StreamConf::log_formats`.
    pub format: usize,
    /// `if=CONDITION`: the line is written unless the value is empty or `0`.
    pub condition: Option<StreamTemplate>,
}

stream_settings! {
    /// The settings of the `stream` level or of one server.
    pub struct Settings => Resolved (main_error_log) {
        proxy_connect_timeout: Duration = Duration::from_secs(60),
        proxy_timeout: Duration = Duration::from_secs(600),
        proxy_buffer_size: usize = 16384,
        proxy_next_upstream: bool = true,
        /// 0: as many tries as there are peers.
        proxy_next_upstream_tries: u32 = 0,
        /// Zero: no limit.
        proxy_next_upstream_timeout: Duration = Duration::ZERO,
        /// Bytes per second, zero for no limit; a template since nginx 1.27.0.
        proxy_download_rate: StreamTemplate = StreamTemplate::from_literal(b"0"),
        proxy_upload_rate: StreamTemplate = StreamTemplate::from_literal(b"0"),
        proxy_half_close: bool = false,
        proxy_protocol: bool = false,
        proxy_bind: Option<Bind> = None,
        proxy_socket_keepalive: bool = false,
        /// UDP: datagrams from the client after which a session ends (0: no limit).
        proxy_requests: u64 = 0,
        /// UDP: datagrams expected back per datagram sent; `None` is no limit.
        proxy_responses: Option<u64> = None,
        tcp_nodelay: bool = true,
        preread_buffer_size: usize = 16384,
        preread_timeout: Duration = Duration::from_secs(30),
        proxy_protocol_timeout: Duration = Duration::from_secs(30),
        /// `allow` and `deny`: a level with none inherits the enclosing level's.
        access: Rules = Rules::default(),
        limit_conn: Vec<LimitConn> = Vec::new(),
        limit_conn_log_level: Level = Level::Error,
        limit_conn_dry_run: bool = false,
        set_real_ip_from: Trusted = Trusted::default(),
        /// `access_log`; empty is `off` (the stream block has no default log).
        access_log: Vec<AccessLog> = Vec::new(),
        error_log: Arc<ErrorLog> = Arc::clone(main_error_log),
        ssl_preread: bool = false,
        /// `resolver`: names in `proxy_pass` values are looked up with it.
        resolver: Option<shared::resolver::ResolverConf> = None,
        resolver_timeout: Duration = Duration::from_secs(30),
        /// `ssl_certificate`, several for several key types.
        ssl_certificate: Vec<String> = Vec::new(),
        /// `ssl_certificate_key`, matched with the certificates by position.
        ssl_certificate_key: Vec<String> = Vec::new(),
        /// `ssl_password_file`: the passwords it holds.
        ssl_password_file: Vec<Vec<u8>> = Vec::new(),
        ssl_protocols: tls::Protocols = tls::Protocols::default(),
        ssl_ciphers: String = "HIGH:!aNULL:!MD5".to_owned(),
        ssl_prefer_server_ciphers: bool = false,
        ssl_ecdh_curve: String = "auto".to_owned(),
        ssl_session_cache: SessionCacheSetting = SessionCacheSetting::None,
        ssl_session_timeout: Duration = Duration::from_secs(300),
        ssl_session_tickets: bool = true,
        ssl_session_ticket_key: Vec<String> = Vec::new(),
        ssl_handshake_timeout: Duration = Duration::from_secs(60),
        ssl_alpn: Vec<Vec<u8>> = Vec::new(),
        ssl_verify_client: VerifyClient = VerifyClient::Off,
        ssl_verify_depth: usize = 1,
        ssl_client_certificate: Option<String> = None,
        ssl_trusted_certificate: Option<String> = None,
        ssl_crl: Option<String> = None,
        ssl_reject_handshake: bool = false,
        /// `proxy_ssl_certificate_cache`, for names with variables; `None` is `off`
        /// (nginx's default).
        proxy_ssl_certificate_cache: Option<shared::certificate_cache::CertificateCacheConf> =
            None,
        /// `ssl_certificate_cache`, for names with variables; `None` is `off`.
        ssl_certificate_cache: Option<shared::certificate_cache::CertificateCacheConf> =
            Some(shared::certificate_cache::CertificateCacheConf::DEFAULT),
        ssl_stapling: bool = false,
        /// `ssl_stapling_file`: a DER OCSP response stapled to every certificate.
        ssl_stapling_file: Option<String> = None,
        ssl_stapling_responder: Option<String> = None,
        ssl_stapling_verify: bool = false,
        /// `ssl_conf_command`s, in order: those rustls can follow are applied over the
        /// settings above (`shared::ssl::ConfCommands`).
        ssl_conf_command: Vec<(String, String)> = Vec::new(),
        proxy_ssl: bool = false,
        /// `proxy_ssl_name`; `None`: the host of the `proxy_pass` or `server` address.
        proxy_ssl_name: Option<StreamTemplate> = None,
        proxy_ssl_server_name: bool = false,
        proxy_ssl_verify: bool = false,
        proxy_ssl_verify_depth: usize = 1,
        proxy_ssl_trusted_certificate: Option<String> = None,
        proxy_ssl_crl: Option<String> = None,
        proxy_ssl_certificate: Option<String> = None,
        proxy_ssl_certificate_key: Option<String> = None,
        proxy_ssl_password_file: Vec<Vec<u8>> = Vec::new(),
        proxy_ssl_protocols: tls::Protocols = tls::Protocols::default(),
        proxy_ssl_ciphers: String = "DEFAULT".to_owned(),
        proxy_ssl_session_reuse: bool = true,
        /// `proxy_ssl_alpn`: the protocols offered to the upstream, evaluated per session.
        proxy_ssl_alpn: Vec<StreamTemplate> = Vec::new(),
        /// `proxy_ssl_conf_command`s: `Certificate` and `PrivateKey` replace the client
        /// certificate pair.
        proxy_ssl_conf_command: Vec<(String, String)> = Vec::new(),
    }
}
