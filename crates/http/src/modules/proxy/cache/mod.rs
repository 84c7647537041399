//! The proxy cache: `proxy_cache_path` zones, and how a proxied request looks up, fills,
//! revalidates and serves cached responses. The file cache itself (entry format, index,
//! fills, manager, loader) is the `cache` crate; this module is what HTTP adds to it.

pub mod directives;
pub mod freshness;
pub(crate) mod hot;
pub(crate) mod invalidate;
pub(crate) mod lookup;
pub(crate) mod merge;
pub(crate) mod resume;
pub(crate) mod serve;
pub mod settings;
pub(crate) mod store;
pub(crate) mod targeted;

use conf::ConfError;

use crate::modules::proxy::cache::settings::{CachePath, CacheUse, CacheZoneId, ProxyCache, Store};

/// Once the whole `http` block is read: a literal `proxy_cache NAME` becomes its zone's id,
/// or the load fails with nginx's `"proxy_cache" zone "NAME" is unknown`. `proxy_store`
/// at a level turns an inherited cache off, as nginx's merge does.
pub fn resolve_zone(
    settings: &mut ProxyCache,
    paths: &[CachePath],
    protocol: crate::modules::proxy::gateway::settings::Protocol,
) -> Result<(), ConfError> {
    if !matches!(settings.store, Store::Off) {
        settings.cache = CacheUse::Off;
        return Ok(());
    }
    if let CacheUse::Named { name, span } = &settings.cache {
        let module = protocol.prefix();
        // Only the proxy has a default key.
        if settings.key.is_none()
            && protocol != crate::modules::proxy::gateway::settings::Protocol::Http
        {
            return Err(ConfError::message(
                format!("no \"{module}_cache_key\" for \"{module}_cache\""),
                span,
            ));
        }
        let id = zone_id(paths, name.as_bytes()).ok_or_else(|| {
            ConfError::message(
                format!("\"{module}_cache\" zone \"{name}\" is unknown"),
                span,
            )
        })?;
        settings.cache = CacheUse::Zone(id);
    }
    Ok(())
}

/// The zone a name designates.
pub fn zone_id(paths: &[CachePath], name: &[u8]) -> Option<CacheZoneId> {
    paths
        .iter()
        .position(|path| path.name.as_bytes() == name)
        .map(|index| CacheZoneId(index as u32))
}

/// Runs a cache read where the location's `aio` says: on the worker for `aio off` (timed
/// for the stall watcher), else on the pool (the `default` one when `aio threads=NAME`
/// names none).
pub(crate) async fn run_read<T: Send + 'static>(
    worker: &crate::kernel::worker::HttpWorker,
    io: &crate::kernel::file::io::FileIo,
    path: &std::path::Path,
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, crate::kernel::file::io::FileError> {
    use crate::kernel::file::io::FileIo;
    match io {
        FileIo::Pool(pool) => {
            crate::kernel::worker::offload_to(pool, threadpool::TaskKind::Read, work).await
        }
        FileIo::Missing(_) => worker.offload(threadpool::TaskKind::Read, work).await,
        FileIo::Worker => Ok(run_here(worker, path, work)),
    }
}

/// [`run_read`] under `aio off`: `work` runs on the worker, now, and may borrow.
pub(crate) fn run_here<T>(
    worker: &crate::kernel::worker::HttpWorker,
    path: &std::path::Path,
    work: impl FnOnce() -> T,
) -> T {
    let started = crate::kernel::worker::BlockingTimer::start();
    let result = work();
    worker.note_blocking(started.elapsed(), || {
        format!("read of cache file \"{}\"", path.display())
    });
    result
}

