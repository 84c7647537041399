//! HTTPS: the `ssl_*` directives, the TLS configuration of each virtual server (built by
//! the `tls` crate when the configuration loads), the handshake of a client connection
//! with SNI choosing the server, and the `$ssl_*` variables.

pub mod certificates;
pub mod directives;
pub mod handshake;
pub mod pairs;
pub mod settings;
pub mod stapling;
pub mod variables;

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use conf::{ConfError, ConfErrorKind, Directive, Span};
use settings::{SessionCacheSetting, SslServer, VerifyClient};

use crate::kernel::conf::LoadContext;
use crate::kernel::ssl::pairs::VariableCertificates;

/// nginx's answer to a request on a TLS port that it refuses once the head is read: plain
/// HTTP (497), a client certificate that failed verification (495) or is missing under
/// `ssl_verify_client on` (496); with the `info` line's reason.
pub(crate) fn refusal(
    worker: &crate::kernel::worker::HttpWorker,
    connection: (&crate::kernel::request::ConnectionInfo, bool),
    server: crate::kernel::conf::ServerId,
    host: &[u8],
) -> Option<(u16, String)> {
    let (info, plain_on_tls_port) = connection;
    if plain_on_tls_port {
        return Some((
            497,
            "client sent plain HTTP request to HTTPS port".to_owned(),
        ));
    }
    let handshake = info.tls.as_deref()?;
    let mode = worker.conf().server(server).ssl.verify_client;
    // A server that checks client certificates serves only the name they were sent for.
    if let Some(name) = handshake.server_name()
        && !host.is_empty()
        && !name.as_bytes().eq_ignore_ascii_case(host)
        && mode != VerifyClient::Off
    {
        return Some((
            421,
            "client attempted to request the server name different from the one that was \
             negotiated"
                .to_owned(),
        ));
    }
    if mode == VerifyClient::Off || mode == VerifyClient::OptionalNoCa {
        return None;
    }
    let verdict = handshake
        .client_certificate
        .as_ref()
        .map_or("NONE", |certificate| certificate.verify.as_str());
    if let Some(reason) = verdict.strip_prefix("FAILED:") {
        let code = match reason {
            "certificate has expired" => 10,
            "certificate is not yet valid" => 9,
            "certificate revoked" => 23,
            "unable to get certificate CRL" => 3,
            "certificate chain too long" => 22,
            _ => 20,
        };
        return Some((
            495,
            format!("client SSL certificate verify error: ({code}:{reason})"),
        ));
    }
    if verdict == "NONE" && mode == VerifyClient::On {
        return Some((496, "client sent no required SSL certificate".to_owned()));
    }
    None
}

