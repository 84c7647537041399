//! Reading a file or a socket into the unused capacity of a buffer: the bytes land in
//! memory that was never zeroed, where a read into a slice needs the slice initialised
//! first (a `memset` of every piece, which showed as 5% of the worker's time serving files
//! over HTTP/2 from page cache, `bench/h2.sh` h2c-static).

use std::io;
use std::os::fd::{AsFd, AsRawFd};

/// Whether a read may wait for the disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadWait {
    /// An ordinary `pread`.
    Wait,
    /// `preadv2(RWF_NOWAIT)`: only what page cache holds; `EAGAIN` when the first byte is
    /// not there.
    NoWait,
}

/// One read of up to `len` bytes of `file` at `offset`, appended to `buffer` (which grows
/// to take them). Returns how many bytes were read: 0 at the end of the file.
pub fn pread_appending(
    file: impl AsFd,
    buffer: &mut Vec<u8>,
    len: usize,
    offset: u64,
    wait: ReadWait,
) -> io::Result<usize> {
    buffer.reserve(len);
    let spare = &mut buffer.spare_capacity_mut()[..len];
    let iovec = libc::iovec {
        iov_base: spare.as_mut_ptr().cast(),
        iov_len: spare.len(),
    };
    let offset =
        libc::off_t::try_from(offset).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let flags = match wait {
        ReadWait::Wait => 0,
        ReadWait::NoWait => libc::RWF_NOWAIT,
    };
    // SAFETY: the iovec points into `buffer`'s spare capacity, which is `len` bytes long
    // (reserved above) and is not otherwise borrowed during the call; the kernel writes at
    // most `iov_len` bytes there. The descriptor is borrowed and open for the call.
    let read = unsafe { libc::preadv2(file.as_fd().as_raw_fd(), &iovec, 1, offset, flags) };
    let read = usize::try_from(read).map_err(|_| io::Error::last_os_error())?;
    debug_assert!(read <= len);
    let filled = buffer.len() + read.min(len);
    // SAFETY: the kernel initialised the first `read` bytes of the spare capacity, and
    // `filled` is within the capacity reserved above.
    unsafe { buffer.set_len(filled) };
    Ok(read)
}

/// One `recv` of up to `len` bytes from `socket`, appended to `buffer` (which grows to take
/// them). Returns how many bytes were read: 0 when the peer has closed.
pub fn recv_appending(socket: impl AsFd, buffer: &mut Vec<u8>, len: usize) -> io::Result<usize> {
    buffer.reserve(len);
    let spare = &mut buffer.spare_capacity_mut()[..len];
    // SAFETY: the pointer and length describe `buffer`'s spare capacity, `len` bytes long
    // (reserved above) and not otherwise borrowed during the call; the kernel writes at
    // most `len` bytes there. The descriptor is borrowed and open for the call.
    let read = unsafe {
        libc::recv(
            socket.as_fd().as_raw_fd(),
            spare.as_mut_ptr().cast(),
            spare.len(),
            0,
        )
    };
    let read = usize::try_from(read).map_err(|_| io::Error::last_os_error())?;
    debug_assert!(read <= len);
    let filled = buffer.len() + read.min(len);
    // SAFETY: the kernel initialised the first `read` bytes of the spare capacity, and
    // `filled` is within the capacity reserved above.
    unsafe { buffer.set_len(filled) };
    Ok(read)
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    #[test]
    fn reads_append_after_what_the_buffer_holds() {
        let mut file = tempfile();
        file.write_all(b"0123456789").unwrap();
        let mut buffer = b"head:".to_vec();
        assert_eq!(
            pread_appending(&file, &mut buffer, 4, 3, ReadWait::Wait).unwrap(),
            4
        );
        assert_eq!(buffer, b"head:3456");
        // Past the end: what there is, then nothing.
        assert_eq!(
            pread_appending(&file, &mut buffer, 100, 8, ReadWait::NoWait).unwrap(),
            2
        );
        assert_eq!(buffer, b"head:345689");
        assert_eq!(
            pread_appending(&file, &mut buffer, 100, 10, ReadWait::Wait).unwrap(),
            0
        );
        assert_eq!(buffer, b"head:345689");
    }

    #[test]
    fn a_failed_read_leaves_the_buffer_as_it_was() {
        let directory = std::fs::File::open("/").unwrap();
        let mut buffer = b"kept".to_vec();
        assert!(pread_appending(&directory, &mut buffer, 16, 0, ReadWait::Wait).is_err());
        assert_eq!(buffer, b"kept");
    }

    #[test]
    fn a_receive_takes_at_most_its_length_and_appends() {
        let (mut ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
        ours.write_all(b"0123456789").unwrap();
        let mut buffer = Vec::with_capacity(64);
        buffer.extend_from_slice(b"head:");
        assert_eq!(recv_appending(&theirs, &mut buffer, 4).unwrap(), 4);
        assert_eq!(buffer, b"head:0123");
        assert_eq!(recv_appending(&theirs, &mut buffer, 100).unwrap(), 6);
        assert_eq!(buffer, b"head:0123456789");
        drop(ours);
        assert_eq!(recv_appending(&theirs, &mut buffer, 100).unwrap(), 0);
        let (_open, empty) = std::os::unix::net::UnixStream::pair().unwrap();
        empty.set_nonblocking(true).unwrap();
        let error = recv_appending(&empty, &mut buffer, 8).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::WouldBlock);
        assert_eq!(buffer, b"head:0123456789", "a failed receive adds nothing");
    }

    fn tempfile() -> std::fs::File {
        let path = std::env::temp_dir().join(format!("portico-read-into-{}", std::process::id()));
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        std::fs::remove_file(&path).unwrap();
        file
    }
}
