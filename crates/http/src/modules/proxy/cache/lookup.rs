//! Before a proxied request goes upstream: which zone and key, and what the cache holds
//! for it (nginx's `ngx_http_upstream_cache` and `ngx_http_file_cache_open`). The answer
//! is a response from the cache (HIT, a cached error status, a stale entry while another
//! request updates it), or a request that goes upstream knowing what it may store.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cache::format::{self, EntryHeader};
use cache::{FillStart, FillState, Key, Zone};
use logging::Level;
use read::{EntryError, read_entry};

use crate::kernel::conf::Location;
use crate::kernel::file::io::FileIo;
use crate::kernel::request::{ConnectionInfo, Request};
use crate::kernel::request_log::log;
use crate::kernel::variables::HttpTemplate;
use crate::kernel::variables::evaluate::render;
use crate::kernel::worker::HttpWorker;
use crate::modules::proxy::cache::settings::{CacheUse, ProxyCache, UseStale};
use crate::modules::proxy::cache::zone_id;

/// `$upstream_cache_status` values.
pub(crate) mod status {
    pub const MISS: &str = "MISS";
    pub const BYPASS: &str = "BYPASS";
    pub const EXPIRED: &str = "EXPIRED";
    pub const STALE: &str = "STALE";
    pub const UPDATING: &str = "UPDATING";
    pub const REVALIDATED: &str = "REVALIDATED";
    pub const HIT: &str = "HIT";
}

/// A stored entry, opened and checked: what a HIT sends and a stale answer falls back to.
#[derive(Clone)]
pub(crate) struct Entry {
    pub file: Arc<File>,
    pub path: Arc<Path>,
    /// Shared with the worker's kept copy ([`super::hot`]): a HIT clones no bytes.
    pub header: Arc<EntryHeader>,
    /// The stored response head, as the upstream sent it (replaced only with `parsed`).
    pub head: Arc<[u8]>,
    /// `head` parsed (its fields are ranges of it): checked when the entry was opened, and
    /// replayed from here for every response the entry serves.
    pub parsed: Arc<http1::response_head::ResponseHead>,
    pub size: u64,
    pub uniq: u64,
    /// When the file was last written (nanoseconds since the epoch): purges compare it.
    /// 0 when it was not asked for (no purge rule existed): any rule then covers it.
    pub written: u64,
    /// The whole body, when the read that took the header took it too and it is at most
    /// `read::SMALL_BODY_MAX`: sent from memory, without reading the file again.
    pub body: Option<Arc<[u8]>>,
    /// The file's inode, disk size and store time from its `fstat`, when it had one (the
    /// index did not know the file): a zone still cold takes them ([`cache::Zone::adopt`]).
    pub stat: Option<cache::FileInfo>,
}

impl Entry {
    pub fn body_len(&self) -> u64 {
        self.size.saturating_sub(u64::from(self.header.body_start))
    }

    /// `must-revalidate` or `proxy-revalidate` in the stored Cache-Control: never served
    /// stale (RFC 9111 section 5.2.2.2).
    pub fn must_revalidate(&self) -> bool {
        self.parsed.fields.iter().any(|(name, value)| {
            self.head[name.clone()].eq_ignore_ascii_case(b"cache-control")
                && self.head[value.clone()].split(|b| *b == b',').any(|token| {
                    let token = token.trim_ascii();
                    token.eq_ignore_ascii_case(b"must-revalidate")
                        || token.eq_ignore_ascii_case(b"proxy-revalidate")
                })
        })
    }

    /// The stored head is a 200 or 206 with a validator: it can be revalidated.
    fn revalidatable(&self) -> bool {
        let status = self.head.get(9..12).unwrap_or_default();
        matches!(status, b"200" | b"206")
            && (self.header.last_modified != -1 || !self.header.etag.is_empty())
    }
}

/// What the cache says about a request.
pub(crate) enum Lookup {
    /// No cache for this request: `$upstream_cache_status` stays not found.
    Off,
    /// The zone named by a variable does not exist: 500, logged.
    Fail(u16),
    /// A status cached as an error entry (`error_page` takes it from there).
    Error(u16),
    /// Answer from this entry (HIT, UPDATING).
    Serve(Entry),
    /// Answer from an entry another request is still writing (its fill).
    Attach(Entry, Arc<cache::Fill>),
    /// Go upstream (boxed: a HIT's answer moves through the lookup without its bytes).
    Upstream(Box<CacheRequest>),
}

