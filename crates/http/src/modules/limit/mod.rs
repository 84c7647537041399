//! `limit_req` and `limit_conn` (nginx's ngx_http_limit_req_module and
//! ngx_http_limit_conn_module): the preaccess phase's limits on how fast, and how many at
//! once, requests with the same key are served.
//!
//! Config path: [`directives`] declares each zone ([`settings::zone::ReqZone`],
//! [`settings::zone::ConnZone`]) and each level's limits; [`resolve_zones`] points the limits at their zones once the
//! `http` block is read; the server keeps a zone of the same name, kind and size across a
//! reload. Request path: [`preaccess`] runs once per request (an internal redirect does not
//! count a request again): `limit_req` looks the key up in each zone, in order, and the
//! last zone accounts the request in all of them (nginx's leaky bucket, in thousandths of
//! a request); a request over a zone's burst is refused, one over its `delay` waits on a
//! timer. `limit_conn` then counts the request under each key until it ends
//! ([`ConnSlot`], dropped with the request).

pub mod directives;
pub mod settings;
pub mod variables;

use std::sync::Arc;
use std::time::Duration;

use conf::ConfError;
use logging::Level;
use runtime::Stream;
use vars::Segment;

use crate::kernel::find::current_location;
use crate::kernel::module_state::ModuleState;
use crate::kernel::request::{ConnectionInfo, Request};
use crate::kernel::request_log::log;
use crate::kernel::variables::evaluate::{BinaryAddress, render};
use crate::kernel::variables::{HttpTemplate, Variable};
use crate::kernel::worker::HttpWorker;
use crate::modules::limit::settings::zone::{ConnZone, Lookup, Take};
use crate::modules::limit::settings::{Limit, LimitZones, ReqLimit};

/// What the module judged of this request (its state in the request's module slots):
/// `$limit_req_status` and `$limit_conn_status`. A limit that judged the request does not
/// judge it again after an internal redirect, nor in its subrequests.
#[derive(Clone, Copy, Debug, Default)]
pub struct Verdicts {
    pub req: Option<&'static str>,
    pub conn: Option<&'static str>,
}

impl ModuleState for Verdicts {
    fn for_subrequest(&self) -> Option<Box<dyn ModuleState>> {
        Some(Box::new(*self))
    }
}

/// The verdicts so far.
pub fn verdicts(request: &Request<'_>) -> Verdicts {
    request
        .modules
        .get::<Verdicts>()
        .copied()
        .unwrap_or_default()
}

/// `$limit_req_status` values.
pub const PASSED: &str = "PASSED";
pub const DELAYED: &str = "DELAYED";
pub const REJECTED: &str = "REJECTED";
pub const DELAYED_DRY_RUN: &str = "DELAYED_DRY_RUN";
pub const REJECTED_DRY_RUN: &str = "REJECTED_DRY_RUN";

/// nginx's longest keys: a `limit_req` node stores the length in 16 bits, a `limit_conn`
/// node in 8.
const REQ_KEY_MAX: usize = 65535;
const CONN_KEY_MAX: usize = 255;

/// Points every limit of a location at its zone, or fails as nginx does for a zone no
/// `*_zone` directive declared.
pub fn resolve_zones(limit: &mut Limit, zones: &LimitZones) -> Result<(), ConfError> {
    for used in &mut limit.limit_req {
        used.zone = find_zone(zones, &used.zone_name, &used.span, true)?;
    }
    for used in &mut limit.limit_conn {
        used.zone = find_zone(zones, &used.zone_name, &used.span, false)?;
    }
    Ok(())
}

fn find_zone(
    zones: &LimitZones,
    name: &str,
    span: &conf::Span,
    is_req: bool,
) -> Result<usize, ConfError> {
    let req = zones.req.iter().position(|used| used.zone.name == name);
    let conn = zones.conn.iter().position(|used| used.zone.name == name);
    match (is_req, req, conn) {
        (true, Some(index), _) | (false, _, Some(index)) => Ok(index),
        // nginx finds this when it creates the zones, past the configuration's lines.
        (_, None, None) => Err(ConfError::new(
            conf::ConfErrorKind::Message(format!("zero size shared memory zone \"{name}\"")),
            None,
        )),
        _ => Err(ConfError::message(
            format!("the shared memory zone \"{name}\" is already declared for a different use"),
            span,
        )),
    }
}

