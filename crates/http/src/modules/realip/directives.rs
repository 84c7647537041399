//! The realip module's directive table.

use std::net::ToSocketAddrs;

use conf::{Arity, BlockKind, ConfError, Contexts, Directive};

use crate::kernel::conf::{HttpDirective, LoadContext, LocationScope, Setter};
use crate::kernel::core::directives::flag;
use shared::access::{Target, parse_target};
use shared::realip::Trusted;

use crate::modules::realip::settings::RealIpHeader;
use crate::set_once;

pub const DIRECTIVES: &[HttpDirective] = &[
    HttpDirective {
        name: "set_real_ip_from",
        contexts: Contexts::HTTP_SERVER_LOCATION,
        arity: Arity::TAKE1,
        block: BlockKind::Simple,
        set: Setter::Location(set_real_ip_from),
    },
    HttpDirective {
        name: "real_ip_header",
        contexts: Contexts::HTTP_SERVER_LOCATION,
        arity: Arity::TAKE1,
        block: BlockKind::Simple,
        set: Setter::Location(set_real_ip_header),
    },
    HttpDirective {
        name: "real_ip_recursive",
        contexts: Contexts::HTTP_SERVER_LOCATION,
        arity: Arity::FLAG,
        block: BlockKind::Simple,
        set: Setter::Location(set_real_ip_recursive),
    },
];

/// An address, a network, `unix:`, or a host name resolved now to all its addresses, as
/// nginx resolves it when the configuration loads.
fn set_real_ip_from(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    let text = directive.arg(0);
    let trusted = scope.realip.from.get_or_insert_with(Trusted::default);
    // `all` is a host name to nginx here, not a keyword.
    if let Some(parsed) = parse_target(text).filter(|parsed| parsed.target != Target::All) {
        if parsed.host_bits_cleared {
            context.warn(
                format!("low address bits of {text} are meaningless"),
                &directive.span,
            );
        }
        trusted.push(parsed.target);
        return Ok(());
    }
    let resolved = (text, 0u16).to_socket_addrs().map_err(|_| {
        ConfError::message(
            format!("host not found in set_real_ip_from \"{text}\""),
            &directive.span,
        )
    })?;
    for address in resolved {
        let target = match address.ip() {
            std::net::IpAddr::V4(ip) => Target::Inet {
                address: u32::from(ip),
                mask: u32::MAX,
            },
            std::net::IpAddr::V6(ip) => Target::Inet6 {
                address: u128::from(ip),
                mask: u128::MAX,
            },
        };
        trusted.push(target);
    }
    Ok(())
}

set_once!(set_real_ip_header, LocationScope, realip.header, header);
set_once!(set_real_ip_recursive, LocationScope, realip.recursive, flag);

/// `X-Real-IP`, `X-Forwarded-For` and `proxy_protocol` as nginx spells them (it compares
/// them exactly: `x-forwarded-for` is an ordinary header, of which the first line counts),
/// else any header by name.
fn header(directive: &Directive, _: &mut LoadContext<'_>) -> Result<RealIpHeader, ConfError> {
    let name = directive.arg(0);
    Ok(match name {
        "X-Real-IP" => RealIpHeader::XRealIp,
        "X-Forwarded-For" => RealIpHeader::XForwardedFor,
        "proxy_protocol" => RealIpHeader::ProxyProtocol,
        other => RealIpHeader::Other(other.to_ascii_lowercase().into_bytes().into()),
    })
}
