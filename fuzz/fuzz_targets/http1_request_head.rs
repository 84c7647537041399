//! Request heads from arbitrary bytes: no panic, ranges inside the buffer, the fast path
//! agrees with the exact scanners, and `$uri` normalisation accepts what parsing kept.
#![no_main]

use libfuzzer_sys::fuzz_target;
use portico_http1::request::{self, HeadLimits, Progress, RequestHead, RequestInfo};
use portico_http1::uri;

fuzz_target!(|data: &[u8]| {
    let Some((&shape, buf)) = data.split_first() else { return };
    // Small buffers so that the header-buffer emulation is exercised too.
    let limits = HeadLimits {
        client_header_buffer_size: 16 + usize::from(shape & 0x0f) * 16,
        large_client_header_buffers: (usize::from(shape >> 4 & 0x03), 64 + usize::from(shape >> 6) * 96),
        max_headers: Some(8),
        ignore_invalid_headers: shape & 0x01 == 0,
        underscores_in_headers: shape & 0x02 != 0,
        merge_slashes: shape & 0x04 == 0,
    };
    let (mut head, mut exact) = (RequestHead::default(), RequestHead::default());
    let fast = request::parse_head(buf, &limits, &mut head);
    let slow = request::parse_head_exact(buf, &limits, &mut exact);
    assert_eq!(fast, slow);
    if fast != Ok(Progress::Complete) {
        return;
    }
    assert_eq!(format!("{head:?}"), format!("{exact:?}"));
    assert!(head.len <= buf.len());
    for field in &head.headers {
        assert!(field.name.end <= head.len && field.value.end <= head.len);
        assert!(field.name.start < field.name.end && field.value.start <= field.value.end);
    }
    assert!(head.target.end <= head.len && head.target_parts.path.end <= head.len);
    let mut normalized = Vec::new();
    if head.target_parts.complex {
        uri::normalize(&buf[head.target_parts.path.clone()], limits.merge_slashes, &mut normalized)
            .expect("parse_head normalised this path already");
        assert_eq!(normalized, head.uri);
    }
    let mut info = RequestInfo::default();
    if request::analyze(buf, &head, &mut info).is_ok() {
        assert!(info.host.len() <= head.len);
    }
});
