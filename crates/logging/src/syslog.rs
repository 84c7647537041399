//! `syslog:` log targets: the target's parameters, the RFC 3164 message nginx sends, and
//! the datagram socket the log writer thread sends it through.
//!
//! A message is `<PRI>Mmm dd hh:mm:ss HOST TAG: TEXT` (RFC 3164 §4.1), one per datagram,
//! the time local, the host name left out with `nohostname`. The socket is non-blocking,
//! connected on the first message and again after a failed send, so a syslog server that
//! is not there (or restarts, or a unix socket made anew) costs the lines sent meanwhile
//! and nothing else; a full socket buffer drops the line rather than wait.

use std::fmt;
use std::fs::File;
use std::io::{self, Write};
use std::net::{SocketAddr, ToSocketAddrs};
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::Mutex;

use crate::level::Level;
use crate::time::{Timestamp, push_number};

/// nginx's facility names, in the order of their RFC 3164 codes (0 to 23).
const FACILITIES: [&str; 24] = [
    "kern", "user", "mail", "daemon", "auth", "intern", "lpr", "news", "uucp", "clock", "authpriv",
    "ftp", "ntp", "audit", "alert", "cron", "local0", "local1", "local2", "local3", "local4",
    "local5", "local6", "local7",
];

/// `local7`, the default facility.
const FACILITY_DEFAULT: u8 = 23;

/// The longest `tag=`.
pub const TAG_BYTES_MAX: usize = 32;

/// The default port of a `server=` without one.
const PORT_DEFAULT: u16 = 514;

/// Where messages go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SyslogServer {
    Udp(SocketAddr),
    /// `server=unix:PATH`: a datagram socket.
    Unix(PathBuf),
}

/// The parameters of one `syslog:` target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Syslog {
    pub server: SyslogServer,
    /// RFC 3164 facility code, 0 to 23.
    pub facility: u8,
    /// The severity of access-log lines (`severity=`, default `info`); an error-log line
    /// carries its own level.
    pub severity: Level,
    pub tag: String,
    /// The host name in each message; `None` with `nohostname`.
    pub hostname: Option<String>,
}

/// Why a `syslog:` target was refused, worded as nginx words it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SyslogError {
    NoServer,
    Duplicate(&'static str),
    UnknownFacility(String),
    UnknownSeverity(String),
    TagTooLong,
    TagCharacters,
    UnknownParameter(String),
    /// The address could not be parsed or resolved.
    InvalidServer(String),
}

impl fmt::Display for SyslogError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SyslogError::NoServer => formatter.write_str("no syslog server specified"),
            SyslogError::Duplicate(name) => write!(formatter, "duplicate syslog \"{name}\""),
            SyslogError::UnknownFacility(name) => {
                write!(formatter, "unknown syslog facility \"{name}\"")
            }
            SyslogError::UnknownSeverity(name) => {
                write!(formatter, "unknown syslog severity \"{name}\"")
            }
            SyslogError::TagTooLong => {
                write!(formatter, "syslog tag length exceeds {TAG_BYTES_MAX}")
            }
            SyslogError::TagCharacters => formatter
                .write_str("syslog \"tag\" only allows alphanumeric characters and underscore"),
            SyslogError::UnknownParameter(text) => {
                write!(formatter, "unknown syslog parameter \"{text}\"")
            }
            SyslogError::InvalidServer(address) => {
                write!(formatter, "invalid syslog server address \"{address}\"")
            }
        }
    }
}

