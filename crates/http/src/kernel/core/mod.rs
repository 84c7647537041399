//! The core HTTP module: listening, virtual servers, locations, client limits and timeouts,
//! keep-alive, types, and the request-body settings (nginx's ngx_http_core_module).

pub mod directives;
pub mod error_page;
pub mod limit_except;
pub mod settings;
pub mod types;

pub use settings::{
    AliasPart, BodyInFileOnly, CoreLocation, CoreLocationConf, CoreMain, CoreMainConf, CoreServer,
    CoreServerConf, DocumentRoot, IfModifiedSince, KeepaliveDisable, KeepaliveTimeout,
    LingeringClose, ServerTokens, SizeValue, TempPath,
};
