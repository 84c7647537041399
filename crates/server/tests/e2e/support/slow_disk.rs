//! The seed's condition in small, for tests that need a disk slower than the machine's and
//! a page cache that does not keep a file: a cgroup v1 blkio group that throttles the
//! server's reads ([`SlowDisk`]), and a thread that keeps dropping a file's pages from
//! page cache ([`Evictor`]), as memory pressure does. Both need root and a disk file
//! system; where the machine cannot, [`SlowDisk::throttle`] says why and the test skips.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// Where cgroup v1 mounts the blkio controller.
const BLKIO_ROOT: &str = "/sys/fs/cgroup/blkio";

/// Tells groups of concurrent tests apart.
static GROUP_SERIAL: AtomicU64 = AtomicU64::new(0);

/// A blkio group holding one process, removed (after moving the process back to the root
/// group) on drop.
#[derive(Debug)]
pub struct SlowDisk {
    group: PathBuf,
    pid: u32,
}

impl SlowDisk {
    /// Moves process `pid` (all its threads) into a new blkio group whose reads from the
    /// disk holding `file` are limited to `bytes_per_second`. `Err` says why this machine
    /// cannot (not root, no cgroup v1 blkio, a file system with no disk behind it).
    pub fn throttle(pid: u32, file: &Path, bytes_per_second: u64) -> Result<SlowDisk, String> {
        if !rustix::process::geteuid().is_root() {
            return Err("a blkio throttle needs root".to_owned());
        }
        if !Path::new(BLKIO_ROOT).join("cgroup.procs").exists() {
            return Err(format!("no cgroup v1 blkio hierarchy at {BLKIO_ROOT}"));
        }
        let device = disk_of(file)?;
        let serial = GROUP_SERIAL.fetch_add(1, Ordering::Relaxed);
        let group =
            Path::new(BLKIO_ROOT).join(format!("portico-e2e-{}-{serial}", std::process::id()));
        std::fs::create_dir_all(&group).map_err(|error| format!("{}: {error}", group.display()))?;
        let disk = SlowDisk { group, pid };
        disk.write(
            "blkio.throttle.read_bps_device",
            &format!("{device} {bytes_per_second}"),
        )?;
        disk.write("cgroup.procs", &pid.to_string())?;
        Ok(disk)
    }

    fn write(&self, name: &str, value: &str) -> Result<(), String> {
        let path = self.group.join(name);
        std::fs::write(&path, value).map_err(|error| format!("{}: {error}", path.display()))
    }
}

impl Drop for SlowDisk {
    fn drop(&mut self) {
        // The process may have exited already; then the group is empty anyway.
        let _ = std::fs::write(
            Path::new(BLKIO_ROOT).join("cgroup.procs"),
            self.pid.to_string(),
        );
        let _ = std::fs::remove_dir(&self.group);
    }
}

/// `MAJOR:MINOR` of the whole disk under `file` (a throttle applies to disks, not
/// partitions).
fn disk_of(file: &Path) -> Result<String, String> {
    let stat = rustix::fs::stat(file).map_err(|error| format!("{}: {error}", file.display()))?;
    let (major, minor) = (
        rustix::fs::major(stat.st_dev),
        rustix::fs::minor(stat.st_dev),
    );
    let sys = PathBuf::from(format!("/sys/dev/block/{major}:{minor}"));
    if !sys.exists() {
        return Err(format!(
            "{} is on {major}:{minor}, which is not a block device (tmpfs or overlay?)",
            file.display()
        ));
    }
    if sys.join("partition").exists() {
        let parent = std::fs::read_to_string(sys.join("../dev"))
            .map_err(|error| format!("the disk of partition {major}:{minor}: {error}"))?;
        return Ok(parent.trim().to_owned());
    }
    Ok(format!("{major}:{minor}"))
}

/// A thread that drops a file's pages from page cache every `period` until dropped: the
/// file starts in page cache, and a server that reads it finds its pages gone soon after,
/// as under memory pressure.
#[derive(Debug)]
pub struct Evictor {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Evictor {
    /// Syncs the file (dirty pages cannot be dropped), checks that dropping works here
    /// (not on tmpfs), reads the file back into page cache and starts the thread, whose
    /// first drop comes after one `period`.
    pub fn start(path: &Path, period: Duration) -> Result<Evictor, String> {
        let file = File::open(path).map_err(|error| format!("{}: {error}", path.display()))?;
        file.sync_all().map_err(|error| format!("fsync: {error}"))?;
        evict(&file);
        if is_cached(&file) {
            return Err(format!(
                "{} stays in page cache after POSIX_FADV_DONTNEED (tmpfs?)",
                path.display()
            ));
        }
        std::io::copy(&mut &file, &mut std::io::sink())
            .map_err(|error| format!("reading {}: {error}", path.display()))?;
        let stop = Arc::new(AtomicBool::new(false));
        let thread = std::thread::spawn({
            let stop = Arc::clone(&stop);
            move || {
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(period);
                    evict(&file);
                }
            }
        });
        Ok(Evictor {
            stop,
            thread: Some(thread),
        })
    }
}

impl Evictor {
    /// Waits until the file's first page has been dropped: a request made then reads the
    /// disk from its first piece, however fast the server would have sent the file from
    /// page cache before the first drop.
    pub fn wait_evicted(&self, path: &Path) {
        let file = File::open(path).expect("the evicted file opens");
        crate::support::wait::wait_until(
            "the file to leave page cache",
            crate::support::wait::PATIENCE,
            || !is_cached(&file),
        );
    }
}

impl Drop for Evictor {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn evict(file: &File) {
    let _ = rustix::fs::fadvise(file, 0, None, rustix::fs::Advice::DontNeed);
}

/// Whether the file's first byte is in page cache (a read that may not wait says so).
fn is_cached(file: &File) -> bool {
    let mut byte = [0u8; 1];
    let mut slices = [std::io::IoSliceMut::new(&mut byte)];
    rustix::io::preadv2(file, &mut slices, 0, rustix::io::ReadWriteFlags::NOWAIT).is_ok()
}