/// One request counted under a `limit_conn` key; dropping it gives the count back.
#[derive(Debug)]
pub struct ConnSlot {
    zone: Arc<ConnZone>,
    key: Key,
}

impl Drop for ConnSlot {
    fn drop(&mut self) {
        self.zone.give_back(&self.key);
    }
}

/// The preaccess phase: `None` to go on, or the status that ends the request.
pub async fn preaccess<'a>(
    worker: &'a HttpWorker,
    connection: &ConnectionInfo,
    client: &Stream,
    request: &mut Request<'a>,
) -> Option<u16> {
    let location = current_location(worker, request);
    let limit = &location.settings.limit;
    if !limit.limit_req.is_empty() && verdicts(request).req.is_none() {
        match limit_req(worker, connection, request, limit) {
            ReqVerdict::Pass => {}
            ReqVerdict::End(status) => return Some(status),
            ReqVerdict::Delay(delay) => {
                if let Some(status) = wait(worker, connection, client, request, delay).await {
                    return Some(status);
                }
            }
        }
    }
    if !limit.limit_conn.is_empty() && verdicts(request).conn.is_none() {
        return limit_conn(worker, connection, request, limit);
    }
    None
}

/// A zone that holds the request's entry until the last zone's verdict.
struct Held<'l> {
    limit: &'l ReqLimit,
    key: Key,
}

/// A zone's key for one request. `$binary_remote_addr`, the usual key, is read from the
/// connection without the variables' machinery or a buffer: it is on the path of every
/// limited request (and kept by a `limit_conn` slot until the request ends).
#[derive(Debug)]
enum Key {
    Address(BinaryAddress),
    Rendered(Vec<u8>),
}

impl Key {
    fn of(
        worker: &HttpWorker,
        connection: &ConnectionInfo,
        request: &Request<'_>,
        template: &HttpTemplate,
    ) -> Key {
        match template.segments() {
            [Segment::Variable(Variable::BinaryRemoteAddr)] => {
                Key::Address(BinaryAddress::of(connection.peer.get()))
            }
            _ => Key::Rendered(render(worker, connection, request, template)),
        }
    }
}

impl std::ops::Deref for Key {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Key::Address(address) => address,
            Key::Rendered(bytes) => bytes,
        }
    }
}

/// What `limit_req` decided: go on, end the request with a status, or wait this many
/// milliseconds first. Decided without awaiting anything, so a request that passes (the
/// usual case) never builds the waiting future.
enum ReqVerdict {
    Pass,
    End(u16),
    Delay(u64),
}

/// The lookups of one request in its `limit_req` zones, in order.
struct Lookups<'l> {
    held: Vec<Held<'l>>,
    /// The lookup that ended the walk (the last zone's, or a refusal), with its limit.
    ended: Option<(Lookup, &'l ReqLimit)>,
}

/// The excess in nginx's log format: requests with three decimals.
struct Excess(u64);

impl std::fmt::Display for Excess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{:03}", self.0 / 1000, self.0 % 1000)
    }
}

