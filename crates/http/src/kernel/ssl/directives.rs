//! The SSL module's directive table (nginx's `ngx_http_ssl_module`).
//!
//! `ssl on` is accepted with the deprecation warning nginx 1.22 gave (nginx 1.25.1 removed
//! it): it makes every `listen` of its servers a `listen ... ssl`.

use conf::{Arity, ConfError, Contexts, Directive};

use crate::kernel::conf::{HttpDirective, LoadContext, ServerScope, Setter, directive};
use crate::kernel::ssl::settings::{CertificateCacheConf, SessionCacheSetting, VerifyClient};
use crate::set_once;

const HTTP_SERVER: Contexts = Contexts::HTTP.with(Contexts::SERVER);

pub const DIRECTIVES: &[HttpDirective] = &[
    directive("ssl", HTTP_SERVER, Arity::FLAG, Setter::Server(set_ssl)),
    directive(
        "ssl_certificate",
        HTTP_SERVER,
        Arity::TAKE1,
        Setter::Server(add_certificate),
    ),
    directive(
        "ssl_certificate_key",
        HTTP_SERVER,
        Arity::TAKE1,
        Setter::Server(add_certificate_key),
    ),
    directive(
        "ssl_certificate_cache",
        HTTP_SERVER,
        Arity::TAKE123,
        Setter::Server(set_certificate_cache),
    ),
    directive(
        "ssl_password_file",
        HTTP_SERVER,
        Arity::TAKE1,
        Setter::Server(set_password_file),
    ),
    directive(
        "ssl_protocols",
        HTTP_SERVER,
        Arity::ONE_OR_MORE,
        Setter::Server(set_protocols),
    ),
    directive(
        "ssl_ciphers",
        HTTP_SERVER,
        Arity::TAKE1,
        Setter::Server(set_ciphers),
    ),
    directive(
        "ssl_prefer_server_ciphers",
        HTTP_SERVER,
        Arity::FLAG,
        Setter::Server(set_prefer_server_ciphers),
    ),
    directive(
        "ssl_ecdh_curve",
        HTTP_SERVER,
        Arity::TAKE1,
        Setter::Server(set_ecdh_curve),
    ),
    directive(
        "ssl_conf_command",
        HTTP_SERVER,
        Arity::TAKE2,
        Setter::Server(accept_conf_command),
    ),
    directive(
        "ssl_session_cache",
        HTTP_SERVER,
        Arity::TAKE12,
        Setter::Server(set_session_cache),
    ),
    directive(
        "ssl_session_timeout",
        HTTP_SERVER,
        Arity::TAKE1,
        Setter::Server(set_session_timeout),
    ),
    directive(
        "ssl_session_tickets",
        HTTP_SERVER,
        Arity::FLAG,
        Setter::Server(set_session_tickets),
    ),
    directive(
        "ssl_session_ticket_key",
        HTTP_SERVER,
        Arity::TAKE1,
        Setter::Server(add_session_ticket_key),
    ),
    directive(
        "ssl_buffer_size",
        HTTP_SERVER,
        Arity::TAKE1,
        Setter::Server(set_buffer_size),
    ),
    directive(
        "ssl_handshake_timeout",
        HTTP_SERVER,
        Arity::TAKE1,
        Setter::Server(set_handshake_timeout),
    ),
    directive(
        "ssl_dhparam",
        HTTP_SERVER,
        Arity::TAKE1,
        Setter::Server(accept_dhparam),
    ),
    directive(
        "ssl_reject_handshake",
        HTTP_SERVER,
        Arity::FLAG,
        Setter::Server(set_reject_handshake),
    ),
    directive(
        "ssl_early_data",
        HTTP_SERVER,
        Arity::FLAG,
        Setter::Server(set_early_data),
    ),
    directive(
        "ssl_verify_client",
        HTTP_SERVER,
        Arity::TAKE1,
        Setter::Server(set_verify_client),
    ),
    directive(
        "ssl_verify_depth",
        HTTP_SERVER,
        Arity::TAKE1,
        Setter::Server(set_verify_depth),
    ),
    directive(
        "ssl_client_certificate",
        HTTP_SERVER,
        Arity::TAKE1,
        Setter::Server(set_client_certificate),
    ),
    directive(
        "ssl_trusted_certificate",
        HTTP_SERVER,
        Arity::TAKE1,
        Setter::Server(set_trusted_certificate),
    ),
    directive(
        "ssl_crl",
        HTTP_SERVER,
        Arity::TAKE1,
        Setter::Server(set_crl),
    ),
    directive(
        "ssl_stapling",
        HTTP_SERVER,
        Arity::FLAG,
        Setter::Server(set_stapling),
    ),
    directive(
        "ssl_stapling_file",
        HTTP_SERVER,
        Arity::TAKE1,
        Setter::Server(set_stapling_file),
    ),
    directive(
        "ssl_stapling_responder",
        HTTP_SERVER,
        Arity::TAKE1,
        Setter::Server(set_stapling_responder),
    ),
    directive(
        "ssl_stapling_verify",
        HTTP_SERVER,
        Arity::FLAG,
        Setter::Server(set_stapling_verify),
    ),
];

