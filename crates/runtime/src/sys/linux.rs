//! Thin, safe wrappers over libc calls: local time, TCP_DEFER_ACCEPT, signal masks and
//! waiting, user lookup, fork.

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::time::Duration;

/// Seconds east of UTC of the local time zone at `unix_seconds` (what `localtime_r` says).
pub fn utc_offset_seconds(unix_seconds: i64) -> i32 {
    let time: libc::time_t = unix_seconds;
    // SAFETY: `tm` is plain old data that localtime_r fully initialises on success; both
    // pointers are valid for the duration of the call.
    unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        if libc::localtime_r(&time, &mut tm).is_null() {
            return 0;
        }
        tm.tm_gmtoff as i32
    }
}

/// nginx's `env` for its workers: of the environment, only `TZ` and the variables named
/// are kept, a name given a value is set to it, and the time zone is read again. Only
/// while the process has one thread: with others running (their `getenv` could read the
/// environment as it changes) nothing is changed and `false` is returned.
pub fn keep_environment(variables: &[(String, Option<String>)]) -> bool {
    if thread_count() != Some(1) {
        return false;
    }
    let names: Vec<std::ffi::OsString> = std::env::vars_os()
        .map(|(name, _)| name)
        .filter(|name| {
            name != "TZ"
                && !variables
                    .iter()
                    .any(|(kept, _)| std::ffi::OsStr::new(kept) == name.as_os_str())
        })
        .collect();
    // SAFETY: the process has one thread (checked above), so no `getenv` runs meanwhile.
    unsafe {
        for name in names {
            std::env::remove_var(name);
        }
        for (name, value) in variables {
            if let Some(value) = value {
                std::env::set_var(name, value);
            }
        }
        tzset();
    }
    true
}

unsafe extern "C" {
    /// glibc's `tzset(3)`: reads `TZ` again (the libc crate does not declare it).
    fn tzset();
}

/// The number of threads of this process, from `/proc/self/status`.
fn thread_count() -> Option<usize> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("Threads:"))
        .and_then(|count| count.trim().parse().ok())
}

/// `setsockopt(TCP_DEFER_ACCEPT)`: the kernel wakes `accept` only once data arrived (or the
/// timeout passed), as nginx's `listen ... deferred` does.
pub fn set_tcp_defer_accept(socket: impl AsFd, timeout: Duration) -> io::Result<()> {
    let seconds: libc::c_int = timeout.as_secs().try_into().unwrap_or(libc::c_int::MAX);
    // SAFETY: the fd is borrowed and open for the call; the option value is a c_int whose
    // address and size are passed correctly.
    let result = unsafe {
        libc::setsockopt(
            socket.as_fd().as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_DEFER_ACCEPT,
            (&seconds as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if result == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// `shutdown(fd, SHUT_RD)` on a socket known only by its number: a reader waiting on it
/// wakes and reads what is queued, then end of stream. The caller guarantees `fd` is open
/// (it is registered only while its connection holds it).
pub fn shutdown_read(fd: RawFd) {
    // SAFETY: shutdown has no memory-safety preconditions; on a closed or reused number it
    // fails or affects that socket, which the caller's registration rules out.
    unsafe {
        libc::shutdown(fd, libc::SHUT_RD);
    }
}

/// nginx's text for a system error: `98: Address already in use`.
pub fn error_text(error: &io::Error) -> String {
    match error.raw_os_error() {
        Some(errno) => format!("{errno}: {}", strerror(errno)),
        None => error.to_string(),
    }
}

/// The C library's description of `errno`.
pub fn strerror(errno: i32) -> String {
    let mut buffer = [0 as libc::c_char; 256];
    // SAFETY: the XSI strerror_r (which the libc crate binds on glibc as `strerror_r` →
    // `__xpg_strerror_r`) writes a NUL-terminated string into `buffer` within its length.
    let result = unsafe { libc::strerror_r(errno, buffer.as_mut_ptr(), buffer.len()) };
    if result != 0 {
        return format!("Unknown error {errno}");
    }
    // SAFETY: strerror_r succeeded, so `buffer` holds a NUL-terminated string.
    let text = unsafe { CStr::from_ptr(buffer.as_ptr()) };
    text.to_string_lossy().into_owned()
}

/// The signals the master handles; they are blocked in every thread so that only the
/// master's `wait_signal` receives them.
pub const MASTER_SIGNALS: [i32; 7] = [
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGTERM,
    libc::SIGINT,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGWINCH,
];

fn master_sigset() -> libc::sigset_t {
    // SAFETY: sigemptyset initialises the set; sigaddset only adds valid signal numbers.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for signal in MASTER_SIGNALS {
            libc::sigaddset(&mut set, signal);
        }
        set
    }
}

/// Blocks the master's signals in the calling thread; threads spawned afterwards inherit the
/// mask. Also ignores SIGPIPE: a write to a closed socket is an error return, not a death.
pub fn block_master_signals() -> io::Result<()> {
    let set = master_sigset();
    // SAFETY: `set` is initialised; a null old-set pointer is allowed.
    let result = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    if result != 0 {
        return Err(io::Error::from_raw_os_error(result));
    }
    // SAFETY: SIG_IGN is a valid disposition for SIGPIPE.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    Ok(())
}

/// Unblocks the master's signals again (the child of a fork that execs nothing does not need
/// this; it exists for tests that run the master loop in a thread).
pub fn unblock_master_signals() -> io::Result<()> {
    let set = master_sigset();
    // SAFETY: as in block_master_signals.
    let result = unsafe { libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut()) };
    if result == 0 {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(result))
    }
}