fn limit_req<'a>(
    worker: &'a HttpWorker,
    connection: &ConnectionInfo,
    request: &mut Request<'a>,
    limit: &Limit,
) -> ReqVerdict {
    let zones = &worker.conf().limit_zones.req;
    let Lookups { held, ended } = look_up(worker, connection, request, limit);
    if held.is_empty() {
        match ended {
            None => return ReqVerdict::Pass,
            // One zone that accounted the request under its `delay`: the usual verdict.
            Some((Lookup::Accounted { excess }, used)) if excess <= used.delay => {
                request.modules.get_or_default::<Verdicts>().req = Some(PASSED);
                return ReqVerdict::Pass;
            }
            _ => {}
        }
    }
    let dry = if limit.limit_req_dry_run {
        ", dry run"
    } else {
        ""
    };
    let (excess, chosen) = match ended {
        Some((Lookup::Busy { excess }, used)) => {
            let name = &zones[used.zone].zone.name;
            let message = format!(
                "limiting requests{dry}, excess: {} by zone \"{name}\"",
                Excess(excess)
            );
            let level = limit.limit_req_log_level;
            log(
                worker,
                connection,
                request,
                level,
                format_args!("{message}"),
            );
            return refuse(zones, held, request, limit).map_or(ReqVerdict::Pass, ReqVerdict::End);
        }
        Some((Lookup::Full, used)) => {
            let name = &zones[used.zone].zone.name;
            let message = format!("could not allocate node in limit_req zone \"{name}\"");
            log(
                worker,
                connection,
                request,
                Level::Alert,
                format_args!("{message}"),
            );
            return refuse(zones, held, request, limit).map_or(ReqVerdict::Pass, ReqVerdict::End);
        }
        Some((Lookup::Accounted { excess }, used)) => (excess, Some(used)),
        Some((Lookup::Held, _)) | None => (0, None),
    };
    let Some((delay, excess, chosen)) = account_held(zones, &held, excess, chosen) else {
        request.modules.get_or_default::<Verdicts>().req = Some(PASSED);
        return ReqVerdict::Pass;
    };
    let name = &zones[chosen.zone].zone.name;
    let message = format!(
        "delaying request{dry}, excess: {}, by zone \"{name}\"",
        Excess(excess)
    );
    let level = delay_level(limit.limit_req_log_level);
    log(
        worker,
        connection,
        request,
        level,
        format_args!("{message}"),
    );
    if limit.limit_req_dry_run {
        request.modules.get_or_default::<Verdicts>().req = Some(DELAYED_DRY_RUN);
        return ReqVerdict::Pass;
    }
    request.modules.get_or_default::<Verdicts>().req = Some(DELAYED);
    ReqVerdict::Delay(delay)
}

/// A delayed request waits on a timer. A client that goes away meanwhile ends the request
/// at once, with nginx's `info` line and 499.
async fn wait(
    worker: &HttpWorker,
    connection: &ConnectionInfo,
    client: &Stream,
    request: &Request<'_>,
    delay: u64,
) -> Option<u16> {
    tokio::select! {
        biased;
        () = client_gone(client) => {
            log(
                worker,
                connection,
                request,
                Level::Info,
                format_args!("client prematurely closed connection"),
            );
            Some(499)
        }
        () = tokio::time::sleep(Duration::from_millis(delay)) => None,
    }
}

/// Looks the request up in each zone with a non-empty key: every zone but the last holds
/// its entry, the last accounts the request; a refusal stops the walk.
fn look_up<'l>(
    worker: &HttpWorker,
    connection: &ConnectionInfo,
    request: &Request<'_>,
    limit: &'l Limit,
) -> Lookups<'l> {
    let zones = &worker.conf().limit_zones.req;
    let last = limit.limit_req.len() - 1;
    let mut held = Vec::new();
    for (index, used) in limit.limit_req.iter().enumerate() {
        let zone = &zones[used.zone];
        let key = Key::of(worker, connection, request, &zone.key);
        if key.is_empty() {
            continue;
        }
        if key.len() > REQ_KEY_MAX {
            let message = format!(
                "the value of the \"{}\" key is too long: {}",
                zone.zone.key_text,
                key.len()
            );
            log(
                worker,
                connection,
                request,
                Level::Error,
                format_args!("{message}"),
            );
            continue;
        }
        let now = zone.zone.now_ms();
        match zone
            .zone
            .lookup(&key, zone.rate, used.burst, index == last, now)
        {
            Lookup::Held => held.push(Held { limit: used, key }),
            other => {
                return Lookups {
                    held,
                    ended: Some((other, used)),
                };
            }
        }
    }
    Lookups { held, ended: None }
}