/// A request that goes upstream with the cache involved.
pub(crate) struct CacheRequest {
    pub zone: Arc<Zone>,
    /// The key's hash names the main file; after a Vary lookup, the variant's file.
    pub key: Key,
    /// The hash of the key text: the main file, and the seed of variant hashes.
    pub main_md5: [u8; 16],
    pub key_text: Vec<u8>,
    /// The response may be stored (not below `proxy_cache_min_uses`, not after a lock
    /// timeout, not with a full zone).
    pub store: bool,
    /// Held while this request fills the entry; released on every path.
    pub fill: Option<cache::FillGuard>,
    /// Held while this request refreshes an expired entry.
    pub update: Option<cache::UpdateGuard>,
    /// The expired entry: served when the refresh fails (`proxy_cache_use_stale`) or
    /// answers 304.
    pub stale: Option<Entry>,
    /// Send the stale entry's validators upstream (`proxy_cache_revalidate`).
    pub revalidate: bool,
    /// Where the cache's file work runs.
    pub io: FileIo,
    /// When waiting for another request's fill ends (`proxy_cache_lock_timeout`).
    lock_deadline: Option<Instant>,
    /// A background refresh: the response goes into the cache only.
    pub background: bool,
    /// How old another request's UPDATING mark may grow before this one takes over
    /// (the refresh holds it until its response is stored, so it must outlast a slow
    /// body): `max(proxy_cache_lock_age, 10 × proxy_read_timeout)`.
    update_backstop: Duration,
}

impl CacheRequest {
    /// The conditional fields sent upstream: a revalidation's, from the stored entry; for
    /// a key the cache holds nothing of, the client's own `If-None-Match` and (a valid)
    /// `If-Modified-Since` (RFC 9111 section 4.3.2: a cache may forward a client's
    /// conditional request; a 304 to it then goes to the client, and nothing is stored).
    /// An `If-Modified-Since` that is not a date is dropped, as nginx drops any.
    pub fn validators<'r>(&'r self, request: &'r Request<'_>) -> (Option<i64>, Option<&'r [u8]>) {
        match (&self.stale, self.revalidate) {
            (Some(entry), true) => (
                (entry.header.last_modified != -1).then_some(entry.header.last_modified),
                (!entry.header.etag.is_empty()).then_some(entry.header.etag.as_slice()),
            ),
            (None, _) if self.store && !self.background => (
                request
                    .header(b"if-modified-since")
                    .and_then(http1::response::parse_http_date),
                request.header(b"if-none-match"),
            ),
            _ => (None, None),
        }
    }

    /// Whether `proxy_cache_use_stale` (or the entry's `stale-if-error`) lets the stale
    /// entry answer for an upstream `condition` (a `UseStale` flag; `http_*` ones only
    /// through the directive).
    pub fn stale_allowed(&self, settings: &ProxyCache, condition: u16, now: i64) -> bool {
        let Some(entry) = &self.stale else {
            return false;
        };
        if entry.must_revalidate() {
            return false;
        }
        if settings.use_stale.has(condition) {
            return true;
        }
        let is_error = matches!(condition, UseStale::ERROR | UseStale::TIMEOUT);
        is_error
            && now
                <= entry
                    .header
                    .valid_sec
                    .saturating_add(entry.header.error_sec)
    }
}

/// The zone a location's `proxy_cache` names for this request, if any; an unknown name
/// from a variable is logged and answered with 500, as nginx does.
fn zone_for(
    worker: &HttpWorker,
    info: &ConnectionInfo,
    request: &Request<'_>,
    settings: &ProxyCache,
) -> Result<Option<usize>, u16> {
    match &settings.cache {
        CacheUse::Off | CacheUse::Named { .. } => Ok(None),
        CacheUse::Zone(id) => Ok(Some(id.0 as usize)),
        CacheUse::Variable(template) => {
            let name = render(worker, info, request, template);
            if name.is_empty() || name == b"off" {
                return Ok(None);
            }
            match zone_id(&worker.conf().cache_paths, &name) {
                Some(id) => Ok(Some(id.0 as usize)),
                None => {
                    log(
                        worker,
                        info,
                        request,
                        Level::Error,
                        format_args!("cache \"{}\" not found", String::from_utf8_lossy(&name)),
                    );
                    Err(500)
                }
            }
        }
    }
}

