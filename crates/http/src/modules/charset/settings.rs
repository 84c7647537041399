//! What the charset directives set: each level's charsets and the `charset_map` tables, the
//! data other modules may read.

use std::sync::Arc;

use crate::kernel::variables::Variable;
use crate::settings;

/// A `charset` or `source_charset` value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CharsetName {
    /// `charset off` (and the default of both).
    Off,
    Named(Arc<str>),
    /// `$name`: the variable's value for each response.
    Variable(Variable),
}

/// `charset_types`: lower-cased MIME types, or `*` for any.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CharsetTypes {
    pub any: bool,
    pub types: Vec<Box<[u8]>>,
}

impl CharsetTypes {
    /// Whether a content type (compared whole and case-insensitively) is listed.
    pub fn contains(&self, content_type: &[u8]) -> bool {
        self.any
            || self
                .types
                .iter()
                .any(|listed| listed.eq_ignore_ascii_case(content_type))
    }
}

settings! {
    /// What the charset module keeps per location.
    pub struct CharsetConf => Charset (env) {
        /// `charset`
        charset: CharsetName = CharsetName::Off,
        /// `source_charset`
        source_charset: CharsetName = CharsetName::Off,
        /// `override_charset`
        override_charset: bool = false,
        /// `charset_types`
        charset_types: Arc<CharsetTypes> = Arc::new(CharsetTypes::default()),
    }
}

/// The `charset_map` tables of the `http` block.
#[derive(Debug, Default)]
pub struct CharsetMaps {
    pub maps: Vec<CharsetMap>,
    /// Every charset the configuration names (maps first, then `charset` and
    /// `source_charset`), in the spelling of its first mention: a name from a variable
    /// that is not here is an unknown charset.
    pub names: Vec<Arc<str>>,
}

impl CharsetMaps {
    /// The table that recodes `from` into `to`, either way round a map.
    pub fn table(&self, from: &str, to: &str) -> Option<Arc<Table>> {
        self.maps.iter().find_map(|map| {
            if same_name(&map.from, from) && same_name(&map.to, to) {
                Some(Arc::clone(&map.forward))
            } else if same_name(&map.from, to) && same_name(&map.to, from) {
                Some(Arc::clone(&map.backward))
            } else {
                None
            }
        })
    }

    /// Whether the configuration names the charset.
    pub fn knows(&self, name: &str) -> bool {
        self.names.iter().any(|known| same_name(known, name))
    }

    /// Adds a name to those known; the first spelling stays.
    pub(crate) fn register(&mut self, name: &str) -> Arc<str> {
        match self.names.iter().find(|known| same_name(known, name)) {
            Some(known) => Arc::clone(known),
            None => {
                let name: Arc<str> = Arc::from(name);
                self.names.push(Arc::clone(&name));
                name
            }
        }
    }

    /// nginx's work once the configuration is read: a charset is known by the spelling
    /// of its first mention, and every location that recodes between two named charsets
    /// needs a map between them.
    pub(crate) fn resolve_location(
        &mut self,
        settings: &mut Charset,
    ) -> Result<(), conf::ConfError> {
        for name in [&mut settings.charset, &mut settings.source_charset] {
            if let CharsetName::Named(text) = name {
                *text = self.register(text);
            }
        }
        let (CharsetName::Named(to), CharsetName::Named(from)) =
            (&settings.charset, &settings.source_charset)
        else {
            return Ok(());
        };
        if same_name(to, from) || self.table(from, to).is_some() {
            return Ok(());
        }
        Err(conf::ConfError::new(
            conf::ConfErrorKind::Message(format!(
                "no \"charset_map\" between the charsets \"{from}\" and \"{to}\""
            )),
            None,
        ))
    }
}

/// Charset names compare case-insensitively.
pub fn same_name(a: &str, b: &str) -> bool {
    a.eq_ignore_ascii_case(b)
}

/// One direction of a `charset_map`.
#[derive(Debug)]
pub enum Table {
    /// One byte to one byte; bytes without a mapping become `?` above 0x7f.
    Byte(Box<[u8; 256]>),
    /// A one-byte charset to UTF-8: each byte's length and its up to three bytes.
    ToUtf8(Box<[[u8; 4]; 256]>),
    /// UTF-8 to a one-byte charset: code points below 0x10000 by their high byte; 0 means
    /// no mapping.
    FromUtf8(Vec<Option<Box<[u8; 256]>>>),
}

/// One `charset_map FROM TO { ... }`, both ways.
#[derive(Debug)]
pub struct CharsetMap {
    pub from: Box<str>,
    pub to: Box<str>,
    pub forward: Arc<Table>,
    pub backward: Arc<Table>,
}
