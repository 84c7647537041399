//! The cache's part in a proxied request's tries: a stale entry standing in for a failed
//! refresh, a 304 to a revalidation, error statuses kept in the index, and the decision to
//! store a response as it passes.

use super::{Proxying, UpstreamFraming, UpstreamHead, rewrite_input};
use crate::kernel::request::{ConnectionInfo, Request};
use crate::kernel::request_log::log;
use crate::modules::proxy::IgnoreHeaders;
use crate::modules::proxy::cache::lookup::{Entry, status as cache_status};
use crate::modules::proxy::cache::serve;
use crate::modules::proxy::cache::settings::{Store, UseStale};
use crate::modules::proxy::cache::store::{FileStore, Keeper};
use crate::modules::proxy::failure::Failure;
use crate::modules::proxy::handler::ProxyOutcome;
use crate::modules::proxy::settings::NextUpstream as NextUpstreamFlags;

impl<'a> Proxying<'a, '_> {
    /// The stale entry answers for a failed refresh when `proxy_cache_use_stale` (or its
    /// `stale-if-error`) allows it for `condition`.
    pub(super) fn stale_answer(
        &self,
        info: &ConnectionInfo,
        request: &mut Request<'a>,
        condition: u16,
    ) -> Option<ProxyOutcome<'a>> {
        let settings = &self.location.settings.proxy_cache;
        let now = self.worker.clock.wall().unix_seconds;
        let mut slot = self.cache.borrow_mut();
        if !slot
            .as_ref()
            .is_some_and(|cache| cache.stale_allowed(settings, condition, now))
        {
            return None;
        }
        let mut cache = slot.take()?;
        let entry = cache.stale.take()?;
        request.upstream.cache_status = Some(cache_status::STALE);
        Some(self.answer_from(info, request, entry, &cache.io))
    }

    /// A response from a stored entry.
    pub(super) fn answer_from(
        &self,
        info: &ConnectionInfo,
        request: &mut Request<'a>,
        entry: Entry,
        io: &crate::kernel::file::io::FileIo,
    ) -> ProxyOutcome<'a> {
        let rewrite = rewrite_input(self.location, &self.target);
        let settings = &self.location.settings.proxy_cache;
        let body = serve::respond_from(
            self.worker,
            info,
            request,
            self.outgoing.proxy,
            settings,
            entry,
            &rewrite,
            io.clone(),
        );
        ProxyOutcome::Respond(body)
    }

    /// An error status the cache keeps in its index alone (no file), as nginx does for an
    /// intercepted error or a 502/504 it made, when the fields or `proxy_cache_valid` give
    /// it a time.
    pub(super) fn cache_error(
        &self,
        info: &ConnectionInfo,
        request: &Request<'a>,
        status: u16,
        head: Option<(&UpstreamHead, &[u8])>,
    ) {
        let Some(cache) = self.cache.borrow_mut().take() else {
            return;
        };
        if !cache.store {
            return;
        }
        let settings = &self.location.settings.proxy_cache;
        let now = self.worker.clock.wall().unix_seconds;
        let fields = head.into_iter().flat_map(|(head, buffer)| {
            head.fields
                .iter()
                .map(move |(name, value)| (&buffer[name.clone()], &buffer[value.clone()]))
        });
        let fresh = crate::modules::proxy::cache::judge_response(
            self.worker,
            info,
            request,
            self.outgoing.proxy,
            settings,
            status,
            fields,
            now,
        );
        if let Some(fresh) = fresh {
            cache
                .zone
                .set_error(&cache.key.md5, status, fresh.valid_sec);
        }
    }

    /// What the cache makes of a response head: a 304 to a revalidation (REVALIDATED), a
    /// status the stale entry may stand in for (STALE); `None` to go on with it.
    pub(super) fn cache_answer(
        &self,
        info: &ConnectionInfo,
        request: &mut Request<'a>,
        head: &UpstreamHead,
        buffer: &[u8],
    ) -> Option<ProxyOutcome<'a>> {
        let settings = &self.location.settings.proxy_cache;
        let now = self.worker.clock.wall().unix_seconds;
        let revalidated = {
            let slot = self.cache.borrow();
            let cache = slot.as_ref()?;
            cache.revalidate && cache.stale.is_some() && head.status == 304
        };
        if revalidated {
            let mut cache = self.cache.borrow_mut().take()?;
            let mut entry = cache.stale.take()?;
            let fields = head
                .fields
                .iter()
                .map(|(name, value)| (&buffer[name.clone()], &buffer[value.clone()]));
            crate::modules::proxy::cache::revalidated(
                &mut cache,
                &mut entry,
                settings,
                self.outgoing.proxy,
                fields,
                now,
                self.worker.pools.default_pool(),
            );
            self.merge_304(&cache, &mut entry, head, buffer);
            request.upstream.cache_status = Some(cache_status::REVALIDATED);
            return Some(self.answer_from(info, request, entry, &cache.io));
        }
        let condition = UseStale::for_status(head.status)?;
        if !settings.use_stale.has(condition) {
            return None;
        }
        self.stale_answer(info, request, condition)
    }

    /// The 304's fields go into the stored head (RFC 9111 section 4.3.4): this answer uses
    /// the merged head, and the entry is written again with it.
    fn merge_304(
        &self,
        cache: &crate::modules::proxy::cache::lookup::CacheRequest,
        entry: &mut Entry,
        head: &UpstreamHead,
        buffer: &[u8],
    ) {
        let update: Vec<(Vec<u8>, Vec<u8>)> = head
            .fields
            .iter()
            .map(|(name, value)| {
                (
                    buffer[name.clone()].to_vec(),
                    buffer[value.clone()].to_vec(),
                )
            })
            .collect();
        let Some(merged) = crate::modules::proxy::cache::merge::merged_head(&entry.head, &update)
        else {
            return;
        };
        let Ok(Some(parsed)) = crate::modules::proxy::response::parse(&merged) else {
            return;
        };
        let number = self
            .worker
            .generation
            .temp_numbers
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            + 1;
        let pool = match &cache.io {
            crate::kernel::file::io::FileIo::Pool(pool) => pool.clone(),
            _ => self.worker.pools.default_pool().clone(),
        };
        crate::modules::proxy::cache::merge::persist(
            crate::modules::proxy::cache::merge::Rewrite {
                zone: std::sync::Arc::clone(&cache.zone),
                key: cache.key,
                key_text: cache.key_text.clone(),
                header: (*entry.header).clone(),
                head: merged.clone(),
                old: std::sync::Arc::clone(&entry.file),
                old_body_start: u64::from(entry.header.body_start),
                body_len: entry.body_len(),
                pool,
                temp_number: (number % 10_000_000_000) as u32,
            },
        );
        entry.head = merged.into();
        entry.parsed = std::sync::Arc::new(parsed);
    }

    /// Whether the response is stored, and its writer if it is: nginx's cacheability (the
    /// fields, `proxy_cache_valid`, `proxy_no_cache`, buffering), then room in the cache.
    pub(super) fn cache_writer(
        &self,
        info: &ConnectionInfo,
        request: &mut Request<'a>,
        head: &UpstreamHead,
        buffer: &[u8],
        framing: UpstreamFraming,
    ) -> Option<Box<Keeper>> {
        // Unless it is stored, the response passes through the not-modified filter as the
        // upstream sent it.
        request.response.disable_not_modified = true;
        if let Some((zone, key, key_text)) = request.upstream.invalidate.take()
            && head.status < 400
        {
            crate::modules::proxy::cache::lookup::invalidate(&zone, &key, &key_text);
            self.invalidate_related(info, request, &zone, head, buffer);
        }
        if let Store::Path(template) = &self.location.settings.proxy_cache.store {
            return self.file_store(info, request, head, buffer, framing, template);
        }
        let mut cache = self.cache.borrow_mut().take()?;
        let proxy = self.outgoing.proxy;
        let settings = &self.location.settings.proxy_cache;
        if !cache.store {
            return None;
        }
        let now = self.worker.clock.wall().unix_seconds;
        let fields = || {
            head.fields
                .iter()
                .map(|(name, value)| (&buffer[name.clone()], &buffer[value.clone()]))
        };
        // A 304 answers the client's own validators, passed on for a key the cache holds
        // nothing of: it goes to the client, and is no entry (whatever proxy_cache_valid
        // says), so the next request fills it.
        if head.status == 304 {
            if let Some(fill) = cache.fill.take() {
                fill.not_cacheable();
            }
            return None;
        }
        let verdict = crate::modules::proxy::cache::judge_response(
            self.worker,
            info,
            request,
            proxy,
            settings,
            head.status,
            fields(),
            now,
        );
        let fresh = match verdict {
            Some(fresh) => fresh,
            None => {
                if let Some(fill) = cache.fill.take() {
                    fill.not_cacheable();
                }
                return None;
            }
        };
        let buffering_off = !proxy.ignore_headers.has(IgnoreHeaders::X_ACCEL_BUFFERING)
            && fields().any(|(name, value)| {
                name.eq_ignore_ascii_case(b"x-accel-buffering") && value.eq_ignore_ascii_case(b"no")
            });
        if !proxy.buffering || buffering_off || head.status == 101 {
            if let Some(fill) = cache.fill.take() {
                fill.not_cacheable();
            }
            return None;
        }
        let content_length = match framing {
            UpstreamFraming::Length(length) => Some(length),
            UpstreamFraming::None => Some(0),
            _ => None,
        };
        let stored_head = crate::modules::proxy::cache::head_to_store(head, buffer);
        let raw_head = stored_head.as_deref().unwrap_or(&buffer[..head.len]);
        match crate::modules::proxy::cache::start_writer(
            self.worker,
            request,
            self.location,
            &mut cache,
            fresh,
            raw_head,
            content_length,
            now,
        ) {
            Ok(writer) => {
                request.response.disable_not_modified = false;
                Some(Box::new(Keeper::Cache(writer)))
            }
            Err(failure) => {
                log(
                    self.worker,
                    info,
                    request,
                    failure.level,
                    format_args!("{}", failure.message),
                );
                None
            }
        }
    }
}

