//! Walking the `http` block: directive dispatch, blocks, merge, and the final lookups.

use std::collections::HashMap;
use std::sync::Arc;

use conf::{ConfError, ConfErrorKind, Context, Directive, Span};

use crate::assembly::modules;
use crate::kernel::conf::context::{LoadContext, LoadEnv};
use crate::kernel::conf::location::{Location, LocationId, LocationKind, LocationTree};
use crate::kernel::conf::scope::{Content, LocationScope, MainScope, ServerScope};
use crate::kernel::conf::server_names::{ServerName, ServerNames};
use crate::kernel::conf::{
    AddressConf, BlockKind, HttpConf, MergeEnv, NamedCaptures, Server, ServerId, Setter, SocketConf,
};
use crate::kernel::core::limit_except::Methods;
use crate::kernel::core::settings::MimeTypes;
use crate::kernel::core::types::TypesWarning;
use crate::kernel::core::{AliasPart, DocumentRoot};
use crate::kernel::variables::VariableRegistry;
use crate::modules::log::AccessLogTarget;
use crate::modules::proxy::gateway::Protocol;
use crate::modules::rewrite::{If, Op};
use shared::listen::{self, ListenSpec};
use shared::regex::Regex;

/// A location as read, before merging.
struct PendingLocation {
    kind: LocationKind,
    name: String,
    scope: LocationScope,
    children: Vec<PendingLocation>,
    /// The settings of each `if` block, by the block index its `If` op names.
    ifs: Vec<LocationScope>,
    limit_except: Option<(Methods, LocationScope)>,
}

/// A server as read, before merging.
struct PendingServer {
    server: ServerScope,
    location: LocationScope,
    locations: Vec<PendingLocation>,
    span: Span,
}

/// Loads the `http { ... }` block.
pub fn load_http(block: &[Directive], env: LoadEnv<'_>) -> Result<HttpConf, ConfError> {
    modules::register_variables();
    let merge_env = MergeEnv {
        prefix: env.prefix.to_owned(),
        main_error_log: env.main_error_log,
    };
    let mut context = LoadContext {
        prefix: env.prefix,
        upstreams: Default::default(),
        variables: VariableRegistry::default(),
        log_files: env.log_files,
        log_formats: HashMap::new(),
        hostname: env.hostname,
        warnings: Vec::new(),
        thread_pools_used: Vec::new(),
        access_log_slots: 0,
        outer_directives: env.outer_directives,
        tables: modules::TABLES,
    };
    let mut main = MainScope::default();
    let mut http_server = ServerScope::default();
    let mut http_location = LocationScope::default();
    let mut servers = Vec::new();
    for directive in block {
        let spec = context.check_directive(directive, Context::Http)?;
        match &spec.set {
            Setter::Main(set) => set(&mut main, directive, &mut context)?,
            Setter::Server(set) => set(&mut http_server, directive, &mut context)?,
            Setter::Location(set) => set(&mut http_location, directive, &mut context)?,
            Setter::Gateway(protocol, set) => {
                http_location.as_gateway(*protocol, |scope| set(scope, directive, &mut context))?
            }
            Setter::Block(BlockKind::Server) => servers.push(read_server(directive, &mut context)?),
            Setter::Block(BlockKind::Types) => {
                set_types(&mut http_location, directive, &mut context)?
            }
            Setter::Block(BlockKind::Upstream) => {
                crate::modules::upstream::directives::read_upstream(directive, &mut context)?
            }
            Setter::Upstream(_)
            | Setter::Block(BlockKind::Location | BlockKind::If | BlockKind::LimitExcept) => {
                return Err(ConfError::at(
                    ConfErrorKind::NotAllowedHere {
                        name: directive.name.clone(),
                    },
                    &directive.span,
                ));
            }
        }
    }
    if http_location.access_log.access_log.is_none() {
        let target = default_access_log(&mut context)?;
        http_location.access_log.access_log = Some(vec![target]);
    }
    build(
        main,
        http_server,
        http_location,
        servers,
        context,
        &merge_env,
    )
}

