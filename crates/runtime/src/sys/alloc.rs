//! Portico's global allocator: the system's (glibc's malloc), with medium-sized blocks
//! recycled per thread.
//!
//! glibc keeps a per-thread cache only for blocks of up to 1,032 bytes; a larger block goes
//! through its arenas' bins, a few hundred instructions for each `malloc` and each `free`.
//! Every proxied response allocates two such blocks and frees them again (the handler's
//! and the body's futures, 1 to 3 KiB; `bench/instructions.sh` counted 487 instructions for
//! the body's `malloc` alone). Here a block of 1,025 to 4,096 bytes is taken from the
//! system rounded up to its 256-byte class, and when freed it goes on its thread's list for
//! that class, at most `KEPT` (16) per class; the next allocation of the class on that
//! thread takes it back. A block freed on another thread joins that thread's list, which is
//! harmless: every block is the system's, of its class's size. The lists hold at most
//! 12 classes x 16 blocks (about 490 KiB) per thread and are given back to the system when
//! the thread exits. Everything else goes to the system allocator untouched.
//!
//! Sixteen, because an HTTP/2 connection runs its streams at once, each in a future of
//! about 3 KiB: with h2load's 10 streams on each of 10 connections, 4 kept per class sent
//! 3 of every 5 stream futures through glibc's bins (1,165 instructions per `malloc`,
//! `bench/instructions.sh` h2c-return200).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::{Cell, UnsafeCell};
use std::ptr;
use std::sync::atomic::{AtomicU32, Ordering};

/// Sizes up to this go to the system as they are (glibc's own cache covers them).
const SMALLEST: usize = 1024;
/// Sizes above this go to the system as they are.
const LARGEST: usize = 4096;
const CLASS_BYTES: usize = 256;
const CLASSES: usize = (LARGEST - SMALLEST) / CLASS_BYTES;
/// Blocks kept per class and thread.
const KEPT: u8 = 16;
/// The alignment `malloc` guarantees; a layout asking for more is the system's.
const ALIGN: usize = 16;

/// The global allocator (see the module's documentation).
#[derive(Debug, Clone, Copy, Default)]
pub struct Recycling;

/// One thread's free blocks: a list per class, linked through each block's first word.
struct Lists {
    heads: [*mut u8; CLASSES],
    counts: [u8; CLASSES],
}

thread_local! {
    static LISTS: UnsafeCell<Lists> = const {
        UnsafeCell::new(Lists { heads: [ptr::null_mut(); CLASSES], counts: [0; CLASSES] })
    };
    /// 0: nothing kept yet; 1: the exit hook is set; 2: the thread is exiting, keep nothing.
    static STATE: Cell<u8> = const { Cell::new(0) };
}

/// The pthread key whose destructor gives a thread's blocks back when it exits (plain
/// thread-locals with a destructor may allocate when they register it; a pthread key does
/// not go through this allocator). `u32::MAX` until created.
static EXIT_KEY: AtomicU32 = AtomicU32::new(u32::MAX);

fn class_of(layout: Layout) -> Option<usize> {
    let size = layout.size();
    (size > SMALLEST && size <= LARGEST && layout.align() <= ALIGN)
        .then(|| (size - SMALLEST - 1) / CLASS_BYTES)
}

fn class_layout(class: usize) -> Layout {
    // Never fails: the size is at most LARGEST and ALIGN is a power of two.
    Layout::from_size_align(SMALLEST + (class + 1) * CLASS_BYTES, ALIGN)
        .unwrap_or(Layout::new::<u8>())
}

/// Whether this thread may keep blocks: sets the exit hook on first use.
fn may_keep() -> bool {
    match STATE.with(Cell::get) {
        1 => true,
        0 => {
            let ok = set_exit_hook();
            STATE.with(|state| state.set(if ok { 1 } else { 2 }));
            ok
        }
        _ => false,
    }
}