impl<'a> Proxying<'a, '_> {
    /// After a successful unsafe request: the same-host URIs its response's `Location`
    /// and `Content-Location` name answer from the cache no more either (RFC 9111
    /// section 4.4), each keyed as a `GET` of it would be in this location.
    fn invalidate_related(
        &self,
        info: &ConnectionInfo,
        request: &Request<'a>,
        zone: &std::sync::Arc<cache::Zone>,
        head: &UpstreamHead,
        buffer: &[u8],
    ) {
        use crate::modules::proxy::cache::invalidate::{as_get_of, same_origin_targets};
        let values = head.fields.iter().filter_map(|(name, value)| {
            let name = &buffer[name.clone()];
            (name.eq_ignore_ascii_case(b"location")
                || name.eq_ignore_ascii_case(b"content-location"))
            .then(|| &buffer[value.clone()])
        });
        let targets = same_origin_targets(request.request_uri(), &request.info.host, values);
        for target in targets {
            let Some(copy) = as_get_of(request, &target) else {
                continue;
            };
            let key_text = match &self.location.settings.proxy_cache.key {
                Some(template) => {
                    crate::kernel::variables::evaluate::render(self.worker, info, &copy, template)
                }
                None => {
                    let mut text = b"http://".to_vec();
                    text.extend_from_slice(&copy.upstream.proxy_host);
                    text.extend_from_slice(&key_uri(&copy, self.location, &self.target));
                    text
                }
            };
            let key = cache::Key::new(&[&key_text]);
            crate::modules::proxy::cache::lookup::invalidate(zone, &key, &key_text);
        }
    }

    /// `proxy_store`: a 200 to a request that was not HEAD is written to its file as it
    /// passes.
    fn file_store(
        &self,
        info: &ConnectionInfo,
        request: &Request<'a>,
        head: &UpstreamHead,
        buffer: &[u8],
        framing: UpstreamFraming,
        template: &crate::kernel::variables::HttpTemplate,
    ) -> Option<Box<Keeper>> {
        if head.status != 200 || self.is_head {
            return None;
        }
        let worker = self.worker;
        let target = crate::kernel::variables::evaluate::render(worker, info, request, template);
        if target.is_empty() {
            return None;
        }
        let number = worker
            .generation
            .temp_numbers
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            + 1;
        let temp_dir = self.location.settings.proxy.proxy_temp_path.clone();
        let temp = crate::kernel::body::temp::temp_file_path(&temp_dir, number);
        let modified = head
            .fields
            .iter()
            .find(|(name, _)| buffer[name.clone()].eq_ignore_ascii_case(b"last-modified"))
            .and_then(|(_, value)| http1::response::parse_http_date(&buffer[value.clone()]));
        let pool = match crate::kernel::file::cache::file_io(worker, info, request, self.location) {
            crate::kernel::file::io::FileIo::Pool(pool) => pool,
            _ => worker.pools.default_pool().clone(),
        };
        Some(Box::new(Keeper::File(FileStore {
            temp,
            temp_dir: (temp_dir, number),
            target: crate::kernel::pool_fs::path_from_vec(target),
            file: None,
            pool,
            pending: Vec::new(),
            written: 0,
            access: self.location.settings.proxy_cache.store_access,
            modified,
            expected: match framing {
                UpstreamFraming::Length(length) => Some(length),
                _ => None,
            },
            committed: false,
        })))
    }
}