/// `proxy_cache_max_range_offset`: a range that starts at or beyond `offset` (a suffix
/// range always does; any range with 0) goes upstream uncached. Only the first range of a
/// list is looked at, as nginx does.
fn range_beyond(range: &[u8], offset: u64) -> bool {
    if offset == 0 {
        return true;
    }
    let Some(spec) = range.strip_prefix(b"bytes=") else {
        return false;
    };
    let spec = spec.trim_ascii_start();
    if spec.starts_with(b"-") {
        return true;
    }
    let digits = spec.iter().take_while(|b| b.is_ascii_digit()).count();
    std::str::from_utf8(&spec[..digits])
        .ok()
        .and_then(|text| text.parse::<u64>().ok())
        .is_some_and(|start| start >= offset)
}

/// nginx's predicate: a value neither empty nor `0`.
fn value_is_true(value: &[u8]) -> bool {
    !value.is_empty() && value != b"0"
}

/// Whether any of the predicates (`proxy_cache_bypass`, `proxy_no_cache`) is true: a value
/// neither empty nor "0".
pub(crate) fn any_true(
    worker: &HttpWorker,
    info: &ConnectionInfo,
    request: &Request<'_>,
    predicates: &[HttpTemplate],
) -> bool {
    predicates
        .iter()
        .any(|template| value_is_true(&render(worker, info, request, template)))
}