fn default_access_log(context: &mut LoadContext<'_>) -> Result<AccessLogTarget, ConfError> {
    let format = context
        .log_format("combined")
        .ok_or_else(|| ConfError::message("no combined format", &Span::CommandLine))?;
    let file = context.open_log("logs/access.log", &Span::CommandLine)?;
    Ok(AccessLogTarget {
        path: crate::modules::log::LogPath::File(file),
        format,
        buffering: None,
        condition: None,
    })
}

fn set_types(
    scope: &mut LocationScope,
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    let mut warnings: Vec<TypesWarning> = Vec::new();
    let block = directive.block.as_deref().unwrap_or_default();
    let types = MimeTypes::from_block(block, &mut warnings)?;
    for warning in warnings {
        context.warn(warning.message, &warning.span);
    }
    // Several `types` blocks at one level add up, as in nginx.
    let merged = match scope.core.types.take() {
        Some(existing) => {
            let mut existing = Arc::unwrap_or_clone(existing);
            for redefined in existing.extend(types) {
                let [extension, mime, previous] = [
                    &redefined.extension[..],
                    &redefined.mime[..],
                    &redefined.previous[..],
                ]
                .map(String::from_utf8_lossy);
                context.warn(
                    format!(
                        "duplicate extension \"{extension}\", content type: \"{mime}\", \
                         previous content type: \"{previous}\""
                    ),
                    &directive.span,
                );
            }
            existing
        }
        None => types,
    };
    scope.core.types = Some(Arc::new(merged));
    Ok(())
}