/// What a lookup means for the request: an answer from the cache (`Err`, the outcome to
/// end with), or the request goes upstream with the cache's part (`Ok`).
pub(super) fn answer<'a>(
    worker: &'a crate::kernel::worker::HttpWorker,
    info: &ConnectionInfo,
    request: &mut Request<'a>,
    location: &'a crate::kernel::conf::Location,
    target: &super::Target<'_>,
    looked_up: crate::modules::proxy::cache::lookup::Lookup,
) -> Result<Option<crate::modules::proxy::cache::lookup::CacheRequest>, ProxyOutcome<'a>> {
    use crate::modules::proxy::cache::lookup::Lookup;
    let proxy = &location.settings.proxy;
    let settings = &location.settings.proxy_cache;
    let rewrite = rewrite_input(location, target);
    let body = match looked_up {
        Lookup::Off => return Ok(None),
        Lookup::Upstream(cache) => return Ok(Some(*cache)),
        Lookup::Fail(status) | Lookup::Error(status) => {
            return Err(ProxyOutcome::Finalize(status));
        }
        Lookup::Serve(entry) => {
            let io = crate::kernel::file::cache::file_io(worker, info, request, location);
            serve::respond_from(worker, info, request, proxy, settings, entry, &rewrite, io)
        }
        Lookup::Attach(entry, fill) => {
            let io = crate::kernel::file::cache::file_io(worker, info, request, location);
            serve::respond_attached(
                worker, info, request, proxy, settings, entry, fill, &rewrite, io,
            )
        }
    };
    Err(ProxyOutcome::Respond(body))
}