/// The cache's answer for a request about to be proxied. `key_uri` makes the URI it would
/// be sent upstream with (the default key's second part), called only for that key.
pub(crate) async fn lookup(
    worker: &HttpWorker,
    info: &ConnectionInfo,
    request: &mut Request<'_>,
    location: &Location,
    key_uri: impl FnOnce(&Request<'_>) -> Vec<u8>,
) -> Lookup {
    let settings = &location.settings.proxy_cache;
    let purging = any_true(worker, info, request, &settings.purge);
    let looked_up = settings.methods.allows(request.method_bytes());
    // An unsafe method's success invalidates what is stored for its key (RFC 9111
    // section 4.4): the key is worked out, and acted on once the answer is known.
    let invalidates = !looked_up && !purging && !is_safe(request.method_bytes());
    if !purging && !looked_up && !invalidates {
        return Lookup::Off;
    }
    if let Some(offset) = settings.max_range_offset
        && request
            .header(b"range")
            .is_some_and(|range| range_beyond(range, offset))
    {
        return Lookup::Off;
    }
    let zone_index = match zone_for(worker, info, request, settings) {
        Ok(Some(index)) => index,
        Ok(None) => return Lookup::Off,
        Err(status) => return Lookup::Fail(status),
    };
    // Borrowed from the worker's generation: the zone's reference count is shared by
    // every worker, so only a request that keeps the zone (its CacheRequest) counts one.
    let Some(zone) = worker.generation.cache_zones.get(zone_index) else {
        return Lookup::Off;
    };
    let key_text = match &settings.key {
        Some(template) => render(worker, info, request, template),
        None => {
            let mut text = b"http://".to_vec();
            text.extend_from_slice(&request.upstream.proxy_host);
            text.extend_from_slice(&key_uri(request));
            text
        }
    };
    let key = Key::new(&[&key_text]);
    request.upstream.cache_zone = Some(zone_index);
    let io = crate::kernel::file::cache::file_io(worker, info, request, location);
    let mut cache = CacheRequest {
        zone: Arc::clone(zone),
        key,
        main_md5: key.md5,
        key_text,
        store: true,
        fill: None,
        update: None,
        stale: None,
        revalidate: false,
        io,
        lock_deadline: None,
        background: false,
        update_backstop: settings
            .lock_age
            .max(location.settings.proxy.read_timeout.saturating_mul(10)),
    };
    // The refresh a stale answer left for after its response: it updates the entry.
    if let Some((update, _)) = request.upstream.refresh.take() {
        cache.update = Some(update);
        cache.background = true;
        // The stale entry's validators go upstream, as in a foreground refresh: a 304
        // makes it fresh again (nginx's background subrequest revalidates too).
        if let Some(entry) = stale_for_refresh(worker, info, request, &mut cache).await {
            cache.revalidate = settings.revalidate && entry.revalidatable();
            cache.stale = Some(entry);
        }
        cache.fill = start_filling(&cache.zone, &cache.key);
        request.upstream.cache_status = Some(status::EXPIRED);
        return Lookup::Upstream(Box::new(cache));
    }
    if purging {
        return Lookup::Fail(purge(&cache));
    }
    if invalidates {
        request.upstream.invalidate = Some((Arc::clone(&cache.zone), cache.key, cache.key_text));
        return Lookup::Off;
    }
    if any_true(worker, info, request, &settings.bypass) {
        request.upstream.cache_status = Some(status::BYPASS);
        cache.fill = start_filling(&cache.zone, &cache.key);
        return Lookup::Upstream(Box::new(cache));
    }
    // A waiter whose filler finished, or aged past `proxy_cache_lock_age`, looks again:
    // the entry is there now, or the waiter fills it itself.
    for _ in 0..8 {
        match look(worker, info, request, settings, zone, &mut cache).await {
            Look::Done(lookup) => return lookup,
            Look::Again => {}
        }
    }
    request.upstream.cache_status = Some(status::MISS);
    cache.store = false;
    Lookup::Upstream(Box::new(cache))
}

enum Look {
    Done(Lookup),
    Again,
}

/// One look at the index (and the disk) for the request's key; `zone` is `cache.zone`,
/// borrowed from the worker.
async fn look(
    worker: &HttpWorker,
    info: &ConnectionInfo,
    request: &mut Request<'_>,
    settings: &ProxyCache,
    zone: &Arc<Zone>,
    cache: &mut CacheRequest,
) -> Look {
    let now = worker.clock.wall().unix_seconds;
    let snapshot = match zone.touch(&cache.key.md5, Instant::now()) {
        Ok(snapshot) => snapshot,
        Err(_) => {
            log(
                worker,
                info,
                request,
                Level::Warn,
                format_args!(
                    "cache \"{}\" keys zone is full, response not cached",
                    zone.params().name
                ),
            );
            request.upstream.cache_status = Some(status::MISS);
            cache.store = false;
            return Look::Done(Lookup::Upstream(Box::new(take(cache))));
        }
    };
    if snapshot.error != 0 && snapshot.valid_sec >= now {
        request.upstream.cache_status = Some(status::HIT);
        return Look::Done(Lookup::Error(snapshot.error));
    }
    let mut exists = snapshot.exists;
    let mut damaged = false;
    if exists && let Some(kept) = super::hot::get(zone, &cache.key.md5, snapshot.uniq) {
        let entry = match kept {
            super::hot::Hot::Unchanged(mut entry) => {
                // The index knows of freshness a revalidation rewrote into the file since.
                if snapshot.valid_sec > entry.header.valid_sec {
                    Arc::make_mut(&mut entry.header).valid_sec = snapshot.valid_sec;
                }
                return found(worker, info, request, settings, cache, entry, now);
            }
            super::hot::Hot::Changed(entry) => entry,
        };
        if changed_on_disk(worker, &cache.io, &entry).await {
            // Written in place since it was checked: nothing of it is served again.
            log(
                worker,
                info,
                request,
                Level::Crit,
                format_args!(
                    "cache file \"{}\" was changed after it was stored",
                    entry.path.display()
                ),
            );
            zone.remove(&cache.key.md5, entry.uniq);
            exists = false;
            damaged = true;
        }
    }
    // While the zone is cold (its directory not yet read), a key the index does not
    // know may still be on disk (not the damaged file, which waits for its unlink). The
    // request takes its place in the lock before it looks (a look may go to a pool, and
    // two looks may come back in either order): requests keep the order in which they
    // reached the index, as when the zone is warm.
    let probing = !exists && zone.cold() && !damaged;
    let lock_age = settings.lock.then_some(settings.lock_age);
    let mut claimed = None;
    if probing && u64::from(snapshot.uses) >= settings.min_uses {
        match zone.start_fill(&cache.key.md5, lock_age, Instant::now()) {
            Ok(FillStart::Filler(guard)) => claimed = Some(guard),
            waiting @ Ok(FillStart::Wait(_)) => {
                return fill_or_wait(worker, info, request, settings, cache, waiting).await;
            }
            Err(_) => {}
        }
    }
    if exists || probing {
        let indexed = exists.then_some(snapshot.uniq);
        match open_entry(worker, info, request, cache, indexed).await {
            Some(entry) => {
                if exists && entry.uniq == snapshot.uniq {
                    super::hot::put(zone, &cache.key.md5, &entry);
                } else if !exists && let Some(file) = entry.stat {
                    // Found while the zone is cold: the index takes the file, so that the
                    // key stays a HIT once the loader is done (it leaves indexed keys).
                    let header = &entry.header;
                    zone.adopt(
                        &cache.key.md5,
                        file,
                        Some(header.valid_sec),
                        Some(header.body_start),
                    );
                }
                // Waiters of the place taken look again, and find the entry.
                drop(claimed);
                return found(worker, info, request, settings, cache, entry, now);
            }
            // The index (a checkpoint after a crash, say) named a file that is gone.
            None if exists => {
                zone.remove(&cache.key.md5, snapshot.uniq);
            }
            None => {}
        }
    }
    if u64::from(snapshot.uses) < settings.min_uses {
        // Not requested often enough yet: an ordinary upstream request, nothing stored.
        request.upstream.cache_status = Some(status::MISS);
        cache.store = false;
        return Look::Done(Lookup::Upstream(Box::new(take(cache))));
    }
    // A miss that may be stored: one request fills, others wait for it with the lock.
    let start = match claimed {
        Some(guard) => Ok(FillStart::Filler(guard)),
        None => zone.start_fill(&cache.key.md5, lock_age, Instant::now()),
    };
    fill_or_wait(worker, info, request, settings, cache, start).await
}

/// This request fills the key (MISS), waits for the fill another request started, or
/// goes upstream without storing (a full zone).
async fn fill_or_wait(
    worker: &HttpWorker,
    info: &ConnectionInfo,
    request: &mut Request<'_>,
    settings: &ProxyCache,
    cache: &mut CacheRequest,
    start: Result<FillStart, cache::ZoneFull>,
) -> Look {
    match start {
        Err(_) => {
            request.upstream.cache_status = Some(status::MISS);
            cache.store = false;
            Look::Done(Lookup::Upstream(Box::new(take(cache))))
        }
        Ok(FillStart::Filler(guard)) => {
            cache.fill = Some(guard);
            request.upstream.cache_status = Some(status::MISS);
            Look::Done(Lookup::Upstream(Box::new(take(cache))))
        }
        Ok(FillStart::Wait(fill)) => {
            let left = lock_wait_left(settings, cache);
            if settings.lock_stream
                && let Some(entry) = attach(worker, request, cache, &fill, left).await
            {
                request.upstream.cache_status = Some(status::HIT);
                return Look::Done(Lookup::Attach(entry, fill));
            }
            wait_outcome(worker, info, request, settings, cache, &fill).await
        }
    }
}

/// A kept entry whose file no longer has the size or time it was checked with: whether
/// that holds on a second look from where the cache's file work runs. Portico's own
/// rewrite of a header after a 304 changes the time for a moment and puts it back, so a
/// worker that looked in between opens the entry again instead of dropping it.
async fn changed_on_disk(worker: &HttpWorker, io: &FileIo, entry: &Entry) -> bool {
    let (file, size, written) = (Arc::clone(&entry.file), entry.size, entry.written);
    let look = move || {
        rustix::fs::fstat(&*file).map_or(true, |stat| {
            u64::try_from(stat.st_size) != Ok(size)
                || cache::store::modified_nanos(stat.st_mtime, stat.st_mtime_nsec) != written
        })
    };
    super::run_read(worker, io, &entry.path, look)
        .await
        .unwrap_or(true)
}

/// The lock's wait for another request's fill, and what follows it.
async fn wait_outcome(
    worker: &HttpWorker,
    info: &ConnectionInfo,
    request: &mut Request<'_>,
    settings: &ProxyCache,
    cache: &mut CacheRequest,
    fill: &cache::Fill,
) -> Look {
    match wait_for(fill, lock_wait_left(settings, cache)).await {
        Some(_) => Look::Again,
        // The fill grew older than `proxy_cache_lock_age`: this request may take over.
        None if Instant::now() < lock_deadline(settings, cache) => Look::Again,
        None => {
            log(
                worker,
                info,
                request,
                Level::Info,
                format_args!("cache lock timeout"),
            );
            request.upstream.cache_status = Some(status::MISS);
            cache.store = false;
            Look::Done(Lookup::Upstream(Box::new(take(cache))))
        }
    }
}

/// An entry was found on disk: fresh (HIT), or expired (this request refreshes it, or
/// another one is and the stale entry may answer).
fn found(
    worker: &HttpWorker,
    info: &ConnectionInfo,
    request: &mut Request<'_>,
    settings: &ProxyCache,
    cache: &mut CacheRequest,
    entry: Entry,
    now: i64,
) -> Look {
    // Purged since it was stored: gone.
    if cache.zone.purges().covers(&cache.key_text, entry.written) {
        cache.zone.remove(&cache.key.md5, entry.uniq);
        super::hot::forget(&cache.zone, &cache.key.md5);
        return miss_to_fill(request, cache);
    }
    // A response that varies: this request's variant is another file, named by the
    // variant's hash (nginx's secondary key).
    if !entry.header.vary.is_empty() {
        let variant = super::variant_of(request, &cache.main_md5, &entry.header.vary);
        if variant != entry.header.variant {
            if cache.key.md5 == cache.main_md5 {
                cache.key.md5 = variant;
                return Look::Again;
            }
            log(
                worker,
                info,
                request,
                Level::Crit,
                format_args!(
                    "cache file \"{}\" has incorrect vary hash",
                    entry.path.display()
                ),
            );
            return miss_to_fill(request, cache);
        }
    }
    // Fresh through the second `valid_sec` names, as nginx counts.
    if entry.header.valid_sec >= now {
        request.upstream.cache_status = Some(status::HIT);
        return Look::Done(Lookup::Serve(entry));
    }
    match cache
        .zone
        .try_update(&cache.key.md5, Instant::now(), cache.update_backstop)
    {
        Some(update) => {
            if update.took_over() {
                log(
                    worker,
                    info,
                    request,
                    Level::Warn,
                    format_args!(
                        "cache entry \"{}\" was updating for more than {} s, updating it again",
                        String::from_utf8_lossy(&cache.key_text),
                        cache.update_backstop.as_secs()
                    ),
                );
            }
            let within_swr = now
                <= entry
                    .header
                    .valid_sec
                    .saturating_add(entry.header.updating_sec);
            if settings.background_update
                && !entry.must_revalidate()
                && (settings.use_stale.has(UseStale::UPDATING) || within_swr)
            {
                // The stale entry answers now; the refresh runs after the response.
                request.upstream.refresh = Some((update, request.upstream.slice));
                request.upstream.cache_status = Some(status::STALE);
                return Look::Done(Lookup::Serve(entry));
            }
            cache.update = Some(update);
            cache.revalidate = settings.revalidate && entry.revalidatable();
            cache.stale = Some(entry);
            cache.fill = start_filling(&cache.zone, &cache.key);
            request.upstream.cache_status = Some(status::EXPIRED);
            Look::Done(Lookup::Upstream(Box::new(take(cache))))
        }
        None => {
            let within_swr = now
                <= entry
                    .header
                    .valid_sec
                    .saturating_add(entry.header.updating_sec);
            if (settings.use_stale.has(UseStale::UPDATING) || within_swr)
                && !entry.must_revalidate()
            {
                request.upstream.cache_status = Some(status::UPDATING);
                return Look::Done(Lookup::Serve(entry));
            }
            cache.stale = Some(entry);
            cache.fill = start_filling(&cache.zone, &cache.key);
            request.upstream.cache_status = Some(status::EXPIRED);
            Look::Done(Lookup::Upstream(Box::new(take(cache))))
        }
    }
}

/// The time a purge is taken at, in the unit of file modification times.
fn now_nanos() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| {
            u64::try_from(since.as_nanos()).unwrap_or(u64::MAX)
        })
}