/// Waits up to `timeout` for one of the blocked master signals. `Ok(None)` on timeout.
pub fn wait_signal(timeout: Duration) -> io::Result<Option<i32>> {
    let set = master_sigset();
    let timespec = libc::timespec {
        tv_sec: timeout.as_secs().try_into().unwrap_or(libc::time_t::MAX),
        tv_nsec: timeout.subsec_nanos().into(),
    };
    // SAFETY: `set` and `timespec` are initialised; a null siginfo pointer is allowed.
    let result = unsafe { libc::sigtimedwait(&set, std::ptr::null_mut(), &timespec) };
    if result >= 0 {
        return Ok(Some(result));
    }
    let error = io::Error::last_os_error();
    match error.raw_os_error() {
        Some(libc::EAGAIN) | Some(libc::EINTR) => Ok(None),
        _ => Err(error),
    }
}

/// Sends `signal` to process `pid` (`portico -s`).
pub fn kill(pid: i32, signal: i32) -> io::Result<()> {
    // SAFETY: kill has no memory-safety preconditions.
    let result = unsafe { libc::kill(pid, signal) };
    if result == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// A user account from the passwd database.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Account {
    pub uid: u32,
    pub gid: u32,
    pub name: String,
}

/// Looks up a user by name (`getpwnam_r`). `Ok(None)` if there is no such user.
pub fn user_by_name(name: &str) -> io::Result<Option<Account>> {
    let c_name = CString::new(name).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let mut buffer = vec![0 as libc::c_char; 16 * 1024];
    // SAFETY: all pointers are valid; `buffer` outlives the call and its length is passed;
    // `passwd` is plain data filled by the call.
    unsafe {
        let mut passwd: libc::passwd = std::mem::zeroed();
        let mut found: *mut libc::passwd = std::ptr::null_mut();
        let result = libc::getpwnam_r(
            c_name.as_ptr(),
            &mut passwd,
            buffer.as_mut_ptr(),
            buffer.len(),
            &mut found,
        );
        if result != 0 {
            return Err(io::Error::from_raw_os_error(result));
        }
        if found.is_null() {
            return Ok(None);
        }
        Ok(Some(Account {
            uid: passwd.pw_uid,
            gid: passwd.pw_gid,
            name: name.to_owned(),
        }))
    }
}

/// Looks up a group id by name (`getgrnam_r`). `Ok(None)` if there is no such group.
pub fn group_by_name(name: &str) -> io::Result<Option<u32>> {
    let c_name = CString::new(name).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let mut buffer = vec![0 as libc::c_char; 16 * 1024];
    // SAFETY: as in user_by_name.
    unsafe {
        let mut group: libc::group = std::mem::zeroed();
        let mut found: *mut libc::group = std::ptr::null_mut();
        let result = libc::getgrnam_r(
            c_name.as_ptr(),
            &mut group,
            buffer.as_mut_ptr(),
            buffer.len(),
            &mut found,
        );
        if result != 0 {
            return Err(io::Error::from_raw_os_error(result));
        }
        if found.is_null() {
            return Ok(None);
        }
        Ok(Some(group.gr_gid))
    }
}

