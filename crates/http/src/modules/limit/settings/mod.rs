//! What the limit_req and limit_conn directives set: the zones the `http` block declares,
//! and each level's limits.

pub mod zone;

use std::sync::Arc;

use conf::Span;
use logging::Level;

use crate::kernel::variables::HttpTemplate;
use crate::modules::limit::settings::zone::{ConnZone, ReqZone};
use crate::settings;

/// A `limit_req_zone` of this configuration: the shared zone and what this
/// configuration says of it (the key is compiled against its own variables, and the rate
/// may change with a reload, as nginx keeps both per configuration).
#[derive(Debug)]
pub struct ReqZoneUse {
    pub zone: Arc<ReqZone>,
    pub key: HttpTemplate,
    /// Thousandths of a request per second.
    pub rate: u64,
    pub span: Span,
}

/// A `limit_conn_zone` of this configuration.
#[derive(Debug)]
pub struct ConnZoneUse {
    pub zone: Arc<ConnZone>,
    pub key: HttpTemplate,
    pub span: Span,
}

/// The zones the `http` block declares, in order; limits refer to them by index.
#[derive(Debug, Default)]
pub struct LimitZones {
    pub req: Vec<ReqZoneUse>,
    pub conn: Vec<ConnZoneUse>,
}

/// One `limit_req` line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReqLimit {
    pub zone_name: String,
    /// The zone's index in [`LimitZones::req`], set once the `http` block is read.
    pub zone: usize,
    /// Thousandths of a request.
    pub burst: u64,
    /// Excess (thousandths) served without delay: `u64::MAX / 1000` for `nodelay`.
    pub delay: u64,
    pub span: Span,
}

/// One `limit_conn` line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnLimit {
    pub zone_name: String,
    /// The zone's index in [`LimitZones::conn`], set once the `http` block is read.
    pub zone: usize,
    pub connections: u32,
    pub span: Span,
}

settings! {
    /// A level with any `limit_req` (or `limit_conn`) uses only its own lines; a level with
    /// none inherits the enclosing level's list, as in nginx.
    pub struct LimitConf => Limit (env) {
        /// `limit_req`, in order.
        limit_req: Vec<ReqLimit> = Vec::new(),
        /// `limit_req_log_level`; delays are logged one level lower.
        limit_req_log_level: Level = Level::Error,
        /// `limit_req_status`
        limit_req_status: u16 = 503,
        /// `limit_req_dry_run`
        limit_req_dry_run: bool = false,
        /// `limit_conn`, in order.
        limit_conn: Vec<ConnLimit> = Vec::new(),
        /// `limit_conn_log_level`
        limit_conn_log_level: Level = Level::Error,
        /// `limit_conn_status`
        limit_conn_status: u16 = 503,
        /// `limit_conn_dry_run`
        limit_conn_dry_run: bool = false,
    }
}