fn add_certificate(
    scope: &mut ServerScope,
    directive: &Directive,
    _context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    let list = scope.ssl.certificates.get_or_insert_with(Vec::new);
    list.push(directive.arg(0).to_owned());
    Ok(())
}

fn add_certificate_key(
    scope: &mut ServerScope,
    directive: &Directive,
    _context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    let list = scope.ssl.certificate_keys.get_or_insert_with(Vec::new);
    list.push(directive.arg(0).to_owned());
    Ok(())
}

/// `ssl on|off`: the span of an `on` is kept for the error when no certificate follows.
fn set_ssl(
    scope: &mut ServerScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    if scope.ssl.enable.is_some() {
        return Err(context.duplicate(directive));
    }
    let on = context.flag(directive)?;
    context.warn(
        "the \"ssl\" directive is deprecated, use the \"listen ... ssl\" directive instead"
            .to_owned(),
        &directive.span,
    );
    scope.ssl.enable = Some(on.then(|| directive.span.clone()));
    Ok(())
}

// The passwords are read now, as nginx does: one per line, tried in order.
set_once!(
    set_password_file,
    ServerScope,
    ssl.passwords,
    super::parse_password_file
);
set_once!(
    set_protocols,
    ServerScope,
    ssl.protocols,
    super::parse_protocols
);
set_once!(set_ciphers, ServerScope, ssl.ciphers, super::parse_ciphers);

fn flag(directive: &Directive, context: &mut LoadContext<'_>) -> Result<bool, ConfError> {
    context.flag(directive)
}

set_once!(
    set_prefer_server_ciphers,
    ServerScope,
    ssl.prefer_server_ciphers,
    flag
);

fn curves(directive: &Directive, context: &mut LoadContext<'_>) -> Result<String, ConfError> {
    let text = directive.arg(0);
    let (curves, unsupported) =
        tls::parse_curves(text).map_err(|message| ConfError::message(message, &directive.span))?;
    for name in &unsupported {
        context.warn(
            format!("curve \"{name}\" is not supported by Portico's TLS, ignored"),
            &directive.span,
        );
    }
    if curves.is_default() && text != "auto" {
        context.warn(
            format!(
                "no curve of \"{text}\" is supported by Portico's TLS, its default curves are used"
            ),
            &directive.span,
        );
    }
    Ok(text.to_owned())
}

set_once!(set_ecdh_curve, ServerScope, ssl.ecdh_curve, curves);

/// `ssl_conf_command NAME VALUE`: `Certificate`, `PrivateKey` and `Options`
/// (`SessionTicket`, `ServerPreference`, each may be negated with `-`) are kept and applied
/// over the other settings; anything else is accepted with a warning.
fn accept_conf_command(
    scope: &mut ServerScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    let (name, value) = (directive.arg(0), directive.arg(1));
    let known = shared::ssl::is_known_conf_command(name, value);
    if !known {
        super::warn_conf_command(directive, context);
    }
    scope
        .ssl
        .conf_commands
        .get_or_insert_with(Vec::new)
        .push((name.to_owned(), value.to_owned()));
    Ok(())
}