/// Which side of a fork the caller is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Forked {
    Parent,
    Child,
}

/// `fork()`. Must be called while the process has a single thread (`daemon on` forks before
/// any worker or pool thread starts).
pub fn fork() -> io::Result<Forked> {
    // SAFETY: the caller guarantees the process is single-threaded, so the child does not
    // inherit locks held by other threads.
    let pid = unsafe { libc::fork() };
    match pid {
        -1 => Err(io::Error::last_os_error()),
        0 => Ok(Forked::Child),
        _ => Ok(Forked::Parent),
    }
}

/// Takes over a descriptor this process inherited through `exec` (the listening sockets a
/// binary upgrade passes in the `NGINX` variable): `None` if no such descriptor is open;
/// otherwise it is marked close-on-exec and owned from now on. The caller passes each number
/// once.
pub fn adopt_inherited_fd(fd: RawFd) -> Option<std::os::fd::OwnedFd> {
    if fd < 0 {
        return None;
    }
    // SAFETY: F_GETFD reads the descriptor flags of any number; -1 means it is not open.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFD) };
    if flags < 0 {
        return None;
    }
    // SAFETY: the descriptor is open (above); setting FD_CLOEXEC changes only its flags.
    unsafe { libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC) };
    // SAFETY: the descriptor is open, nothing else in this process owns it (it came from
    // the parent's exec, and the caller adopts each number once).
    Some(unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) })
}

/// The parent process's id (`getppid(2)`).
pub fn parent_pid() -> i32 {
    rustix::process::getppid().map_or(0, |pid| pid.as_raw_nonzero().get())
}

/// Whether every page of a file range is in page cache *and up to date*, by `mmap` +
/// `mincore(2)` + `munmap`. The answer holds for the moment it is made only, and Linux
/// gives it only for a file the caller owns or could write (for others every page is
/// "resident", see [`page_cache_visible`]): the send path uses it only to leave alone, on
/// the worker, a range that is not cached (a read of it would start readahead there).
pub fn range_in_core(file: impl AsFd, offset: u64, len: u64) -> io::Result<bool> {
    if len == 0 {
        return Ok(true);
    }
    let page = page_size();
    let start = offset - offset % page;
    let span = usize::try_from(offset + len - start)
        .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    let pages = span.div_ceil(page as usize);
    let mut vector = vec![0u8; pages];
    // SAFETY: a fresh shared read-only mapping of the borrowed fd, which stays open for the
    // call; it is only passed to mincore (never dereferenced) and unmapped before return.
    // `vector` holds one byte per page of the mapping, as mincore requires.
    unsafe {
        let address = libc::mmap(
            std::ptr::null_mut(),
            span,
            libc::PROT_READ,
            libc::MAP_SHARED,
            file.as_fd().as_raw_fd(),
            start as libc::off_t,
        );
        if address == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let result = libc::mincore(address, span, vector.as_mut_ptr());
        let error = io::Error::last_os_error();
        libc::munmap(address, span);
        if result != 0 {
            return Err(error);
        }
    }
    Ok(vector.iter().all(|state| state & 1 == 1))
}

/// An offset no real file reaches (1 EiB), whose page is never in page cache.
const NEVER_CACHED_OFFSET: u64 = 1 << 60;

/// Whether `mincore(2)` tells this thread the truth about the file's pages. Since Linux 5.0
/// it does only for a file the caller owns or could open for writing; for any other file
/// (a web root owned by root, served by workers running as `user nobody`) it reports every
/// page resident, to close a side channel. Asked of a page no file has: the truth is "not
/// resident", the cover story "resident". An error also answers `false` (cannot tell).
pub fn page_cache_visible(file: impl AsFd) -> bool {
    let page = page_size();
    let Ok(span) = usize::try_from(page) else {
        return false;
    };
    let mut vector = [0u8; 1];
    // SAFETY: as in `range_in_core`: a fresh read-only mapping of one page of the borrowed
    // fd, only passed to mincore with a one-byte vector, and unmapped before return.
    unsafe {
        let address = libc::mmap(
            std::ptr::null_mut(),
            span,
            libc::PROT_READ,
            libc::MAP_SHARED,
            file.as_fd().as_raw_fd(),
            NEVER_CACHED_OFFSET as libc::off_t,
        );
        if address == libc::MAP_FAILED {
            return false;
        }
        let result = libc::mincore(address, span, vector.as_mut_ptr());
        libc::munmap(address, span);
        result == 0 && vector[0] & 1 == 0
    }
}

