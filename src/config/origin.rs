//! `Origin`: where a configuration value came from, named in every message about it. Apart from
//! the parser and the errors so that both can use it without depending on each other.

use std::fmt;

/// Where a value came from; shown in messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Origin {
    Pyproject,
    /// A PEP 517 config setting, as the user spelled its name.
    Setting(String),
    /// An environment variable.
    Env(String),
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Pyproject => write!(f, "pyproject.toml"),
            Origin::Setting(name) => write!(f, "config setting `-C {name}`"),
            Origin::Env(var) => write!(f, "environment variable `{var}`"),
        }
    }
}

/// A value together with where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Sourced<T> {
    pub(crate) value: T,
    pub(crate) origin: Origin,
}
