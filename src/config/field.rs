//! Reading one value: `Field` (a value with its dotted key and origin, and the checks every
//! message is made from), `Source` (where the fields of one table come from) and the readers a
//! key declaration names (`optional`, `or`, `sourced`, ...), which say what an absent key means.

use super::choices::{Bindings, Choice};
use super::error::ConfigError;
use super::origin::{Origin, Sourced};

/// One value being read: its dotted key, the value, and where it came from.
pub(super) struct Field {
    pub(crate) key: String,
    pub(crate) value: toml::Value,
    pub(crate) origin: Origin,
}

impl Field {
    pub(crate) fn wrong_type(&self, expected: &str) -> ConfigError {
        ConfigError::WrongType {
            key: self.key.clone(),
            origin: self.origin.clone(),
            expected: expected.to_string(),
            found: describe(&self.value),
        }
    }

    pub(crate) fn invalid(&self, why: impl Into<String>) -> ConfigError {
        ConfigError::InvalidValue {
            key: self.key.clone(),
            origin: self.origin.clone(),
            value: describe(&self.value),
            why: why.into(),
        }
    }

    pub(crate) fn string(&self) -> Result<String, ConfigError> {
        self.value
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| self.wrong_type("a string"))
    }

    pub(crate) fn boolean(&self) -> Result<bool, ConfigError> {
        self.value
            .as_bool()
            .ok_or_else(|| self.wrong_type("a boolean (true or false)"))
    }

    pub(crate) fn list(&self) -> Result<Vec<String>, ConfigError> {
        let Some(items) = self.value.as_array() else {
            return Err(self.wrong_type("a list of strings"));
        };
        items
            .iter()
            .map(|item| item.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| self.wrong_type("a list of strings"))
    }

    /// A string list, also accepting one string (split on `;` and whitespace, CMake style).
    pub(crate) fn list_or_string(&self) -> Result<Vec<String>, ConfigError> {
        match &self.value {
            toml::Value::String(s) => Ok(split_list(s)),
            _ => self.list(),
        }
    }

    /// One of `C`'s spellings.
    pub(crate) fn choice<C: Choice>(&self) -> Result<C, ConfigError> {
        let text = self.string()?;
        C::SPELLINGS
            .iter()
            .find(|(name, _)| *name == text)
            .map(|(_, v)| *v)
            .ok_or_else(|| {
                let names: Vec<String> = C::NAMES.iter().map(|n| format!("\"{n}\"")).collect();
                self.invalid(format!("expected one of {}", names.join(", ")))
            })
    }

    /// `bindings`: one name. A list naming torch and another library gets its own message:
    /// torch brings its own pybind11 (`torch/extension.h`, `PYBIND11_MODULE`).
    pub(crate) fn bindings(&self) -> Result<Bindings, ConfigError> {
        if let Some(items) = self.value.as_array() {
            let names: Vec<&str> = items.iter().filter_map(|v| v.as_str()).collect();
            if names.contains(&"torch") && names.iter().any(|n| *n != "torch") {
                return Err(self.invalid(
                    "an extension uses one binding library; torch extensions bind through torch's own pybind11 (`#include <torch/extension.h>` and `PYBIND11_MODULE`) or `TORCH_LIBRARY`: use `bindings = \"torch\"` alone, and put pybind11/nanobind code in an extension of its own",
                ));
            }
        }
        self.choice()
    }

    /// `value` with this field's origin.
    pub(crate) fn sourced<T>(&self, value: T) -> Sourced<T> {
        Sourced {
            value,
            origin: self.origin.clone(),
        }
    }
}

/// Where the keys of one table are read from: the layered top level (`Layered`), or one table
/// of pyproject.toml (`TableSource`).
pub(super) trait Source {
    /// The value given for key `name`, with its dotted key and origin.
    fn field(&self, name: &str) -> Option<Field>;
    /// The dotted key of `name`, for a message about its absence.
    fn key(&self, name: &str) -> String;
    /// Where key `name` was set, if it was.
    fn origin(&self, name: &str) -> Option<Origin> {
        self.field(name).map(|f| f.origin)
    }
}

