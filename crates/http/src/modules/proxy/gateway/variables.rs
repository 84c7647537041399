//! `$fastcgi_script_name` and `$fastcgi_path_info`: the URI split by the location's
//! `fastcgi_split_path_info`, with `fastcgi_index` after a script name that ends in `/`.

use crate::kernel::variables::evaluate::VariableDef;
use crate::modules::proxy::gateway::Gateway;
use shared::regex::Captures;

pub const VARIABLES: &[VariableDef] = &[
    VariableDef {
        name: "fastcgi_script_name",
        prefix: false,
        get: |variables, _, out| {
            let location = variables
                .request
                .location
                .map(|id| &variables.conf.location(id).settings.gateway);
            let uri = &variables.request.uri;
            let Some(gateway) = location else {
                out.extend_from_slice(uri);
                return true;
            };
            let (script, _) = split(gateway, uri);
            out.extend_from_slice(&script);
            if script.ends_with(b"/")
                && let Some(index) = &gateway.index
            {
                out.extend_from_slice(index);
            }
            true
        },
    },
    VariableDef {
        name: "fastcgi_path_info",
        prefix: false,
        get: |variables, _, out| {
            if let Some(id) = variables.request.location {
                let gateway = &variables.conf.location(id).settings.gateway;
                out.extend_from_slice(&split(gateway, &variables.request.uri).1);
            }
            true
        },
    },
];

/// The script name and the path info of `uri`: the split regex's two captures when it
/// matches, else the whole URI and nothing.
pub fn split(gateway: &Gateway, uri: &[u8]) -> (Vec<u8>, Vec<u8>) {
    if let Some(regex) = &gateway.split_path_info {
        let mut captures = Captures::default();
        if regex.captures(uri, &mut captures) {
            let group = |index| captures.group(index).unwrap_or_default().to_vec();
            return (group(1), group(2));
        }
    }
    (uri.to_vec(), Vec::new())
}