/// GET, HEAD, OPTIONS and TRACE change nothing on the origin (RFC 9110 section 9.2.1).
fn is_safe(method: &[u8]) -> bool {
    matches!(method, b"GET" | b"HEAD" | b"OPTIONS" | b"TRACE")
}

/// After a successful unsafe request: what is stored for its key, variants included,
/// answers no more, as a purge of the key would.
pub(crate) fn invalidate(zone: &Zone, key: &Key, key_text: &[u8]) {
    zone.purges().add(key_text, false, now_nanos());
    if let Some(snapshot) = zone.peek(&key.md5)
        && snapshot.exists
    {
        zone.remove(&key.md5, snapshot.uniq);
    }
}

/// `proxy_cache_purge`: the key (and its variants), or every key starting with the text
/// before a final `*`, answers no more for what was stored until now. 204, or 404 when
/// the zone knows it had no entry for the exact key.
fn purge(cache: &CacheRequest) -> u16 {
    let now = now_nanos();
    let purges = cache.zone.purges();
    if let Some(prefix) = cache.key_text.strip_suffix(b"*") {
        purges.add(prefix, true, now);
        return 204;
    }
    purges.add(&cache.key_text, false, now);
    match cache.zone.peek(&cache.key.md5) {
        Some(snapshot) if snapshot.exists => {
            cache.zone.remove(&cache.key.md5, snapshot.uniq);
            204
        }
        _ if cache.zone.cold() => 204,
        _ => 404,
    }
}