fn read_server(
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<PendingServer, ConfError> {
    let mut server = ServerScope {
        span: Some(directive.span.clone()),
        ..ServerScope::default()
    };
    let mut location = LocationScope::default();
    let mut locations = Vec::new();
    for inner in directive.block.as_deref().unwrap_or_default() {
        let spec = context.check_directive(inner, Context::Server)?;
        match &spec.set {
            Setter::Main(_) => {
                return Err(ConfError::at(
                    ConfErrorKind::NotAllowedHere {
                        name: inner.name.clone(),
                    },
                    &inner.span,
                ));
            }
            Setter::Server(set) => set(&mut server, inner, context)?,
            Setter::Location(set) => set(&mut location, inner, context)?,
            Setter::Gateway(protocol, set) => {
                location.as_gateway(*protocol, |scope| set(scope, inner, context))?
            }
            Setter::Block(BlockKind::Types) => set_types(&mut location, inner, context)?,
            Setter::Block(BlockKind::Location) => {
                let pending = read_location(inner, None, context)?;
                check_duplicate(&locations, &pending, inner)?;
                locations.push(pending);
            }
            Setter::Block(BlockKind::If) => read_if(inner, &mut location, None, context)?,
            Setter::Upstream(_)
            | Setter::Block(BlockKind::Server | BlockKind::LimitExcept | BlockKind::Upstream) => {
                return Err(ConfError::at(
                    ConfErrorKind::NotAllowedHere {
                        name: inner.name.clone(),
                    },
                    &inner.span,
                ));
            }
        }
    }
    Ok(PendingServer {
        server,
        location,
        locations,
        span: directive.span.clone(),
    })
}

fn check_duplicate(
    siblings: &[PendingLocation],
    new: &PendingLocation,
    directive: &Directive,
) -> Result<(), ConfError> {
    let same = siblings
        .iter()
        .any(|existing| match (&existing.kind, &new.kind) {
            (LocationKind::Exact(a), LocationKind::Exact(b)) => a == b,
            (LocationKind::Prefix { path: a, .. }, LocationKind::Prefix { path: b, .. }) => a == b,
            (LocationKind::Named(a), LocationKind::Named(b)) => a == b,
            _ => false,
        });
    if same {
        let path = directive
            .args
            .last()
            .map_or("", |argument| argument.as_str());
        return Err(ConfError::message(
            format!("duplicate location \"{path}\""),
            &directive.span,
        ));
    }
    Ok(())
}

/// Parses `location [= | ^~ | ~ | ~*] URI { ... }` or `location @name { ... }`.
fn location_kind(
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(LocationKind, String), ConfError> {
    let span = &directive.span;
    let (modifier, uri) = match directive.args.len() {
        1 => {
            let text = directive.arg(0);
            if let Some(rest) = text.strip_prefix('=') {
                ("=", rest)
            } else if let Some(rest) = text.strip_prefix("^~") {
                ("^~", rest)
            } else if let Some(rest) = text.strip_prefix("~*") {
                ("~*", rest)
            } else if let Some(rest) = text.strip_prefix('~') {
                ("~", rest)
            } else {
                ("", text)
            }
        }
        2 => (directive.arg(0), directive.arg(1)),
        _ => {
            return Err(ConfError::at(
                ConfErrorKind::InvalidArgumentCount {
                    name: directive.name.clone(),
                },
                span,
            ));
        }
    };
    let name = if modifier.is_empty() {
        uri.to_owned()
    } else {
        format!("{modifier} {uri}")
    };
    let kind = match modifier {
        "=" => LocationKind::Exact(uri.as_bytes().into()),
        "^~" => LocationKind::Prefix {
            path: uri.as_bytes().into(),
            noregex: true,
        },
        "~" | "~*" => {
            let regex = Regex::compile(uri, modifier == "~*")
                .map_err(|error| ConfError::message(error.0, span))?;
            LocationKind::Regex(NamedCaptures::new(regex, |name| {
                context.variables.define(name)
            }))
        }
        "" if uri.starts_with('@') => LocationKind::Named(uri.into()),
        "" => LocationKind::Prefix {
            path: uri.as_bytes().into(),
            noregex: false,
        },
        _ => {
            return Err(ConfError::message(
                format!("invalid location modifier \"{modifier}\""),
                span,
            ));
        }
    };
    Ok((kind, name))
}

fn read_location(
    directive: &Directive,
    parent: Option<&PendingLocation>,
    context: &mut LoadContext<'_>,
) -> Result<PendingLocation, ConfError> {
    let (kind, name) = location_kind(directive, context)?;
    if let Some(parent) = parent {
        check_nesting(parent, &kind, &name, &directive.span)?;
    }
    let mut pending = PendingLocation {
        kind,
        name,
        scope: LocationScope::default(),
        children: Vec::new(),
        ifs: Vec::new(),
        limit_except: None,
    };
    for inner in directive.block.as_deref().unwrap_or_default() {
        let spec = context.check_directive(inner, Context::Location)?;
        if inner.name == "alias" && matches!(pending.kind, LocationKind::Named(_)) {
            return Err(ConfError::message(
                "the \"alias\" directive cannot be used inside the named location",
                &inner.span,
            ));
        }
        match &spec.set {
            Setter::Location(set) => set(&mut pending.scope, inner, context)?,
            Setter::Gateway(protocol, set) => pending
                .scope
                .as_gateway(*protocol, |scope| set(scope, inner, context))?,
            Setter::Block(BlockKind::Types) => set_types(&mut pending.scope, inner, context)?,
            Setter::Block(BlockKind::Location) => {
                let child = read_location(inner, Some(&pending), context)?;
                check_duplicate(&pending.children, &child, inner)?;
                pending.children.push(child);
            }
            Setter::Block(BlockKind::If) => {
                read_if(inner, &mut pending.scope, Some(&mut pending.ifs), context)?
            }
            Setter::Block(BlockKind::LimitExcept) => {
                if pending.limit_except.is_some() {
                    return Err(context.duplicate(inner));
                }
                pending.limit_except = Some(read_limit_except(inner, context)?);
            }
            Setter::Main(_)
            | Setter::Server(_)
            | Setter::Upstream(_)
            | Setter::Block(BlockKind::Server | BlockKind::Upstream) => {
                return Err(ConfError::at(
                    ConfErrorKind::NotAllowedHere {
                        name: inner.name.clone(),
                    },
                    &inner.span,
                ));
            }
        }
    }
    if let Some(DocumentRoot::Alias(_, part)) = &mut pending.scope.core.document_root {
        *part = match &pending.kind {
            LocationKind::Regex(_) => AliasPart::Whole,
            LocationKind::Exact(path) | LocationKind::Prefix { path, .. } => {
                AliasPart::Prefix(path.len())
            }
            _ => AliasPart::Prefix(0),
        };
    }
    Ok(pending)
}

/// `if (...) { ... }`: the condition and the block's script ops go inline into the level's
/// script; the block's other settings, for an `if` in a location, into `blocks`.
fn read_if(
    directive: &Directive,
    level: &mut LocationScope,
    blocks: Option<&mut Vec<LocationScope>>,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    let condition =
        crate::modules::rewrite::condition::parse(&directive.args, context, &directive.span)?;
    let at = level.script.ops.len();
    level.script.ops.push(Op::If(Box::new(If {
        condition,
        block: blocks.as_ref().map(|blocks| blocks.len() as u32),
        end: 0,
    })));
    let inner_context = if blocks.is_some() {
        Context::LocationIf
    } else {
        Context::ServerIf
    };
    let mut block = LocationScope::default();
    read_block_settings(directive, inner_context, &mut block, context)?;
    level.script.ops.append(&mut block.script.ops);
    let end = level.script.ops.len() as u32;
    if let Some(Op::If(op)) = level.script.ops.get_mut(at) {
        op.end = end;
    }
    if let Some(blocks) = blocks {
        blocks.push(block);
    }
    Ok(())
}

/// `limit_except METHOD ... { ... }`.
fn read_limit_except(
    directive: &Directive,
    context: &mut LoadContext<'_>,
) -> Result<(Methods, LocationScope), ConfError> {
    let methods =
        Methods::parse(directive.args.iter().map(|arg| arg.as_str())).map_err(|name| {
            ConfError::message(format!("invalid method \"{name}\""), &directive.span)
        })?;
    let mut block = LocationScope::default();
    read_block_settings(directive, Context::LimitExcept, &mut block, context)?;
    Ok((methods, block))
}

/// The directives of an `if` or `limit_except` block: per-location settings only.
fn read_block_settings(
    directive: &Directive,
    inner_context: Context,
    block: &mut LocationScope,
    context: &mut LoadContext<'_>,
) -> Result<(), ConfError> {
    for inner in directive.block.as_deref().unwrap_or_default() {
        let spec = context.check_directive(inner, inner_context)?;
        match &spec.set {
            Setter::Location(set) => set(block, inner, context)?,
            Setter::Gateway(protocol, set) => {
                block.as_gateway(*protocol, |scope| set(scope, inner, context))?
            }
            _ => {
                return Err(ConfError::at(
                    ConfErrorKind::NotAllowedHere {
                        name: inner.name.clone(),
                    },
                    &inner.span,
                ));
            }
        }
    }
    Ok(())
}

/// nginx's rules for nested locations.
fn check_nesting(
    parent: &PendingLocation,
    kind: &LocationKind,
    name: &str,
    span: &Span,
) -> Result<(), ConfError> {
    let message = match (&parent.kind, kind) {
        (_, LocationKind::Named(_)) => Some(format!(
            "named location \"{name}\" can be on the server level only"
        )),
        (LocationKind::Exact(_), _) => Some(format!(
            "location \"{name}\" cannot be inside the exact location \"{}\"",
            parent.name
        )),
        (LocationKind::Named(_), _) => Some(format!(
            "location \"{name}\" cannot be inside the named location \"{}\"",
            parent.name
        )),
        (
            LocationKind::Prefix { path: outer, .. },
            LocationKind::Prefix { path: inner, .. } | LocationKind::Exact(inner),
        ) if !inner.starts_with(outer) => {
            let inner_text = String::from_utf8_lossy(inner);
            Some(format!(
                "location \"{inner_text}\" is outside location \"{}\"",
                String::from_utf8_lossy(outer)
            ))
        }
        _ => None,
    };
    match message {
        Some(message) => Err(ConfError::message(message, span)),
        None => Ok(()),
    }
}

/// Merges every level, resolves defaults and builds the lookups.
fn build(
    mut main: MainScope,
    http_server: ServerScope,
    http_location: LocationScope,
    pending_servers: Vec<PendingServer>,
    mut context: LoadContext<'_>,
    env: &MergeEnv,
) -> Result<HttpConf, ConfError> {
    let mut builder = Builder {
        locations: Vec::new(),
        env,
    };
    let mut servers = Vec::new();
    let mut listens: Vec<(ListenSpec, ServerId)> = Vec::new();
    let mut server_regexes = Vec::new();
    let mut server_names: Vec<(ServerId, Vec<(ServerName, String)>)> = Vec::new();
    let mut tls_build = crate::kernel::ssl::TlsBuild::default();
    let mut ssl_listens = Vec::new();
    for (index, pending) in pending_servers.into_iter().enumerate() {
        let id = ServerId(index as u32);
        let mut server_scope = pending.server;
        server_scope.core.merge_from(&http_server.core);
        server_scope.ssl.merge_from(&http_server.ssl);
        server_scope.v2.merge_from(&http_server.v2);
        server_scope.v3.merge_from(&http_server.v3);
        let mut location_scope = pending.location;
        location_scope.merge_from(&http_location);
        let server_location = builder.add(id, LocationKind::Server, String::new(), &location_scope);
        let locations = builder.tree(id, &location_scope, pending.locations);
        let named_locations = builder.named(&locations.1);
        let name = server_scope
            .names
            .first()
            .map(|(_, text)| text.as_bytes().into())
            .unwrap_or_default();
        let mut specs = if server_scope.listens.is_empty() {
            vec![listen::default_listen(&pending.span)]
        } else {
            std::mem::take(&mut server_scope.listens)
        };
        let ssl = server_scope.ssl.resolve(env);
        if let Some(span) = &ssl.enable {
            crate::kernel::ssl::enable_on_listens(&ssl, span, &mut specs)?;
        }
        // nginx names the `server` block, not the `listen`, when its certificate is missing.
        let ssl_listen = specs
            .iter()
            .any(|spec| spec.ssl || spec.quic)
            .then(|| pending.span.clone());
        let v2 = server_scope.v2.resolve(env);
        let alpn_h2 = v2.enable || specs.iter().any(|spec| spec.http2);
        let (tls, variable_certificates) = crate::kernel::ssl::server_tls(
            &ssl,
            alpn_h2,
            &mut tls_build,
            &env.prefix,
            &mut context.variables,
        )?;
        ssl_listens.push(ssl_listen);
        listens.extend(specs.into_iter().map(|spec| (spec, id)));
        let mut names = std::mem::take(&mut server_scope.names);
        if !server_scope.has_server_name {
            names.push((ServerName::Exact(Box::from(&b""[..])), String::new()));
        }
        let every_name = names.iter().map(|(name, _)| name.clone()).collect();
        server_names.push((id, names));
        servers.push(Server {
            id,
            name,
            names: every_name,
            core: server_scope.core.resolve(env),
            ssl,
            v2,
            v3: server_scope.v3.resolve(env),
            tls,
            variable_certificates,
            location: server_location,
            locations: locations.0,
            named_locations,
            allow_connect: false,
        });
    }
    let sockets = group_sockets(
        listens,
        &mut server_names,
        &mut server_regexes,
        &mut context,
    )?;
    crate::kernel::ssl::check_defaults(&servers, &sockets, &ssl_listens)?;
    context.variables.check_defined()?;
    crate::modules::proxy::pass::check_uri_parts(&builder.locations)?;
    crate::modules::proxy::ssl::finish(&mut builder.locations, &env.prefix)?;
    let http_proxy = http_location.proxy.resolve(env);
    let http_resolver = http_proxy
        .resolver
        .clone()
        .map(|resolver| (resolver, http_proxy.resolver_timeout));
    let upstreams = std::mem::take(&mut context.upstreams).finish(http_resolver)?;
    crate::modules::observe::zones::mark_location_zones(&servers, &builder.locations);
    for location in &builder.locations {
        if location.settings.content == Content::Gateway(Protocol::Tunnel) {
            servers[location.server.0 as usize].allow_connect = true;
        }
    }
    for location in &mut builder.locations {
        main.charset
            .resolve_location(&mut location.settings.charset)?;
        let protocol = location.settings.proxy.protocol;
        crate::modules::proxy::cache::resolve_zone(
            &mut location.settings.proxy_cache,
            &main.cache_paths,
            protocol,
        )?;
        crate::modules::limit::resolve_zones(&mut location.settings.limit, &main.limit)?;
    }
    // Zones named only where no server inherits them fail too, as in nginx.
    crate::modules::limit::resolve_zones(&mut http_location.limit.resolve(env), &main.limit)?;
    context.warnings.append(&mut tls_build.warnings);
    let mut main_core = main.core;
    main_core.merge_from(&Default::default());
    let mut main_v2 = main.v2;
    main_v2.merge_from(&Default::default());
    Ok(HttpConf {
        main: main_core.resolve(env),
        v2: main_v2.resolve(env),
        charset_maps: main.charset,
        servers,
        locations: builder.locations,
        sockets,
        server_regexes,
        named_len: context.variables.named_len(),
        named_variables: context.variables.named_variables(),
        uses_realpath_root: context.variables.uses_realpath_root,
        maps: main.map.variables,
        access_log_buffers: context.access_log_slots,
        warnings: context.warnings,
        upstreams,
        thread_pools_used: context.thread_pools_used,
        cache_paths: main.cache_paths,
        limit_zones: main.limit,
        staplings: tls_build.staplings,
    })
}

struct Builder<'e> {
    locations: Vec<Location>,
    env: &'e MergeEnv,
}

impl Builder<'_> {
    fn add(
        &mut self,
        server: ServerId,
        kind: LocationKind,
        name: String,
        scope: &LocationScope,
    ) -> LocationId {
        let id = LocationId(self.locations.len() as u32);
        self.locations.push(Location {
            id,
            server,
            kind,
            name,
            settings: scope.resolve(self.env),
            children: LocationTree::default(),
            if_blocks: Vec::new(),
            own_content: false,
            limit_except: None,
        });
        id
    }

    /// Adds the `if` and `limit_except` blocks of the location `owner`, whose merged scope
    /// is `scope`: each block inherits the location's settings.
    fn add_blocks(
        &mut self,
        owner: LocationId,
        scope: &LocationScope,
        ifs: Vec<LocationScope>,
        limit_except: Option<(Methods, LocationScope)>,
    ) {
        let (server, name, prefix, regex) = {
            let location = &self.locations[owner.0 as usize];
            (
                location.server,
                location.name.clone(),
                Box::<[u8]>::from(location.prefix()),
                location.is_regex(),
            )
        };
        let parent = scope.inheritable();
        let add = |builder: &mut Self, mut block: LocationScope| {
            let own_content = block.content.is_some();
            block.merge_from(&parent);
            let kind = LocationKind::Block {
                prefix: prefix.clone(),
                regex,
            };
            let id = builder.add(server, kind, name.clone(), &block);
            builder.locations[id.0 as usize].own_content = own_content;
            id
        };
        let if_blocks = ifs.into_iter().map(|block| add(self, block)).collect();
        let limit_except = limit_except.map(|(methods, block)| (methods, add(self, block)));
        let location = &mut self.locations[owner.0 as usize];
        location.if_blocks = if_blocks;
        location.limit_except = limit_except;
    }

    /// Merges and adds `pending` under a level whose scope is `parent`; returns the tree
    /// and the named locations found at this level.
    fn tree(
        &mut self,
        server: ServerId,
        parent: &LocationScope,
        pending: Vec<PendingLocation>,
    ) -> (LocationTree, Vec<LocationId>) {
        let mut tree = LocationTree::default();
        let mut named = Vec::new();
        // A location's content handler (and `proxy_pass`, which sets it) is its own:
        // nested locations do not inherit it.
        let mut inherited = parent.inheritable();
        inherited.content = None;
        inherited.proxy.pass = None;
        for mut location in pending {
            location.scope.merge_from(&inherited);
            let children = std::mem::take(&mut location.children);
            let static_key = match &location.kind {
                LocationKind::Exact(path) => Some((path.clone(), true)),
                LocationKind::Prefix { path, .. } => Some((path.clone(), false)),
                _ => None,
            };
            let is_regex = matches!(location.kind, LocationKind::Regex(_));
            let is_named = matches!(location.kind, LocationKind::Named(_));
            let id = self.add(server, location.kind, location.name, &location.scope);
            let ifs = std::mem::take(&mut location.ifs);
            self.add_blocks(id, &location.scope, ifs, location.limit_except.take());
            let (child_tree, _) = self.tree(server, &location.scope, children);
            self.locations[id.0 as usize].children = child_tree;
            match static_key {
                Some((path, true)) => tree.add_exact(path, id),
                Some((path, false)) => tree.add_prefix(path, id),
                None if is_regex => tree.add_regex(id),
                None if is_named => named.push(id),
                None => {}
            }
        }
        (tree, named)
    }

    fn named(&self, ids: &[LocationId]) -> Vec<(Box<str>, LocationId)> {
        ids.iter()
            .filter_map(|id| match &self.locations[id.0 as usize].kind {
                LocationKind::Named(name) => Some((name.clone(), *id)),
                _ => None,
            })
            .collect()
    }
}

