//! The setters of the `ssl_*` and `proxy_ssl*` directives of the stream block (their
//! table entries are in `directives.rs`).

use conf::{ConfError, Directive};

use super::Loader;
use super::settings::Settings;

type Result = std::result::Result<(), ConfError>;

fn duplicate<T>(slot: &Option<T>, directive: &Directive) -> Result {
    if slot.is_some() {
        return Err(ConfError::at(
            conf::ConfErrorKind::Duplicate {
                name: directive.name.clone(),
            },
            &directive.span,
        ));
    }
    Ok(())
}

fn invalid(directive: &Directive, value: &str) -> ConfError {
    ConfError::message(format!("invalid value \"{value}\""), &directive.span)
}

pub fn set_ssl_certificate(
    settings: &mut Settings,
    directive: &Directive,
    _: &mut Loader<'_>,
) -> Result {
    settings
        .ssl_certificate
        .get_or_insert_with(Vec::new)
        .push(directive.arg(0).to_owned());
    Ok(())
}

pub fn set_ssl_certificate_key(
    settings: &mut Settings,
    directive: &Directive,
    _: &mut Loader<'_>,
) -> Result {
    settings
        .ssl_certificate_key
        .get_or_insert_with(Vec::new)
        .push(directive.arg(0).to_owned());
    Ok(())
}

/// Reads a password file now (one password a line), as nginx does at load.
fn passwords(
    directive: &Directive,
    loader: &Loader<'_>,
) -> std::result::Result<Vec<Vec<u8>>, ConfError> {
    shared::ssl::read_passwords(&loader.path(directive.arg(0)))
        .map_err(|message| ConfError::message(message, &directive.span))
}

pub fn set_ssl_password_file(
    settings: &mut Settings,
    directive: &Directive,
    loader: &mut Loader<'_>,
) -> Result {
    duplicate(&settings.ssl_password_file, directive)?;
    settings.ssl_password_file = Some(passwords(directive, loader)?);
    Ok(())
}

pub fn set_proxy_ssl_password_file(
    settings: &mut Settings,
    directive: &Directive,
    loader: &mut Loader<'_>,
) -> Result {
    duplicate(&settings.proxy_ssl_password_file, directive)?;
    settings.proxy_ssl_password_file = Some(passwords(directive, loader)?);
    Ok(())
}

/// `ssl_protocols` as the http block reads it.
fn protocols(
    directive: &Directive,
    loader: &mut Loader<'_>,
) -> std::result::Result<tls::Protocols, ConfError> {
    shared::ssl::parse_protocols(directive, &mut loader.warnings)
}

pub fn set_ssl_protocols(
    settings: &mut Settings,
    directive: &Directive,
    loader: &mut Loader<'_>,
) -> Result {
    duplicate(&settings.ssl_protocols, directive)?;
    settings.ssl_protocols = Some(protocols(directive, loader)?);
    Ok(())
}

pub fn set_proxy_ssl_protocols(
    settings: &mut Settings,
    directive: &Directive,
    loader: &mut Loader<'_>,
) -> Result {
    duplicate(&settings.proxy_ssl_protocols, directive)?;
    settings.proxy_ssl_protocols = Some(protocols(directive, loader)?);
    Ok(())
}

macro_rules! set_text {
    ($fn_name:ident, $field:ident) => {
        pub fn $fn_name(
            settings: &mut Settings,
            directive: &Directive,
            _: &mut Loader<'_>,
        ) -> Result {
            duplicate(&settings.$field, directive)?;
            settings.$field = Some(directive.arg(0).to_owned().into());
            Ok(())
        }
    };
}

set_text!(set_ssl_ecdh_curve, ssl_ecdh_curve);

/// `ssl_conf_command NAME VALUE`: kept in order; those rustls cannot follow are accepted
/// with a warning.
pub fn set_ssl_conf_command(
    settings: &mut Settings,
    directive: &Directive,
    loader: &mut Loader<'_>,
) -> Result {
    let (name, value) = (directive.arg(0), directive.arg(1));
    if !shared::ssl::is_known_conf_command(name, value) {
        shared::ssl::warn_conf_command(directive, &mut loader.warnings);
    }
    settings
        .ssl_conf_command
        .get_or_insert_with(Vec::new)
        .push((name.to_owned(), value.to_owned()));
    Ok(())
}

