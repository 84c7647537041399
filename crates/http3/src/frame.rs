//! HTTP/3 frames (RFC 9114 §7) and unidirectional stream types (§6.2).
//!
//! A frame is a varint type, a varint length and the payload. Types this crate does not
//! know, the reserved `0x1f * N + 0x21` ones among them, are skipped wherever they arrive
//! (§9); the HTTP/2 types that HTTP/3 reserves are errors (§7.2.8).

use crate::error::Reason;
use crate::varint;

pub const DATA: u64 = 0x00;
pub const HEADERS: u64 = 0x01;
pub const CANCEL_PUSH: u64 = 0x03;
pub const SETTINGS: u64 = 0x04;
pub const PUSH_PROMISE: u64 = 0x05;
pub const GOAWAY: u64 = 0x07;
pub const MAX_PUSH_ID: u64 = 0x0d;

/// HTTP/2's PRIORITY, PING, WINDOW_UPDATE and CONTINUATION: H3_FRAME_UNEXPECTED anywhere.
pub const HTTP2_ONLY: [u64; 4] = [0x02, 0x06, 0x08, 0x09];

/// Unidirectional stream types (§6.2; the QPACK ones are RFC 9204 §4.2).
pub const STREAM_CONTROL: u64 = 0x00;
pub const STREAM_PUSH: u64 = 0x01;
pub const STREAM_QPACK_ENCODER: u64 = 0x02;
pub const STREAM_QPACK_DECODER: u64 = 0x03;

/// Settings identifiers (§7.2.4.1, RFC 9204 §5).
pub const SETTING_QPACK_MAX_TABLE_CAPACITY: u64 = 0x01;
pub const SETTING_MAX_FIELD_SECTION_SIZE: u64 = 0x06;
pub const SETTING_QPACK_BLOCKED_STREAMS: u64 = 0x07;
/// HTTP/2 settings with no HTTP/3 meaning: H3_SETTINGS_ERROR when received (§7.2.4.1).
pub const HTTP2_SETTINGS: [u64; 4] = [0x02, 0x03, 0x04, 0x05];

/// Whether `value` is one of the reserved "greasing" code points, `0x1f * N + 0x21`.
pub fn is_reserved(value: u64) -> bool {
    value >= 0x21 && (value - 0x21).is_multiple_of(0x1f)
}

/// A frame's type and payload length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub frame_type: u64,
    pub length: u64,
}

impl Header {
    /// Reads a frame header from the start of `input`: the header and the bytes it took,
    /// or `None` when more bytes are needed.
    pub fn parse(input: &[u8]) -> Option<(Self, usize)> {
        let (frame_type, type_len) = varint::decode(input)?;
        let (length, length_len) = varint::decode(&input[type_len..])?;
        Some((Self { frame_type, length }, type_len + length_len))
    }

    /// Appends a frame header.
    pub fn encode(frame_type: u64, length: u64, out: &mut Vec<u8>) {
        varint::encode(frame_type, out);
        varint::encode(length, out);
    }
}

/// The settings of one side (§7.2.4). `None` and zero mean the RFC's defaults: no dynamic
/// table, no blocked streams, no field section size limit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Settings {
    pub qpack_max_table_capacity: u64,
    pub qpack_blocked_streams: u64,
    pub max_field_section_size: Option<u64>,
}

impl Settings {
    /// Reads a SETTINGS payload. Unknown identifiers are ignored; an identifier sent twice
    /// or one of HTTP/2's is H3_SETTINGS_ERROR, a payload that ends inside a varint is
    /// H3_FRAME_ERROR (the caller tells them apart by the reason).
    pub fn parse(mut payload: &[u8]) -> Result<Self, Reason> {
        let mut settings = Self::default();
        let mut seen: Vec<u64> = Vec::new();
        while !payload.is_empty() {
            let malformed = Reason::MalformedFrame {
                frame_type: SETTINGS,
            };
            let (identifier, used) = varint::decode(payload).ok_or(malformed)?;
            payload = &payload[used..];
            let (value, used) = varint::decode(payload).ok_or(malformed)?;
            payload = &payload[used..];
            if HTTP2_SETTINGS.contains(&identifier) || seen.contains(&identifier) {
                return Err(Reason::BadSetting { identifier });
            }
            // A SETTINGS frame bounded by the caller's frame size limit holds a bounded
            // number of pairs, so the list of those seen stays small.
            seen.push(identifier);
            match identifier {
                SETTING_QPACK_MAX_TABLE_CAPACITY => settings.qpack_max_table_capacity = value,
                SETTING_QPACK_BLOCKED_STREAMS => settings.qpack_blocked_streams = value,
                SETTING_MAX_FIELD_SECTION_SIZE => settings.max_field_section_size = Some(value),
                _ => {}
            }
        }
        Ok(settings)
    }

