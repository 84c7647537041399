//! Listening sockets, opened by the master with the options `listen` gives.

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::UnixListener as StdUnixListener;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use socket2::{Domain, Protocol, SockAddr, Socket, TcpKeepalive, Type};

use crate::sys::linux::{error_text, set_tcp_defer_accept};

/// Where to listen.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ListenAddress {
    Inet(SocketAddr),
    Unix(PathBuf),
}

impl fmt::Display for ListenAddress {
    /// As nginx prints it: `127.0.0.1:8080`, `[::]:8080`, `unix:/run/portico.sock`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ListenAddress::Inet(address) => write!(f, "{address}"),
            ListenAddress::Unix(path) => write!(f, "unix:{}", path.display()),
        }
    }
}

/// `so_keepalive=on|off|[keepidle]:[keepintvl]:[keepcnt]`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SoKeepalive {
    /// The system default: the option is not touched.
    #[default]
    Unset,
    Off,
    On,
    Tuned {
        idle: Option<Duration>,
        interval: Option<Duration>,
        count: Option<u32>,
    },
}

/// The socket options of `listen`, as nginx names them.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ListenOptions {
    /// `backlog=N`; nginx's default on Linux is 511.
    pub backlog: i32,
    pub reuseport: bool,
    /// `deferred`: TCP_DEFER_ACCEPT.
    pub deferred: bool,
    pub rcvbuf: Option<usize>,
    pub sndbuf: Option<usize>,
    pub so_keepalive: SoKeepalive,
    /// `ipv6only=on|off`; nginx's default is on.
    pub ipv6only: bool,
    /// `udp` (the `stream` block's `listen`): a datagram socket, bound but not listening.
    pub datagram: bool,
}

impl Default for ListenOptions {
    fn default() -> Self {
        ListenOptions {
            backlog: 511,
            reuseport: false,
            deferred: false,
            rcvbuf: None,
            sndbuf: None,
            so_keepalive: SoKeepalive::Unset,
            ipv6only: true,
            datagram: false,
        }
    }
}

/// A failed system call while opening a listening socket, printed as nginx prints it:
/// `bind() to 127.0.0.1:80 failed (98: Address already in use)`.
#[derive(Debug)]
pub struct ListenError {
    pub call: &'static str,
    pub address: ListenAddress,
    pub source: io::Error,
}

impl fmt::Display for ListenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let verb = if self.call == "bind" || self.call == "listen" {
            " to"
        } else {
            " for"
        };
        write!(
            f,
            "{}(){verb} {} failed ({})",
            self.call,
            self.address,
            error_text(&self.source)
        )
    }
}

impl std::error::Error for ListenError {}

/// A socket inherited from the process that started this one, with the address and kind
/// it is bound to, until a `listen` of the configuration takes it ([`Listener::adopt`]).
#[derive(Debug)]
pub struct Inherited {
    pub address: ListenAddress,
    pub datagram: bool,
    socket: Socket,
}

impl Inherited {
    /// What `fd` is: a bound TCP, UDP or Unix socket. An error for anything else.
    pub fn from_fd(fd: std::os::fd::OwnedFd) -> io::Result<Inherited> {
        let socket = Socket::from(fd);
        let datagram = socket.r#type()? == Type::DGRAM;
        let local = socket.local_addr()?;
        let address = if let Some(inet) = local.as_socket() {
            ListenAddress::Inet(inet)
        } else if let Some(path) = local.as_pathname() {
            ListenAddress::Unix(path.to_path_buf())
        } else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "neither an inet nor a named unix socket",
            ));
        };
        Ok(Inherited {
            address,
            datagram,
            socket,
        })
    }
}

/// An open, listening, non-blocking socket. The master keeps it for as long as any
/// generation of workers listens on its address; workers accept on duplicates of it.
#[derive(Debug)]
pub struct Listener {
    pub address: ListenAddress,
    /// The options in force; a reload that keeps the socket updates them.
    options: Mutex<ListenOptions>,
    socket: Socket,
}