/// Points fds 0, 1 and (unless `keep_stderr`) 2 at /dev/null, as a daemon does.
pub fn redirect_stdio_to_null(keep_stderr: bool) -> io::Result<()> {
    let null = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")?;
    let fd = null.as_raw_fd();
    let targets: &[i32] = if keep_stderr { &[0, 1] } else { &[0, 1, 2] };
    for &target in targets {
        // SAFETY: both fds are open; dup2 atomically replaces `target`.
        if unsafe { libc::dup2(fd, target) } == -1 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Locks the pages of the running executable's own file mappings (its code and read-only
/// data) in memory, and returns how many bytes that is. Page cache holds those pages like
/// any file's, charged to the process's memory cgroup: under memory pressure they are
/// evicted, and a worker that next runs code it has not run for a while (a close path, a
/// shutdown) waits for the disk to read it back, behind whatever else the disk is doing.
/// Shared libraries are not locked: other processes keep them in memory and pay for them.
pub fn lock_executable() -> io::Result<u64> {
    let executable = std::fs::read_link("/proc/self/exe")?;
    let maps = std::fs::read_to_string("/proc/self/maps")?;
    let mut locked = 0;
    for line in maps.lines() {
        // "START-END PERMS OFFSET DEV INODE PATH"
        let mut fields = line.split_whitespace();
        let (Some(range), Some(_perms), Some(_offset), Some(_device), Some(_inode)) = (
            fields.next(),
            fields.next(),
            fields.next(),
            fields.next(),
            fields.next(),
        ) else {
            continue;
        };
        if fields.next().map(std::path::Path::new) != Some(executable.as_path()) {
            continue;
        }
        let Some((start, end)) = range.split_once('-') else {
            continue;
        };
        let (Ok(start), Ok(end)) = (
            usize::from_str_radix(start, 16),
            usize::from_str_radix(end, 16),
        ) else {
            continue;
        };
        let len = end.saturating_sub(start);
        // SAFETY: mlock only pins pages of a range this process has mapped (read from its
        // own maps); it changes no memory and creates no references.
        let result = unsafe { libc::mlock(start as *const libc::c_void, len) };
        if result != 0 {
            return Err(io::Error::last_os_error());
        }
        locked += len as u64;
    }
    Ok(locked)
}

/// A file's first `len` bytes mapped read-only and locked in memory: their pages stay in
/// page cache, whatever the memory pressure, until the mapping is dropped. Nothing reads
/// through the mapping; it exists to hold the pages.
#[derive(Debug)]
pub struct LockedMapping {
    address: usize,
    len: usize,
}

impl LockedMapping {
    /// Maps and locks the range; `mlock` reads in what is not cached yet, so this may wait
    /// for the disk (call it on a pool thread). Fails with `mlock`'s error when
    /// `RLIMIT_MEMLOCK` or the memory cgroup does not allow it.
    pub fn lock(file: &std::fs::File, len: u64) -> io::Result<LockedMapping> {
        let len = usize::try_from(len)
            .ok()
            .filter(|len| *len > 0)
            .ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
        // SAFETY: a new read-only shared mapping of an open file chosen by the kernel
        // (address null); it is never dereferenced, and unmapped by Drop.
        let address = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if address == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let mapping = LockedMapping {
            address: address as usize,
            len,
        };
        // SAFETY: the range is the mapping made above.
        if unsafe { libc::mlock(address, len) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(mapping)
    }

    /// The bytes the mapping holds.
    pub fn len(&self) -> u64 {
        self.len as u64
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Drop for LockedMapping {
    fn drop(&mut self) {
        // SAFETY: the mapping was made by `lock` with this address and length, and nothing
        // refers into it. Unmapping unlocks it.
        unsafe {
            libc::munmap(self.address as *mut libc::c_void, self.len);
        }
    }
}

/// Sets the calling thread's nice value. On Linux a nice value belongs to a thread, not to
/// its process; threads it starts later inherit it.
pub fn set_thread_nice(nice: i32) -> io::Result<()> {
    // SAFETY: setpriority has no memory-safety preconditions; `who` 0 is the calling thread.
    let result = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, nice) };
    if result == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The kernel's page size.
pub fn page_size() -> u64 {
    // SAFETY: sysconf has no memory-safety preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(size).unwrap_or(4096)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_sets_its_own_nice_value() {
        let read_prio = || {
            let text = std::fs::read_to_string("/proc/thread-self/sched").unwrap();
            let line = text
                .lines()
                .find(|line| line.starts_with("prio"))
                .unwrap()
                .to_owned();
            line.rsplit(':')
                .next()
                .unwrap()
                .trim()
                .parse::<i64>()
                .unwrap()
        };
        let before = read_prio();
        std::thread::spawn(move || {
            set_thread_nice(19).unwrap();
            assert_eq!(read_prio(), 139);
        })
        .join()
        .unwrap();
        assert_eq!(
            read_prio(),
            before,
            "another thread's nice value is its own"
        );
    }

    #[test]
    fn strerror_matches_glibc_wording() {
        assert_eq!(strerror(libc::ENOENT), "No such file or directory");
        assert_eq!(
            error_text(&io::Error::from_raw_os_error(98)),
            "98: Address already in use"
        );
    }

    #[test]
    fn root_user_exists() {
        let root = user_by_name("root").unwrap().unwrap();
        assert_eq!((root.uid, root.gid), (0, 0));
        assert_eq!(user_by_name("no-such-user-portico").unwrap(), None);
        assert_eq!(group_by_name("root").unwrap(), Some(0));
    }

    #[test]
    fn utc_offset_is_within_a_day() {
        let offset = utc_offset_seconds(1_795_295_217);
        assert!(offset.abs() <= 14 * 3600);
    }

    /// The owner sees page-cache state; another user (here a thread that switched to
    /// `nobody`, as workers switch to `user`) is told every page is resident.
    #[test]
    fn page_cache_state_is_visible_to_the_owner_only() {
        let path = std::env::temp_dir().join(format!("portico-visible-{}", std::process::id()));
        std::fs::write(&path, vec![7u8; 8192]).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        assert!(page_cache_visible(&file), "the owner of the file");
        if rustix::process::geteuid().is_root() {
            let nobody = user_by_name("nobody").unwrap().expect("the nobody user");
            let other = std::thread::spawn(move || {
                let uid = rustix::process::Uid::from_raw(nobody.uid);
                rustix::thread::set_thread_res_uid(uid, uid, uid).unwrap();
                page_cache_visible(&file)
            });
            assert!(!other.join().unwrap(), "a user who cannot write the file");
        }
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn the_executable_is_locked_in_memory() {
        let locked = lock_executable().unwrap();
        assert!(locked > 0, "the test binary's own mappings");
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let locked_kib: u64 = status
            .lines()
            .find_map(|line| line.strip_prefix("VmLck:"))
            .and_then(|value| value.trim().trim_end_matches(" kB").trim().parse().ok())
            .unwrap();
        assert!(
            locked_kib * 1024 >= locked,
            "{locked_kib} kB locked, {locked} asked"
        );
    }

    fn locked_kib() -> u64 {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        status
            .lines()
            .find_map(|line| line.strip_prefix("VmLck:"))
            .and_then(|value| value.trim().trim_end_matches(" kB").trim().parse().ok())
            .unwrap()
    }

    /// A locked mapping holds the file's pages in memory until it is dropped.
    #[test]
    fn a_locked_mapping_holds_a_files_pages() {
        let path = std::env::temp_dir().join(format!("portico-locked-{}", std::process::id()));
        std::fs::write(&path, vec![5u8; 256 * 1024]).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        let before = locked_kib();
        let mapping = LockedMapping::lock(&file, 256 * 1024).unwrap();
        assert_eq!(mapping.len(), 256 * 1024);
        assert!(locked_kib() >= before + 256, "VmLck grew by the mapping");
        assert!(range_in_core(&file, 0, 256 * 1024).unwrap());
        drop(mapping);
        assert!(LockedMapping::lock(&file, 0).is_err(), "nothing to lock");
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn defer_accept_applies_to_tcp_listeners() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        set_tcp_defer_accept(&listener, Duration::from_secs(1)).unwrap();
        let not_a_socket = std::fs::File::open("/dev/null").unwrap();
        assert!(set_tcp_defer_accept(&not_a_socket, Duration::from_secs(1)).is_err());
    }
}

/// The size of libxcrypt's `struct crypt_data`, the work area of `crypt_rn`.
const CRYPT_DATA_SIZE: usize = 32768;

#[link(name = "crypt")]
unsafe extern "C" {
    fn crypt_rn(
        phrase: *const libc::c_char,
        setting: *const libc::c_char,
        data: *mut libc::c_void,
        size: libc::c_int,
    ) -> *mut libc::c_char;
}

/// The system's `crypt` of `phrase` with `setting` (a stored hash: DES, `$1$`, `$5$`,
/// `$6$`, `$y$` ... whatever the C library knows), thread-safe; `None` when the setting is
/// not one it knows. Slow by design: run it on a pool.
pub fn crypt(phrase: &[u8], setting: &[u8]) -> Option<Vec<u8>> {
    let phrase = std::ffi::CString::new(phrase).ok()?;
    let setting = std::ffi::CString::new(setting).ok()?;
    let mut data = vec![0u8; CRYPT_DATA_SIZE];
    // SAFETY: both strings are NUL-terminated; `data` is a zeroed area of the size
    // libxcrypt's `struct crypt_data` has, passed with that size, and outlives the call.
    let result = unsafe {
        crypt_rn(
            phrase.as_ptr(),
            setting.as_ptr(),
            data.as_mut_ptr().cast(),
            CRYPT_DATA_SIZE as libc::c_int,
        )
    };
    if result.is_null() {
        return None;
    }
    // SAFETY: on success crypt_rn returns a NUL-terminated string inside `data`.
    let hashed = unsafe { CStr::from_ptr(result) };
    Some(hashed.to_bytes().to_vec())
}

/// The CPU time (user and system) the calling thread has used: a worker's busy time, read by
/// its stall watcher (a vDSO call where the kernel offers it).
///
/// Through libc's `clock_gettime` (rustix's own vDSO lookup crashes under valgrind, which
/// `bench/observe_cost.sh` runs the server in).
pub fn thread_cpu_time() -> std::time::Duration {
    let mut spec = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `spec` is a valid, writable timespec for the duration of the call.
    let result = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut spec) };
    if result != 0 {
        return std::time::Duration::ZERO;
    }
    std::time::Duration::new(
        u64::try_from(spec.tv_sec).unwrap_or(0),
        u32::try_from(spec.tv_nsec).unwrap_or(0),
    )
}

/// Registers a descriptor the caller owns with the current tokio runtime's poller, for
/// reading (a `timerfd`: [`crate::ticker`]). Panics outside a runtime, as tokio does.
pub fn register_readable(
    fd: std::os::fd::OwnedFd,
) -> io::Result<tokio::io::unix::AsyncFd<std::os::fd::OwnedFd>> {
    // SAFETY: the `AsyncFd` takes the `OwnedFd` itself, so the descriptor stays open and
    // names the same file description until the `AsyncFd` is dropped (which deregisters it
    // before closing it), and `OwnedFd::as_raw_fd` always returns that one descriptor.
    unsafe {
        tokio::io::unix::AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE)
            .map_err(io::Error::from)
    }
}

/// `CLOCK_REALTIME` as whole seconds since the Unix epoch and the nanoseconds past them:
/// what `SystemTime::now().duration_since(UNIX_EPOCH)` gives, without its `Duration`
/// arithmetic (the worker's wall clock is read for every response's `Date`). Through
/// libc's vDSO `clock_gettime`, which valgrind runs. A time before the epoch, or a failed
/// call, is the epoch.
pub fn realtime() -> (u64, u32) {
    let mut spec = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `spec` is a valid, writable timespec for the duration of the call.
    let result = unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut spec) };
    match (
        result,
        u64::try_from(spec.tv_sec),
        u32::try_from(spec.tv_nsec),
    ) {
        (0, Ok(seconds), Ok(nanoseconds)) if nanoseconds < 1_000_000_000 => (seconds, nanoseconds),
        _ => (0, 0),
    }
}

/// `CLOCK_MONOTONIC` in whole milliseconds: the clock `Instant` reads, without its
/// `Duration` arithmetic (a `limit_req` lookup reads it on every limited request).
/// Through libc's vDSO `clock_gettime`, which valgrind runs.
pub fn monotonic_millis() -> u64 {
    let mut spec = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `spec` is a valid, writable timespec for the duration of the call.
    let result = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut spec) };
    if result != 0 {
        return 0;
    }
    (spec.tv_sec as u64) * 1000 + (spec.tv_nsec as u64) / 1_000_000
}
