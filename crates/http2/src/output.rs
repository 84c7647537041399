//! The bytes a connection has to write, in wire order. Control frames and header blocks are
//! copied into runs of bytes; a DATA frame's payload stays in the buffers the caller queued
//! (shared, never copied), beside its 9-byte header, so that the caller sends a batch of
//! frames with one gathered write (`writev`). A payload may span several buffers: frames
//! are cut where the windows and the frame size say, as nginx cuts them, not where a
//! buffer happens to end.

use std::collections::VecDeque;
use std::io::IoSlice;

use bytes::Bytes;

use crate::frame::HEADER_LEN;

/// Payload parts up to this size are copied behind the frames before them: a gathered
/// write costs more per piece than a copy this small, and a TLS session makes a record of
/// each piece it is given.
pub(crate) const INLINE_DATA_MAX: usize = 2048;

/// Buffers of written DATA kept for the caller to read its next pieces into: a buffer freed
/// and allocated again for every piece costs page faults and zeroing (glibc gives a
/// worker's freed memory back to the kernel), more than the copies this path saves. The
/// connection keeps no more than it has open streams (see [`Output::keep_reclaimed`]),
/// and never more than this.
const RECLAIMED_MAX: usize = 128;

/// Buffers smaller than this are not worth keeping.
const RECLAIM_MIN_BYTES: usize = 4096;

/// One piece of the output.
#[derive(Debug)]
enum Run {
    /// Whole frames, copied.
    Frames(Vec<u8>),
    /// Part of a DATA frame's payload, after the frame's header when this is the first part
    /// (without one, it goes on with the payload of the frame before it).
    Data {
        header: Option<[u8; HEADER_LEN]>,
        payload: Bytes,
    },
}

impl Run {
    fn len(&self) -> usize {
        match self {
            Run::Frames(bytes) => bytes.len(),
            Run::Data { header, payload } => {
                header.map_or(0, |header| header.len()) + payload.len()
            }
        }
    }
}

/// What the connection has to write.
#[derive(Debug, Default)]
pub(crate) struct Output {
    /// Runs closed by a DATA frame after them, oldest first.
    runs: VecDeque<Run>,
    /// Frames written after the last run; a run of its own once a DATA frame follows.
    open: Vec<u8>,
    /// Bytes in `runs`, the written part of the front run included.
    runs_len: usize,
    /// Bytes of the front run already written.
    front_written: usize,
    /// An emptied frame buffer, kept for the next `open`.
    spare: Vec<u8>,
    /// Emptied DATA buffers, for [`Output::take_reclaimed`].
    reclaimed: Vec<Vec<u8>>,
}

impl Output {
    /// Where the next control frames and header blocks are appended.
    pub(crate) fn frames(&mut self) -> &mut Vec<u8> {
        &mut self.open
    }

    /// Appends a DATA frame whose header is `header` and whose payload is `parts`, in order
    /// (their lengths add up to the header's).
    pub(crate) fn push_data(
        &mut self,
        header: [u8; HEADER_LEN],
        parts: impl IntoIterator<Item = Bytes>,
    ) {
        let mut header = Some(header);
        for payload in parts {
            if payload.len() <= INLINE_DATA_MAX {
                if let Some(header) = header.take() {
                    self.open.extend_from_slice(&header);
                }
                self.open.extend_from_slice(&payload);
                self.reclaim(payload);
                continue;
            }
            if !self.open.is_empty() {
                let frames = std::mem::replace(&mut self.open, std::mem::take(&mut self.spare));
                self.runs_len += frames.len();
                self.runs.push_back(Run::Frames(frames));
            }
            let run = Run::Data {
                header: header.take(),
                payload,
            };
            self.runs_len += run.len();
            self.runs.push_back(run);
        }
        // A frame without payload (END_STREAM alone).
        if let Some(header) = header {
            self.open.extend_from_slice(&header);
        }
    }

    /// Appends a DATA frame whose payload, at most [`INLINE_DATA_MAX`] bytes, is copied
    /// behind the frames before it (as [`Self::push_data`] copies a small payload).
    pub(crate) fn push_data_copied(&mut self, header: [u8; HEADER_LEN], payload: &[u8]) {
        debug_assert!(payload.len() <= INLINE_DATA_MAX);
        self.open.extend_from_slice(&header);
        self.open.extend_from_slice(payload);
    }

    /// Bytes not yet written.
    pub(crate) fn len(&self) -> usize {
        self.runs_len - self.front_written + self.open.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.runs.is_empty() && self.open.is_empty()
    }