/// A variant file that does not match: fetch and store it again.
fn miss_to_fill(request: &mut Request<'_>, cache: &mut CacheRequest) -> Look {
    cache.fill = start_filling(&cache.zone, &cache.key);
    request.upstream.cache_status = Some(status::MISS);
    Look::Done(Lookup::Upstream(Box::new(take(cache))))
}

/// A fill without the lock: every such request stores, the last to finish wins.
fn start_filling(zone: &Arc<Zone>, key: &Key) -> Option<cache::FillGuard> {
    match zone.start_fill(&key.md5, None, Instant::now()) {
        Ok(FillStart::Filler(guard)) => Some(guard),
        Ok(FillStart::Wait(_)) | Err(_) => None,
    }
}

/// Moves the request's cache state out, leaving an inert one behind.
fn take(cache: &mut CacheRequest) -> CacheRequest {
    CacheRequest {
        zone: Arc::clone(&cache.zone),
        key: cache.key,
        main_md5: cache.main_md5,
        key_text: std::mem::take(&mut cache.key_text),
        store: cache.store,
        fill: cache.fill.take(),
        update: cache.update.take(),
        stale: cache.stale.take(),
        revalidate: cache.revalidate,
        io: cache.io.clone(),
        lock_deadline: cache.lock_deadline,
        background: cache.background,
        update_backstop: cache.update_backstop,
    }
}

