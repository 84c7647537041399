//! `geo` (nginx's ngx_http_geo_module): a variable whose value depends on the client's
//! address (or another variable's), looked up in networks or `ranges`.
//!
//! The block is read at load into a [`settings::GeoTable`]; the kernel's computed
//! variables (`kernel::map`) evaluate the source and keep the value for the request, and
//! [`GeoLookup`] finds it: the address (the client's, or the source's text, where one that
//! is not an address counts as `255.255.255.255`), replaced by the one `X-Forwarded-For`
//! gives when it comes from a `proxy`, then the longest matching network, or the range
//! that holds it; `default` otherwise.

pub mod directives;
pub mod settings;
pub mod table;

use std::net::IpAddr;

use runtime::PeerAddress;

use crate::kernel::map::Lookup;
use crate::kernel::variables::RequestVariables;
use settings::GeoTable;
use table::NO_ADDRESS;

/// A `geo` block as the kernel's computed variables see it.
#[derive(Debug)]
pub struct GeoLookup(pub GeoTable);

impl Lookup for GeoLookup {
    fn value(&self, variables: &RequestVariables<'_>, source: &[u8]) -> Vec<u8> {
        let table = &self.0;
        let mut address = if table.from_client {
            match variables.connection.peer.get() {
                PeerAddress::Inet(socket) => socket.ip(),
                _ => NO_ADDRESS,
            }
        } else {
            std::str::from_utf8(source)
                .ok()
                .and_then(|text| text.parse::<IpAddr>().ok())
                .unwrap_or(NO_ADDRESS)
        };
        if !table.proxies.is_empty() {
            let forwarded: Vec<&[u8]> = variables.request.headers(b"x-forwarded-for").collect();
            if !forwarded.is_empty() {
                address = table.forwarded(address, &forwarded.join(&b","[..]));
            }
        }
        table.find(address).to_vec()
    }
}

#[cfg(test)]
mod tests;