/// Accounts the request in the zones that held it, last first, and returns the longest
/// delay any zone asks for (milliseconds), with that zone's excess and limit; `None` when
/// the request need not wait. `excess` and `chosen` are the last zone's.
fn account_held<'l>(
    zones: &[settings::ReqZoneUse],
    held: &[Held<'l>],
    mut excess: u64,
    mut chosen: Option<&'l ReqLimit>,
) -> Option<(u64, u64, &'l ReqLimit)> {
    let mut max_delay = match chosen {
        Some(used) if excess > used.delay => {
            (excess - used.delay) * 1000 / zones[used.zone].rate.max(1)
        }
        _ => 0,
    };
    for entry in held.iter().rev() {
        let zone = &zones[entry.limit.zone];
        let accounted = zone.zone.account(&entry.key, zone.rate, zone.zone.now_ms());
        if accounted <= entry.limit.delay {
            continue;
        }
        let delay = (accounted - entry.limit.delay) * 1000 / zone.rate.max(1);
        if delay > max_delay {
            max_delay = delay;
            excess = accounted;
            chosen = Some(entry.limit);
        }
    }
    chosen
        .filter(|_| max_delay > 0)
        .map(|chosen| (max_delay, excess, chosen))
}

/// Resolves when the client closes its connection (or it fails); never when it sends more
/// (a request body, a pipelined request), which is left for later.
async fn client_gone(client: &Stream) {
    loop {
        if client.readable().await.is_err() {
            return;
        }
        match client.peek_closed() {
            Ok(true) => return,
            Ok(false) => std::future::pending::<()>().await,
            Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(_) => return,
        }
    }
}

/// A refused request: the zones that held it let go, and the status says how it ends.
fn refuse(
    zones: &[settings::ReqZoneUse],
    held: Vec<Held<'_>>,
    request: &mut Request<'_>,
    limit: &Limit,
) -> Option<u16> {
    for entry in held {
        zones[entry.limit.zone].zone.release(&entry.key);
    }
    if limit.limit_req_dry_run {
        request.modules.get_or_default::<Verdicts>().req = Some(REJECTED_DRY_RUN);
        return None;
    }
    request.modules.get_or_default::<Verdicts>().req = Some(REJECTED);
    Some(limit.limit_req_status)
}

/// Delays are logged one level below refusals (`info` stays `info`).
fn delay_level(level: Level) -> Level {
    match level {
        Level::Error => Level::Warn,
        Level::Warn => Level::Notice,
        _ => Level::Info,
    }
}

fn limit_conn<'a>(
    worker: &'a HttpWorker,
    connection: &ConnectionInfo,
    request: &mut Request<'a>,
    limit: &Limit,
) -> Option<u16> {
    let zones = &worker.conf().limit_zones.conn;
    let mut slots: Vec<ConnSlot> = Vec::with_capacity(limit.limit_conn.len());
    for used in &limit.limit_conn {
        let zone = &zones[used.zone];
        let key = Key::of(worker, connection, request, &zone.key);
        if key.is_empty() {
            continue;
        }
        if key.len() > CONN_KEY_MAX {
            let message = format!(
                "the value of the \"{}\" key is too long: {}",
                zone.zone.key_text,
                key.len()
            );
            log(
                worker,
                connection,
                request,
                Level::Error,
                format_args!("{message}"),
            );
            continue;
        }
        request.modules.get_or_default::<Verdicts>().conn = Some(PASSED);
        match zone.zone.take(&key, used.connections) {
            Take::Taken => slots.push(ConnSlot {
                zone: Arc::clone(&zone.zone),
                key,
            }),
            outcome => {
                let dry = if limit.limit_conn_dry_run {
                    ", dry run"
                } else {
                    ""
                };
                let name = &zone.zone.name;
                let (level, message) = if outcome == Take::Limited {
                    (
                        limit.limit_conn_log_level,
                        format!("limiting connections{dry} by zone \"{name}\""),
                    )
                } else {
                    (
                        Level::Crit,
                        format!("ngx_slab_alloc() failed: no memory in limit_conn_zone \"{name}\""),
                    )
                };
                log(
                    worker,
                    connection,
                    request,
                    level,
                    format_args!("{message}"),
                );
                // The counts taken for earlier limits go back, as nginx's cleanups run.
                drop(slots);
                if limit.limit_conn_dry_run {
                    request.modules.get_or_default::<Verdicts>().conn = Some(REJECTED_DRY_RUN);
                    return None;
                }
                request.modules.get_or_default::<Verdicts>().conn = Some(REJECTED);
                return Some(limit.limit_conn_status);
            }
        }
    }
    request.cleanups.0.extend(
        slots
            .into_iter()
            .map(|slot| Box::new(slot) as Box<dyn std::any::Any>),
    );
    None
}