impl Syslog {
    /// Parses what follows `syslog:` (`server=ADDR[,facility=F][,severity=S][,tag=T]
    /// [,nohostname]`); `hostname` is the machine's name. A host name in `server=` is
    /// resolved here, once, as nginx resolves it while reading the configuration.
    pub fn parse(text: &str, hostname: &str) -> Result<Syslog, SyslogError> {
        let mut server = None;
        let mut facility = None;
        let mut severity = None;
        let mut tag = None;
        let mut nohostname = false;
        for parameter in text.split(',') {
            if let Some(value) = parameter.strip_prefix("server=") {
                set_once(&mut server, "server", parse_server(value)?)?;
            } else if let Some(value) = parameter.strip_prefix("facility=") {
                let code = FACILITIES
                    .iter()
                    .position(|name| *name == value)
                    .ok_or_else(|| SyslogError::UnknownFacility(value.to_owned()))?;
                set_once(&mut facility, "facility", code as u8)?;
            } else if let Some(value) = parameter.strip_prefix("severity=") {
                let level = Level::parse(value)
                    .ok_or_else(|| SyslogError::UnknownSeverity(value.to_owned()))?;
                set_once(&mut severity, "severity", level)?;
            } else if let Some(value) = parameter.strip_prefix("tag=") {
                if value.len() > TAG_BYTES_MAX {
                    return Err(SyslogError::TagTooLong);
                }
                if !value
                    .bytes()
                    .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_')
                {
                    return Err(SyslogError::TagCharacters);
                }
                set_once(&mut tag, "tag", value.to_owned())?;
            } else if parameter == "nohostname" {
                nohostname = true;
            } else {
                return Err(SyslogError::UnknownParameter(parameter.to_owned()));
            }
        }
        Ok(Syslog {
            server: server.ok_or(SyslogError::NoServer)?,
            facility: facility.unwrap_or(FACILITY_DEFAULT),
            severity: severity.unwrap_or(Level::Info),
            tag: tag.unwrap_or_else(|| "nginx".to_owned()),
            hostname: (!nohostname).then(|| hostname.to_ascii_lowercase()),
        })
    }

    /// One message: the header for `severity` at `time`, then `text` without its final
    /// newline.
    pub fn frame(&self, severity: Level, time: &Timestamp, text: &[u8]) -> Vec<u8> {
        let text = text.strip_suffix(b"\n").unwrap_or(text);
        let mut message = Vec::with_capacity(text.len() + 64);
        message.push(b'<');
        push_number(
            &mut message,
            i64::from(self.facility) * 8 + severity as i64,
            1,
        );
        message.push(b'>');
        time.write_syslog(&mut message);
        message.push(b' ');
        if let Some(hostname) = &self.hostname {
            message.extend_from_slice(hostname.as_bytes());
            message.push(b' ');
        }
        message.extend_from_slice(self.tag.as_bytes());
        message.extend_from_slice(b": ");
        message.extend_from_slice(text);
        message
    }

    /// The target as an operator wrote it, for messages about it.
    pub fn name(&self) -> String {
        match &self.server {
            SyslogServer::Udp(address) => format!("syslog:server={address}"),
            SyslogServer::Unix(path) => format!("syslog:server=unix:{}", path.display()),
        }
    }
}

/// The log file a `syslog:...` target names, or `None` when `text` is not one.
pub fn syslog_target(text: &str) -> Option<Result<crate::LogFile, SyslogError>> {
    let parameters = text.strip_prefix("syslog:")?;
    Some(Syslog::parse(parameters, &hostname()).map(crate::LogFile::syslog))
}

/// The machine's host name (`$hostname`, and the HOST of a syslog message).
pub fn hostname() -> String {
    rustix::system::uname()
        .nodename()
        .to_string_lossy()
        .into_owned()
}

fn set_once<T>(slot: &mut Option<T>, name: &'static str, value: T) -> Result<(), SyslogError> {
    if slot.is_some() {
        return Err(SyslogError::Duplicate(name));
    }
    *slot = Some(value);
    Ok(())
}