/// `proxy_ssl_conf_command NAME VALUE`: `Certificate` and `PrivateKey` are kept, anything
/// else is accepted with a warning.
pub fn set_proxy_ssl_conf_command(
    settings: &mut Settings,
    directive: &Directive,
    loader: &mut Loader<'_>,
) -> Result {
    let (name, value) = (directive.arg(0), directive.arg(1));
    if !matches!(name, "Certificate" | "PrivateKey") {
        shared::ssl::warn_conf_command(directive, &mut loader.warnings);
    }
    settings
        .proxy_ssl_conf_command
        .get_or_insert_with(Vec::new)
        .push((name.to_owned(), value.to_owned()));
    Ok(())
}

macro_rules! set_ciphers {
    ($fn_name:ident, $field:ident) => {
        /// A cipher list checked as the http block checks it.
        pub fn $fn_name(
            settings: &mut Settings,
            directive: &Directive,
            loader: &mut Loader<'_>,
        ) -> Result {
            duplicate(&settings.$field, directive)?;
            let list = shared::ssl::parse_ciphers(directive, &mut loader.warnings)?;
            settings.$field = Some(list.into());
            Ok(())
        }
    };
}

set_ciphers!(set_ssl_ciphers, ssl_ciphers);
set_ciphers!(set_proxy_ssl_ciphers, proxy_ssl_ciphers);

macro_rules! set_path {
    ($fn_name:ident, $field:ident) => {
        pub fn $fn_name(
            settings: &mut Settings,
            directive: &Directive,
            _: &mut Loader<'_>,
        ) -> Result {
            duplicate(&settings.$field, directive)?;
            settings.$field = Some(Some(directive.arg(0).to_owned()));
            Ok(())
        }
    };
}

set_path!(set_ssl_client_certificate, ssl_client_certificate);
set_path!(set_ssl_trusted_certificate, ssl_trusted_certificate);
set_path!(set_ssl_crl, ssl_crl);
set_path!(set_ssl_stapling_file, ssl_stapling_file);
set_path!(set_ssl_stapling_responder, ssl_stapling_responder);
set_path!(set_proxy_ssl_crl, proxy_ssl_crl);
set_path!(
    set_proxy_ssl_trusted_certificate,
    proxy_ssl_trusted_certificate
);
set_path!(set_proxy_ssl_certificate, proxy_ssl_certificate);
set_path!(set_proxy_ssl_certificate_key, proxy_ssl_certificate_key);

macro_rules! set_flag {
    ($fn_name:ident, $field:ident) => {
        pub fn $fn_name(
            settings: &mut Settings,
            directive: &Directive,
            _: &mut Loader<'_>,
        ) -> Result {
            duplicate(&settings.$field, directive)?;
            settings.$field = Some(conf::value::parse_flag(directive)?);
            Ok(())
        }
    };
}

set_flag!(set_ssl_prefer_server_ciphers, ssl_prefer_server_ciphers);
set_flag!(set_ssl_stapling, ssl_stapling);

pub fn set_proxy_ssl_certificate_cache(
    settings: &mut Settings,
    directive: &Directive,
    _: &mut Loader<'_>,
) -> Result {
    duplicate(&settings.proxy_ssl_certificate_cache, directive)?;
    settings.proxy_ssl_certificate_cache = Some(shared::certificate_cache::parse(directive)?);
    Ok(())
}

pub fn set_ssl_certificate_cache(
    settings: &mut Settings,
    directive: &Directive,
    _: &mut Loader<'_>,
) -> Result {
    duplicate(&settings.ssl_certificate_cache, directive)?;
    settings.ssl_certificate_cache = Some(shared::certificate_cache::parse(directive)?);
    Ok(())
}
set_flag!(set_ssl_stapling_verify, ssl_stapling_verify);
set_flag!(set_ssl_session_tickets, ssl_session_tickets);
set_flag!(set_ssl_reject_handshake, ssl_reject_handshake);
set_flag!(set_proxy_ssl, proxy_ssl);
set_flag!(set_proxy_ssl_server_name, proxy_ssl_server_name);
set_flag!(set_proxy_ssl_verify, proxy_ssl_verify);
set_flag!(set_proxy_ssl_session_reuse, proxy_ssl_session_reuse);

