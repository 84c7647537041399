//! The values of the `ssl_*` directives and their upstream siblings (`proxy_ssl_*`), read
//! the same way in the http and stream blocks: protocols, ciphers, password files, the
//! session cache, client verification. Warnings go to the loader's list.

use std::path::Path;

use conf::{ConfError, Directive};

/// `ssl_session_cache`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SessionCacheSetting {
    /// `off`: no session is stored, and clients are told so.
    Off,
    /// `none` (nginx's default): no session is stored.
    None,
    /// `builtin[:SIZE]` and/or `shared:NAME:SIZE`: a cache of this many sessions; a shared
    /// one is found by name, so servers naming it share it.
    Cache {
        name: Option<String>,
        sessions: usize,
    },
}

/// `ssl_verify_client`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VerifyClient {
    Off,
    On,
    Optional,
    OptionalNoCa,
}

/// Reads an `ssl_password_file` (or `proxy_ssl_password_file`): one password a line.
pub fn read_passwords(path: &Path) -> Result<Vec<Vec<u8>>, String> {
    let bytes = std::fs::read(path).map_err(|error| {
        format!(
            "open() \"{}\" failed ({}: {})",
            path.display(),
            error.raw_os_error().unwrap_or(0),
            strerror(&error)
        )
    })?;
    let passwords: Vec<Vec<u8>> = bytes
        .split(|byte| *byte == b'\n')
        .map(|line| line.strip_suffix(b"\r").unwrap_or(line).to_vec())
        .filter(|line| !line.is_empty())
        .collect();
    if passwords.is_empty() {
        return Err(format!("empty file \"{}\"", path.display()));
    }
    Ok(passwords)
}

/// `ssl_ciphers` and its upstream siblings: OpenSSL's cipher list, checked; a cipher the
/// TLS engine does not have is warned about and ignored.
pub fn parse_ciphers(
    directive: &Directive,
    warnings: &mut Vec<ConfError>,
) -> Result<String, ConfError> {
    let text = directive.arg(0);
    let list = tls::parse_cipher_list(text)
        .map_err(|message| ConfError::message(message, &directive.span))?;
    for word in &list.unsupported {
        warnings.push(ConfError::message(
            format!("cipher \"{word}\" is not supported by Portico's TLS, ignored"),
            &directive.span,
        ));
    }
    Ok(text.to_owned())
}

/// What the `ssl_conf_command`s rustls can follow say, the last of each winning.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConfCommands {
    /// `Certificate` and `PrivateKey`: a pair that replaces the configured ones (both
    /// are needed).
    pub certificate: Option<String>,
    pub key: Option<String>,
    /// `Options [-]SessionTicket`: `ssl_session_tickets`.
    pub session_tickets: Option<bool>,
    /// `Options [-]ServerPreference`: `ssl_prefer_server_ciphers`.
    pub server_preference: Option<bool>,
}