/// When this request stops waiting for other fills (`proxy_cache_lock_timeout`).
fn lock_deadline(settings: &ProxyCache, cache: &mut CacheRequest) -> Instant {
    *cache
        .lock_deadline
        .get_or_insert_with(|| Instant::now() + settings.lock_timeout)
}

/// How long to wait for the running fill: until it ages past `proxy_cache_lock_age` or
/// the lock times out, whichever comes first.
fn lock_wait_left(settings: &ProxyCache, cache: &mut CacheRequest) -> Duration {
    let deadline = lock_deadline(settings, cache);
    let now = Instant::now();
    let aged = cache
        .zone
        .peek(&cache.key.md5)
        .and_then(|snapshot| snapshot.fill)
        .map_or(now, |fill| fill.started() + settings.lock_age);
    deadline.min(aged.max(now)).saturating_duration_since(now)
}

/// Waits, at most `timeout`, for a fill with a known length to have its head in its
/// temporary file, and reads the head: the waiter then reads the body as it is written.
/// `None` when the fill ends first, has no length, or the head cannot be read.
async fn attach(
    worker: &HttpWorker,
    request: &Request<'_>,
    cache: &CacheRequest,
    fill: &Arc<cache::Fill>,
    timeout: Duration,
) -> Option<Entry> {
    // Several ranges make a multipart body, which the range filter builds from a stored
    // entry only: such a request waits for the entry, as with nginx's lock.
    if request
        .header(b"range")
        .is_some_and(|range| range.contains(&b','))
    {
        return None;
    }
    let mut states = fill.subscribe();
    let streaming = async {
        loop {
            match *states.borrow_and_update() {
                FillState::Streaming {
                    content_length,
                    written,
                } if written > 0 => return Some((content_length, written)),
                state if state.is_final() => return None,
                _ => {}
            }
            if states.changed().await.is_err() {
                return None;
            }
        }
    };
    let (content_length, written) = tokio::time::timeout(timeout, streaming).await.ok()??;
    let file = fill.temp()?;
    let key = cache.key;
    let key_text = cache.key_text.clone();
    let reader = Arc::clone(&file);
    let path = std::path::Path::new("cache fill");
    let read = move || -> Option<(EntryHeader, Arc<[u8]>)> {
        let want = usize::try_from(written.min(16 * 1024)).ok()?;
        let buffer = cache::store::read_head(&reader, want).ok()?;
        let header = format::check(&buffer, &key, &key_text, written).ok()?;
        let head = buffer
            .get(usize::from(header.header_start)..usize::from(header.body_start))?
            .into();
        Some((header, head))
    };
    let (header, head) = super::run_read(worker, &cache.io, path, read)
        .await
        .ok()??;
    let Ok(Some(parsed)) = crate::modules::proxy::response::parse(&head) else {
        return None;
    };
    let size = u64::from(header.body_start) + content_length;
    Some(Entry {
        file,
        path: Arc::from(Path::new("")),
        header: Arc::new(header),
        head,
        parsed: Arc::new(parsed),
        size,
        uniq: 0,
        written: 0,
        body: None,
        stat: None,
    })
}

