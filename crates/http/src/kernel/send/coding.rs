//! A body's codings on the way to the client, in nginx's body-filter order: gunzip (a
//! gzip body decoded for a client that does not take gzip), the charset filter's recoding,
//! gzip. Decoding is done in bounded steps: one step inflates at most
//! [`STEP_BYTES`] of output, so a body that inflates a thousandfold neither fills memory nor
//! holds the loop, and the caller writes each step's output before asking for the next.

use flate2::{Decompress, FlushDecompress, Status};

use crate::kernel::send::compress::Compressor;
use crate::kernel::send::pieces::Recode;

/// Decoded bytes one step produces, about (half nginx's default `gunzip_buffers 32 4k`):
/// a buffer this size is reused from the allocator's heap, where one of 128 KiB would be
/// mapped and faulted in afresh for each response.
pub const STEP_BYTES: usize = 64 * 1024;

/// The window of a gzip stream (zlib's largest, which every gzip writer may use).
const WINDOW_BITS: u8 = 15;

/// The codings a body goes through; none by default.
#[derive(Default)]
pub struct Coding {
    // Boxed: a body's futures hold a `Coding`, and most bodies have none of these.
    pub gunzip: Option<Box<Inflater>>,
    pub recoder: Option<Box<dyn Recode>>,
    pub gzip: Option<Box<Compressor>>,
    /// The bytes gzip took and gave, once its stream has ended (`$gzip_ratio`).
    pub gzip_ratio: Option<(u64, u64)>,
}

impl std::fmt::Debug for Coding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Coding")
            .field("gunzip", &self.gunzip.is_some())
            .field("recoder", &self.recoder.is_some())
            .field("gzip", &self.gzip.is_some())
            .finish()
    }
}

/// A gzip body that cannot be decoded; the text is nginx's log message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodingError(pub String);

impl std::fmt::Display for CodingError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// What one step did with its input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    /// Input bytes taken.
    pub consumed: usize,
    /// More output may come from this input: call again with the rest of it (maybe none)
    /// after writing what this step gave.
    pub more: bool,
}

impl Coding {
    /// Whether the body goes out as it is.
    pub fn is_empty(&self) -> bool {
        self.gunzip.is_none() && self.recoder.is_none() && self.gzip.is_none()
    }

    /// One step over `input`: appends the coded output to `out`.
    pub fn step(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<Step, CodingError> {
        let Some(inflater) = &mut self.gunzip else {
            self.code_decoded(input, out);
            return Ok(Step {
                consumed: input.len(),
                more: false,
            });
        };
        if self.recoder.is_none() && self.gzip.is_none() {
            // Nothing after gunzip: inflate straight into the output.
            return inflater.inflate(input, out);
        }
        let mut decoded = std::mem::take(&mut inflater.decoded);
        decoded.clear();
        let result = inflater.inflate(input, &mut decoded);
        if result.is_ok() && !decoded.is_empty() {
            self.code_decoded(&decoded, out);
        }
        if let Some(inflater) = &mut self.gunzip {
            inflater.decoded = decoded;
        }
        result
    }

    /// Codes all of `input` (and ends the codings when `last`), for a body that is whole in
    /// memory; the caller has bounded its size.
    pub fn step_all(&mut self, mut input: &[u8], out: &mut Vec<u8>) -> Result<(), CodingError> {
        loop {
            let step = self.step(input, out)?;
            input = &input[step.consumed..];
            if !step.more {
                return Ok(());
            }
        }
    }

    /// Ends the codings: the rest of the gzip stream; an error when a gzip body being
    /// decoded ended before its end (nginx's "inflate() returned ... on response end").
    pub fn finish(&mut self, out: &mut Vec<u8>) -> Result<(), CodingError> {
        if let Some(inflater) = &self.gunzip
            && !inflater.member_ended
        {
            return Err(CodingError(
                "inflate() returned -5 on response end".to_owned(),
            ));
        }
        if let Some(gzip) = self.gzip.take() {
            let (taken, given) = (gzip.taken, gzip.given);
            let rest = gzip.finish();
            self.gzip_ratio = Some((taken, given + rest.len() as u64));
            out.extend_from_slice(&rest);
        }
        Ok(())
    }

    /// The codings after gunzip.
    fn code_decoded(&mut self, data: &[u8], out: &mut Vec<u8>) {
        match (&mut self.recoder, &mut self.gzip) {
            (None, None) => out.extend_from_slice(data),
            (Some(recoder), None) => recoder.recode(data, out),
            (None, Some(gzip)) => out.extend_from_slice(&gzip.compress(data)),
            (Some(recoder), Some(gzip)) => {
                let mut recoded = Vec::with_capacity(data.len());
                recoder.recode(data, &mut recoded);
                out.extend_from_slice(&gzip.compress(&recoded));
            }
        }
    }
}

/// A gzip decoder over one or more gzip members one after the other (as nginx's gunzip
/// decodes them).
pub struct Inflater {
    decoder: Decompress,
    /// The last member ended and no byte of another has come yet.
    member_ended: bool,
    /// The step's decoded bytes (kept to reuse their allocation).
    decoded: Vec<u8>,
}

impl Default for Inflater {
    fn default() -> Inflater {
        Inflater {
            decoder: Decompress::new_gzip(WINDOW_BITS),
            member_ended: false,
            decoded: Vec::new(),
        }
    }
}

impl Inflater {
    /// Inflates from `input`, appending to `out` until about [`STEP_BYTES`] more bytes are
    /// there (the room `out` has once it holds that many more; nothing is zeroed first) or
    /// the input is used up.
    fn inflate(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<Step, CodingError> {
        out.reserve(STEP_BYTES);
        let mut consumed = 0;
        loop {
            let rest = &input[consumed..];
            if rest.is_empty() && self.member_ended {
                return Ok(Step {
                    consumed,
                    more: false,
                });
            }
            if self.member_ended {
                // Another member follows.
                self.decoder = Decompress::new_gzip(WINDOW_BITS);
                self.member_ended = false;
            }
            let before_in = self.decoder.total_in();
            let before_out = out.len();
            let status = self
                .decoder
                .decompress_vec(rest, out, FlushDecompress::None)
                .map_err(|error| CodingError(format!("inflate() failed: {error}")))?;
            let taken = (self.decoder.total_in() - before_in) as usize;
            consumed += taken;
            if status == Status::StreamEnd {
                self.member_ended = true;
                continue;
            }
            let full = out.len() == out.capacity();
            if full || consumed == input.len() || (taken == 0 && out.len() == before_out) {
                return Ok(Step {
                    consumed,
                    more: full,
                });
            }
        }
    }
}