    /// Fills `slices` with the unwritten output from its start; returns how many it filled.
    pub(crate) fn slices<'a>(&'a self, slices: &mut [IoSlice<'a>]) -> usize {
        let mut filled = 0;
        for (slot, piece) in slices.iter_mut().zip(self.pieces()) {
            *slot = IoSlice::new(piece);
            filled += 1;
        }
        filled
    }

    /// The unwritten output as byte slices, in order, none empty.
    fn pieces(&self) -> impl Iterator<Item = &[u8]> {
        let runs = self.runs.iter().flat_map(|run| match run {
            Run::Frames(bytes) => [bytes.as_slice(), &[]],
            Run::Data { header, payload } => [
                header.as_ref().map_or(&[][..], |header| header.as_slice()),
                payload.as_ref(),
            ],
        });
        let mut skip = self.front_written;
        runs.chain(std::iter::once(self.open.as_slice()))
            .filter_map(move |piece| {
                let skipped = skip.min(piece.len());
                skip -= skipped;
                let piece = &piece[skipped..];
                (!piece.is_empty()).then_some(piece)
            })
    }

    /// Drops the first `written` bytes (the caller wrote them).
    pub(crate) fn advance(&mut self, mut written: usize) {
        debug_assert!(written <= self.len());
        while written > 0 {
            let Some(front) = self.runs.front() else {
                let count = written.min(self.open.len());
                self.open.drain(..count);
                return;
            };
            let left = front.len() - self.front_written;
            if written < left {
                self.front_written += written;
                return;
            }
            written -= left;
            self.runs_len -= front.len();
            self.front_written = 0;
            match self.runs.pop_front() {
                Some(Run::Frames(mut frames)) if self.spare.capacity() == 0 => {
                    frames.clear();
                    self.spare = frames;
                }
                Some(Run::Data { payload, .. }) => self.reclaim(payload),
                _ => {}
            }
        }
    }

    /// An empty buffer whose DATA was all written, when there is one.
    pub(crate) fn take_reclaimed(&mut self) -> Option<Vec<u8>> {
        self.reclaimed.pop()
    }

    /// Drops the kept buffers beyond `most`.
    pub(crate) fn keep_reclaimed(&mut self, most: usize) {
        self.reclaimed.truncate(most);
    }

    /// Keeps the buffer under a payload when this was its last part.
    fn reclaim(&mut self, payload: Bytes) {
        if self.reclaimed.len() >= RECLAIMED_MAX {
            return;
        }
        let Ok(mut buffer) = payload.try_into_mut() else {
            return;
        };
        buffer.clear();
        let buffer = Vec::from(buffer);
        if buffer.capacity() >= RECLAIM_MIN_BYTES {
            self.reclaimed.push(buffer);
        }
    }

