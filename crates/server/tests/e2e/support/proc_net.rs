//! The kernel's TCP tables (`/proc/net/tcp`, `/proc/net/tcp6`): what a socket looks like from
//! outside the server, without touching the server.

const TABLES: [&str; 2] = ["/proc/net/tcp", "/proc/net/tcp6"];

/// The kernel's `st` value for a listening socket.
const STATE_LISTEN: &str = "0A";

/// One row of a TCP table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub local_port: u16,
    pub remote_port: u16,
    pub state: String,
    /// Bytes received and not yet read by the socket's owner.
    pub unread_bytes: usize,
    /// The kernel's `tr` value: which timer runs (2 is keep-alive's).
    pub timer: u8,
}

/// The kernel's `tr` value while a socket's keep-alive timer runs.
pub const TIMER_KEEPALIVE: u8 = 2;

/// Every row of the IPv4 and IPv6 tables.
pub fn rows() -> Vec<Row> {
    TABLES
        .iter()
        .flat_map(|table| {
            std::fs::read_to_string(table)
                .unwrap_or_default()
                .lines()
                .skip(1)
                .filter_map(parse_row)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// `  sl  local_address rem_address   st tx_queue:rx_queue ...`
fn parse_row(line: &str) -> Option<Row> {
    let fields: Vec<&str> = line.split_whitespace().collect();
    let port = |address: &str| u16::from_str_radix(address.rsplit(':').next()?, 16).ok();
    let (_, unread) = fields.get(4)?.split_once(':')?;
    let (timer, _) = fields.get(5)?.split_once(':')?;
    Some(Row {
        local_port: port(fields.get(1)?)?,
        remote_port: port(fields.get(2)?)?,
        state: (*fields.get(3)?).to_owned(),
        unread_bytes: usize::from_str_radix(unread, 16).ok()?,
        timer: u8::from_str_radix(timer, 16).ok()?,
    })
}

/// How many sockets listen on `port` (one per worker with `reuseport`).
pub fn listening_sockets(port: u16) -> usize {
    rows()
        .iter()
        .filter(|row| row.local_port == port && row.state == STATE_LISTEN)
        .count()
}

/// Whether some socket listens on `port`.
pub fn is_listening(port: u16) -> bool {
    listening_sockets(port) > 0
}

/// The kernel's `st` value of an open connection.
pub const STATE_ESTABLISHED: &str = "01";

/// The state of the server's side of the connection from `client_port` to `server_port`
/// (`"01"` while established); `None` once the socket is gone.
pub fn server_socket_state(server_port: u16, client_port: u16) -> Option<String> {
    rows()
        .into_iter()
        .find(|row| {
            row.local_port == server_port
                && row.remote_port == client_port
                && row.state != STATE_LISTEN
        })
        .map(|row| row.state)
}

/// The bytes the server has not read yet on its side of the connection from `client_port`
/// to `server_port`; `None` while that socket is not in the table.
pub fn server_unread_bytes(server_port: u16, client_port: u16) -> Option<usize> {
    rows()
        .iter()
        .find(|row| {
            row.local_port == server_port
                && row.remote_port == client_port
                && row.state != STATE_LISTEN
        })
        .map(|row| row.unread_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_parsed() {
        let line = concat!(
            "   3: 0100007F:1F90 0100007F:D431 01 00000000:0000001A 02:00001A2B 00000000",
            "     0        0 1 1 0 20 4 30 10 -1"
        );
        assert_eq!(
            parse_row(line),
            Some(Row {
                local_port: 8080,
                remote_port: 54321,
                state: "01".to_owned(),
                unread_bytes: 26,
                timer: TIMER_KEEPALIVE,
            })
        );
    }
}