    /// Appends a whole SETTINGS frame, with the values that differ from the defaults and
    /// one reserved setting (§7.2.4.1 asks for them so that peers keep ignoring unknowns).
    pub fn encode(&self, out: &mut Vec<u8>) {
        let mut payload = Vec::new();
        let mut pair = |identifier: u64, value: u64| {
            varint::encode(identifier, &mut payload);
            varint::encode(value, &mut payload);
        };
        if self.qpack_max_table_capacity > 0 {
            pair(
                SETTING_QPACK_MAX_TABLE_CAPACITY,
                self.qpack_max_table_capacity,
            );
        }
        if self.qpack_blocked_streams > 0 {
            pair(SETTING_QPACK_BLOCKED_STREAMS, self.qpack_blocked_streams);
        }
        if let Some(size) = self.max_field_section_size {
            pair(SETTING_MAX_FIELD_SECTION_SIZE, size);
        }
        pair(0x1f * 3 + 0x21, 0);
        Header::encode(SETTINGS, payload.len() as u64, out);
        out.extend_from_slice(&payload);
    }
}

/// Reads the one varint a GOAWAY, MAX_PUSH_ID or CANCEL_PUSH payload holds; anything else
/// is H3_FRAME_ERROR.
pub fn parse_id(frame_type: u64, payload: &[u8]) -> Result<u64, Reason> {
    match varint::decode(payload) {
        Some((id, used)) if used == payload.len() => Ok(id),
        _ => Err(Reason::MalformedFrame { frame_type }),
    }
}

/// Appends a frame that carries one id: GOAWAY, MAX_PUSH_ID or CANCEL_PUSH.
pub fn encode_id(frame_type: u64, id: u64, out: &mut Vec<u8>) {
    Header::encode(frame_type, varint::len(id) as u64, out);
    varint::encode(id, out);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserved_types() {
        assert!(is_reserved(0x21));
        assert!(is_reserved(0x40));
        assert!(is_reserved(0x1f * 1000 + 0x21));
        assert!(!is_reserved(0x20));
        assert!(!is_reserved(0x22));
        assert!(!is_reserved(0x0d));
    }

    #[test]
    fn header_parse_waits_for_both_varints() {
        let mut bytes = Vec::new();
        Header::encode(0x1f * 2 + 0x21, 300, &mut bytes);
        for cut in 0..bytes.len() {
            assert_eq!(Header::parse(&bytes[..cut]), None);
        }
        let header = Header {
            frame_type: 0x1f * 2 + 0x21,
            length: 300,
        };
        assert_eq!(Header::parse(&bytes), Some((header, bytes.len())));
    }

    #[test]
    fn settings_round_trip() {
        let settings = Settings {
            qpack_max_table_capacity: 4096,
            qpack_blocked_streams: 16,
            max_field_section_size: Some(65_536),
        };
        let mut frame = Vec::new();
        settings.encode(&mut frame);
        let (header, used) = Header::parse(&frame).expect("a whole frame");
        assert_eq!(header.frame_type, SETTINGS);
        assert_eq!(header.length as usize, frame.len() - used);
        assert_eq!(Settings::parse(&frame[used..]), Ok(settings));
        assert_eq!(Settings::parse(&[]), Ok(Settings::default()));
    }

    #[test]
    fn settings_errors() {
        // HTTP/2's SETTINGS_ENABLE_PUSH (0x02).
        assert_eq!(
            Settings::parse(&[0x02, 0x00]),
            Err(Reason::BadSetting { identifier: 2 })
        );
        assert_eq!(
            Settings::parse(&[0x01, 0x10, 0x01, 0x20]),
            Err(Reason::BadSetting { identifier: 1 })
        );
        assert_eq!(
            Settings::parse(&[0x01]),
            Err(Reason::MalformedFrame {
                frame_type: SETTINGS
            })
        );
        // Unknown identifiers are ignored.
        assert_eq!(Settings::parse(&[0x21, 0x05]), Ok(Settings::default()));
    }

    #[test]
    fn ids() {
        let mut frame = Vec::new();
        encode_id(GOAWAY, 400, &mut frame);
        assert_eq!(frame, [0x07, 0x02, 0x41, 0x90]);
        assert_eq!(parse_id(GOAWAY, &frame[2..]), Ok(400));
        assert!(parse_id(GOAWAY, &[0x41]).is_err());
        assert!(parse_id(GOAWAY, &[0x01, 0x02]).is_err());
    }
}