fn set_exit_hook() -> bool {
    let mut key = EXIT_KEY.load(Ordering::Acquire);
    if key == u32::MAX {
        let mut created: libc::pthread_key_t = 0;
        // SAFETY: `created` is a valid place for the key; the destructor is an
        // `extern "C" fn(*mut c_void)`.
        if unsafe { libc::pthread_key_create(&mut created, Some(give_back)) } != 0 {
            return false;
        }
        key =
            match EXIT_KEY.compare_exchange(u32::MAX, created, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => created,
                Err(existing) => {
                    // Another thread created one first: this one is not needed.
                    // SAFETY: `created` was just made by pthread_key_create and never used.
                    unsafe { libc::pthread_key_delete(created) };
                    existing
                }
            };
    }
    // Any non-null value makes the destructor run at the thread's exit.
    // SAFETY: `key` is a live key; the value is never dereferenced.
    unsafe { libc::pthread_setspecific(key, ptr::NonNull::<u8>::dangling().as_ptr().cast()) == 0 }
}

/// The exit hook: the thread's blocks go back to the system, and it keeps none from now on
/// (other exit hooks may still free memory).
extern "C" fn give_back(_: *mut libc::c_void) {
    STATE.with(|state| state.set(2));
    release_all();
}

/// Gives every kept block of this thread back to the system.
fn release_all() {
    LISTS.with(|lists| {
        // SAFETY: the lists are this thread's and nothing else holds a reference into them
        // (the allocator is not re-entered from within itself).
        let lists = unsafe { &mut *lists.get() };
        for class in 0..CLASSES {
            let mut block = lists.heads[class];
            while !block.is_null() {
                // SAFETY: a kept block is a live system block of its class's layout whose
                // first word holds the next kept block.
                let next = unsafe { block.cast::<*mut u8>().read() };
                unsafe { System.dealloc(block, class_layout(class)) };
                block = next;
            }
            lists.heads[class] = ptr::null_mut();
            lists.counts[class] = 0;
        }
    });
}

/// How many blocks of `class` this thread keeps (for the tests).
#[cfg(test)]
fn kept(class: usize) -> u8 {
    // SAFETY: as in release_all.
    LISTS.with(|lists| unsafe { (*lists.get()).counts[class] })
}

