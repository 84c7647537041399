//! The stream `listen` directive and the grouping of listen addresses into sockets.
//!
//! The parameters are the http block's (`shared::listen`) plus `udp`; the grouping
//! follows nginx: one socket per address, protocol and port, except that a specific
//! address on a port that also has a wildcard socket is served through the wildcard one,
//! unless it says `bind` or sets socket options.

use conf::{Argument, ConfError, Directive};
use runtime::ListenAddress;
use shared::listen::ListenSpec;

use super::{AddressConf, SocketConf};

/// One address of a stream `listen`.
#[derive(Clone, Debug)]
pub struct StreamListen {
    pub spec: ListenSpec,
    pub udp: bool,
}

/// Parses `listen ADDRESS [PARAMETERS]`.
pub fn parse(directive: &Directive) -> Result<Vec<StreamListen>, ConfError> {
    let udp = directive.args[1..]
        .iter()
        .any(|argument| argument.value == "udp");
    let mut rest: Vec<Argument> = Vec::with_capacity(directive.args.len());
    for argument in &directive.args {
        if argument.value == "udp" {
            continue;
        }
        if matches!(argument.value.as_str(), "http2" | "quic") {
            return Err(ConfError::message(
                format!("invalid parameter \"{}\"", argument.value),
                &directive.span,
            ));
        }
        rest.push(argument.clone());
    }
    let stripped = Directive {
        name: directive.name.clone(),
        args: rest,
        block: None,
        span: directive.span.clone(),
    };
    let specs = shared::listen::parse(&stripped)?;
    let mut listens = Vec::with_capacity(specs.len());
    for mut spec in specs {
        if udp {
            if spec.ssl {
                return Err(ConfError::message(
                    "\"ssl\" parameter is incompatible with \"udp\"",
                    &directive.span,
                ));
            }
            if spec.options.backlog != runtime::ListenOptions::default().backlog {
                return Err(ConfError::message(
                    "\"backlog\" parameter is incompatible with \"udp\"",
                    &directive.span,
                ));
            }
            spec.options.datagram = true;
        }
        listens.push(StreamListen { spec, udp });
    }
    Ok(listens)
}

fn is_wildcard(address: &ListenAddress) -> bool {
    matches!(address, ListenAddress::Inet(inet) if inet.ip().is_unspecified())
}

/// The listens on one address and protocol (`true`: udp), with their servers' indexes.
type AddressGroup = ((ListenAddress, bool), Vec<(StreamListen, usize)>);

/// Groups every server's listen addresses into sockets; `listens` pairs each with its
/// server's index.
pub fn group_sockets(listens: Vec<(StreamListen, usize)>) -> Result<Vec<SocketConf>, ConfError> {
    // (address, udp) → the listens on it.
    let mut addresses: Vec<AddressGroup> = Vec::new();
    for (listen, server) in listens {
        let key = (listen.spec.address.clone(), listen.udp);
        match addresses.iter_mut().find(|(existing, _)| *existing == key) {
            Some((_, group)) => {
                let span = &listen.spec.span;
                if group.iter().any(|(_, id)| *id == server) {
                    return Err(ConfError::message(
                        format!("duplicate \"{}\" address and port pair", key.0),
                        span,
                    ));
                }
                if listen.spec.has_socket_options
                    && group.iter().any(|(other, _)| other.spec.has_socket_options)
                {
                    return Err(ConfError::message(
                        format!("duplicate listen options for {}", key.0),
                        span,
                    ));
                }
                if listen.spec.default_server
                    && group.iter().any(|(other, _)| other.spec.default_server)
                {
                    return Err(ConfError::message(
                        format!("a duplicate default server for {}", key.0),
                        span,
                    ));
                }
                group.push((listen, server));
            }
            None => addresses.push((key, vec![(listen, server)])),
        }
    }
    let mut sockets: Vec<SocketConf> = Vec::new();
    let mut specific = Vec::new();
    for ((address, udp), group) in addresses {
        let entry = address_conf(&address, &group);
        let mut options = group
            .iter()
            .find(|(listen, _)| listen.spec.has_socket_options)
            .map(|(listen, _)| listen.spec.options.clone())
            .unwrap_or_default();
        options.datagram = udp;
        let binds = group.iter().any(|(listen, _)| listen.spec.bind);
        if !is_wildcard(&address) && !binds && matches!(address, ListenAddress::Inet(_)) {
            specific.push((address, options, entry));
            continue;
        }
        sockets.push(SocketConf {
            address,
            options,
            addresses: vec![entry],
        });
    }
    for (address, options, entry) in specific {
        let ListenAddress::Inet(inet) = &address else {
            continue;
        };
        let wildcard = sockets.iter_mut().find(|socket| match &socket.address {
            ListenAddress::Inet(other) => {
                other.ip().is_unspecified()
                    && other.port() == inet.port()
                    && other.is_ipv4() == inet.is_ipv4()
                    && socket.options.datagram == options.datagram
            }
            ListenAddress::Unix(_) => false,
        });
        match wildcard {
            Some(socket) => socket.addresses.push(entry),
            None => sockets.push(SocketConf {
                address,
                options,
                addresses: vec![entry],
            }),
        }
    }
    // The wildcard's own entry stays first: it serves every address not listed.
    Ok(sockets)
}

