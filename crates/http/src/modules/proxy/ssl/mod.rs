//! TLS to upstreams: `proxy_pass https://...` and the `proxy_ssl_*` directives. The
//! configuration is built per location when the configuration loads; each new upstream
//! connection runs its handshake on the worker, under `proxy_connect_timeout`.

use std::path::Path;
use std::sync::Arc;

use conf::{Arity, ConfError, ConfErrorKind, Contexts, Directive};

use crate::kernel::conf::{
    HttpDirective, LoadContext, Location, LocationScope, Setter, directive, gateway_directive,
};
use crate::kernel::ssl;
use crate::kernel::variables::HttpTemplate;
use crate::modules::proxy::gateway::settings::Protocol;
use crate::set_once;

pub mod certificates;
pub mod settings;
pub(crate) mod upstream;

pub use settings::{CertificateName, ProxySsl, ProxySslConf, VariablePair};

const CONTEXTS: Contexts = Contexts::HTTP_SERVER_LOCATION;

pub const DIRECTIVES: &[HttpDirective] = &[
    directive(
        "proxy_ssl_server_name",
        CONTEXTS,
        Arity::FLAG,
        Setter::Location(set_server_name),
    ),
    directive(
        "proxy_ssl_name",
        CONTEXTS,
        Arity::TAKE1,
        Setter::Location(set_name),
    ),
    directive(
        "proxy_ssl_verify",
        CONTEXTS,
        Arity::FLAG,
        Setter::Location(set_verify),
    ),
    directive(
        "proxy_ssl_trusted_certificate",
        CONTEXTS,
        Arity::TAKE1,
        Setter::Location(set_trusted),
    ),
    directive(
        "proxy_ssl_crl",
        CONTEXTS,
        Arity::TAKE1,
        Setter::Location(set_crl),
    ),
    directive(
        "proxy_ssl_verify_depth",
        CONTEXTS,
        Arity::TAKE1,
        Setter::Location(set_verify_depth),
    ),
    directive(
        "proxy_ssl_certificate",
        CONTEXTS,
        Arity::TAKE1,
        Setter::Location(set_certificate),
    ),
    directive(
        "proxy_ssl_certificate_key",
        CONTEXTS,
        Arity::TAKE1,
        Setter::Location(set_certificate_key),
    ),
    directive(
        "proxy_ssl_password_file",
        CONTEXTS,
        Arity::TAKE1,
        Setter::Location(set_password_file),
    ),
    directive(
        "proxy_ssl_certificate_cache",
        CONTEXTS,
        Arity::TAKE123,
        Setter::Location(set_certificate_cache),
    ),
    directive(
        "proxy_ssl_protocols",
        CONTEXTS,
        Arity::ONE_OR_MORE,
        Setter::Location(set_protocols),
    ),
    directive(
        "proxy_ssl_ciphers",
        CONTEXTS,
        Arity::TAKE1,
        Setter::Location(set_ciphers),
    ),
    directive(
        "proxy_ssl_session_reuse",
        CONTEXTS,
        Arity::FLAG,
        Setter::Location(set_session_reuse),
    ),
    directive(
        "proxy_ssl_conf_command",
        CONTEXTS,
        Arity::TAKE2,
        Setter::Location(accept_conf_command),
    ),
];

/// The `proxy_ssl_*` directives uwsgi has too (`uwsgi_ssl_verify`), filling its copy.
pub const UWSGI_DIRECTIVES: &[HttpDirective] = &[
    gateway_directive(
        "uwsgi_ssl_server_name",
        Protocol::Uwsgi,
        Arity::FLAG,
        set_server_name,
    ),
    gateway_directive("uwsgi_ssl_name", Protocol::Uwsgi, Arity::TAKE1, set_name),
    gateway_directive("uwsgi_ssl_verify", Protocol::Uwsgi, Arity::FLAG, set_verify),
    gateway_directive(
        "uwsgi_ssl_trusted_certificate",
        Protocol::Uwsgi,
        Arity::TAKE1,
        set_trusted,
    ),
    gateway_directive("uwsgi_ssl_crl", Protocol::Uwsgi, Arity::TAKE1, set_crl),
    gateway_directive(
        "uwsgi_ssl_verify_depth",
        Protocol::Uwsgi,
        Arity::TAKE1,
        set_verify_depth,
    ),
    gateway_directive(
        "uwsgi_ssl_certificate",
        Protocol::Uwsgi,
        Arity::TAKE1,
        set_certificate,
    ),
    gateway_directive(
        "uwsgi_ssl_certificate_key",
        Protocol::Uwsgi,
        Arity::TAKE1,
        set_certificate_key,
    ),
    gateway_directive(
        "uwsgi_ssl_certificate_cache",
        Protocol::Uwsgi,
        Arity::TAKE123,
        set_certificate_cache,
    ),
    gateway_directive(
        "uwsgi_ssl_password_file",
        Protocol::Uwsgi,
        Arity::TAKE1,
        set_password_file,
    ),
    gateway_directive(
        "uwsgi_ssl_protocols",
        Protocol::Uwsgi,
        Arity::ONE_OR_MORE,
        set_protocols,
    ),
    gateway_directive(
        "uwsgi_ssl_ciphers",
        Protocol::Uwsgi,
        Arity::TAKE1,
        set_ciphers,
    ),
    gateway_directive(
        "uwsgi_ssl_session_reuse",
        Protocol::Uwsgi,
        Arity::FLAG,
        set_session_reuse,
    ),
    gateway_directive(
        "uwsgi_ssl_conf_command",
        Protocol::Uwsgi,
        Arity::TAKE2,
        accept_conf_command,
    ),
];