fn parse_server(value: &str) -> Result<SyslogServer, SyslogError> {
    if let Some(path) = value.strip_prefix("unix:") {
        if path.is_empty() {
            return Err(SyslogError::InvalidServer(value.to_owned()));
        }
        return Ok(SyslogServer::Unix(PathBuf::from(path)));
    }
    let invalid = || SyslogError::InvalidServer(value.to_owned());
    if value.is_empty() {
        return Err(invalid());
    }
    if let Ok(address) = value.parse::<SocketAddr>() {
        return Ok(SyslogServer::Udp(address));
    }
    if let Ok(ip) = value.parse::<std::net::IpAddr>() {
        return Ok(SyslogServer::Udp(SocketAddr::new(ip, PORT_DEFAULT)));
    }
    let bracketed = value
        .strip_prefix('[')
        .and_then(|rest| rest.strip_suffix(']'));
    if let Some(ip) = bracketed.and_then(|inner| inner.parse::<std::net::IpAddr>().ok()) {
        return Ok(SyslogServer::Udp(SocketAddr::new(ip, PORT_DEFAULT)));
    }
    let (host, port) = match value.rsplit_once(':') {
        Some((host, port)) => (host, port.parse::<u16>().map_err(|_| invalid())?),
        None => (value, PORT_DEFAULT),
    };
    (host, port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut addresses| addresses.next())
        .map(SyslogServer::Udp)
        .ok_or_else(invalid)
}

/// The socket of a `syslog:` log file, connected when a message is sent.
#[derive(Debug)]
pub(crate) struct SyslogPeer {
    pub(crate) syslog: Syslog,
    socket: Mutex<Option<File>>,
}

impl SyslogPeer {
    pub(crate) fn new(syslog: Syslog) -> SyslogPeer {
        SyslogPeer {
            syslog,
            socket: Mutex::new(None),
        }
    }

    /// Sends one message as one datagram. After a failure the socket is closed, and the
    /// next message connects again.
    pub(crate) fn send(&self, message: &[u8]) -> io::Result<()> {
        let mut socket = self
            .socket
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if socket.is_none() {
            *socket = Some(connect(&self.syslog.server)?);
        }
        let connected = socket.as_mut().expect("connected just above");
        let result = connected.write(message).map(|_| ());
        if result.is_err() {
            *socket = None;
        }
        result
    }
}

