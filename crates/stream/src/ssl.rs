//! TLS in the stream block: termination on `listen ... ssl` addresses (`ssl_*`, the
//! server chosen by SNI among the address's servers) and TLS to upstreams (`proxy_ssl*`).
//! Every TLS call is the `tls` crate's, the handshake driver is the runtime's, and the
//! `$ssl_*` variables are read as the http block reads them (`http::kernel::ssl::variables`).

use std::path::Path;
use std::rc::Rc;
use std::sync::Arc;

use conf::{ConfError, ConfErrorKind};
use logging::Level;
use runtime::Stream;
use runtime::tls::{Accepted, Choice};
use shared::ssl_variables::SslVariable;

use crate::conf::Resolved;
use crate::session::{Session, status};
use shared::ssl::{SessionCacheSetting, VerifyClient};

/// The `$ssl_*` variables of the stream block, by name.
pub const VARIABLES: &[(&str, SslVariable)] = &[
    ("ssl_protocol", SslVariable::Protocol),
    ("ssl_cipher", SslVariable::Cipher),
    ("ssl_ciphers", SslVariable::Ciphers),
    ("ssl_curve", SslVariable::Curve),
    ("ssl_curves", SslVariable::Curves),
    ("ssl_session_id", SslVariable::SessionId),
    ("ssl_session_reused", SslVariable::SessionReused),
    ("ssl_server_name", SslVariable::ServerName),
    ("ssl_alpn_protocol", SslVariable::AlpnProtocol),
    ("ssl_client_verify", SslVariable::ClientVerify),
    ("ssl_client_s_dn", SslVariable::ClientSDn),
    ("ssl_client_i_dn", SslVariable::ClientIDn),
    ("ssl_client_s_dn_legacy", SslVariable::ClientSDnLegacy),
    ("ssl_client_i_dn_legacy", SslVariable::ClientIDnLegacy),
    ("ssl_client_serial", SslVariable::ClientSerial),
    ("ssl_client_fingerprint", SslVariable::ClientFingerprint),
    ("ssl_client_cert", SslVariable::ClientCert),
    ("ssl_client_raw_cert", SslVariable::ClientRawCert),
    ("ssl_client_escaped_cert", SslVariable::ClientEscapedCert),
    ("ssl_client_v_start", SslVariable::ClientVStart),
    ("ssl_client_v_end", SslVariable::ClientVEnd),
    ("ssl_client_v_remain", SslVariable::ClientVRemain),
];

fn load_error(error: tls::TlsError) -> ConfError {
    ConfError::new(ConfErrorKind::Message(error.0), None)
}

fn source(prefix: &Path, value: &str, what: &str) -> Result<tls::PemSource, ConfError> {
    let path = if value.starts_with("data:") || Path::new(value).is_absolute() {
        Path::new(value).to_owned()
    } else {
        prefix.join(value)
    };
    tls::PemSource::read(value, &path, what).map_err(load_error)
}

/// The session caches and ticket keys named by `shared:NAME`, shared by the servers of
/// one load.
#[derive(Debug, Default)]
pub struct TlsBuild {
    caches: Vec<(String, Arc<tls::SessionCache>)>,
    tickets: Vec<(String, Arc<tls::TicketKeys>)>,
    /// The certificates whose OCSP responses are fetched (`ssl_stapling on`).
    pub staplings: Vec<Arc<shared::stapling::Stapling>>,
    /// `"ssl_stapling" ignored, ...` warnings.
    pub warnings: Vec<ConfError>,
}

/// `ssl_stapling on`: the pairs with `ssl_stapling_file`'s response, or with slots for
/// the responses the workers fetch ([`shared::stapling`]).
fn staple(
    settings: &Resolved,
    certificates: &[String],
    pairs: Vec<tls::CertificatePair>,
    build: &mut TlsBuild,
    prefix: &Path,
) -> Result<Vec<tls::CertificatePair>, ConfError> {
    if let Some(file) = &settings.ssl_stapling_file {
        let response = tls::load_ocsp_response(&prefix.join(file)).map_err(load_error)?;
        return Ok(pairs
            .iter()
            .map(|pair| pair.with_ocsp(response.clone()))
            .collect());
    }
    let trusted = match &settings.ssl_trusted_certificate {
        Some(name) => {
            tls::load_trusted(&source(prefix, name, "certificate")?).map_err(load_error)?
        }
        None => Vec::new(),
    };
    let stapled = shared::stapling::staple_pairs(
        pairs,
        certificates,
        &trusted,
        settings.ssl_stapling_responder.as_deref(),
        settings.ssl_stapling_verify,
    );
    build.staplings.extend(stapled.staplings);
    build.warnings.extend(stapled.warnings);
    Ok(stapled.pairs)
}