/// The `proxy_cache_use_stale` condition of a failed try.
pub(super) fn stale_condition(failure: &Failure) -> u16 {
    match failure.condition() {
        Some(NextUpstreamFlags::TIMEOUT) => UseStale::TIMEOUT,
        Some(NextUpstreamFlags::INVALID_HEADER) => UseStale::INVALID_HEADER,
        _ => UseStale::ERROR,
    }
}

/// The URI the request would go upstream with: the default cache key's second part.
pub(super) fn key_uri(
    request: &Request<'_>,
    location: &crate::kernel::conf::Location,
    target: &super::Target<'_>,
) -> Vec<u8> {
    let input = crate::modules::proxy::request::HeadInput {
        uri_part: target.uri_part.as_deref(),
        variables: target.variables,
        method: b"GET",
        host: b"",
        body_len: None,
        chunked: false,
        cache: None,
    };
    let mut uri = Vec::new();
    crate::modules::proxy::request::upstream_uri(request, location, &input, &mut uri);
    uri
}

/// Whether an upstream's head says `Accept-Ranges` (looked at only for a response being
/// stored).
pub(super) fn accepts_ranges(head: &UpstreamHead, buffer: &[u8]) -> bool {
    head.fields
        .iter()
        .any(|(name, _)| buffer[name.clone()].eq_ignore_ascii_case(b"accept-ranges"))
}
