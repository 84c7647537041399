//! The record header (FastCGI 1.0 §3.3): version, type, request id, content and padding lengths.

/// The only version there is (`FCGI_VERSION_1`).
pub const VERSION_1: u8 = 1;

/// Bytes of a record header (`FCGI_HEADER_LEN`).
pub const HEADER_LEN: usize = 8;

/// The most content one record can carry: its length field has 16 bits.
pub const CONTENT_LEN_MAX: usize = u16::MAX as usize;

/// Record types (§8, `FCGI_BEGIN_REQUEST` .. `FCGI_UNKNOWN_TYPE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum RecordType {
    BeginRequest = 1,
    AbortRequest = 2,
    EndRequest = 3,
    Params = 4,
    Stdin = 5,
    Stdout = 6,
    Stderr = 7,
    Data = 8,
    GetValues = 9,
    GetValuesResult = 10,
    UnknownType = 11,
}

impl RecordType {
    /// The type a header byte names, or `None` for a byte no type has.
    pub fn from_u8(byte: u8) -> Option<RecordType> {
        const TYPES: [RecordType; 11] = [
            RecordType::BeginRequest,
            RecordType::AbortRequest,
            RecordType::EndRequest,
            RecordType::Params,
            RecordType::Stdin,
            RecordType::Stdout,
            RecordType::Stderr,
            RecordType::Data,
            RecordType::GetValues,
            RecordType::GetValuesResult,
            RecordType::UnknownType,
        ];
        TYPES.get(usize::from(byte).checked_sub(1)?).copied()
    }
}

/// A record header. The reserved byte is written as 0 and ignored when read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordHeader {
    pub version: u8,
    /// A [`RecordType`] as a byte: a header read from a peer may carry any byte.
    pub record_type: u8,
    pub request_id: u16,
    pub content_len: u16,
    pub padding_len: u8,
}

impl RecordHeader {
    /// A version-1 header for `content_len` bytes, padded as nginx pads: to the next
    /// multiple of 8.
    pub fn new(record_type: RecordType, request_id: u16, content_len: u16) -> RecordHeader {
        RecordHeader {
            version: VERSION_1,
            record_type: record_type as u8,
            request_id,
            content_len,
            padding_len: padding_len(usize::from(content_len)),
        }
    }

    /// The header as it goes on the wire (lengths and id big-endian).
    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        let [id_high, id_low] = self.request_id.to_be_bytes();
        let [len_high, len_low] = self.content_len.to_be_bytes();
        [
            self.version,
            self.record_type,
            id_high,
            id_low,
            len_high,
            len_low,
            self.padding_len,
            0,
        ]
    }

    /// A header read from the wire, unchecked: the caller decides which versions, types
    /// and ids it accepts.
    pub fn from_bytes(bytes: &[u8; HEADER_LEN]) -> RecordHeader {
        RecordHeader {
            version: bytes[0],
            record_type: bytes[1],
            request_id: u16::from_be_bytes([bytes[2], bytes[3]]),
            content_len: u16::from_be_bytes([bytes[4], bytes[5]]),
            padding_len: bytes[6],
        }
    }

    /// Bytes of the whole record: header, content and padding.
    pub fn record_len(&self) -> usize {
        HEADER_LEN + usize::from(self.content_len) + usize::from(self.padding_len)
    }
}

/// Padding after `content_len` bytes of content, as nginx computes it: up to the next
/// multiple of 8, none when already aligned.
pub fn padding_len(content_len: usize) -> u8 {
    // The result is below 8, so the narrowing cannot lose anything.
    ((8 - content_len % 8) % 8) as u8
}

/// Appends a whole record: header, `content` and its zero padding.
pub(super) fn put_record(
    out: &mut Vec<u8>,
    record_type: RecordType,
    request_id: u16,
    content: &[u8],
) {
    let content_len =
        u16::try_from(content.len()).expect("callers split content at CONTENT_LEN_MAX");
    let header = RecordHeader::new(record_type, request_id, content_len);
    out.reserve(header.record_len());
    out.extend_from_slice(&header.to_bytes());
    out.extend_from_slice(content);
    out.resize(out.len() + usize::from(header.padding_len), 0);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_bytes_round_trip_with_the_specification_layout() {
        let header = RecordHeader::new(RecordType::Params, 0x0102, 0x0304);
        assert_eq!(header.padding_len, 4);
        assert_eq!(header.to_bytes(), [1, 4, 1, 2, 3, 4, 4, 0]);
        assert_eq!(RecordHeader::from_bytes(&header.to_bytes()), header);
        assert_eq!(header.record_len(), 8 + 0x0304 + 4);
    }

    #[test]
    fn padding_reaches_the_next_multiple_of_eight() {
        for len in 0..=64usize {
            let padding = usize::from(padding_len(len));
            assert!(padding < 8);
            assert_eq!((len + padding) % 8, 0, "{len}");
        }
        assert_eq!(padding_len(CONTENT_LEN_MAX), 1);
    }

    #[test]
    fn every_type_byte_maps_back_to_itself() {
        for byte in 0..=u8::MAX {
            match RecordType::from_u8(byte) {
                Some(record_type) => assert_eq!(record_type as u8, byte),
                None => assert!(byte == 0 || byte > 11, "{byte}"),
            }
        }
    }

    #[test]
    fn a_record_is_header_content_and_zero_padding() {
        let mut out = vec![0xee];
        put_record(&mut out, RecordType::Stdin, 1, b"abc");
        assert_eq!(out, b"\xee\x01\x05\x00\x01\x00\x03\x05\x00abc\0\0\0\0\0");
    }
}