/// Whether a response may be stored and how fresh it is: the fields' rules, then
/// `proxy_no_cache`, then a request with `Authorization`, whose response is kept only
/// when Cache-Control allows a shared cache to (RFC 9111 section 3.5).
#[allow(clippy::too_many_arguments)]
pub(crate) fn judge_response<'f>(
    worker: &crate::kernel::worker::HttpWorker,
    info: &crate::kernel::request::ConnectionInfo,
    request: &crate::kernel::request::Request<'_>,
    proxy: &crate::modules::proxy::Proxy,
    settings: &ProxyCache,
    status: u16,
    fields: impl Iterator<Item = (&'f [u8], &'f [u8])>,
    now: i64,
) -> Option<freshness::Freshness> {
    let input = freshness::Input {
        status,
        ignore: proxy.ignore_headers,
        valid: &settings.valid,
        now,
    };
    let fresh = freshness::judge(&input, fields).ok()?;
    if lookup::any_true(worker, info, request, &settings.no_cache) {
        return None;
    }
    if request.header(b"authorization").is_some() && !fresh.shared_ok {
        return None;
    }
    Some(fresh)
}

/// The freshness the fields alone give, without `proxy_cache_valid`.
fn judge_times<'f>(
    status: u16,
    proxy: &crate::modules::proxy::Proxy,
    fields: impl Iterator<Item = (&'f [u8], &'f [u8])>,
    now: i64,
) -> Option<freshness::Freshness> {
    let input = freshness::Input {
        status,
        ignore: proxy.ignore_headers,
        valid: &[],
        now,
    };
    freshness::judge(&input, fields).ok()
}

/// The writer of a response the cache keeps.
#[allow(clippy::too_many_arguments)]
pub(crate) fn start_writer(
    worker: &crate::kernel::worker::HttpWorker,
    request: &crate::kernel::request::Request<'_>,
    location: &crate::kernel::conf::Location,
    cache: &mut lookup::CacheRequest,
    fresh: freshness::Freshness,
    raw_head: &[u8],
    content_length: Option<u64>,
    now: i64,
) -> Result<store::CacheWriter, store::StoreFailure> {
    let variant = if fresh.vary.is_empty() {
        [0; 16]
    } else {
        variant_of(request, &cache.main_md5, &fresh.vary)
    };
    // After a Vary lookup the fill is the variant's file; a response that no longer varies
    // the same way (another Vary, or none) replaces the main key's file instead, as
    // nginx's update of the variant does.
    let secondary = cache.key.md5 != cache.main_md5;
    if secondary && variant != cache.key.md5 {
        cache.fill = None;
        cache.key.md5 = cache.main_md5;
        cache.fill = match cache
            .zone
            .start_fill(&cache.key.md5, None, std::time::Instant::now())
        {
            Ok(cache::FillStart::Filler(guard)) => Some(guard),
            _ => None,
        };
    }
    let number = worker
        .generation
        .temp_numbers
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        + 1;
    let temp = if cache.zone.params().use_temp_path {
        store::TempName::Numbered(location.settings.proxy.proxy_temp_path.clone(), number)
    } else {
        store::TempName::Beside(
            cache
                .zone
                .params()
                .layout
                .temp_path(&cache.key, (number % 10_000_000_000) as u32),
        )
    };
    store::CacheWriter::start(store::StoreStart {
        zone: std::sync::Arc::clone(&cache.zone),
        key: cache.key,
        key_text: &cache.key_text,
        fill: cache.fill.take(),
        update: cache.update.take(),
        fresh,
        raw_head,
        variant,
        now,
        io: &cache.io,
        default_pool: worker.pools.default_pool(),
        temp,
        content_length,
    })
}

/// The variant of this request for a response that varies by `vary`.
pub(crate) fn variant_of(
    request: &crate::kernel::request::Request<'_>,
    main_md5: &[u8; 16],
    vary: &[u8],
) -> [u8; 16] {
    cache::format::variant(main_md5, vary, |name| {
        request
            .head
            .headers
            .iter()
            .filter_map(|field| {
                let field_name = request.head_bytes.get(field.name.clone())?;
                let value = request.head_bytes.get(field.value.clone())?;
                field_name.eq_ignore_ascii_case(name).then_some(value)
            })
            .collect()
    })
}

