//! Finding what serves a request: its virtual server by `Host`, and its current location.

use crate::kernel::conf::{LocationId, ServerId};
use crate::kernel::request::Request;
use crate::kernel::worker::HttpWorker;

/// The request's current location: the server's own level before one is found.
pub(crate) fn current_location<'a>(
    worker: &'a HttpWorker,
    request: &Request<'_>,
) -> &'a crate::kernel::conf::Location {
    let conf = worker.conf();
    let id = request
        .location
        .or_else(|| request.server.map(|server| conf.server(server).location));
    conf.location(id.unwrap_or(LocationId(0)))
}

/// The server for the request's host on this address, else the address's default.
pub(crate) fn select_server(
    worker: &HttpWorker,
    address: &crate::kernel::conf::AddressConf,
    request: &mut Request<'_>,
) -> ServerId {
    let conf = worker.conf();
    let found = address.names.find(
        &request.info.host,
        |index| &conf.server_regexes[index],
        &mut request.matches.get_mut().captures,
    );
    match found {
        Some((server, regex)) => {
            if let Some(regex) = regex {
                let matches = request.matches.get_mut();
                regex.store(&matches.captures, &mut matches.named);
            }
            server
        }
        None => address.default_server,
    }
}