fn connect(server: &SyslogServer) -> io::Result<File> {
    let socket: OwnedFd = match server {
        SyslogServer::Udp(address) => {
            let local: SocketAddr = if address.is_ipv4() {
                (std::net::Ipv4Addr::UNSPECIFIED, 0).into()
            } else {
                (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
            };
            let socket = std::net::UdpSocket::bind(local)?;
            socket.connect(address)?;
            socket.set_nonblocking(true)?;
            socket.into()
        }
        SyslogServer::Unix(path) => {
            let socket = std::os::unix::net::UnixDatagram::unbound()?;
            socket.connect(path)?;
            socket.set_nonblocking(true)?;
            socket.into()
        }
    };
    Ok(File::from(socket))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn time() -> Timestamp {
        // 2026-11-09 08:05:03 UTC.
        Timestamp {
            unix_seconds: 1_794_211_503,
            milliseconds: 0,
            utc_offset_seconds: 0,
        }
    }

    #[test]
    fn parameters_in_any_order_with_defaults() {
        let syslog = Syslog::parse("severity=alert,server=127.0.0.1:5514", "Box").unwrap();
        assert_eq!(
            syslog.server,
            SyslogServer::Udp("127.0.0.1:5514".parse().unwrap())
        );
        assert_eq!(syslog.facility, 23);
        assert_eq!(syslog.severity, Level::Alert);
        assert_eq!(syslog.tag, "nginx");
        assert_eq!(syslog.hostname.as_deref(), Some("box"));
        let syslog = Syslog::parse(
            "server=unix:/dev/log,facility=user,tag=web_1,nohostname",
            "h",
        )
        .unwrap();
        assert_eq!(syslog.server, SyslogServer::Unix("/dev/log".into()));
        assert_eq!(syslog.facility, 1);
        assert_eq!(syslog.tag, "web_1");
        assert_eq!(syslog.hostname, None);
        let syslog = Syslog::parse("server=[::1]", "h").unwrap();
        assert_eq!(
            syslog.server,
            SyslogServer::Udp("[::1]:514".parse().unwrap())
        );
        let syslog = Syslog::parse("server=10.0.0.1", "h").unwrap();
        assert_eq!(
            syslog.server,
            SyslogServer::Udp("10.0.0.1:514".parse().unwrap())
        );
    }

    #[test]
    fn bad_parameters_are_refused_in_nginx_words() {
        let refused = |text: &str| Syslog::parse(text, "h").unwrap_err().to_string();
        assert_eq!(refused("facility=user"), "no syslog server specified");
        assert_eq!(
            refused("server=127.0.0.1,facility=nope"),
            "unknown syslog facility \"nope\""
        );
        assert_eq!(
            refused("server=127.0.0.1,severity=loud"),
            "unknown syslog severity \"loud\""
        );
        assert_eq!(
            refused(&format!("server=127.0.0.1,tag={}", "t".repeat(33))),
            "syslog tag length exceeds 32"
        );
        assert_eq!(
            refused("server=127.0.0.1,tag=a-b"),
            "syslog \"tag\" only allows alphanumeric characters and underscore"
        );
        assert_eq!(
            refused("server=127.0.0.1,server=127.0.0.2"),
            "duplicate syslog \"server\""
        );
        assert_eq!(
            refused("server=127.0.0.1,loud"),
            "unknown syslog parameter \"loud\""
        );
        assert_eq!(
            refused("server=127.0.0.1:99999"),
            "invalid syslog server address \"127.0.0.1:99999\""
        );
        assert_eq!(
            refused("server=unix:"),
            "invalid syslog server address \"unix:\""
        );
    }

    #[test]
    fn a_message_has_the_rfc_3164_header() {
        let syslog = Syslog::parse("server=127.0.0.1", "web").unwrap();
        let message = syslog.frame(Level::Error, &time(), b"text\n");
        assert_eq!(message, b"<187>Nov  9 08:05:03 web nginx: text");
        let syslog =
            Syslog::parse("server=127.0.0.1,facility=user,nohostname,tag=T", "web").unwrap();
        let message = syslog.frame(syslog.severity, &time(), b"line");
        assert_eq!(message, b"<14>Nov  9 08:05:03 T: line");
    }

    /// Messages reach a UDP server one per datagram; with no server there, sends fail and
    /// the next one after it comes back arrives.
    #[test]
    fn messages_go_one_per_datagram_and_survive_a_missing_server() {
        let server = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let address = server.local_addr().unwrap();
        let syslog = Syslog::parse(&format!("server={address}"), "h").unwrap();
        let peer = SyslogPeer::new(syslog);
        peer.send(b"one").unwrap();
        peer.send(b"two").unwrap();
        let mut buffer = [0u8; 64];
        let received = server.recv(&mut buffer).unwrap();
        assert_eq!(&buffer[..received], b"one");
        let received = server.recv(&mut buffer).unwrap();
        assert_eq!(&buffer[..received], b"two");
        drop(server);
        // The port is closed: the first send goes, the refusal comes back on a later one.
        let failed = (0..50).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(2));
            peer.send(b"lost").is_err()
        });
        assert!(failed, "a send to a closed port failed");
        let server = std::net::UdpSocket::bind(address).unwrap();
        peer.send(b"back").unwrap();
        let received = server.recv(&mut buffer).unwrap();
        assert_eq!(&buffer[..received], b"back");
    }

    #[test]
    fn a_unix_socket_that_is_not_there_fails_the_send() {
        let syslog = Syslog::parse("server=unix:/nonexistent/portico-syslog", "h").unwrap();
        let peer = SyslogPeer::new(syslog);
        assert!(peer.send(b"lost").is_err());
    }
}