/// A 304 to a revalidation: the entry is fresh again for as long as the 304 says, else
/// as its stored head says, else as `proxy_cache_valid` says for its status; its header
/// is rewritten in place on the pool. Without any time, nothing changes.
pub(crate) fn revalidated<'f>(
    cache: &mut lookup::CacheRequest,
    entry: &mut lookup::Entry,
    settings: &ProxyCache,
    proxy: &crate::modules::proxy::Proxy,
    fields: impl Iterator<Item = (&'f [u8], &'f [u8])>,
    now: i64,
    default_pool: &threadpool::ThreadPool,
) {
    let stored = crate::modules::proxy::response::parse(&entry.head)
        .ok()
        .flatten();
    let stored_status = stored.as_ref().map_or(200, |head| head.status);
    let fresh = judge_times(304, proxy, fields, now).or_else(|| {
        let head = stored.as_ref()?;
        let stored_fields = head
            .fields
            .iter()
            .map(|(name, value)| (&entry.head[name.clone()], &entry.head[value.clone()]));
        judge_times(stored_status, proxy, stored_fields, now)
    });
    let valid_sec = match fresh {
        Some(fresh) => fresh.valid_sec,
        None => match freshness::valid_for(&settings.valid, stored_status) {
            Some(time) => now.saturating_add(time.as_secs() as i64),
            None => return,
        },
    };
    let header = std::sync::Arc::make_mut(&mut entry.header);
    header.valid_sec = valid_sec;
    header.date = now;
    cache.zone.set_valid(&cache.key.md5, valid_sec);
    let fixed = cache::format::encode_fixed(&entry.header);
    let path = entry.path.clone();
    let (uniq, size) = (entry.uniq, entry.size);
    // Under `aio off` too, cache writes go to the default pool.
    let pool = match &cache.io {
        crate::kernel::file::io::FileIo::Pool(pool) => pool,
        _ => default_pool,
    };
    let _ = pool.submit_as(threadpool::TaskKind::Write, move || {
        let _ = cache::store::rewrite_header(&path, uniq, size, &fixed);
    });
}

/// The range filter may cut the response; it writes `Accept-Ranges` itself, so the
/// upstream's is dropped.
pub(crate) fn allow_ranges(request: &mut crate::kernel::request::Request<'_>) {
    request.response.accept_ranges = true;
    request
        .response
        .headers
        .retain(|(name, _)| !name.as_slice().eq_ignore_ascii_case(b"accept-ranges"));
}

/// The head an entry keeps: the upstream's as received, less the fields its `Connection`
/// names (RFC 9111 section 3.1: they were meant for this hop only). `None` when nothing
/// is left out, so the head is stored byte for byte.
pub(crate) fn head_to_store(
    head: &crate::modules::proxy::response::UpstreamHead,
    buffer: &[u8],
) -> Option<Vec<u8>> {
    let field = |range: &std::ops::Range<usize>| &buffer[range.clone()];
    let mut listed: Vec<Vec<u8>> = Vec::new();
    for (name, value) in &head.fields {
        if field(name).eq_ignore_ascii_case(b"connection") {
            for token in field(value).split(|b| *b == b',') {
                let token = token.trim_ascii().to_ascii_lowercase();
                if !token.is_empty() && token != b"close" && token != b"keep-alive" {
                    listed.push(token);
                }
            }
        }
    }
    let dropped = |name: &[u8]| {
        listed
            .iter()
            .any(|listed| name.eq_ignore_ascii_case(listed))
    };
    if listed.is_empty() || !head.fields.iter().any(|(name, _)| dropped(field(name))) {
        return None;
    }
    let status_end = memchr::memmem::find(buffer, b"\r\n").map_or(0, |end| end + 2);
    let mut out = buffer[..status_end].to_vec();
    for (name, value) in &head.fields {
        if dropped(field(name)) {
            continue;
        }
        out.extend_from_slice(field(name));
        out.extend_from_slice(b": ");
        out.extend_from_slice(field(value));
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
    Some(out)
}