/// One table of pyproject.toml (a target, a library): `prefix` is its dotted key.
pub(super) struct TableSource<'a> {
    pub(crate) prefix: String,
    pub(crate) table: &'a toml::Table,
    pub(crate) origin: Origin,
}

impl Source for TableSource<'_> {
    fn field(&self, name: &str) -> Option<Field> {
        self.table.get(name).map(|value| Field {
            key: self.key(name),
            value: value.clone(),
            origin: self.origin.clone(),
        })
    }

    fn key(&self, name: &str) -> String {
        format!("{}.{name}", self.prefix)
    }
}

// The readers: each turns a check of a present value (`read`) into the reading of a key,
// deciding what its absence means. `read` is a `Field` method or a function of `values`.

/// Absent: `None`.
pub(super) fn optional<T>(
    read: impl Fn(&Field) -> Result<T, ConfigError>,
) -> impl Fn(&dyn Source, &str) -> Result<Option<T>, ConfigError> {
    move |src, name| src.field(name).map(|f| read(&f)).transpose()
}

/// Absent: `default`.
pub(super) fn or<T: Clone>(
    read: impl Fn(&Field) -> Result<T, ConfigError>,
    default: T,
) -> impl Fn(&dyn Source, &str) -> Result<T, ConfigError> {
    move |src, name| Ok(optional(&read)(src, name)?.unwrap_or_else(|| default.clone()))
}

/// Absent: `T::default()` (an empty list, `false`).
pub(super) fn or_default<T: Default>(
    read: impl Fn(&Field) -> Result<T, ConfigError>,
) -> impl Fn(&dyn Source, &str) -> Result<T, ConfigError> {
    move |src, name| Ok(optional(&read)(src, name)?.unwrap_or_default())
}

/// Absent: `None`; present: the value with its origin.
pub(super) fn sourced<T>(
    read: impl Fn(&Field) -> Result<T, ConfigError>,
) -> impl Fn(&dyn Source, &str) -> Result<Option<Sourced<T>>, ConfigError> {
    move |src, name| optional(|f| Ok(f.sourced(read(f)?)))(src, name)
}

/// Absent: `default`, from pyproject.toml (where an unset key's default is decided).
pub(super) fn sourced_or<T: Clone>(
    read: impl Fn(&Field) -> Result<T, ConfigError>,
    default: T,
) -> impl Fn(&dyn Source, &str) -> Result<Sourced<T>, ConfigError> {
    move |src, name| {
        Ok(sourced(&read)(src, name)?.unwrap_or_else(|| Sourced {
            value: default.clone(),
            origin: Origin::Pyproject,
        }))
    }
}

/// Absent: "Missing required key".
pub(super) fn required<T>(
    read: impl Fn(&Field) -> Result<T, ConfigError>,
) -> impl Fn(&dyn Source, &str) -> Result<T, ConfigError> {
    move |src, name| match src.field(name) {
        Some(f) => read(&f),
        None => Err(ConfigError::MissingKey { key: src.key(name) }),
    }
}

/// A short description of a TOML value for messages: `string "abc"`, `integer 3`, ...
pub(super) fn describe(value: &toml::Value) -> String {
    match value {
        toml::Value::String(s) => format!("string {s:?}"),
        toml::Value::Integer(i) => format!("integer {i}"),
        toml::Value::Float(f) => format!("float {f}"),
        toml::Value::Boolean(b) => format!("boolean {b}"),
        toml::Value::Datetime(d) => format!("datetime {d}"),
        toml::Value::Array(_) => format!("array {value}"),
        toml::Value::Table(_) => "a table".to_string(),
    }
}

/// `"80;90 100"` -> `["80", "90", "100"]`: CMake's list, also split on whitespace.
pub(super) fn split_list(s: &str) -> Vec<String> {
    s.split(|c: char| c == ';' || c.is_whitespace())
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect()
}

/// `"a :: b :: c; d :: e :: f"` -> the items between `;`, trimmed (inner spaces kept).
pub(super) fn split_semicolons(s: &str) -> Vec<String> {
    s.split(';')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect()
}