fn session_cache(
    directive: &Directive,
    _context: &mut LoadContext<'_>,
) -> Result<SessionCacheSetting, ConfError> {
    shared::ssl::parse_session_cache(directive)
}

set_once!(
    set_session_cache,
    ServerScope,
    ssl.session_cache,
    session_cache
);

fn time(
    directive: &Directive,
    _context: &mut LoadContext<'_>,
) -> Result<std::time::Duration, ConfError> {
    conf::value::parse_time(directive.arg(0))
        .ok_or_else(|| ConfError::directive(&directive.name, "invalid value", &directive.span))
}

set_once!(set_session_timeout, ServerScope, ssl.session_timeout, time);
set_once!(
    set_certificate_cache,
    ServerScope,
    ssl.certificate_cache,
    certificate_cache
);

/// `ssl_certificate_cache off | max=N [inactive=time] [valid=time]` (and
/// `proxy_ssl_certificate_cache`, which reads the same way).
pub(crate) fn certificate_cache(
    directive: &Directive,
    _context: &mut LoadContext<'_>,
) -> Result<Option<CertificateCacheConf>, ConfError> {
    shared::certificate_cache::parse(directive)
}

set_once!(set_session_tickets, ServerScope, ssl.session_tickets, flag);

fn add_session_ticket_key(
    scope: &mut ServerScope,
    directive: &Directive,
    _context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    let list = scope.ssl.session_ticket_keys.get_or_insert_with(Vec::new);
    list.push(directive.arg(0).to_owned());
    Ok(())
}

fn size(directive: &Directive, _context: &mut LoadContext<'_>) -> Result<u64, ConfError> {
    conf::value::parse_size(directive.arg(0))
        .ok_or_else(|| ConfError::directive(&directive.name, "invalid value", &directive.span))
}

set_once!(set_buffer_size, ServerScope, ssl.buffer_size, size);
set_once!(
    set_handshake_timeout,
    ServerScope,
    ssl.handshake_timeout,
    time
);

/// `ssl_dhparam`: rustls has no finite-field Diffie-Hellman suites, so the file is unused.
fn accept_dhparam(
    _scope: &mut ServerScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    context.warn(
        "\"ssl_dhparam\" is ignored: Portico's TLS has no DHE cipher suites".to_owned(),
        &directive.span,
    );
    Ok(())
}

set_once!(
    set_reject_handshake,
    ServerScope,
    ssl.reject_handshake,
    flag
);
set_once!(set_early_data, ServerScope, ssl.early_data, flag);

fn verify_client(
    directive: &Directive,
    _context: &mut LoadContext<'_>,
) -> Result<VerifyClient, ConfError> {
    shared::ssl::parse_verify_client(directive)
}

set_once!(
    set_verify_client,
    ServerScope,
    ssl.verify_client,
    verify_client
);

fn number(directive: &Directive, _context: &mut LoadContext<'_>) -> Result<u64, ConfError> {
    conf::value::parse_number(directive.arg(0))
        .ok_or_else(|| ConfError::directive(&directive.name, "invalid number", &directive.span))
}

set_once!(set_verify_depth, ServerScope, ssl.verify_depth, number);

fn name(
    directive: &Directive,
    _context: &mut LoadContext<'_>,
) -> Result<Option<String>, ConfError> {
    Ok(Some(directive.arg(0).to_owned()))
}

set_once!(
    set_client_certificate,
    ServerScope,
    ssl.client_certificate,
    name
);
set_once!(
    set_trusted_certificate,
    ServerScope,
    ssl.trusted_certificate,
    name
);
set_once!(set_crl, ServerScope, ssl.crl, name);

set_once!(set_stapling_file, ServerScope, ssl.stapling_file, name);

set_once!(set_stapling, ServerScope, ssl.stapling, flag);
set_once!(
    set_stapling_responder,
    ServerScope,
    ssl.stapling_responder,
    name
);
set_once!(set_stapling_verify, ServerScope, ssl.stapling_verify, flag);