/// A server's TLS configuration for handshakes, or `None` without `ssl_certificate`.
pub fn server_tls(
    settings: &Resolved,
    build: &mut TlsBuild,
    prefix: &Path,
) -> Result<Option<Arc<tls::ServerTls>>, ConfError> {
    if settings.ssl_certificate.is_empty() {
        return Ok(None);
    }
    // `ssl_conf_command`s rustls can follow, applied over the directives they override.
    let commands = shared::ssl::ConfCommands::read(&settings.ssl_conf_command);
    let (certificates, keys) = match commands.pair() {
        Some((certificate, key)) => (vec![certificate.to_owned()], vec![key.to_owned()]),
        None => (
            settings.ssl_certificate.clone(),
            settings.ssl_certificate_key.clone(),
        ),
    };
    let has_variables = certificates
        .iter()
        .chain(&keys)
        .any(|name| name.contains('$'));
    let mut pairs = Vec::new();
    for (index, certificate) in certificates.iter().enumerate() {
        let Some(key) = keys.get(index) else {
            return Err(load_error(tls::TlsError(format!(
                "no \"ssl_certificate_key\" is defined for certificate \"{certificate}\""
            ))));
        };
        // Names with variables are loaded per handshake (`VariableCertificates`).
        if has_variables {
            continue;
        }
        let certificate = source(prefix, certificate, "certificate")?;
        let key = source(prefix, key, "certificate key")?;
        pairs.push(
            tls::load_pair(&certificate, &key, &settings.ssl_password_file).map_err(load_error)?,
        );
    }
    if settings.ssl_stapling && !pairs.is_empty() {
        pairs = staple(settings, &certificates, pairs, build, prefix)?;
    }
    let ciphers = tls::parse_cipher_list(&settings.ssl_ciphers)
        .map_err(|message| ConfError::new(ConfErrorKind::Message(message), None))?;
    let (curves, _) = tls::parse_curves(&settings.ssl_ecdh_curve)
        .map_err(|message| ConfError::new(ConfErrorKind::Message(message), None))?;
    let timeout = settings.ssl_session_timeout;
    let session_cache = match &settings.ssl_session_cache {
        SessionCacheSetting::Off | SessionCacheSetting::None => None,
        SessionCacheSetting::Cache {
            name: None,
            sessions,
        } => Some(Arc::new(tls::SessionCache::new(*sessions, timeout))),
        SessionCacheSetting::Cache {
            name: Some(name),
            sessions,
        } => {
            let shared = match build.caches.iter().find(|(known, _)| known == name) {
                Some((_, cache)) => Arc::clone(cache),
                None => {
                    let cache = Arc::new(tls::SessionCache::new(*sessions, timeout));
                    build.caches.push((name.clone(), Arc::clone(&cache)));
                    cache
                }
            };
            Some(Arc::new(shared.with_timeout(timeout)))
        }
    };
    let session_tickets = commands
        .session_tickets
        .unwrap_or(settings.ssl_session_tickets);
    let tickets = if !session_tickets {
        None
    } else if settings.ssl_session_ticket_key.is_empty() {
        match &settings.ssl_session_cache {
            SessionCacheSetting::Cache {
                name: Some(name), ..
            } => {
                let keys = match build.tickets.iter().find(|(known, _)| known == name) {
                    Some((_, keys)) => Arc::clone(keys),
                    None => {
                        let keys =
                            Arc::new(tls::TicketKeys::random(timeout, true).map_err(load_error)?);
                        build.tickets.push((name.clone(), Arc::clone(&keys)));
                        keys
                    }
                };
                Some(Arc::new(keys.with_lifetime(timeout)))
            }
            _ => Some(Arc::new(
                tls::TicketKeys::random(timeout, false).map_err(load_error)?,
            )),
        }
    } else {
        let mut files = Vec::new();
        for name in &settings.ssl_session_ticket_key {
            let key = source(prefix, name, "ticket key")?;
            files.push((key.name, key.bytes));
        }
        Some(Arc::new(
            tls::TicketKeys::from_files(&files, timeout).map_err(load_error)?,
        ))
    };
    let verify = client_verify(settings, prefix)?;
    let server = tls::ServerTls::new(tls::ServerSettings {
        pairs,
        certificate_names: certificates.clone(),
        protocols: settings.ssl_protocols,
        ciphers: Some(ciphers),
        prefer_server_ciphers: commands
            .server_preference
            .unwrap_or(settings.ssl_prefer_server_ciphers),
        curves,
        session_cache,
        tickets,
        alpn: settings.ssl_alpn.clone(),
        verify,
        early_data: false,
    })
    .map_err(load_error)?;
    Ok(Some(Arc::new(server)))
}