/// `ssl_password_file` and its upstream siblings (`proxy_ssl_password_file`, ...): the
/// file, read at load.
pub(crate) fn parse_password_file(
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<Vec<Vec<u8>>, ConfError> {
    let path = context.path(directive.arg(0));
    shared::ssl::read_passwords(&path)
        .map_err(|message| ConfError::message(message, &directive.span))
}

/// `ssl_ciphers` and its upstream siblings (`shared::ssl::parse_ciphers`).
pub(crate) fn parse_ciphers(
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<String, ConfError> {
    shared::ssl::parse_ciphers(directive, &mut context.warnings)
}

/// `ssl_conf_command` and its upstream siblings (`shared::ssl::warn_conf_command`).
pub(crate) fn warn_conf_command(directive: &Directive, context: &mut LoadContext<'_>) {
    shared::ssl::warn_conf_command(directive, &mut context.warnings);
}

/// `ssl_protocols` and its upstream siblings (`shared::ssl::parse_protocols`).
pub(crate) fn parse_protocols(
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<tls::Protocols, ConfError> {
    shared::ssl::parse_protocols(directive, &mut context.warnings)
}

/// What the TLS configurations of one load share: the named session caches.
#[derive(Debug, Default)]
pub(crate) struct TlsBuild {
    caches: HashMap<String, Arc<tls::SessionCache>>,
    tickets: HashMap<String, Arc<tls::TicketKeys>>,
    /// The certificates whose OCSP responses are fetched (`ssl_stapling on`).
    pub(crate) staplings: Vec<Arc<shared::stapling::Stapling>>,
    /// Warnings of the load (`"ssl_stapling" ignored, ...`).
    pub(crate) warnings: Vec<ConfError>,
}

fn load_error(error: tls::TlsError) -> ConfError {
    ConfError::new(ConfErrorKind::Message(error.0), None)
}

fn source(prefix: &Path, value: &str, what: &str) -> Result<tls::PemSource, ConfError> {
    let path = if value.starts_with("data:") {
        Path::new(value).to_owned()
    } else {
        let path = Path::new(value);
        if path.is_absolute() {
            path.to_owned()
        } else {
            prefix.join(path)
        }
    };
    tls::PemSource::read(value, &path, what).map_err(load_error)
}

/// nginx's check once the servers are known: the default server of every `ssl` address
/// needs a certificate, unless it rejects handshakes. `ssl_listens` holds each server's
/// first `listen ... ssl`, by server index.
/// `ssl on`: every `listen` of the server becomes a `listen ... ssl`; a server without a
/// certificate fails as nginx 1.22 failed it, naming where `ssl on` was written.
pub(crate) fn enable_on_listens(
    settings: &SslServer,
    span: &Span,
    specs: &mut [shared::listen::ListenSpec],
) -> Result<(), ConfError> {
    if settings.certificates.is_empty() && !settings.reject_handshake {
        return Err(ConfError::new(
            ConfErrorKind::Message(format!(
                "no \"ssl_certificate\" is defined for the \"ssl\" directive in {span}"
            )),
            None,
        ));
    }
    for spec in specs {
        spec.ssl = true;
    }
    Ok(())
}

pub(crate) fn check_defaults(
    servers: &[crate::kernel::conf::Server],
    sockets: &[crate::kernel::conf::SocketConf],
    ssl_listens: &[Option<Span>],
) -> Result<(), ConfError> {
    for address in sockets.iter().flat_map(|socket| &socket.addresses) {
        if !address.ssl && !address.quic {
            continue;
        }
        let index = address.default_server.0 as usize;
        let server = &servers[index];
        if server.tls.is_some() || server.ssl.reject_handshake {
            continue;
        }
        if let Some(Some(span)) = ssl_listens.get(index) {
            let kind = if address.quic { "quic" } else { "ssl" };
            return Err(ConfError::message(
                format!(
                    "no \"ssl_certificate\" is defined for the \"listen ... {kind}\" directive"
                ),
                span,
            ));
        }
    }
    Ok(())
}

/// A virtual server's TLS: its configuration, and when a certificate name has variables,
/// what loads the pairs per handshake (the configuration then has no certificate).
pub(crate) type ServerTlsParts = (
    Option<Arc<tls::ServerTls>>,
    Option<Arc<VariableCertificates>>,
);

/// The settings with the `ssl_conf_command`s that rustls can follow applied over them:
/// `Certificate` and `PrivateKey` replace the configured pairs (both are needed),
/// `Options [-]SessionTicket` and `[-]ServerPreference` set `ssl_session_tickets` and
/// `ssl_prefer_server_ciphers`.
fn with_conf_commands(settings: &SslServer) -> SslServer {
    let mut adjusted = settings.clone();
    let commands = shared::ssl::ConfCommands::read(&settings.conf_commands);
    if let Some(on) = commands.session_tickets {
        adjusted.session_tickets = on;
    }
    if let Some(on) = commands.server_preference {
        adjusted.prefer_server_ciphers = on;
    }
    if let Some((certificate, key)) = commands.pair() {
        adjusted.certificates = vec![certificate.to_owned()];
        adjusted.certificate_keys = vec![key.to_owned()];
    }
    adjusted
}

/// The TLS configuration of one virtual server, or `None` when it has no certificate.
/// With `alpn_h2` (the server has `http2 on`) ALPN offers `h2` before `http/1.1`.
pub(crate) fn server_tls(
    settings: &SslServer,
    alpn_h2: bool,
    build: &mut TlsBuild,
    prefix: &Path,
    variables: &mut crate::kernel::variables::VariableRegistry,
) -> Result<ServerTlsParts, ConfError> {
    if settings.certificates.is_empty() {
        return Ok((None, None));
    }
    let adjusted;
    let settings = if settings.conf_commands.is_empty() {
        settings
    } else {
        adjusted = with_conf_commands(settings);
        &adjusted
    };
    let has_variables = settings
        .certificates
        .iter()
        .chain(&settings.certificate_keys)
        .any(|name| name.contains('$'));
    let mut pairs = Vec::new();
    let mut names = Vec::new();
    for (index, certificate) in settings.certificates.iter().enumerate() {
        let Some(key) = settings.certificate_keys.get(index) else {
            return Err(load_error(tls::TlsError(format!(
                "no \"ssl_certificate_key\" is defined for certificate \"{certificate}\""
            ))));
        };
        if has_variables {
            names.push((
                name_template(certificate, variables)?,
                name_template(key, variables)?,
            ));
            continue;
        }
        let certificate = source(prefix, certificate, "certificate")?;
        let key = source(prefix, key, "certificate key")?;
        pairs.push(tls::load_pair(&certificate, &key, &settings.passwords).map_err(load_error)?);
    }
    let mut ocsp = None;
    if settings.stapling
        && let Some(file) = &settings.stapling_file
    {
        let response = tls::load_ocsp_response(&prefix.join(file)).map_err(load_error)?;
        pairs = pairs
            .iter()
            .map(|pair| pair.with_ocsp(response.clone()))
            .collect();
        ocsp = Some(response);
    } else if settings.stapling && !pairs.is_empty() {
        pairs = staple_from_responders(settings, pairs, build, prefix)?;
    }
    let server = Arc::new(configuration(settings, alpn_h2, build, prefix, pairs)?);
    if !has_variables {
        return Ok((Some(server), None));
    }
    let variable = VariableCertificates::new(names, settings, ocsp, prefix, server.clone());
    Ok((Some(server), Some(Arc::new(variable))))
}

/// `ssl_stapling on` without a file: each pair gets a slot its fetched responses go to;
/// a certificate that cannot be stapled (no issuer, no responder) is served without, with
/// nginx's warning.
fn staple_from_responders(
    settings: &SslServer,
    pairs: Vec<tls::CertificatePair>,
    build: &mut TlsBuild,
    prefix: &Path,
) -> Result<Vec<tls::CertificatePair>, ConfError> {
    let trusted = match &settings.trusted_certificate {
        Some(name) => {
            tls::load_trusted(&source(prefix, name, "certificate")?).map_err(load_error)?
        }
        None => Vec::new(),
    };
    let stapled = shared::stapling::staple_pairs(
        pairs,
        &settings.certificates,
        &trusted,
        settings.stapling_responder.as_deref(),
        settings.stapling_verify,
    );
    build.staplings.extend(stapled.staplings);
    build.warnings.extend(stapled.warnings);
    Ok(stapled.pairs)
}

/// A certificate or key name compiled (a `data:` value too: `data:$variable` takes the PEM
/// text from a variable; PEM text itself never holds a `$`).
fn name_template(
    name: &str,
    variables: &mut crate::kernel::variables::VariableRegistry,
) -> Result<crate::kernel::variables::HttpTemplate, ConfError> {
    crate::kernel::variables::HttpTemplate::compile(name, |variable| {
        Ok::<_, ConfError>(variables.resolve(variable))
    })
    .map_err(|error| match error {
        vars::TemplateError::Resolve(error) => error,
        other => ConfError::new(ConfErrorKind::Message(other.to_string()), None),
    })
}

/// The configuration made of a server's settings and its loaded pairs.
fn configuration(
    settings: &SslServer,
    alpn_h2: bool,
    build: &mut TlsBuild,
    prefix: &Path,
    pairs: Vec<tls::CertificatePair>,
) -> Result<tls::ServerTls, ConfError> {
    let ciphers = tls::parse_cipher_list(&settings.ciphers)
        .map_err(|message| ConfError::new(ConfErrorKind::Message(message), None))?;
    let (curves, _) = tls::parse_curves(&settings.ecdh_curve)
        .map_err(|message| ConfError::new(ConfErrorKind::Message(message), None))?;
    let session_cache = match &settings.session_cache {
        SessionCacheSetting::Off | SessionCacheSetting::None => None,
        SessionCacheSetting::Cache {
            name: None,
            sessions,
        } => Some(Arc::new(tls::SessionCache::new(
            *sessions,
            settings.session_timeout,
        ))),
        SessionCacheSetting::Cache {
            name: Some(name),
            sessions,
        } => Some(Arc::new(
            build
                .caches
                .entry(name.clone())
                .or_insert_with(|| {
                    Arc::new(tls::SessionCache::new(*sessions, settings.session_timeout))
                })
                .with_timeout(settings.session_timeout),
        )),
    };
    let tickets = if !settings.session_tickets {
        None
    } else if settings.session_ticket_keys.is_empty() {
        // Servers sharing a named cache share its rotating keys, as nginx keeps them in
        // the cache's shared zone.
        match &settings.session_cache {
            SessionCacheSetting::Cache {
                name: Some(name), ..
            } => {
                if !build.tickets.contains_key(name) {
                    let keys = tls::TicketKeys::random(settings.session_timeout, true)
                        .map_err(load_error)?;
                    build.tickets.insert(name.clone(), Arc::new(keys));
                }
                build
                    .tickets
                    .get(name)
                    .map(|keys| Arc::new(keys.with_lifetime(settings.session_timeout)))
            }
            _ => Some(Arc::new(
                tls::TicketKeys::random(settings.session_timeout, false).map_err(load_error)?,
            )),
        }
    } else {
        let mut files = Vec::new();
        for name in &settings.session_ticket_keys {
            let key = source(prefix, name, "ticket key")?;
            files.push((key.name, key.bytes));
        }
        Some(Arc::new(
            tls::TicketKeys::from_files(&files, settings.session_timeout).map_err(load_error)?,
        ))
    };
    let verify = client_verify(settings, prefix)?;
    let tls_settings = tls::ServerSettings {
        pairs,
        certificate_names: settings.certificates.clone(),
        protocols: settings.protocols,
        ciphers: Some(ciphers),
        prefer_server_ciphers: settings.prefer_server_ciphers,
        curves,
        session_cache,
        tickets,
        alpn: if alpn_h2 {
            vec![b"h2".to_vec(), b"http/1.1".to_vec()]
        } else {
            vec![b"http/1.1".to_vec()]
        },
        verify,
        early_data: settings.early_data,
    };
    tls::ServerTls::new(tls_settings).map_err(load_error)
}

fn client_verify(
    settings: &SslServer,
    prefix: &Path,
) -> Result<Option<Arc<tls::ClientVerify>>, ConfError> {
    if settings.verify_client == VerifyClient::Off {
        return Ok(None);
    }
    let mut sent = Vec::new();
    if let Some(name) = &settings.client_certificate {
        sent = tls::load_trusted(&source(prefix, name, "certificate")?).map_err(load_error)?;
    }
    let mut trusted = Vec::new();
    if let Some(name) = &settings.trusted_certificate {
        trusted = tls::load_trusted(&source(prefix, name, "certificate")?).map_err(load_error)?;
    }
    let no_ca = settings.verify_client == VerifyClient::OptionalNoCa;
    if sent.is_empty() && trusted.is_empty() && !no_ca {
        return Err(load_error(tls::TlsError(
            "no ssl_client_certificate or ssl_trusted_certificate for ssl_verify_client".to_owned(),
        )));
    }
    let crl = match &settings.crl {
        Some(name) => Some(source(prefix, name, "CRL")?),
        None => None,
    };
    let verify = tls::ClientVerify::new(
        settings.verify_client == VerifyClient::On,
        !no_ca,
        settings.verify_depth as usize,
        &sent,
        &trusted,
        crl.as_ref(),
    )
    .map_err(load_error)?;
    Ok(Some(Arc::new(verify)))
}