/// The `proxy_ssl_*` directives uwsgi has too (`grpc_ssl_verify`), filling its copy.
pub const GRPC_DIRECTIVES: &[HttpDirective] = &[
    gateway_directive(
        "grpc_ssl_server_name",
        Protocol::Grpc,
        Arity::FLAG,
        set_server_name,
    ),
    gateway_directive("grpc_ssl_name", Protocol::Grpc, Arity::TAKE1, set_name),
    gateway_directive("grpc_ssl_verify", Protocol::Grpc, Arity::FLAG, set_verify),
    gateway_directive(
        "grpc_ssl_trusted_certificate",
        Protocol::Grpc,
        Arity::TAKE1,
        set_trusted,
    ),
    gateway_directive("grpc_ssl_crl", Protocol::Grpc, Arity::TAKE1, set_crl),
    gateway_directive(
        "grpc_ssl_verify_depth",
        Protocol::Grpc,
        Arity::TAKE1,
        set_verify_depth,
    ),
    gateway_directive(
        "grpc_ssl_certificate",
        Protocol::Grpc,
        Arity::TAKE1,
        set_certificate,
    ),
    gateway_directive(
        "grpc_ssl_certificate_key",
        Protocol::Grpc,
        Arity::TAKE1,
        set_certificate_key,
    ),
    gateway_directive(
        "grpc_ssl_certificate_cache",
        Protocol::Grpc,
        Arity::TAKE123,
        set_certificate_cache,
    ),
    gateway_directive(
        "grpc_ssl_password_file",
        Protocol::Grpc,
        Arity::TAKE1,
        set_password_file,
    ),
    gateway_directive(
        "grpc_ssl_protocols",
        Protocol::Grpc,
        Arity::ONE_OR_MORE,
        set_protocols,
    ),
    gateway_directive(
        "grpc_ssl_ciphers",
        Protocol::Grpc,
        Arity::TAKE1,
        set_ciphers,
    ),
    gateway_directive(
        "grpc_ssl_session_reuse",
        Protocol::Grpc,
        Arity::FLAG,
        set_session_reuse,
    ),
    gateway_directive(
        "grpc_ssl_conf_command",
        Protocol::Grpc,
        Arity::TAKE2,
        accept_conf_command,
    ),
];

fn flag(directive: &Directive, context: &mut LoadContext<'_>) -> Result<bool, ConfError> {
    context.flag(directive)
}

set_once!(set_server_name, LocationScope, proxy_ssl.server_name, flag);
set_once!(
    set_certificate_cache,
    LocationScope,
    proxy_ssl.certificate_cache,
    ssl::directives::certificate_cache
);
set_once!(set_verify, LocationScope, proxy_ssl.verify, flag);
set_once!(
    set_session_reuse,
    LocationScope,
    proxy_ssl.session_reuse,
    flag
);