fn client_verify(
    settings: &Resolved,
    prefix: &Path,
) -> Result<Option<Arc<tls::ClientVerify>>, ConfError> {
    if settings.ssl_verify_client == VerifyClient::Off {
        return Ok(None);
    }
    let mut sent = Vec::new();
    if let Some(name) = &settings.ssl_client_certificate {
        sent = tls::load_trusted(&source(prefix, name, "certificate")?).map_err(load_error)?;
    }
    let mut trusted = Vec::new();
    if let Some(name) = &settings.ssl_trusted_certificate {
        trusted = tls::load_trusted(&source(prefix, name, "certificate")?).map_err(load_error)?;
    }
    let no_ca = settings.ssl_verify_client == VerifyClient::OptionalNoCa;
    if sent.is_empty() && trusted.is_empty() && !no_ca {
        return Err(load_error(tls::TlsError(
            "no ssl_client_certificate or ssl_trusted_certificate for ssl_verify_client".to_owned(),
        )));
    }
    let crl = match &settings.ssl_crl {
        Some(name) => Some(source(prefix, name, "CRL")?),
        None => None,
    };
    let verify = tls::ClientVerify::new(
        settings.ssl_verify_client == VerifyClient::On,
        !no_ca,
        settings.ssl_verify_depth,
        &sent,
        &trusted,
        crl.as_ref(),
    )
    .map_err(load_error)?;
    Ok(Some(Arc::new(verify)))
}

/// A server's TLS configuration towards its upstreams, or `None` without `proxy_ssl on`.
pub fn upstream_tls(
    settings: &Resolved,
    prefix: &Path,
) -> Result<Option<Arc<tls::ClientTls>>, ConfError> {
    if !settings.proxy_ssl {
        return Ok(None);
    }
    let verify = if settings.proxy_ssl_verify {
        let Some(name) = &settings.proxy_ssl_trusted_certificate else {
            return Err(load_error(tls::TlsError(
                "no proxy_ssl_trusted_certificate for proxy_ssl_verify".to_owned(),
            )));
        };
        Some(tls::load_trusted(&source(prefix, name, "certificate")?).map_err(load_error)?)
    } else {
        None
    };
    // `proxy_ssl_conf_command Certificate` and `PrivateKey` replace the pair, as OpenSSL
    // applies them last.
    let commands = shared::ssl::ConfCommands::read(&settings.proxy_ssl_conf_command);
    let (certificate, key) = match commands.pair() {
        Some((certificate, key)) => (Some(certificate.to_owned()), Some(key.to_owned())),
        None => (
            settings.proxy_ssl_certificate.clone(),
            settings.proxy_ssl_certificate_key.clone(),
        ),
    };
    let named = certificate
        .iter()
        .chain(&key)
        .any(|name| name.contains('$'));
    let pair = match (&certificate, &key) {
        // Names with variables: the pair is loaded per session (`VariablePair`).
        _ if named => None,
        (Some(certificate), Some(key)) => {
            let certificate = source(prefix, certificate, "certificate")?;
            let key = source(prefix, key, "certificate key")?;
            Some(
                tls::load_pair(&certificate, &key, &settings.proxy_ssl_password_file)
                    .map_err(load_error)?,
            )
        }
        (Some(certificate), None) => {
            return Err(load_error(tls::TlsError(format!(
                "no \"proxy_ssl_certificate_key\" is defined for certificate \"{certificate}\""
            ))));
        }
        _ => None,
    };
    let ciphers = tls::parse_cipher_list(&settings.proxy_ssl_ciphers)
        .map_err(|message| ConfError::new(ConfErrorKind::Message(message), None))?;
    let crl = match &settings.proxy_ssl_crl {
        Some(name) if verify.is_some() => Some(source(prefix, name, "CRL")?),
        _ => None,
    };
    let client = tls::ClientTls::new(tls::ClientSettings {
        verify,
        crl,
        verify_depth: settings.proxy_ssl_verify_depth,
        pair,
        protocols: settings.proxy_ssl_protocols,
        ciphers: Some(ciphers),
        server_name: settings.proxy_ssl_server_name,
        session_reuse: settings.proxy_ssl_session_reuse,
        alpn: Vec::new(),
    })
    .map_err(load_error)?;
    Ok(Some(Arc::new(client)))
}