macro_rules! set_depth {
    ($fn_name:ident, $field:ident) => {
        pub fn $fn_name(
            settings: &mut Settings,
            directive: &Directive,
            _: &mut Loader<'_>,
        ) -> Result {
            duplicate(&settings.$field, directive)?;
            let depth = conf::value::parse_number(directive.arg(0))
                .and_then(|depth| usize::try_from(depth).ok())
                .ok_or_else(|| invalid(directive, directive.arg(0)))?;
            settings.$field = Some(depth);
            Ok(())
        }
    };
}

set_depth!(set_ssl_verify_depth, ssl_verify_depth);
set_depth!(set_proxy_ssl_verify_depth, proxy_ssl_verify_depth);

macro_rules! set_seconds {
    ($fn_name:ident, $field:ident) => {
        pub fn $fn_name(
            settings: &mut Settings,
            directive: &Directive,
            _: &mut Loader<'_>,
        ) -> Result {
            duplicate(&settings.$field, directive)?;
            settings.$field = Some(
                conf::value::parse_time(directive.arg(0))
                    .ok_or_else(|| invalid(directive, directive.arg(0)))?,
            );
            Ok(())
        }
    };
}

set_seconds!(set_ssl_session_timeout, ssl_session_timeout);
set_seconds!(set_ssl_handshake_timeout, ssl_handshake_timeout);

pub fn set_ssl_session_ticket_key(
    settings: &mut Settings,
    directive: &Directive,
    _: &mut Loader<'_>,
) -> Result {
    settings
        .ssl_session_ticket_key
        .get_or_insert_with(Vec::new)
        .push(directive.arg(0).to_owned());
    Ok(())
}

pub fn set_ssl_alpn(settings: &mut Settings, directive: &Directive, _: &mut Loader<'_>) -> Result {
    duplicate(&settings.ssl_alpn, directive)?;
    settings.ssl_alpn = Some(
        directive
            .args
            .iter()
            .map(|argument| argument.value.as_bytes().to_vec())
            .collect(),
    );
    Ok(())
}

pub fn set_ssl_verify_client(
    settings: &mut Settings,
    directive: &Directive,
    _: &mut Loader<'_>,
) -> Result {
    duplicate(&settings.ssl_verify_client, directive)?;
    let mode = shared::ssl::parse_verify_client(directive)?;
    settings.ssl_verify_client = Some(mode);
    Ok(())
}

/// `ssl_session_cache off | none | [builtin[:SIZE]] [shared:NAME:SIZE]`.
pub fn set_ssl_session_cache(
    settings: &mut Settings,
    directive: &Directive,
    _: &mut Loader<'_>,
) -> Result {
    duplicate(&settings.ssl_session_cache, directive)?;
    let cache = shared::ssl::parse_session_cache(directive)?;
    settings.ssl_session_cache = Some(cache);
    Ok(())
}

/// `proxy_ssl_alpn PROTOCOL...`: values with variables, evaluated per session.
pub fn set_proxy_ssl_alpn(
    settings: &mut Settings,
    directive: &Directive,
    loader: &mut Loader<'_>,
) -> Result {
    duplicate(&settings.proxy_ssl_alpn, directive)?;
    let mut protocols = Vec::with_capacity(directive.args.len());
    for argument in &directive.args {
        protocols.push(loader.template(argument.as_str(), &directive.span)?);
    }
    settings.proxy_ssl_alpn = Some(protocols);
    Ok(())
}

pub fn set_proxy_ssl_name(
    settings: &mut Settings,
    directive: &Directive,
    loader: &mut Loader<'_>,
) -> Result {
    duplicate(&settings.proxy_ssl_name, directive)?;
    let template = loader.template(directive.arg(0), &directive.span)?;
    settings.proxy_ssl_name = Some(Some(template));
    Ok(())
}