// SAFETY: every block handed out is a live system block at least as large as the layout
// asks, aligned to at least ALIGN (or as the system aligns it); a kept block is owned by
// one thread's list only, and taken off it before it is handed out again.
unsafe impl GlobalAlloc for Recycling {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let Some(class) = class_of(layout) else {
            // SAFETY: the caller's contract is the system's.
            return unsafe { System.alloc(layout) };
        };
        let kept = LISTS.with(|lists| {
            // SAFETY: as in release_all.
            let lists = unsafe { &mut *lists.get() };
            let block = lists.heads[class];
            if !block.is_null() {
                // SAFETY: a kept block's first word is the next one.
                lists.heads[class] = unsafe { block.cast::<*mut u8>().read() };
                lists.counts[class] -= 1;
            }
            block
        });
        if kept.is_null() {
            // SAFETY: the class's layout has a non-zero size.
            unsafe { System.alloc(class_layout(class)) }
        } else {
            kept
        }
    }

    unsafe fn dealloc(&self, block: *mut u8, layout: Layout) {
        let Some(class) = class_of(layout) else {
            // SAFETY: the block came from System.alloc with this layout.
            return unsafe { System.dealloc(block, layout) };
        };
        let taken = may_keep()
            && LISTS.with(|lists| {
                // SAFETY: as in release_all.
                let lists = unsafe { &mut *lists.get() };
                if lists.counts[class] >= KEPT {
                    return false;
                }
                // SAFETY: the block is at least CLASS_BYTES long and aligned for a pointer.
                unsafe { block.cast::<*mut u8>().write(lists.heads[class]) };
                lists.heads[class] = block;
                lists.counts[class] += 1;
                true
            });
        if !taken {
            // SAFETY: blocks of a class are allocated with its layout.
            unsafe { System.dealloc(block, class_layout(class)) };
        }
    }

    unsafe fn realloc(&self, block: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let old = class_of(layout);
        // The caller guarantees that the new layout is valid.
        let new_layout = Layout::from_size_align(new_size, layout.align()).unwrap_or(layout);
        let new = class_of(new_layout);
        match (old, new) {
            // SAFETY: the block is the system's with this layout.
            (None, None) => unsafe { System.realloc(block, layout, new_size) },
            (Some(old), Some(new)) if old == new => block,
            _ => {
                // SAFETY: new_layout is valid and non-zero (new_size > 0 by contract).
                let moved = unsafe { self.alloc(new_layout) };
                if !moved.is_null() {
                    // SAFETY: both blocks are live, distinct and hold at least this many
                    // bytes.
                    unsafe {
                        ptr::copy_nonoverlapping(block, moved, layout.size().min(new_size));
                        self.dealloc(block, layout);
                    }
                }
                moved
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(size: usize) -> Layout {
        Layout::from_size_align(size, 8).unwrap()
    }

    #[test]
    fn sizes_fall_in_classes_of_256_bytes() {
        assert_eq!(class_of(layout(1024)), None);
        assert_eq!(class_of(layout(1025)), Some(0));
        assert_eq!(class_of(layout(1280)), Some(0));
        assert_eq!(class_of(layout(1281)), Some(1));
        assert_eq!(class_of(layout(4096)), Some(CLASSES - 1));
        assert_eq!(class_of(layout(4097)), None);
        assert_eq!(class_of(Layout::from_size_align(2048, 64).unwrap()), None);
        for class in 0..CLASSES {
            let size = class_layout(class).size();
            assert_eq!(class_of(layout(size)), Some(class));
            assert_eq!(class_of(layout(size - CLASS_BYTES + 1)), Some(class));
        }
    }

    #[test]
    fn a_freed_block_is_handed_out_again_and_at_most_four_are_kept() {
        // On a thread of its own, so that nothing else allocates in its classes.
        std::thread::spawn(|| {
            let size = 1400;
            let class = class_of(layout(size)).unwrap();
            unsafe {
                let first = Recycling.alloc(layout(size));
                assert!(!first.is_null());
                first.write_bytes(0xab, size);
                Recycling.dealloc(first, layout(size));
                assert_eq!(kept(class), 1);
                // Any size of the class takes it.
                let again = Recycling.alloc(layout(1290));
                assert_eq!(again, first);
                assert_eq!(kept(class), 0);
                let blocks: Vec<*mut u8> = (0..usize::from(KEPT) + 2)
                    .map(|_| Recycling.alloc(layout(size)))
                    .collect();
                for block in &blocks {
                    block.write_bytes(0xcd, size);
                }
                for block in blocks {
                    Recycling.dealloc(block, layout(size));
                }
                assert_eq!(kept(class), KEPT);
                Recycling.dealloc(again, layout(1290));
                assert_eq!(kept(class), KEPT);
                release_all();
                assert_eq!(kept(class), 0);
            }
        })
        .join()
        .unwrap();
    }

    #[test]
    fn realloc_keeps_the_bytes_across_classes_and_the_system() {
        std::thread::spawn(|| unsafe {
            let mut block = Recycling.alloc(layout(100));
            let mut size = 100;
            for (index, byte) in (0..size).enumerate() {
                block.add(index).write(byte as u8);
            }
            for new_size in [1100, 1200, 3000, 5000, 2000, 50] {
                block = Recycling.realloc(block, layout(size), new_size);
                assert!(!block.is_null());
                for index in 0..size.min(new_size).min(100) {
                    assert_eq!(block.add(index).read(), index as u8, "after {new_size}");
                }
                size = new_size;
            }
            // Within one class the block stays where it is.
            let inside = Recycling.alloc(layout(1100));
            assert_eq!(Recycling.realloc(inside, layout(1100), 1250), inside);
            Recycling.dealloc(inside, layout(1250));
            Recycling.dealloc(block, layout(size));
        })
        .join()
        .unwrap();
    }

    #[test]
    fn an_exiting_thread_keeps_nothing() {
        std::thread::spawn(|| unsafe {
            let block = Recycling.alloc(layout(2000));
            Recycling.dealloc(block, layout(2000));
            assert_eq!(kept(class_of(layout(2000)).unwrap()), 1);
            give_back(ptr::null_mut());
            assert_eq!(kept(class_of(layout(2000)).unwrap()), 0);
            let block = Recycling.alloc(layout(2000));
            Recycling.dealloc(block, layout(2000));
            assert_eq!(kept(class_of(layout(2000)).unwrap()), 0);
        })
        .join()
        .unwrap();
    }
}
