//! Limits on what one connection may cost, and the counters that enforce the flood
//! defences: rapid reset (CVE-2023-44487), CONTINUATION flood (2024), control-frame floods
//! (SETTINGS and PING, CVE-2019-9512/9515, whether or not the client reads the answers),
//! empty frames (CVE-2019-9518), PRIORITY floods. A flood is a connection error
//! ENHANCE_YOUR_CALM.

use std::fmt;

/// The limits of one connection. Memory is bounded by them: the header block being
/// assembled (`header_block_max`), the decoded fields of one request
/// (`header_list_max`), the dynamic tables (4 KiB each way), the priority tree
/// (`max_concurrent_streams` + `priority_nodes_retained` nodes) and the DATA the caller
/// queues, which it bounds itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// SETTINGS_MAX_CONCURRENT_STREAMS we announce; more are refused (REFUSED_STREAM).
    pub max_concurrent_streams: u32,
    /// New streams one `receive` call may open before more are refused (nginx's limit of
    /// twice the concurrent streams per read).
    pub new_streams_per_receive: u32,
    /// The largest header block, summed over HEADERS and its CONTINUATION frames.
    pub header_block_max: usize,
    /// The most CONTINUATION frames one header block may take.
    pub continuations_max: u32,
    /// The largest name, and the largest value, of a decoded field.
    pub field_max: usize,
    /// The largest decoded header list (fields counted as name + value, as nginx does).
    pub header_list_max: usize,
    /// Streams the client resets before their response is complete, net of the streams
    /// that completed: past this the connection is a rapid-reset flood.
    pub early_resets_max: u32,
    /// Frames that ask for an answer (SETTINGS, PING) while our output is not drained.
    pub pending_control_max: u32,
    /// SETTINGS and PING frames beyond the responses sent: each HEADERS or DATA frame of a
    /// response pays one back. The socket's buffers take megabytes of answers from a
    /// client that does not read them before `pending_control_max` can notice, so this
    /// one counts whether or not the answers were written.
    pub control_frames_max: u32,
    /// Frames that carry nothing (DATA without payload or END_STREAM, empty header
    /// fragments without END_HEADERS).
    pub empty_frames_max: u32,
    /// PRIORITY frames beyond those that accompany streams (each stream opened allows
    /// `PRIORITY_PER_STREAM` more).
    pub priority_frames_max: u32,
    /// Idle and closed streams kept in the priority tree.
    pub priority_nodes_retained: usize,
}

/// PRIORITY frames each opened stream adds to the allowance.
pub const PRIORITY_PER_STREAM: u32 = 4;

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_concurrent_streams: 128,
            new_streams_per_receive: 256,
            header_block_max: 64 * 1024,
            continuations_max: 64,
            field_max: 8 * 1024,
            header_list_max: 32 * 1024,
            early_resets_max: 256,
            pending_control_max: 1024,
            control_frames_max: 10_000,
            empty_frames_max: 1024,
            priority_frames_max: 1024,
            priority_nodes_retained: 256,
        }
    }
}

/// Which flood a client was cut off for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flood {
    /// Streams opened and reset before completing (CVE-2023-44487).
    RapidReset,
    /// Too many CONTINUATION frames in one header block.
    Continuation,
    /// SETTINGS or PING frames faster than their answers are written.
    ControlFrames,
    /// SETTINGS or PING frames far beyond the responses sent.
    ControlFramesBeyondResponses,
    /// Frames without content.
    EmptyFrames,
    /// PRIORITY frames far beyond the streams opened.
    Priority,
}

impl fmt::Display for Flood {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(match self {
            Self::RapidReset => "too many streams reset",
            Self::Continuation => "too many CONTINUATION frames",
            Self::ControlFrames => "too many control frames awaiting answers",
            Self::ControlFramesBeyondResponses => "too many SETTINGS and PING frames",
            Self::EmptyFrames => "too many empty frames",
            Self::Priority => "too many PRIORITY frames",
        })
    }
}

/// The counters behind the flood limits; `connection` feeds them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Client resets of unfinished streams, less the streams that completed.
    pub early_resets: u32,
    /// SETTINGS and PING answers queued since our output was last drained.
    pub pending_control: u32,
    /// SETTINGS and PING frames received, less one for each response frame sent.
    pub control_frames: u32,
    /// Empty frames received.
    pub empty_frames: u32,
    /// PRIORITY frames received, less the allowance of streams opened.
    pub priority_frames: u32,
    /// Streams opened by the current `receive` call.
    pub new_streams: u32,
    /// Streams opened on the connection.
    pub streams_opened: u64,
    /// Streams refused (REFUSED_STREAM).
    pub streams_refused: u64,
}

impl Counters {
    /// Counts one event against its limit; `Err` names the flood once the limit is passed.
    pub fn count(&mut self, flood: Flood, limits: &Limits) -> Result<(), Flood> {
        let (counter, limit) = match flood {
            Flood::RapidReset => (&mut self.early_resets, limits.early_resets_max),
            Flood::ControlFrames => (&mut self.pending_control, limits.pending_control_max),
            Flood::ControlFramesBeyondResponses => {
                (&mut self.control_frames, limits.control_frames_max)
            }
            Flood::EmptyFrames => (&mut self.empty_frames, limits.empty_frames_max),
            Flood::Priority => (&mut self.priority_frames, limits.priority_frames_max),
            Flood::Continuation => return Err(Flood::Continuation),
        };
        *counter = counter.saturating_add(1);
        if *counter > limit {
            return Err(flood);
        }
        Ok(())
    }
}
