//! A 304 to a revalidation updates the stored head (RFC 9111 sections 3.2 and 4.3.4):
//! each field the 304 carries replaces the stored fields of that name (`Content-Type`
//! and `Date` included), except the ones section 3.2 leaves out: `Content-Length`, the
//! `Content-Range` the stored body was cut by, the `Content-Encoding` it is stored in, and
//! this hop's fields. The stored `Age` goes in any case: the entry's age counts from
//! this validation now, with the 304's own `Age` if it has one. When that changes the
//! head, the entry is written again, its body copied from the old file on the pool, and
//! renamed over it; the request that revalidated is answered with the new head at once.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::Arc;
use std::time::Instant;

use cache::format::{self, EntryHeader};
use cache::{FillStart, Key, Zone};
use threadpool::ThreadPool;

/// Fields a 304 does not replace: the stored body's own, and the hop's.
const KEPT: &[&[u8]] = &[
    b"content-length",
    b"content-encoding",
    b"content-range",
    b"transfer-encoding",
    b"connection",
    b"keep-alive",
    b"te",
    b"trailer",
    b"upgrade",
    b"proxy-connection",
];

/// The stored head with the 304's fields in place of its own; `None` when nothing
/// changes.
pub(crate) fn merged_head(stored: &[u8], update: &[(Vec<u8>, Vec<u8>)]) -> Option<Vec<u8>> {
    let head = crate::modules::proxy::response::parse(stored).ok()??;
    let replaced = |name: &[u8]| {
        name.eq_ignore_ascii_case(b"age")
            || !KEPT.iter().any(|kept| name.eq_ignore_ascii_case(kept))
                && update.iter().any(|(new, _)| new.eq_ignore_ascii_case(name))
    };
    let field = |range: &std::ops::Range<usize>| &stored[range.clone()];
    let mut changed = false;
    let status_end = memchr::memmem::find(stored, b"\r\n").map_or(0, |end| end + 2);
    let mut out = stored[..status_end].to_vec();
    for (name, value) in &head.fields {
        if replaced(field(name)) {
            let same = update
                .iter()
                .filter(|(new, _)| new.eq_ignore_ascii_case(field(name)))
                .any(|(_, new)| new.as_slice() == field(value));
            changed |= !same;
            continue;
        }
        push_field(&mut out, field(name), field(value));
    }
    for (name, value) in update {
        if KEPT.iter().any(|kept| name.eq_ignore_ascii_case(kept)) {
            continue;
        }
        if !head
            .fields
            .iter()
            .any(|(old, _)| field(old).eq_ignore_ascii_case(name))
        {
            changed = true;
        }
        push_field(&mut out, name, value);
    }
    out.extend_from_slice(b"\r\n");
    changed.then_some(out)
}

fn push_field(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    out.extend_from_slice(name);
    out.extend_from_slice(b": ");
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
}

/// What the rewrite of a revalidated entry needs.
pub(crate) struct Rewrite {
    pub zone: Arc<Zone>,
    pub key: Key,
    pub key_text: Vec<u8>,
    /// The entry's header, freshness already updated.
    pub header: EntryHeader,
    pub head: Vec<u8>,
    pub old: Arc<File>,
    pub old_body_start: u64,
    pub body_len: u64,
    pub pool: ThreadPool,
    pub temp_number: u32,
}

