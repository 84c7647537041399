//! The grpc module's own directive, `grpc_pass`. The settings it shares with the proxy
//! are [`crate::modules::proxy::directives::GRPC_DIRECTIVES`] and
//! [`crate::modules::proxy::ssl::GRPC_DIRECTIVES`].

use std::sync::Arc;

use conf::{Arity, ConfError, Contexts, Directive};

use crate::kernel::conf::scope::Content;
use crate::kernel::conf::{HttpDirective, LoadContext, LocationScope, location_directive};
use crate::modules::proxy::gateway::Protocol;
use crate::modules::proxy::pass::load_target;
use crate::modules::proxy::settings::ProxyPass;

pub const DIRECTIVES: &[HttpDirective] = &[location_directive(
    "grpc_pass",
    Contexts::LOCATION.with(Contexts::LOCATION_IF),
    Arity::TAKE1,
    set_pass,
)];

/// `grpc_pass [grpc://|grpcs://]ADDRESS`: `host:port`, `unix:/path`, an `upstream` name,
/// or any of them made by variables (the scheme may then come from a variable too).
fn set_pass(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    if scope.grpc.upstream.pass.is_some() {
        return Err(context.duplicate(directive));
    }
    let address = directive.arg(0);
    let template = context.template(address, &directive.span)?;
    let pass = if template.as_literal().is_some() {
        let url = String::from_utf8_lossy(&proxy_url(address.as_bytes())).into_owned();
        let target = load_target(&url, &directive.span, &mut context.upstreams)?;
        if target.uri.is_some() {
            return Err(ConfError::message(
                format!("invalid host in upstream \"{address}\""),
                &directive.span,
            ));
        }
        ProxyPass::Static(target)
    } else {
        ProxyPass::Variables(template)
    };
    scope.grpc.upstream.pass = Some(Some(Arc::new(pass)));
    scope.content = Some(Content::Gateway(Protocol::Grpc));
    Ok(())
}

/// A `grpc_pass` address as the proxy's URL: `grpcs://` is `https://`, `grpc://` or no
/// scheme is `http://`.
pub(crate) fn proxy_url(address: &[u8]) -> Vec<u8> {
    let (scheme, rest): (&[u8], &[u8]) = if let Some(rest) = address.strip_prefix(b"grpcs://") {
        (b"https://", rest)
    } else if let Some(rest) = address.strip_prefix(b"grpc://") {
        (b"http://", rest)
    } else {
        (b"http://", address)
    };
    let mut url = Vec::with_capacity(scheme.len() + rest.len());
    url.extend_from_slice(scheme);
    url.extend_from_slice(rest);
    url
}

#[cfg(test)]
mod tests {
    use super::proxy_url;

    #[test]
    fn schemes_become_the_proxys() {
        assert_eq!(proxy_url(b"127.0.0.1:50051"), b"http://127.0.0.1:50051");
        assert_eq!(proxy_url(b"grpc://u"), b"http://u");
        assert_eq!(proxy_url(b"grpcs://h:1"), b"https://h:1");
        assert_eq!(proxy_url(b"unix:/tmp/s"), b"http://unix:/tmp/s");
    }
}
