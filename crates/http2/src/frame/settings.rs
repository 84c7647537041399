//! SETTINGS parameters (RFC 9113 §6.5.2) and their ranges.

use crate::error::{Error, ErrorCode, Reason};
use crate::frame::{DEFAULT_MAX_FRAME_SIZE, MAX_FRAME_SIZE_LIMIT, MAX_WINDOW};

/// SETTINGS_HEADER_TABLE_SIZE.
pub const HEADER_TABLE_SIZE: u16 = 0x1;
/// SETTINGS_ENABLE_PUSH.
pub const ENABLE_PUSH: u16 = 0x2;
/// SETTINGS_MAX_CONCURRENT_STREAMS.
pub const MAX_CONCURRENT_STREAMS: u16 = 0x3;
/// SETTINGS_INITIAL_WINDOW_SIZE.
pub const INITIAL_WINDOW_SIZE: u16 = 0x4;
/// SETTINGS_MAX_FRAME_SIZE.
pub const MAX_FRAME_SIZE: u16 = 0x5;
/// SETTINGS_MAX_HEADER_LIST_SIZE.
pub const MAX_HEADER_LIST_SIZE: u16 = 0x6;

/// One parameter: an identifier and a value. Unknown identifiers are kept and ignored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Setting {
    /// The parameter's identifier.
    pub id: u16,
    /// Its value.
    pub value: u32,
}

impl Setting {
    /// Checks the value's range (§6.5.2): ENABLE_PUSH other than 0 or 1 and MAX_FRAME_SIZE
    /// outside 2^14..2^24-1 are PROTOCOL_ERROR, INITIAL_WINDOW_SIZE above 2^31-1 is
    /// FLOW_CONTROL_ERROR; all are connection errors.
    pub fn validate(&self) -> Result<(), Error> {
        let bad = |code| {
            Err(Error::connection(
                code,
                Reason::BadSetting {
                    id: self.id,
                    value: self.value,
                },
            ))
        };
        match self.id {
            ENABLE_PUSH if self.value > 1 => bad(ErrorCode::PROTOCOL_ERROR),
            INITIAL_WINDOW_SIZE if self.value > MAX_WINDOW => bad(ErrorCode::FLOW_CONTROL_ERROR),
            MAX_FRAME_SIZE
                if !(DEFAULT_MAX_FRAME_SIZE..=MAX_FRAME_SIZE_LIMIT).contains(&self.value) =>
            {
                bad(ErrorCode::PROTOCOL_ERROR)
            }
            _ => Ok(()),
        }
    }

    /// Appends the parameter's 6 bytes.
    pub fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.id.to_be_bytes());
        out.extend_from_slice(&self.value.to_be_bytes());
    }
}

/// The parameters of a SETTINGS payload whose length is a multiple of 6.
#[derive(Clone, Debug)]
pub struct SettingsIter<'a> {
    rest: &'a [u8],
}

impl<'a> SettingsIter<'a> {
    /// Reads parameters from `payload`; a trailing partial parameter is not read.
    pub fn new(payload: &'a [u8]) -> Self {
        Self { rest: payload }
    }
}

impl Iterator for SettingsIter<'_> {
    type Item = Setting;

    fn next(&mut self) -> Option<Setting> {
        let (param, rest) = self.rest.split_first_chunk::<6>()?;
        self.rest = rest;
        let id = u16::from_be_bytes([param[0], param[1]]);
        let value = u32::from_be_bytes([param[2], param[3], param[4], param[5]]);
        Some(Setting { id, value })
    }
}