/// `ssl_certificate` and `ssl_certificate_key` whose names have variables: the pairs are
/// loaded per handshake on the worker's pool (with `$ssl_server_name` known).
#[derive(Debug)]
pub struct VariableCertificates {
    names: Vec<(
        crate::variables::StreamTemplate,
        crate::variables::StreamTemplate,
    )>,
    passwords: Arc<Vec<Vec<u8>>>,
    prefix: std::path::PathBuf,
    /// `ssl_certificate_cache`: the configurations loaded, by file names.
    cache: Option<std::sync::Mutex<shared::certificate_cache::LoadedPairs<Arc<tls::ServerTls>>>>,
}

impl VariableCertificates {
    /// The cache, whatever a thread that panicked while holding it left.
    fn cache(
        &self,
    ) -> Option<
        std::sync::MutexGuard<'_, shared::certificate_cache::LoadedPairs<Arc<tls::ServerTls>>>,
    > {
        let cache = self.cache.as_ref()?;
        Some(
            cache
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }
}

/// The variable certificates of a server, if its names have variables.
pub fn variable_certificates(
    settings: &Resolved,
    loader: &mut crate::conf::Loader<'_>,
) -> Result<Option<VariableCertificates>, ConfError> {
    let has_variables = settings
        .ssl_certificate
        .iter()
        .chain(&settings.ssl_certificate_key)
        .any(|name| name.contains('$'));
    if !has_variables {
        return Ok(None);
    }
    let span = conf::Span::CommandLine;
    let mut names = Vec::new();
    for (certificate, key) in settings
        .ssl_certificate
        .iter()
        .zip(&settings.ssl_certificate_key)
    {
        names.push((
            loader.template(certificate, &span)?,
            loader.template(key, &span)?,
        ));
    }
    Ok(Some(VariableCertificates {
        names,
        passwords: Arc::new(settings.ssl_password_file.clone()),
        prefix: loader.prefix.to_owned(),
        cache: settings
            .ssl_certificate_cache
            .map(|cache| std::sync::Mutex::new(shared::certificate_cache::LoadedPairs::new(cache))),
    }))
}

fn absolute(prefix: &Path, name: &[u8]) -> String {
    tls::absolute_name(prefix, &String::from_utf8_lossy(name))
}

/// Loads pairs from `(certificate, key)` files (on a pool thread).
fn load_pairs(
    files: &[(String, String)],
    passwords: &[Vec<u8>],
) -> Result<Vec<tls::CertificatePair>, tls::TlsError> {
    let mut pairs = Vec::new();
    for (certificate, key) in files {
        let certificate = tls::PemSource::read(certificate, Path::new(certificate), "certificate")?;
        let key = tls::PemSource::read(key, Path::new(key), "certificate key")?;
        pairs.push(tls::load_pair(&certificate, &key, passwords)?);
    }
    Ok(pairs)
}

/// A pair cache, whatever a thread that panicked while holding it left.
fn lock_pairs(
    cache: &std::sync::Mutex<shared::certificate_cache::LoadedPairs<Arc<tls::CertificatePair>>>,
) -> std::sync::MutexGuard<'_, shared::certificate_cache::LoadedPairs<Arc<tls::CertificatePair>>> {
    cache
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// `proxy_ssl_certificate` and `proxy_ssl_certificate_key` whose names have variables.
#[derive(Debug)]
pub struct VariablePair {
    certificate: crate::variables::StreamTemplate,
    key: crate::variables::StreamTemplate,
    passwords: Arc<Vec<Vec<u8>>>,
    prefix: std::path::PathBuf,
    /// `proxy_ssl_certificate_cache`: the pairs loaded, by file names (a pair whose key
    /// needed a password is not kept, as in nginx).
    cache:
        Option<std::sync::Mutex<shared::certificate_cache::LoadedPairs<Arc<tls::CertificatePair>>>>,
}

/// The variable pair of a server's `proxy_ssl_certificate`, if its names have variables.
pub fn variable_pair(
    settings: &Resolved,
    loader: &mut crate::conf::Loader<'_>,
) -> Result<Option<VariablePair>, ConfError> {
    let (Some(certificate), Some(key)) = (
        &settings.proxy_ssl_certificate,
        &settings.proxy_ssl_certificate_key,
    ) else {
        return Ok(None);
    };
    if !settings.proxy_ssl || !(certificate.contains('$') || key.contains('$')) {
        return Ok(None);
    }
    let span = conf::Span::CommandLine;
    Ok(Some(VariablePair {
        certificate: loader.template(certificate, &span)?,
        key: loader.template(key, &span)?,
        passwords: Arc::new(settings.proxy_ssl_password_file.clone()),
        prefix: loader.prefix.to_owned(),
        cache: settings
            .proxy_ssl_certificate_cache
            .map(|cache| std::sync::Mutex::new(shared::certificate_cache::LoadedPairs::new(cache))),
    }))
}

/// The upstream TLS configuration of this session: the server's, presenting the pair its
/// variable names give (loaded on the worker's pool; an empty certificate name is none).
pub async fn session_client(
    session: &mut Session<'_>,
    base: &Arc<tls::ClientTls>,
) -> Result<Arc<tls::ClientTls>, u16> {
    let Some(pair) = &session.server.upstream_pair else {
        return Ok(Arc::clone(base));
    };
    let certificate = session.eval().render(&pair.certificate);
    if certificate.is_empty() {
        return Ok(Arc::clone(base));
    }
    let key = session.eval().render(&pair.key);
    let files = vec![
        absolute(&pair.prefix, &certificate),
        absolute(&pair.prefix, &key),
    ];
    let now = runtime::clock::monotonic();
    if let Some(found) = pair
        .cache
        .as_ref()
        .and_then(|cache| lock_pairs(cache).get(&files, now))
    {
        return Ok(Arc::new(base.with_pair(&found)));
    }
    let passwords = Arc::clone(&pair.passwords);
    let wanted = files.clone();
    let loaded = session
        .worker
        .on_pool(move || {
            let certificate =
                tls::PemSource::read(&wanted[0], Path::new(&wanted[0]), "certificate")?;
            let key = tls::PemSource::read(&wanted[1], Path::new(&wanted[1]), "certificate key")?;
            let encrypted = key.bytes.windows(9).any(|window| window == b"ENCRYPTED");
            tls::load_pair(&certificate, &key, &passwords).map(|pair| (pair, encrypted))
        })
        .await
        .map(|loaded| {
            loaded.map(|(loaded, encrypted)| {
                let loaded = Arc::new(loaded);
                if let Some(cache) = &pair.cache
                    && !encrypted
                {
                    lock_pairs(cache).insert(
                        files,
                        Arc::clone(&loaded),
                        runtime::clock::monotonic(),
                    );
                }
                loaded
            })
        });
    match loaded {
        Some(Ok(pair)) => Ok(Arc::new(base.with_pair(&pair))),
        Some(Err(error)) => {
            session.log(Level::Error, format_args!("{}", error.0));
            Err(status::BAD_GATEWAY)
        }
        None => Err(status::BAD_GATEWAY),
    }
}

/// The TLS handshake of a session on an `ssl` address, under the default server's
/// `ssl_handshake_timeout`: SNI picks the server, whose configuration finishes it. The
/// stream carries TLS after; `Err` is the status the session ends with (logged).
pub async fn handshake(session: &mut Session<'_>, stream: Stream) -> Result<Stream, u16> {
    let Stream::Tcp(tcp) = stream else {
        return Ok(stream);
    };
    session.action = Some("SSL handshaking");
    let timeout = session.server.settings.ssl_handshake_timeout;
    let conf = session.conf;
    let entry = session.entry;
    let chosen = std::cell::Cell::new(entry.servers[0]);
    let worker = session.worker;
    let failure: std::cell::RefCell<Option<String>> = std::cell::RefCell::new(None);
    let vars = &mut session.vars;
    let handshake = async {
        let pending = match runtime::tls::read_hello(tcp).await {
            Ok(pending) => pending,
            Err(accepted) => return accepted,
        };
        if let Some(name) = pending.server_name()
            && entry.servers.len() > 1
            && let Some(index) = crate::server_name::find(
                conf,
                &entry.servers,
                name.to_ascii_lowercase().as_bytes(),
                vars,
            )
        {
            chosen.set(index);
        }
        let server = &conf.servers[chosen.get()];
        let choice = if server.settings.ssl_reject_handshake {
            Choice::Reject
        } else {
            let owner = if server.tls.is_some() {
                server
            } else {
                &conf.servers[entry.servers[0]]
            };
            match (&owner.tls, &owner.certificates) {
                (Some(tls), None) => Choice::Serve(Arc::clone(tls), 16 * 1024),
                (Some(tls), Some(names)) => {
                    // The names may use `$ssl_server_name`: the hello's is given.
                    let name = pending.server_name();
                    vars.tls = Some(Rc::new(tls::HandshakeInfo::with_server_name(
                        name.as_deref(),
                    )));
                    let mut eval = crate::variables::Eval::new(
                        conf,
                        vars,
                        worker.clock.wall(),
                        &worker.hostname,
                    );
                    let files: Vec<(String, String)> = names
                        .names
                        .iter()
                        .map(|(certificate, key)| {
                            (
                                absolute(&names.prefix, &eval.render(certificate)),
                                absolute(&names.prefix, &eval.render(key)),
                            )
                        })
                        .collect();
                    vars.tls = None;
                    let key: shared::certificate_cache::FileNames = files
                        .iter()
                        .flat_map(|(certificate, key)| [certificate.clone(), key.clone()])
                        .collect();
                    let now = runtime::clock::monotonic();
                    let cached = names.cache().and_then(|mut cache| cache.get(&key, now));
                    let passwords = Arc::clone(&names.passwords);
                    let loaded = match cached {
                        Some(configuration) => Some(Ok(configuration)),
                        None => worker
                            .on_pool(move || load_pairs(&files, &passwords))
                            .await
                            .map(|loaded| {
                                loaded.map(|pairs| {
                                    let configuration = Arc::new(tls.with_pairs(&pairs));
                                    if let Some(mut cache) = names.cache() {
                                        cache.insert(
                                            key,
                                            Arc::clone(&configuration),
                                            runtime::clock::monotonic(),
                                        );
                                    }
                                    configuration
                                })
                            }),
                    };
                    match loaded {
                        Some(Ok(configuration)) => Choice::Serve(configuration, 16 * 1024),
                        Some(Err(error)) => {
                            *failure.borrow_mut() = Some(error.0);
                            Choice::Fail("cert cb error".to_owned())
                        }
                        None => Choice::Fail("cert cb error".to_owned()),
                    }
                }
                (None, _) => Choice::Reject,
            }
        };
        pending.finish(choice).await
    };
    let accepted = tokio::time::timeout(timeout, handshake).await;
    session.switch_server(chosen.get());
    if let Some(message) = failure.take() {
        session.log(Level::Error, format_args!("{message}"));
    }
    let message = match accepted {
        Ok(Accepted::Tls(stream, info)) => {
            let info = Rc::new(info);
            session.vars.tls = Some(Rc::clone(&info));
            if let Some(refusal) = client_refusal(session.server.settings.ssl_verify_client, &info) {
                session.log(Level::Info, format_args!("{refusal}"));
                return Err(status::INTERNAL_SERVER_ERROR);
            }
            session.action = None;
            return Ok(stream);
        }
        Ok(Accepted::Plain(_)) => concat!(
            "SSL_do_handshake() failed ",
            "(SSL: error:0A00010B:SSL routines::wrong version number)"
        )
        .to_owned(),
        Ok(Accepted::Closed) => "peer closed connection in SSL handshake".to_owned(),
        Ok(Accepted::Rejected) => {
            "SSL_do_handshake() failed (SSL: error:0A0000E0:SSL routines::tlsv1 alert unrecognized name)".to_owned()
        }
        Ok(Accepted::Failed(reason)) => format!("SSL_do_handshake() failed (SSL: {reason})"),
        Err(_) => "client timed out (110: Connection timed out)".to_owned(),
    };
    session.log(Level::Info, format_args!("{message}"));
    Err(status::INTERNAL_SERVER_ERROR)
}

/// Why a client whose certificate was asked for is refused after the handshake, in
/// nginx's words: none under `ssl_verify_client on`, or one that failed verification.
fn client_refusal(mode: VerifyClient, info: &tls::HandshakeInfo) -> Option<String> {
    if matches!(mode, VerifyClient::Off | VerifyClient::OptionalNoCa) {
        return None;
    }
    let mut verdict = Vec::new();
    shared::ssl_variables::append(SslVariable::ClientVerify, Some(info), &mut verdict);
    if let Some(reason) = verdict.strip_prefix(b"FAILED:") {
        return Some(format!(
            "client SSL certificate verify error: ({})",
            String::from_utf8_lossy(reason)
        ));
    }
    if verdict == b"NONE" && mode == VerifyClient::On {
        return Some("client sent no required SSL certificate".to_owned());
    }
    None
}

/// The name to verify and send as SNI for an upstream: `proxy_ssl_name`, else the host
/// the `proxy_pass` names (an `upstream` block's name); a port is left out.
pub fn upstream_name(session: &mut Session<'_>, proxy_host: &str) -> String {
    let value = match &session.server.settings.proxy_ssl_name {
        Some(template) => String::from_utf8_lossy(&session.eval().render(template)).into_owned(),
        None => proxy_host.to_owned(),
    };
    let host = match value.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') || host.ends_with(']') => {
            if port.bytes().all(|byte| byte.is_ascii_digit()) {
                host.to_owned()
            } else {
                value.clone()
            }
        }
        _ => value.clone(),
    };
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned()
}

/// `proxy_ssl_alpn`: the protocols offered to the upstream, each value evaluated for the
/// session; an empty value is left out, so a list of empty values offers none.
pub fn upstream_alpn(session: &mut Session<'_>) -> Vec<Vec<u8>> {
    let templates = &session.server.settings.proxy_ssl_alpn;
    let mut protocols = Vec::with_capacity(templates.len());
    for template in templates {
        let value = session.eval().render(template);
        if !value.is_empty() {
            protocols.push(value);
        }
    }
    protocols
}

/// Runs the TLS handshake with an upstream within `timeout`, offering `alpn`.
pub async fn connect_upstream(
    stream: Stream,
    client: &tls::ClientTls,
    name: &str,
    alpn: Vec<Vec<u8>>,
    timeout: std::time::Duration,
) -> std::io::Result<Stream> {
    let Stream::Tcp(tcp) = stream else {
        return Ok(stream);
    };
    let session = client
        .connect_with_alpn(name, alpn)
        .map_err(|error| std::io::Error::other(error.0))?;
    match tokio::time::timeout(timeout, runtime::tls::connect(tcp, session)).await {
        Ok(result) => result,
        Err(_) => Err(std::io::ErrorKind::TimedOut.into()),
    }
}