impl ConfCommands {
    /// Reads `commands` (name and value, in the order of the directives).
    pub fn read(commands: &[(String, String)]) -> ConfCommands {
        let mut read = ConfCommands::default();
        for (name, value) in commands {
            match name.as_str() {
                "Certificate" => read.certificate = Some(value.clone()),
                "PrivateKey" => read.key = Some(value.clone()),
                "Options" => {
                    for option in conf_options(value) {
                        let (on, option) = match option.strip_prefix('-') {
                            Some(option) => (false, option),
                            None => (true, option),
                        };
                        match option {
                            "SessionTicket" => read.session_tickets = Some(on),
                            "ServerPreference" => read.server_preference = Some(on),
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
        }
        read
    }

    /// The replacing certificate pair, when both halves are given.
    pub fn pair(&self) -> Option<(&str, &str)> {
        Some((self.certificate.as_deref()?, self.key.as_deref()?))
    }
}

/// Whether rustls can follow `ssl_conf_command NAME VALUE` ([`ConfCommands`]); the
/// others are accepted with [`warn_conf_command`]'s warning.
pub fn is_known_conf_command(name: &str, value: &str) -> bool {
    match name {
        "Certificate" | "PrivateKey" => true,
        "Options" => conf_options(value).all(|option| {
            matches!(
                option.trim_start_matches('-'),
                "SessionTicket" | "ServerPreference"
            )
        }),
        _ => false,
    }
}

/// The options of an `ssl_conf_command Options` value (`A,-B` or `A -B`).
pub fn conf_options(value: &str) -> impl Iterator<Item = &str> {
    value
        .split([',', ' '])
        .map(str::trim)
        .filter(|option| !option.is_empty())
}

/// `ssl_conf_command NAME VALUE` and its upstream siblings: OpenSSL's configuration
/// commands rustls cannot follow, accepted with a warning so that configs load
/// (docs/tls.md).
pub fn warn_conf_command(directive: &Directive, warnings: &mut Vec<ConfError>) {
    warnings.push(ConfError::message(
        format!(
            "\"{} {} {}\" has no effect in Portico",
            directive.name,
            directive.arg(0),
            directive.arg(1)
        ),
        &directive.span,
    ));
}

/// The C library's text for an error, without std's ` (os error N)`.
fn strerror(error: &std::io::Error) -> String {
    let text = error.to_string();
    match text.find(" (os error") {
        Some(end) => text[..end].to_owned(),
        None => text,
    }
}

/// `ssl_protocols`: TLSv1.2 and TLSv1.3; the older ones are accepted with a warning, so
/// distribution configs load.
pub fn parse_protocols(
    directive: &Directive,
    warnings: &mut Vec<ConfError>,
) -> Result<tls::Protocols, ConfError> {
    let mut protocols = tls::Protocols {
        tls12: false,
        tls13: false,
    };
    for argument in &directive.args {
        let argument = argument.as_str();
        match argument.to_ascii_lowercase().as_str() {
            "tlsv1.2" => protocols.tls12 = true,
            "tlsv1.3" => protocols.tls13 = true,
            "sslv2" | "sslv3" | "tlsv1" | "tlsv1.1" => warnings.push(ConfError::message(
                format!("the \"{argument}\" protocol is not supported by Portico, ignored"),
                &directive.span,
            )),
            _ => {
                let other = argument;
                return Err(ConfError::message(
                    format!("invalid value \"{other}\""),
                    &directive.span,
                ));
            }
        }
    }
    Ok(protocols)
}

/// `ssl_session_cache off | none | [builtin[:SIZE]] [shared:NAME:SIZE]`.
pub fn parse_session_cache(directive: &Directive) -> Result<SessionCacheSetting, ConfError> {
    let mut setting = None;
    for argument in &directive.args {
        let text = argument.as_str();
        let invalid =
            || ConfError::message(format!("invalid session cache \"{text}\""), &directive.span);
        setting = Some(match text {
            "off" => SessionCacheSetting::Off,
            "none" => SessionCacheSetting::None,
            "builtin" => SessionCacheSetting::Cache {
                name: None,
                sessions: 20480,
            },
            _ => {
                if let Some(count) = text.strip_prefix("builtin:") {
                    let sessions = count.parse().ok().filter(|n| *n > 0).ok_or_else(invalid)?;
                    let name = match setting {
                        Some(SessionCacheSetting::Cache { name, .. }) => name,
                        _ => None,
                    };
                    SessionCacheSetting::Cache { name, sessions }
                } else if let Some(rest) = text.strip_prefix("shared:") {
                    let (name, size) = rest.rsplit_once(':').ok_or_else(invalid)?;
                    let bytes = conf::value::parse_size(size).ok_or_else(invalid)?;
                    if name.is_empty() || bytes < 8 * 4096 {
                        return Err(invalid());
                    }
                    SessionCacheSetting::Cache {
                        name: Some(name.to_owned()),
                        sessions: (bytes / 256) as usize,
                    }
                } else {
                    return Err(invalid());
                }
            }
        });
    }
    setting.ok_or_else(|| ConfError::message("invalid session cache", &directive.span))
}

/// `ssl_verify_client on | off | optional | optional_no_ca`.
pub fn parse_verify_client(directive: &Directive) -> Result<VerifyClient, ConfError> {
    Ok(match directive.arg(0).to_ascii_lowercase().as_str() {
        "off" => VerifyClient::Off,
        "on" => VerifyClient::On,
        "optional" => VerifyClient::Optional,
        "optional_no_ca" => VerifyClient::OptionalNoCa,
        _ => {
            let other = directive.arg(0);
            return Err(ConfError::message(
                format!(
                    "invalid value \"{other}\" in \"ssl_verify_client\" directive, it must be \
                     \"on\", \"off\", \"optional\" or \"optional_no_ca\""
                ),
                &directive.span,
            ));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::{ConfCommands, is_known_conf_command};

    fn commands(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
            .collect()
    }

    #[test]
    fn the_commands_rustls_can_follow_are_read_the_last_winning() {
        let read = ConfCommands::read(&commands(&[
            ("Options", "SessionTicket"),
            ("Options", "-ServerPreference,-SessionTicket"),
            ("Certificate", "a.crt"),
            ("Options", "SessionTicket"),
            ("CipherString", "HIGH"),
        ]));
        assert_eq!(read.session_tickets, Some(true));
        assert_eq!(read.server_preference, Some(false));
        assert_eq!(read.pair(), None, "a certificate alone replaces nothing");
        let read = ConfCommands::read(&commands(&[
            ("PrivateKey", "b.key"),
            ("Certificate", "b.crt"),
        ]));
        assert_eq!(read.pair(), Some(("b.crt", "b.key")));
        assert_eq!(read.session_tickets, None);
    }

    #[test]
    fn other_commands_are_unknown() {
        assert!(is_known_conf_command("Certificate", "x"));
        assert!(is_known_conf_command(
            "Options",
            "-SessionTicket ServerPreference"
        ));
        assert!(!is_known_conf_command(
            "Options",
            "SessionTicket,PrioritizeChaCha"
        ));
        assert!(!is_known_conf_command("CipherString", "HIGH"));
    }
}