fn address_conf(address: &ListenAddress, group: &[(StreamListen, usize)]) -> AddressConf {
    let default = group
        .iter()
        .position(|(listen, _)| listen.spec.default_server)
        .unwrap_or(0);
    let mut servers: Vec<usize> = group.iter().map(|(_, server)| *server).collect();
    let first = servers.remove(default);
    servers.insert(0, first);
    AddressConf {
        address: address.clone(),
        servers,
        proxy_protocol: group.iter().any(|(listen, _)| listen.spec.proxy_protocol),
        ssl: group.iter().any(|(listen, _)| listen.spec.ssl),
        text: address.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use conf::Span;

    fn listen(text: &str) -> Vec<StreamListen> {
        let args = text
            .split(' ')
            .map(|value| Argument {
                value: value.to_owned(),
                quoted: false,
            })
            .collect();
        parse(&Directive {
            name: "listen".into(),
            args,
            block: None,
            span: Span::CommandLine,
        })
        .unwrap()
    }

    #[test]
    fn udp_is_a_datagram_socket_beside_tcp_on_the_same_port() {
        let mut listens = Vec::new();
        for spec in listen("127.0.0.1:8080 udp") {
            assert!(spec.spec.options.datagram);
            listens.push((spec, 0));
        }
        for spec in listen("127.0.0.1:8080") {
            listens.push((spec, 1));
        }
        let sockets = group_sockets(listens).unwrap();
        assert_eq!(sockets.len(), 2);
        assert!(sockets.iter().any(|socket| socket.options.datagram));
        assert!(sockets.iter().any(|socket| !socket.options.datagram));
    }

    #[test]
    fn a_specific_address_goes_through_the_wildcard_socket_of_its_port() {
        let mut listens = Vec::new();
        for spec in listen("127.0.0.1:8080") {
            listens.push((spec, 0));
        }
        for spec in listen("*:8080") {
            listens.push((spec, 1));
        }
        let sockets = group_sockets(listens).unwrap();
        assert_eq!(sockets.len(), 1);
        let socket = &sockets[0];
        assert_eq!(socket.addresses.len(), 2);
        let local = "127.0.0.1:8080".parse().ok();
        assert_eq!(socket.address_for(local).servers, [0]);
        let other = "127.0.0.2:8080".parse().ok();
        assert_eq!(socket.address_for(other).servers, [1]);
    }

    #[test]
    fn the_default_server_comes_first_and_a_second_one_is_refused() {
        let mut listens = Vec::new();
        for spec in listen("127.0.0.1:8080") {
            listens.push((spec, 0));
        }
        for spec in listen("127.0.0.1:8080 default_server") {
            listens.push((spec, 1));
        }
        let sockets = group_sockets(listens.clone()).unwrap();
        assert_eq!(sockets[0].addresses[0].servers, [1, 0]);
        for spec in listen("127.0.0.1:8080 default_server") {
            listens.push((spec, 2));
        }
        let error = group_sockets(listens).unwrap_err().to_string();
        assert!(error.contains("a duplicate default server"), "{error}");
    }
}
