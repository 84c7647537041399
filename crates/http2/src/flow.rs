//! Flow-control windows (RFC 9113 §5.2, §6.9).

use crate::frame::MAX_WINDOW;

/// A send window: how many DATA bytes the peer lets us send. It can go below zero when the
/// peer lowers SETTINGS_INITIAL_WINDOW_SIZE (§6.9.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SendWindow(i64);

/// The window would pass 2^31-1: a FLOW_CONTROL_ERROR.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowOverflow;

impl SendWindow {
    /// A window of `size` bytes.
    pub fn new(size: u32) -> Self {
        Self(i64::from(size))
    }

    /// The bytes that may be sent now.
    pub fn available(&self) -> u32 {
        u32::try_from(self.0.clamp(0, i64::from(MAX_WINDOW))).unwrap_or(0)
    }

    /// Takes `bytes` sent.
    pub fn consume(&mut self, bytes: u32) {
        debug_assert!(bytes <= self.available());
        self.0 -= i64::from(bytes);
    }

    /// A WINDOW_UPDATE's increment, or a change of the initial size (which may be negative).
    pub fn adjust(&mut self, delta: i64) -> Result<(), WindowOverflow> {
        let next = self.0 + delta;
        if next > i64::from(MAX_WINDOW) {
            return Err(WindowOverflow);
        }
        self.0 = next;
        Ok(())
    }
}

/// A receive window: what we let the peer send, and the credit consumed data gives back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecvWindow {
    window: i64,
    /// The size the window is kept near.
    target: u32,
    /// Bytes consumed and not yet given back with WINDOW_UPDATE.
    credit: u32,
}

impl RecvWindow {
    /// A window of `size` bytes, given back up to `target` (`target` >= `size` grows it).
    pub fn new(size: u32, target: u32) -> Self {
        Self {
            window: i64::from(size),
            target,
            credit: target.saturating_sub(size),
        }
    }

    /// The bytes the peer may still send.
    pub fn available(&self) -> u32 {
        u32::try_from(self.window.max(0)).unwrap_or(u32::MAX)
    }

    /// Takes `bytes` received; false if that is more than the window allowed.
    pub fn receive(&mut self, bytes: u32) -> bool {
        if i64::from(bytes) > self.window {
            return false;
        }
        self.window -= i64::from(bytes);
        true
    }

    /// Raises the size the window is kept near to `target` (never lowers it): the
    /// difference is owed at once, and given back by the next [`release`](Self::release).
    pub fn widen(&mut self, target: u32) {
        if target > self.target {
            self.credit = self.credit.saturating_add(target - self.target);
            self.target = target;
        }
    }

    /// Gives back `bytes` the application consumed; returns the WINDOW_UPDATE increment to
    /// send once half the target is owed (small updates would cost a frame each).
    pub fn release(&mut self, bytes: u32) -> Option<u32> {
        self.credit = self.credit.saturating_add(bytes);
        if self.credit == 0 || self.credit < self.target / 2 {
            return None;
        }
        let increment = self.credit.min(MAX_WINDOW.saturating_sub(self.available()));
        self.credit = 0;
        self.window += i64::from(increment);
        (increment > 0).then_some(increment)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn send_window_goes_negative_and_refuses_overflow() {
        let mut window = SendWindow::new(100);
        window.consume(60);
        assert_eq!(window.adjust(-65), Ok(()));
        assert_eq!(window.available(), 0);
        assert_eq!(window.adjust(30), Ok(()));
        assert_eq!(window.available(), 5);
        let mut full = SendWindow::new(MAX_WINDOW);
        assert_eq!(full.adjust(1), Err(WindowOverflow));
        assert_eq!(full.available(), MAX_WINDOW);
    }

    #[test]
    fn recv_window_refuses_excess_and_gives_back_in_halves() {
        let mut window = RecvWindow::new(100, 100);
        assert!(window.receive(100));
        assert!(!window.receive(1));
        assert_eq!(window.release(49), None);
        assert_eq!(window.release(1), Some(50));
        assert_eq!(window.available(), 50);
        // A target above the initial size grows the window at the first release.
        let mut grown = RecvWindow::new(65_535, 1 << 20);
        assert_eq!(grown.release(0), Some((1 << 20) - 65_535));
        assert_eq!(grown.available(), 1 << 20);
    }

    #[test]
    fn a_widened_window_is_given_back_at_the_next_release() {
        let mut window = RecvWindow::new(65_536, 65_536);
        assert!(window.receive(16_384));
        window.widen(256 * 1024);
        assert_eq!(window.release(0), Some(256 * 1024 - 65_536));
        assert_eq!(window.available(), 256 * 1024 - 16_384);
        // Never narrowed: a smaller target changes nothing.
        window.widen(1024);
        assert_eq!(window.release(16_384), None);
        assert_eq!(window.release(128 * 1024 - 16_384), Some(128 * 1024));
    }
}