/// Waits until a fill ends, at most `timeout`: `None` on timeout.
async fn wait_for(fill: &cache::Fill, timeout: Duration) -> Option<FillState> {
    let mut states = fill.subscribe();
    let wait = async {
        loop {
            let state = *states.borrow_and_update();
            if !matches!(state, FillState::Pending | FillState::Streaming { .. }) {
                return state;
            }
            if states.changed().await.is_err() {
                return FillState::Failed;
            }
        }
    };
    tokio::time::timeout(timeout, wait).await.ok()
}

/// Opens and checks the entry file of the request's key where the cache's file work
/// runs; a missing file is `None`, a damaged one is logged, removed and `None`.
/// The stored entry a background refresh replaces, the variant of this request when the
/// response varies; `None` when it is gone.
async fn stale_for_refresh(
    worker: &HttpWorker,
    info: &ConnectionInfo,
    request: &Request<'_>,
    cache: &mut CacheRequest,
) -> Option<Entry> {
    let entry = open_entry(worker, info, request, cache, None).await?;
    if entry.header.vary.is_empty() {
        return Some(entry);
    }
    let variant = super::variant_of(request, &cache.main_md5, &entry.header.vary);
    if variant == entry.header.variant {
        return Some(entry);
    }
    cache.key.md5 = variant;
    open_entry(worker, info, request, cache, None)
        .await
        .filter(|entry| entry.header.variant == variant)
}

async fn open_entry(
    worker: &HttpWorker,
    info: &ConnectionInfo,
    request: &Request<'_>,
    cache: &CacheRequest,
    indexed: Option<u64>,
) -> Option<Entry> {
    let path: Arc<Path> = Arc::from(cache.zone.params().layout.entry_path(&cache.key));
    let key = cache.key;
    let block_size = cache.zone.block_size();
    // Without purge rules, and unless the worker will keep the entry (whose HITs compare
    // the file's time), the file's time is not needed: a small entry the index knows (its
    // inode) is then opened and read in two calls, without a `fstat`.
    let known = indexed.filter(|_| cache.zone.purges().is_empty() && !super::hot::would_keep());
    let read = move |zone: &Zone, path: Arc<Path>, key_text: &[u8]| {
        let file = zone.root_dir().open_entry(&zone.params().layout, &key.md5);
        read_entry(file, path, &key, key_text, known, block_size)
    };
    let opened = match &cache.io {
        // On the worker: borrowed, so the zone every worker shares is not counted.
        FileIo::Worker => Ok(super::run_here(worker, &path, || {
            read(&cache.zone, Arc::clone(&path), &cache.key_text)
        })),
        io => {
            let zone = Arc::clone(&cache.zone);
            let key_text = cache.key_text.clone();
            let owned = Arc::clone(&path);
            super::run_read(worker, io, &path, move || read(&zone, owned, &key_text)).await
        }
    };
    match opened {
        Ok(Ok(entry)) => Some(entry),
        Ok(Err(EntryError::Missing)) => None,
        Ok(Err(EntryError::Io(error))) => {
            log(
                worker,
                info,
                request,
                Level::Crit,
                format_args!(
                    "open() \"{}\" failed ({})",
                    path.display(),
                    crate::modules::proxy::handler::errno_text(&error)
                ),
            );
            None
        }
        Ok(Err(EntryError::Damaged(error, uniq))) => {
            let level = if error.is_crit() {
                Level::Crit
            } else {
                Level::Info
            };
            log(
                worker,
                info,
                request,
                level,
                format_args!("cache file \"{}\" {error}", path.display()),
            );
            cache.zone.remove(&cache.key.md5, uniq);
            None
        }
        Ok(Err(EntryError::WrongLength {
            uniq,
            stored,
            found,
        })) => {
            log(
                worker,
                info,
                request,
                Level::Crit,
                format_args!(
                    "cache file \"{}\" has a body of {found} bytes, its Content-Length is {stored}",
                    path.display()
                ),
            );
            cache.zone.remove(&cache.key.md5, uniq);
            None
        }
        Ok(Err(EntryError::InvalidHead(uniq))) => {
            log(
                worker,
                info,
                request,
                Level::Crit,
                format_args!("cache file \"{}\" contains invalid header", path.display()),
            );
            cache.zone.remove(&cache.key.md5, uniq);
            None
        }
        Err(error) => {
            log(
                worker,
                info,
                request,
                error.level,
                format_args!("{}", error.message),
            );
            None
        }
    }
}

mod read;

#[cfg(test)]
mod tests;