    /// The unwritten output in one buffer (a copy: for tests and callers without gathered
    /// writes).
    pub(crate) fn to_vec(&self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(self.len());
        for piece in self.pieces() {
            bytes.extend_from_slice(piece);
        }
        bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(byte: u8) -> [u8; HEADER_LEN] {
        [byte; HEADER_LEN]
    }

    /// Writes the output `step` bytes at a time, as a socket that takes little would.
    fn drain_by(output: &mut Output, step: usize) -> Vec<u8> {
        let mut written = Vec::new();
        while !output.is_empty() {
            let mut slices = [IoSlice::new(&[]); 4];
            let filled = output.slices(&mut slices);
            let mut taken = 0;
            for slice in &slices[..filled] {
                let room = step - taken;
                written.extend_from_slice(&slice[..slice.len().min(room)]);
                taken += slice.len().min(room);
            }
            output.advance(taken);
            assert_eq!(output.len(), output.to_vec().len());
        }
        written
    }

    #[test]
    fn frames_and_payloads_come_out_in_order_whatever_is_written_at_once() {
        let large = Bytes::from(vec![b'd'; INLINE_DATA_MAX + 1]);
        for step in [1, 7, 9, 10, 100, INLINE_DATA_MAX, 100_000] {
            let mut output = Output::default();
            output.frames().extend_from_slice(b"settings");
            output.push_data(header(1), [large.clone()]);
            output.frames().extend_from_slice(b"ping");
            output.push_data(header(2), [Bytes::from_static(b"small")]);
            output.push_data(header(3), [large.clone()]);
            let mut want = b"settings".to_vec();
            want.extend_from_slice(&header(1));
            want.extend_from_slice(&large);
            want.extend_from_slice(b"ping");
            want.extend_from_slice(&header(2));
            want.extend_from_slice(b"small");
            want.extend_from_slice(&header(3));
            want.extend_from_slice(&large);
            assert_eq!(output.len(), want.len());
            assert_eq!(output.to_vec(), want);
            assert_eq!(drain_by(&mut output, step), want, "step {step}");
            assert_eq!(output.len(), 0);
        }
    }

    #[test]
    fn a_large_payload_is_not_copied_and_a_small_one_is() {
        let large = Bytes::from(vec![b'd'; INLINE_DATA_MAX + 1]);
        let mut output = Output::default();
        output.frames().extend_from_slice(b"headers");
        output.push_data(header(1), [large.clone()]);
        output.push_data(header(2), [Bytes::from(vec![b's'; INLINE_DATA_MAX])]);
        let mut slices = [IoSlice::new(&[]); 8];
        let filled = output.slices(&mut slices);
        // The frames before it, its header, the payload itself, then the small frame copied.
        assert_eq!(filled, 4);
        assert_eq!(slices[2].as_ptr(), large.as_ptr());
        assert_eq!(slices[3].len(), HEADER_LEN + INLINE_DATA_MAX);
        // Fewer slots than pieces: the first ones.
        let mut two = [IoSlice::new(&[]); 2];
        assert_eq!(output.slices(&mut two), 2);
        assert_eq!(&*two[1], &header(1));
    }

    #[test]
    fn a_buffer_whose_frames_are_all_written_is_given_back_empty() {
        let mut buffer = Vec::with_capacity(64 * 1024);
        buffer.resize(17_000, 1);
        let start = buffer.as_ptr();
        let mut whole = Bytes::from(buffer);
        let first = whole.split_to(16_384);
        let mut output = Output::default();
        output.push_data(header(1), [first]);
        output.advance(HEADER_LEN + 16_384);
        // The rest of the buffer is still queued elsewhere: nothing to give back.
        assert_eq!(output.take_reclaimed(), None);
        // Its last part is small and copied: the buffer comes back then.
        output.push_data(header(2), [whole]);
        let reclaimed = output.take_reclaimed().expect("the buffer is free");
        assert_eq!((reclaimed.as_ptr(), reclaimed.len()), (start, 0));
        assert!(reclaimed.capacity() >= 64 * 1024);
        // Small buffers and borrowed ones are not kept.
        output.push_data(header(3), [Bytes::from(vec![0; 100])]);
        output.push_data(header(4), [Bytes::from_static(&[0; 3000])]);
        output.advance(output.len());
        assert_eq!(output.take_reclaimed(), None);
    }

    #[test]
    fn a_payload_of_several_parts_follows_one_header() {
        let large = Bytes::from(vec![b'l'; INLINE_DATA_MAX + 1]);
        let small = Bytes::from_static(b"small");
        let mut output = Output::default();
        output.push_data(header(1), [large.clone(), small.clone(), large.clone()]);
        output.push_data(header(2), [small.clone(), large.clone()]);
        output.push_data(header(3), []);
        let mut want = header(1).to_vec();
        for part in [&large, &small, &large] {
            want.extend_from_slice(part);
        }
        want.extend_from_slice(&header(2));
        want.extend_from_slice(&small);
        want.extend_from_slice(&large);
        want.extend_from_slice(&header(3));
        assert_eq!(output.to_vec(), want);
        let mut slices = [IoSlice::new(&[]); 16];
        let filled = output.slices(&mut slices);
        let lengths: Vec<usize> = slices[..filled].iter().map(|slice| slice.len()).collect();
        // Large parts are slices of their own; a header and the small parts next to it are
        // copied together.
        let large_len = large.len();
        let second_head = HEADER_LEN + small.len();
        assert_eq!(
            lengths,
            [
                HEADER_LEN,
                large_len,
                small.len(),
                large_len,
                second_head,
                large_len,
                HEADER_LEN
            ]
        );
        for step in [1, 9, 1000, 100_000] {
            let mut again = Output::default();
            again.push_data(header(1), [large.clone(), small.clone(), large.clone()]);
            again.push_data(header(2), [small.clone(), large.clone()]);
            again.push_data(header(3), []);
            assert_eq!(drain_by(&mut again, step), want, "step {step}");
        }
    }

    #[test]
    fn a_partly_written_payload_goes_on_from_where_it_stopped() {
        let large = Bytes::from((0..=255u8).cycle().take(5000).collect::<Vec<u8>>());
        let mut output = Output::default();
        output.push_data(header(1), [large.clone()]);
        output.advance(HEADER_LEN + 1000);
        let mut slices = [IoSlice::new(&[]); 4];
        assert_eq!(output.slices(&mut slices), 1);
        assert_eq!(&*slices[0], &large[1000..]);
        assert_eq!(output.len(), 4000);
    }
}
