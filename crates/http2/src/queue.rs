//! The DATA one stream's caller queued and that is not framed yet: buffers handed over
//! whole are kept as they are, small writes are copied together, and frames are cut from
//! the front without copying (a frame's payload may take the end of one buffer and the
//! start of the next, as separate parts).

use std::collections::VecDeque;

use bytes::{Buf, Bytes, BytesMut};

/// One stream's queued DATA.
#[derive(Clone, Debug, Default)]
pub(crate) struct DataQueue {
    /// Buffers in the order they were queued.
    chunks: VecDeque<Bytes>,
    /// Bytes copied in after the chunks; a chunk of their own when the front reaches them
    /// or a buffer is queued behind them.
    copied: BytesMut,
    len: usize,
}

impl DataQueue {
    /// Queues a copy of `data`.
    pub(crate) fn push_copy(&mut self, data: &[u8]) {
        self.copied.extend_from_slice(data);
        self.len += data.len();
    }

    /// Queues `data` without copying it.
    pub(crate) fn push(&mut self, data: Bytes) {
        self.seal();
        self.len += data.len();
        if !data.is_empty() {
            self.chunks.push_back(data);
        }
    }

    /// The bytes queued, when they are all copies (no buffer handed over waits before
    /// them): a frame's payload can be copied from here without taking them apart.
    pub(crate) fn copied_only(&self) -> Option<&[u8]> {
        self.chunks.is_empty().then_some(&self.copied[..])
    }

    /// Drops the first `count` bytes of [`Self::copied_only`], which were framed.
    pub(crate) fn consume_copied(&mut self, count: usize) {
        debug_assert!(self.chunks.is_empty() && count <= self.copied.len());
        self.copied.advance(count);
        self.len -= count;
        if self.copied.is_empty() {
            // Keeps the buffer: the next copies start at its beginning.
            self.copied.clear();
        }
    }

    /// Empties the queue, keeping the copies' buffer.
    pub(crate) fn clear(&mut self) {
        self.chunks.clear();
        self.copied.clear();
        self.len = 0;
    }

    /// The memory the queue keeps for copies.
    pub(crate) fn capacity(&self) -> usize {
        self.copied.capacity()
    }

    /// Bytes queued.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Takes up to `max` bytes from the front, from one buffer (joining two would need a
    /// copy): a payload that spans buffers is taken a part at a time.
    pub(crate) fn take(&mut self, max: usize) -> Bytes {
        if self.chunks.is_empty() {
            self.seal();
        }
        let Some(front) = self.chunks.front_mut() else {
            return Bytes::new();
        };
        let taken = if front.len() <= max {
            self.chunks.pop_front().unwrap_or_default()
        } else {
            front.split_to(max)
        };
        self.len -= taken.len();
        taken
    }

    /// The bytes queued so far, in order (a copy, for tests).
    #[cfg(test)]
    pub(crate) fn to_vec(&self) -> Vec<u8> {
        let mut bytes: Vec<u8> = self
            .chunks
            .iter()
            .flat_map(|chunk| chunk.iter().copied())
            .collect();
        bytes.extend_from_slice(&self.copied);
        bytes
    }

    fn seal(&mut self) {
        if !self.copied.is_empty() {
            self.chunks.push_back(self.copied.split().freeze());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_cut_from_one_buffer_at_a_time_in_order() {
        let mut queue = DataQueue::default();
        queue.push_copy(b"ab");
        queue.push_copy(b"cd");
        queue.push(Bytes::from_static(b"efghij"));
        queue.push_copy(b"k");
        assert_eq!(queue.len(), 11);
        assert_eq!(queue.to_vec(), b"abcdefghijk");
        // The copies before the buffer became one chunk of their own.
        assert_eq!(queue.take(3).as_ref(), b"abc");
        assert_eq!(queue.take(3).as_ref(), b"d");
        assert_eq!(queue.take(4).as_ref(), b"efgh");
        assert_eq!(queue.take(100).as_ref(), b"ij");
        assert_eq!(queue.take(100).as_ref(), b"k");
        assert!(queue.is_empty());
        assert!(queue.take(100).is_empty());
    }

    #[test]
    fn a_buffer_handed_over_is_framed_without_a_copy() {
        let buffer = Bytes::from(vec![7u8; 1000]);
        let start = buffer.as_ptr();
        let mut queue = DataQueue::default();
        queue.push(buffer);
        let first = queue.take(600);
        let second = queue.take(600);
        assert_eq!((first.len(), second.len()), (600, 400));
        assert_eq!(first.as_ptr(), start);
        assert_eq!(second.as_ptr(), start.wrapping_add(600));
    }

    #[test]
    fn copies_alone_are_framed_from_their_buffer_which_is_kept() {
        let mut queue = DataQueue::default();
        queue.push_copy(b"hello ");
        queue.push_copy(b"world");
        assert_eq!(queue.copied_only(), Some(&b"hello world"[..]));
        let buffer = queue.copied_only().map(<[u8]>::as_ptr_range);
        queue.consume_copied(6);
        assert_eq!(queue.len(), 5);
        assert_eq!(queue.copied_only(), Some(&b"world"[..]));
        queue.consume_copied(5);
        assert!(queue.is_empty());
        queue.push_copy(b"again");
        assert_eq!(queue.to_vec(), b"again");
        // Within the first buffer: no new one was allocated.
        let again = queue.copied_only().map(<[u8]>::as_ptr);
        let (Some(buffer), Some(again)) = (buffer, again) else {
            panic!("copies expected");
        };
        assert!(buffer.start <= again && again < buffer.start.wrapping_add(16));
        // A buffer handed over first: the copies behind it are not the front.
        queue.clear();
        queue.push(Bytes::from_static(b"shared"));
        queue.push_copy(b"copy");
        assert_eq!(queue.copied_only(), None);
        assert_eq!(queue.take(100).as_ref(), b"shared");
        assert_eq!(queue.take(100).as_ref(), b"copy");
    }

    #[test]
    fn empty_buffers_queue_nothing() {
        let mut queue = DataQueue::default();
        queue.push(Bytes::new());
        queue.push_copy(b"");
        assert!(queue.is_empty());
        assert!(queue.take(10).is_empty());
    }
}