impl Listener {
    /// Creates, configures, binds and listens.
    pub fn open(address: &ListenAddress, options: &ListenOptions) -> Result<Listener, ListenError> {
        let fail = |call: &'static str| {
            let address = address.clone();
            move |source| ListenError {
                call,
                address,
                source,
            }
        };
        let (kind, protocol) = if options.datagram {
            (Type::DGRAM, Protocol::UDP)
        } else {
            (Type::STREAM, Protocol::TCP)
        };
        let socket = match address {
            ListenAddress::Inet(inet) => {
                let socket = Socket::new(Domain::for_address(*inet), kind, Some(protocol))
                    .map_err(fail("socket"))?;
                socket
                    .set_reuse_address(true)
                    .map_err(fail("setsockopt(SO_REUSEADDR)"))?;
                if inet.is_ipv6() {
                    socket
                        .set_only_v6(options.ipv6only)
                        .map_err(fail("setsockopt(IPV6_V6ONLY)"))?;
                }
                socket
            }
            ListenAddress::Unix(_) => {
                Socket::new(Domain::UNIX, kind, None).map_err(fail("socket"))?
            }
        };
        configure(&socket, options, address)?;
        let socket_address = match address {
            ListenAddress::Inet(inet) => SockAddr::from(*inet),
            ListenAddress::Unix(path) => SockAddr::unix(path).map_err(fail("bind"))?,
        };
        socket.bind(&socket_address).map_err(fail("bind"))?;
        Listener::start(socket, address.clone(), options)
    }

    /// A bound socket made to listen (a stream socket) and non-blocking.
    fn start(
        socket: Socket,
        address: ListenAddress,
        options: &ListenOptions,
    ) -> Result<Listener, ListenError> {
        let fail = |call: &'static str| {
            let address = address.clone();
            move |source| ListenError {
                call,
                address,
                source,
            }
        };
        if !options.datagram {
            socket.listen(options.backlog).map_err(fail("listen"))?;
        }
        socket
            .set_nonblocking(true)
            .map_err(fail("ioctl(FIONBIO)"))?;
        Ok(Listener {
            address,
            options: Mutex::new(options.clone()),
            socket,
        })
    }

    /// A listening socket this process inherited (a binary upgrade), configured with
    /// `options` as [`Listener::open`] would configure a new one: the bind-time options
    /// (`reuseport`, `ipv6only`) stay as the socket has them.
    pub fn adopt(inherited: Inherited, options: &ListenOptions) -> Result<Listener, ListenError> {
        let Inherited {
            address, socket, ..
        } = inherited;
        configure(&socket, options, &address)?;
        Listener::start(socket, address, options)
    }

    /// A new descriptor for the same socket, for one worker to register with its runtime.
    pub fn duplicate(&self) -> io::Result<Socket> {
        self.socket.try_clone()
    }

    /// A tokio TCP listener on a duplicate of this socket; call inside the worker's runtime.
    pub fn to_tokio_tcp(&self) -> io::Result<tokio::net::TcpListener> {
        let std_listener: std::net::TcpListener = self.duplicate()?.into();
        tokio::net::TcpListener::from_std(std_listener)
    }

    /// A tokio Unix listener on a duplicate of this socket; call inside the worker's runtime.
    pub fn to_tokio_unix(&self) -> io::Result<tokio::net::UnixListener> {
        let std_listener: StdUnixListener = self.duplicate()?.into();
        tokio::net::UnixListener::from_std(std_listener)
    }

    /// A tokio UDP socket on a duplicate of this `udp` socket; call inside the worker's
    /// runtime.
    pub fn to_tokio_udp(&self) -> io::Result<tokio::net::UdpSocket> {
        let std_socket: std::net::UdpSocket = self.duplicate()?.into();
        tokio::net::UdpSocket::from_std(std_socket)
    }

    /// Whether this is a datagram (`udp`) socket.
    pub fn is_datagram(&self) -> bool {
        self.options().datagram
    }

    /// The address the kernel bound (useful when the configured port was 0).
    pub fn local_address(&self) -> io::Result<Option<SocketAddr>> {
        Ok(self.socket.local_addr()?.as_socket())
    }

    /// Applies the options that can change on an open socket (a reload that keeps the
    /// socket): buffer sizes, keep-alive, `deferred`, and the backlog (by calling
    /// `listen` again, which Linux allows).
    pub fn apply(&self, options: &ListenOptions) -> Result<(), ListenError> {
        configure(&self.socket, options, &self.address)?;
        if options.datagram {
            *self
                .options
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner()) = options.clone();
            return Ok(());
        }
        if !options.deferred
            && self.options().deferred
            && matches!(self.address, ListenAddress::Inet(_))
        {
            set_tcp_defer_accept(&self.socket, Duration::ZERO).map_err(|source| ListenError {
                call: "setsockopt(TCP_DEFER_ACCEPT)",
                address: self.address.clone(),
                source,
            })?;
        }
        self.socket
            .listen(options.backlog)
            .map_err(|source| ListenError {
                call: "listen",
                address: self.address.clone(),
                source,
            })?;
        *self
            .options
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = options.clone();
        Ok(())
    }

    /// The options in force.
    pub fn options(&self) -> ListenOptions {
        self.options
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// Whether reloading to `options` can keep this socket. nginx keeps a socket across a
    /// reload when the address matches; options that only apply at bind time need a new one.
    pub fn compatible_with(&self, options: &ListenOptions) -> bool {
        let current = self.options();
        current.reuseport == options.reuseport
            && current.ipv6only == options.ipv6only
            && current.datagram == options.datagram
    }
}

