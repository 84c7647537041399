//! How one request's connections to an `https` (or `suwsgi`) upstream are secured: the
//! location's configuration, the name sent and verified, and the client certificate the
//! request names when the location's names have variables.

use crate::kernel::conf::Location;
use crate::kernel::file::io::FileError;
use crate::kernel::request::{ConnectionInfo, Request};
use crate::kernel::variables::evaluate::render;
use crate::kernel::worker::HttpWorker;
use crate::modules::proxy::ssl::certificates::RequestPair;

/// How a connection to an `https` upstream is secured.
pub(crate) struct UpstreamTls<'r> {
    pub client: &'r tls::ClientTls,
    /// The name sent (`proxy_ssl_server_name`) and verified (`proxy_ssl_verify`).
    pub name: String,
    /// The client certificate this request names (`proxy_ssl_certificate $arg_cert.crt`).
    pub pair: Option<RequestPair>,
}

impl UpstreamTls<'_> {
    /// The TLS configuration and the name (`proxy_ssl_name`, else `$proxy_host` without
    /// its port) for a request to an `https` upstream; `None` when `tls` is false.
    pub(crate) fn for_request<'a>(
        worker: &HttpWorker,
        info: &ConnectionInfo,
        request: &Request<'_>,
        location: &'a Location,
        tls: bool,
    ) -> Option<UpstreamTls<'a>> {
        if !tls {
            return None;
        }
        let settings = &location.settings.proxy_ssl;
        let client = settings.client.as_deref()?;
        // A port is cut off either way, as nginx cuts it (`proxy_ssl_name $http_host`,
        // `backend:123`).
        let rendered;
        let name = match &settings.name {
            Some(template) => {
                rendered = render(worker, info, request, template);
                host_without_port(&rendered)
            }
            None => host_without_port(&request.upstream.proxy_host),
        };
        let name = String::from_utf8_lossy(name)
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        let pair = settings.variable_pair.as_ref().and_then(|names| {
            names.for_request(|template| render(worker, info, request, template))
        });
        Some(UpstreamTls { client, name, pair })
    }

    /// The keep-alive purpose of connections secured this way: the client settings (one
    /// per location, alive as long as the configuration), the name, and the files of a
    /// client certificate named by variables.
    pub(crate) fn purpose(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        std::ptr::from_ref(self.client).addr().hash(&mut hasher);
        self.name.hash(&mut hasher);
        if let Some(pair) = &self.pair {
            pair.files().hash(&mut hasher);
        }
        hasher.finish() | 1
    }

    /// The configuration a new connection is secured with: the location's, or it with
    /// the request's client certificate, loaded the first time.
    pub(crate) async fn configuration(
        &self,
        worker: &HttpWorker,
    ) -> Result<&tls::ClientTls, FileError> {
        match &self.pair {
            Some(pair) => pair.configuration(worker, self.client).await,
            None => Ok(self.client),
        }
    }
}

/// `host[:port]` or `[v6]:port` without the port.
fn host_without_port(host: &[u8]) -> &[u8] {
    let end = if host.starts_with(b"[") {
        host.iter()
            .position(|byte| *byte == b']')
            .map_or(host.len(), |at| at + 1)
    } else {
        host.iter()
            .position(|byte| *byte == b':')
            .unwrap_or(host.len())
    };
    &host[..end]
}

#[cfg(test)]
mod tests {
    use super::host_without_port;

    #[test]
    fn the_port_is_left_out_of_the_name() {
        assert_eq!(host_without_port(b"backend.test:8443"), b"backend.test");
        assert_eq!(host_without_port(b"backend.test"), b"backend.test");
        assert_eq!(host_without_port(b"[::1]:8443"), b"[::1]");
        assert_eq!(host_without_port(b"[::1"), b"[::1");
    }
}