fn name(
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<Option<HttpTemplate>, ConfError> {
    Ok(Some(context.template(directive.arg(0), &directive.span)?))
}

set_once!(set_name, LocationScope, proxy_ssl.name, name);

fn text(
    directive: &Directive,
    _context: &mut LoadContext<'_>,
) -> Result<Option<String>, ConfError> {
    Ok(Some(directive.arg(0).to_owned()))
}

set_once!(
    set_trusted,
    LocationScope,
    proxy_ssl.trusted_certificate,
    text
);
set_once!(set_crl, LocationScope, proxy_ssl.crl, text);
/// A certificate or key name, compiled when it has variables (`$arg_cert.crt`).
fn certificate_name(
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<Option<CertificateName>, ConfError> {
    let text = directive.arg(0);
    let template = context.template(text, &directive.span)?;
    Ok(Some(CertificateName {
        text: text.to_owned(),
        variables: template.as_literal().is_none().then_some(template),
    }))
}

set_once!(
    set_certificate,
    LocationScope,
    proxy_ssl.certificate,
    certificate_name
);
set_once!(
    set_certificate_key,
    LocationScope,
    proxy_ssl.certificate_key,
    certificate_name
);

fn number(directive: &Directive, _context: &mut LoadContext<'_>) -> Result<u64, ConfError> {
    conf::value::parse_number(directive.arg(0))
        .ok_or_else(|| ConfError::directive(&directive.name, "invalid number", &directive.span))
}

set_once!(
    set_verify_depth,
    LocationScope,
    proxy_ssl.verify_depth,
    number
);

set_once!(
    set_password_file,
    LocationScope,
    proxy_ssl.passwords,
    ssl::parse_password_file
);
set_once!(
    set_protocols,
    LocationScope,
    proxy_ssl.protocols,
    ssl::parse_protocols
);
set_once!(
    set_ciphers,
    LocationScope,
    proxy_ssl.ciphers,
    ssl::parse_ciphers
);

/// `proxy_ssl_conf_command NAME VALUE`: `Certificate` and `PrivateKey` set the client
/// certificate pair; anything else is accepted with a warning.
fn accept_conf_command(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    let value = directive.arg(1).to_owned();
    let pair = scope.proxy_ssl.conf_pair.get_or_insert((None, None));
    match directive.arg(0) {
        "Certificate" => pair.0 = Some(value),
        "PrivateKey" => pair.1 = Some(value),
        _ => ssl::warn_conf_command(directive, context),
    }
    Ok(())
}

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

/// Builds the upstream TLS configuration of every location whose `proxy_pass` may use
/// `https` (one written so, or one with variables).
pub(crate) fn finish(locations: &mut [Location], prefix: &Path) -> Result<(), ConfError> {
    for location in locations {
        let may_use_tls = match location.settings.proxy.pass.as_deref() {
            Some(crate::modules::proxy::settings::ProxyPass::Static(target)) => target.tls,
            Some(crate::modules::proxy::settings::ProxyPass::Variables(_)) => true,
            None => false,
        };
        if !may_use_tls {
            continue;
        }
        let module = location.settings.proxy.protocol.prefix();
        let settings = &location.settings.proxy_ssl;
        let (pair, variable_pair) = match client_certificate(settings, prefix, module)? {
            ClientCertificate::None => (None, None),
            ClientCertificate::Loaded(pair) => (Some(pair), None),
            ClientCertificate::Variables(names) => (None, Some(Arc::new(names))),
        };
        let verify = if settings.verify {
            let Some(trusted) = &settings.trusted_certificate else {
                return Err(load_error(tls::TlsError(format!(
                    "no {module}_ssl_trusted_certificate for {module}_ssl_verify"
                ))));
            };
            Some(tls::load_trusted(&source(prefix, trusted, "certificate")?).map_err(load_error)?)
        } else {
            None
        };
        let ciphers = tls::parse_cipher_list(&settings.ciphers)
            .map_err(|message| ConfError::new(ConfErrorKind::Message(message), None))?;
        let crl = match &settings.crl {
            Some(name) if verify.is_some() => Some(source(prefix, name, "CRL")?),
            _ => None,
        };
        let client = tls::ClientTls::new(tls::ClientSettings {
            verify,
            crl,
            verify_depth: settings.verify_depth as usize,
            pair,
            protocols: settings.protocols,
            ciphers: Some(ciphers),
            server_name: settings.server_name,
            session_reuse: settings.session_reuse,
            // gRPC is HTTP/2, which a TLS server learns from ALPN (RFC 9113 §3.2).
            alpn: if location.settings.proxy.over_h2() {
                vec![b"h2".to_vec()]
            } else {
                Vec::new()
            },
        })
        .map_err(load_error)?;
        location.settings.proxy_ssl.client = Some(Arc::new(client));
        location.settings.proxy_ssl.variable_pair = variable_pair;
    }
    Ok(())
}

/// The client certificate a location presents to its upstreams.
enum ClientCertificate {
    None,
    Loaded(tls::CertificatePair),
    /// Named by variables: loaded per request.
    Variables(VariablePair),
}

fn client_certificate(
    settings: &ProxySsl,
    prefix: &Path,
    module: &str,
) -> Result<ClientCertificate, ConfError> {
    if let (Some(certificate), Some(key)) = &settings.conf_pair {
        let pair = tls::load_pair(
            &source(prefix, certificate, "certificate")?,
            &source(prefix, key, "certificate key")?,
            &settings.passwords,
        )
        .map_err(load_error)?;
        return Ok(ClientCertificate::Loaded(pair));
    }
    // An empty name (`proxy_ssl_certificate ""`) takes back an inherited certificate.
    let Some(certificate) = settings
        .certificate
        .as_ref()
        .filter(|name| !name.text.is_empty())
    else {
        return Ok(ClientCertificate::None);
    };
    let Some(key) = &settings.certificate_key else {
        return Err(load_error(tls::TlsError(format!(
            "no \"{module}_ssl_certificate_key\" is defined for certificate \"{}\"",
            certificate.text
        ))));
    };
    if certificate.variables.is_some() || key.variables.is_some() {
        let mut names = VariablePair::new(certificate, key, &settings.passwords, prefix);
        names.cache = settings.certificate_cache.map(|cache| {
            Arc::new(std::sync::Mutex::new(
                crate::kernel::ssl::pairs::LoadedPairs::new(cache),
            ))
        });
        return Ok(ClientCertificate::Variables(names));
    }
    let pair = tls::load_pair(
        &source(prefix, &certificate.text, "certificate")?,
        &source(prefix, &key.text, "certificate key")?,
        &settings.passwords,
    )
    .map_err(load_error)?;
    Ok(ClientCertificate::Loaded(pair))
}