/// Groups every server's `listen` into sockets, as nginx does: one socket per address and
/// port, except that specific addresses on a port that also has a wildcard listen are
/// served through the wildcard socket (unless they say `bind` or set socket options).
fn group_sockets(
    listens: Vec<(ListenSpec, ServerId)>,
    server_names: &mut [(ServerId, Vec<(ServerName, String)>)],
    server_regexes: &mut Vec<NamedCaptures>,
    context: &mut LoadContext<'_>,
) -> Result<Vec<SocketConf>, ConfError> {
    let mut addresses: Vec<(runtime::ListenAddress, Vec<(ListenSpec, ServerId)>)> = Vec::new();
    for (spec, server) in listens {
        // A `quic` listen is a UDP socket beside the TCP one of the same port.
        match addresses.iter_mut().find(|(address, group)| {
            *address == spec.address
                && group
                    .first()
                    .is_some_and(|(first, _)| first.quic == spec.quic)
        }) {
            Some((_, group)) => {
                if group
                    .iter()
                    .any(|(existing, id)| *id == server && existing.address == spec.address)
                {
                    return Err(ConfError::message(
                        format!("a duplicate listen {}", spec.address),
                        &spec.span,
                    ));
                }
                if spec.has_socket_options
                    && group
                        .iter()
                        .any(|(existing, _)| existing.has_socket_options)
                {
                    return Err(ConfError::message(
                        format!("duplicate listen options for {}", spec.address),
                        &spec.span,
                    ));
                }
                if spec.default_server && group.iter().any(|(existing, _)| existing.default_server)
                {
                    return Err(ConfError::message(
                        format!("a duplicate default server for {}", spec.address),
                        &spec.span,
                    ));
                }
                group.push((spec, server));
            }
            None => addresses.push((spec.address.clone(), vec![(spec, server)])),
        }
    }
    let mut names_by_server: HashMap<ServerId, Vec<(ServerName, String)>> = HashMap::new();
    for (id, names) in server_names.iter_mut() {
        names_by_server.insert(*id, std::mem::take(names));
    }
    let mut sockets: Vec<SocketConf> = Vec::new();
    let mut pending_specific = Vec::new();
    for (address, group) in addresses {
        let address_conf =
            address_conf(&address, &group, &names_by_server, server_regexes, context);
        let options = group
            .iter()
            .find(|(spec, _)| spec.has_socket_options)
            .map(|(spec, _)| spec.options.clone());
        let binds = group.iter().any(|(spec, _)| spec.bind);
        let quic = group.iter().any(|(spec, _)| spec.quic);
        let mut options = options;
        if quic {
            options.get_or_insert_with(Default::default).datagram = true;
        }
        let is_wildcard =
            matches!(&address, runtime::ListenAddress::Inet(inet) if inet.ip().is_unspecified());
        if !is_wildcard && !binds && matches!(address, runtime::ListenAddress::Inet(_)) {
            pending_specific.push((address, options.unwrap_or_default(), address_conf));
            continue;
        }
        sockets.push(SocketConf {
            address,
            options: options.unwrap_or_default(),
            addresses: vec![address_conf],
        });
    }
    for (address, options, mut address_conf) in pending_specific {
        let runtime::ListenAddress::Inet(inet) = &address else {
            continue;
        };
        let wildcard = sockets.iter_mut().find(|socket| match &socket.address {
            runtime::ListenAddress::Inet(other) => {
                other.ip().is_unspecified()
                    && other.port() == inet.port()
                    && other.is_ipv4() == inet.is_ipv4()
                    && socket.options.datagram == options.datagram
            }
            runtime::ListenAddress::Unix(_) => false,
        });
        match wildcard {
            Some(socket) => {
                address_conf.ip = Some(inet.ip());
                socket
                    .addresses
                    .insert(socket.addresses.len() - 1, address_conf);
            }
            None => sockets.push(SocketConf {
                address,
                options,
                addresses: vec![address_conf],
            }),
        }
    }
    Ok(sockets)
}