/// Writes the entry again with its new head, in the background of the worker: a fill of
/// the key (the last rename wins, as for any fill), the file built on the pool.
pub(crate) fn persist(rewrite: Rewrite) {
    tokio::task::spawn_local(runtime::clock::turn_clocked(async move {
        let Rewrite {
            zone,
            key,
            key_text,
            mut header,
            head,
            old,
            old_body_start,
            body_len,
            pool,
            temp_number,
        } = rewrite;
        let Ok(FillStart::Filler(mut guard)) = zone.start_fill(&key.md5, None, Instant::now())
        else {
            return;
        };
        let header_start = format::header_start_for(key_text.len());
        let Ok(body_start) = u16::try_from(header_start + head.len()) else {
            return;
        };
        header.header_start = header_start as u16;
        header.body_start = body_start;
        let valid_sec = header.valid_sec;
        let temp = zone.params().layout.temp_path(&key, temp_number);
        let target = zone.params().layout.entry_path(&key);
        let block_size = zone.block_size();
        let write = move || -> std::io::Result<(File, std::path::PathBuf)> {
            let (file, temp) = cache::store::create_temp(&temp)?;
            let copy = || -> std::io::Result<()> {
                let mut start = Vec::with_capacity(usize::from(body_start));
                format::encode(&header, &key_text, &mut start);
                start.extend_from_slice(&head);
                file.write_all_at(&start, 0)?;
                let mut buffer = vec![0u8; 256 * 1024];
                let mut copied = 0u64;
                while copied < body_len {
                    let want = (body_len - copied).min(buffer.len() as u64) as usize;
                    let read = old.read_at(&mut buffer[..want], old_body_start + copied)?;
                    if read == 0 {
                        return Err(std::io::ErrorKind::UnexpectedEof.into());
                    }
                    file.write_all_at(&buffer[..read], u64::from(body_start) + copied)?;
                    copied += read as u64;
                }
                Ok(())
            };
            // A failed copy (the old file cut short, a full disk) leaves no temp file.
            if let Err(error) = copy() {
                let _ = cache::store::unlink(&temp);
                return Err(error);
            }
            Ok((file, temp))
        };
        let Ok(completion) = pool.submit_as(threadpool::TaskKind::Write, write) else {
            return;
        };
        let Ok(Ok((file, temp))) = completion.await else {
            return;
        };
        guard.begin_rename().await;
        let renamed = temp.clone();
        let committed =
            match pool.submit(move || cache::store::commit(&file, &renamed, &target, block_size)) {
                Ok(completion) => completion.await.ok().and_then(Result::ok),
                Err(_) => None,
            };
        match committed {
            Some(file) => guard.commit(cache::CommitInfo {
                file,
                valid_sec,
                body_start,
            }),
            None => {
                let _ = pool.submit(move || cache::store::unlink(&temp));
            }
        }
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn update(fields: &[(&str, &str)]) -> Vec<(Vec<u8>, Vec<u8>)> {
        fields
            .iter()
            .map(|(name, value)| (name.as_bytes().to_vec(), value.as_bytes().to_vec()))
            .collect()
    }

    fn merged(stored: &str, fields: &[(&str, &str)]) -> Option<String> {
        merged_head(stored.as_bytes(), &update(fields))
            .map(|head| String::from_utf8(head).expect("text"))
    }

    const STORED: &str = "HTTP/1.1 200 OK\r\nDate: Mon, 01 Jan 2024 00:00:00 GMT\r\n\
        Content-Type: text/plain\r\nContent-Length: 5\r\nETag: \"a\"\r\nAge: 30\r\n\
        Cache-Control: max-age=60\r\n\r\n";

    /// RFC 9111 section 3.2: each field of the 304 replaces the stored ones of its name,
    /// `Content-Type` and `Date` too; `Content-Length` and hop-by-hop fields do not.
    #[test]
    fn a_304_replaces_the_stored_fields() {
        let head = merged(
            STORED,
            &[
                ("Date", "Tue, 02 Jan 2024 00:00:00 GMT"),
                ("Content-Type", "text/html"),
                ("Content-Length", "0"),
                ("Connection", "keep-alive"),
                ("X-New", "1"),
            ],
        )
        .expect("changed");
        assert!(
            head.contains("Date: Tue, 02 Jan 2024 00:00:00 GMT\r\n"),
            "{head}"
        );
        assert!(head.contains("Content-Type: text/html\r\n"), "{head}");
        assert!(!head.contains("text/plain"), "{head}");
        assert!(head.contains("Content-Length: 5\r\n"), "{head}");
        assert!(!head.contains("Connection"), "{head}");
        assert!(
            head.contains("X-New: 1\r\n") && head.contains("ETag: \"a\"\r\n"),
            "{head}"
        );
        assert!(head.ends_with("\r\n\r\n"));
    }

    /// RFC 9111 section 4.2.3: after a validation the entry's age counts from it: the
    /// stored `Age` goes, replaced by the 304's when it has one.
    #[test]
    fn the_stored_age_restarts_with_the_validation() {
        let head = merged(STORED, &[("ETag", "\"a\"")]).expect("the Age went");
        assert!(!head.contains("Age:"), "{head}");
        let head = merged(STORED, &[("Age", "3")]).expect("changed");
        assert!(
            head.contains("Age: 3\r\n") && !head.contains("Age: 30"),
            "{head}"
        );
        let without_age = STORED.replace("Age: 30\r\n", "");
        assert_eq!(
            merged(&without_age, &[("ETag", "\"a\"")]),
            None,
            "nothing changes: the entry is not written again"
        );
    }
}
