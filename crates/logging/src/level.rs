//! Error-log severity levels, as nginx names and orders them.

use std::fmt;

/// A severity level. Lower is more severe: `Emerg` < `Alert` < ... < `Debug`, so a sink at
/// level `L` writes every message whose level is `<= L`, as nginx does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// Portico cannot start or go on.
    Emerg,
    /// Our bug or a broken system.
    Alert,
    Crit,
    /// A request failed because of the upstream or the system.
    Error,
    Warn,
    Notice,
    /// Client misbehaviour: bad requests, early closes, timeouts.
    Info,
    Debug,
}

impl Level {
    pub const ALL: [Level; 8] = [
        Level::Emerg,
        Level::Alert,
        Level::Crit,
        Level::Error,
        Level::Warn,
        Level::Notice,
        Level::Info,
        Level::Debug,
    ];

    /// The level named as in the `error_log` directive.
    pub fn parse(name: &str) -> Option<Level> {
        Level::ALL.into_iter().find(|level| level.as_str() == name)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Level::Emerg => "emerg",
            Level::Alert => "alert",
            Level::Crit => "crit",
            Level::Error => "error",
            Level::Warn => "warn",
            Level::Notice => "notice",
            Level::Info => "info",
            Level::Debug => "debug",
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_order_from_most_severe() {
        assert!(Level::Emerg < Level::Alert);
        assert!(Level::Info < Level::Debug);
        assert!(Level::Error <= Level::Error);
    }

    #[test]
    fn names_round_trip() {
        for level in Level::ALL {
            assert_eq!(Level::parse(level.as_str()), Some(level));
        }
        assert_eq!(Level::parse("warning"), None);
        assert_eq!(Level::parse("ERROR"), None);
    }
}
