//! Boxing a future where it is made.
//!
//! `Box::pin(make())` builds the future on the stack and then copies it into the heap: for
//! a request handler's future of a few KiB that copy is a few hundred instructions per
//! request (`bench/instructions.sh` counted 340 per proxied request for the proxy's 3 KiB
//! future). Allocating first and writing the future into the allocation lets the call
//! return it straight into the heap.

use std::pin::Pin;

/// The future `make` returns, boxed and pinned, without a copy where the compiler can
/// return it into the allocation.
#[inline(always)]
pub fn pin_boxed<F>(make: impl FnOnce() -> F) -> Pin<Box<F>> {
    Box::into_pin(boxed(make))
}

/// The value `make` returns, boxed, without a copy where the compiler can return it into
/// the allocation.
#[inline(always)]
pub fn boxed<T>(make: impl FnOnce() -> T) -> Box<T> {
    let mut slot = Box::<T>::new_uninit();
    slot.write(make());
    // SAFETY: `write` initialized the slot just above.
    unsafe { slot.assume_init() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_boxed_future_runs_as_made() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a runtime");
        let words = String::from("made in");
        let future = pin_boxed(|| async move { words + " place" });
        assert_eq!(runtime.block_on(future), "made in place");
        let value = boxed(|| [7u8; 4096]);
        assert!(value.iter().all(|&byte| byte == 7));
    }
}