/// The default server and the names of the servers on one address.
fn address_conf(
    address: &runtime::ListenAddress,
    group: &[(ListenSpec, ServerId)],
    names_by_server: &HashMap<ServerId, Vec<(ServerName, String)>>,
    regexes: &mut Vec<NamedCaptures>,
    context: &mut LoadContext<'_>,
) -> AddressConf {
    let default_server = group
        .iter()
        .find(|(spec, _)| spec.default_server)
        .or_else(|| group.first())
        .map(|(_, server)| *server)
        .unwrap_or(ServerId(0));
    let mut names = ServerNames::default();
    let mut seen = Vec::new();
    for (_, server) in group {
        if seen.contains(server) {
            continue;
        }
        seen.push(*server);
        for (name, text) in names_by_server
            .get(server)
            .map(Vec::as_slice)
            .unwrap_or_default()
        {
            let regex_index = regexes.len();
            if let ServerName::Regex(named) = name {
                regexes.push(named.clone());
            }
            if names.add(name, *server, regex_index).is_err() {
                context.warnings.push(ConfError::new(
                    ConfErrorKind::Message(format!(
                        "conflicting server name \"{text}\" on {address}, ignored"
                    )),
                    None,
                ));
            }
        }
    }
    AddressConf {
        ip: None,
        default_server,
        ssl: group.iter().any(|(spec, _)| spec.ssl),
        proxy_protocol: group.iter().any(|(spec, _)| spec.proxy_protocol),
        http2: group.iter().any(|(spec, _)| spec.http2),
        quic: group.iter().any(|(spec, _)| spec.quic),
        names,
    }
}