impl AsFd for Listener {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.socket.as_fd()
    }
}

fn configure(
    socket: &Socket,
    options: &ListenOptions,
    address: &ListenAddress,
) -> Result<(), ListenError> {
    let fail = |call: &'static str| {
        let address = address.clone();
        move |source| ListenError {
            call,
            address,
            source,
        }
    };
    if let Some(size) = options.rcvbuf {
        socket
            .set_recv_buffer_size(size)
            .map_err(fail("setsockopt(SO_RCVBUF)"))?;
    }
    if let Some(size) = options.sndbuf {
        socket
            .set_send_buffer_size(size)
            .map_err(fail("setsockopt(SO_SNDBUF)"))?;
    }
    if matches!(address, ListenAddress::Unix(_)) {
        return Ok(());
    }
    if options.reuseport {
        socket
            .set_reuse_port(true)
            .map_err(fail("setsockopt(SO_REUSEPORT)"))?;
    }
    if options.datagram {
        return Ok(());
    }
    if options.deferred {
        set_tcp_defer_accept(socket, Duration::from_secs(1))
            .map_err(fail("setsockopt(TCP_DEFER_ACCEPT)"))?;
    }
    match options.so_keepalive {
        SoKeepalive::Unset => {}
        SoKeepalive::Off => socket
            .set_keepalive(false)
            .map_err(fail("setsockopt(SO_KEEPALIVE)"))?,
        SoKeepalive::On => socket
            .set_keepalive(true)
            .map_err(fail("setsockopt(SO_KEEPALIVE)"))?,
        SoKeepalive::Tuned {
            idle,
            interval,
            count,
        } => {
            let mut keepalive = TcpKeepalive::new();
            if let Some(idle) = idle {
                keepalive = keepalive.with_time(idle);
            }
            if let Some(interval) = interval {
                keepalive = keepalive.with_interval(interval);
            }
            if let Some(count) = count {
                keepalive = keepalive.with_retries(count);
            }
            socket
                .set_tcp_keepalive(&keepalive)
                .map_err(fail("setsockopt(TCP_KEEPALIVE)"))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opens_tcp_and_reports_bind_errors_as_nginx() {
        let address = ListenAddress::Inet("127.0.0.1:0".parse().unwrap());
        let listener = Listener::open(&address, &ListenOptions::default()).unwrap();
        let bound = listener.local_address().unwrap().unwrap();
        let taken = ListenAddress::Inet(bound);
        let error = Listener::open(&taken, &ListenOptions::default()).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!("bind() to {bound} failed (98: Address already in use)")
        );
    }

    #[test]
    fn reuseport_allows_one_socket_per_worker() {
        let options = ListenOptions {
            reuseport: true,
            deferred: true,
            ..ListenOptions::default()
        };
        let first = Listener::open(
            &ListenAddress::Inet("127.0.0.1:0".parse().unwrap()),
            &options,
        )
        .unwrap();
        let bound = ListenAddress::Inet(first.local_address().unwrap().unwrap());
        let second = Listener::open(&bound, &options).unwrap();
        assert_eq!(second.address, bound);
    }

    #[test]
    fn opens_udp_sockets_beside_tcp_on_the_same_port() {
        let tcp = Listener::open(
            &ListenAddress::Inet("127.0.0.1:0".parse().unwrap()),
            &ListenOptions::default(),
        )
        .unwrap();
        let bound = ListenAddress::Inet(tcp.local_address().unwrap().unwrap());
        let options = ListenOptions {
            datagram: true,
            ..ListenOptions::default()
        };
        let udp = Listener::open(&bound, &options).unwrap();
        assert!(udp.is_datagram());
        assert!(!tcp.compatible_with(&options));
        let client = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let target = udp.local_address().unwrap().unwrap();
        client.send_to(b"ping", target).unwrap();
        let socket: std::net::UdpSocket = udp.duplicate().unwrap().into();
        socket.set_nonblocking(false).unwrap();
        let mut buf = [0u8; 8];
        let (len, _) = socket.recv_from(&mut buf).unwrap();
        assert_eq!(&buf[..len], b"ping");
    }

    #[test]
    fn opens_unix_sockets() {
        let path = std::env::temp_dir().join(format!("portico-listen-{}.sock", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let address = ListenAddress::Unix(path.clone());
        let listener = Listener::open(&address, &ListenOptions::default()).unwrap();
        assert_eq!(
            listener.address.to_string(),
            format!("unix:{}", path.display())
        );
        std::os::unix::net::UnixStream::connect(&path).unwrap();
        std::fs::remove_file(path).unwrap();
    }
}
