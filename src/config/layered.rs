//! The layering of the top-level keys: for each, the first of config setting (`-C key=value`,
//! `-C cudawheel.key=value`) > `CUDAWHEEL_<KEY>` > the key's other variables (`env_above`) >
//! pyproject.toml > its fallback variables (`env_below`), with where the value came from.
//! Strings from `-C` and the environment become TOML values of the key's type here, so one
//! reader serves every origin. Also `TORCH_CUDA_ARCH_LIST`, which layers for torch targets only.

use std::collections::BTreeMap;

use super::error::ConfigError;
use super::field::{split_list, split_semicolons, Field, Source};
use super::keydef::{KeyDef, Ty};
use super::origin::{Origin, Sourced};
use super::values;

/// PyTorch's variable: NGC-style images export it globally, so it is read for
/// `bindings = "torch"` targets only (`ToolConfig::torch_archs`), below `CUDAARCHS`.
pub(crate) const TORCH_ARCHS_ENV: &str = "TORCH_CUDA_ARCH_LIST";

/// The PEP 517 `config_settings` and the process environment, as plain data.
#[derive(Debug, Clone, Default)]
pub(crate) struct Overrides {
    pub(crate) settings: BTreeMap<String, String>,
    pub(crate) env: BTreeMap<String, String>,
}

impl Overrides {
    /// The settings plus this process's environment (discovery reads `CUDA_HOME`, `PATH`,
    /// `<PREFIX>_LIBRARY_PATH`, ... from the same map, so tests can pass their own).
    pub(crate) fn from_process_env(settings: BTreeMap<String, String>) -> Self {
        Overrides {
            settings,
            env: std::env::vars().collect(),
        }
    }

    /// The variable `var`, if set and not blank.
    fn env_set(&self, var: &str) -> Option<&String> {
        self.env.get(var).filter(|v| !v.trim().is_empty())
    }
}

/// The closest of `candidates` to `given`, if it is close enough to be a likely typo.
pub(crate) fn suggest<'a>(
    given: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<String> {
    candidates
        .into_iter()
        .map(|c| (strsim::jaro_winkler(given, c), c))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c.to_string())
}

/// The effective value of each top-level key with its origin, after precedence.
pub(super) struct Layered {
    values: BTreeMap<&'static str, (toml::Value, Origin)>,
}

impl Layered {
    /// The top level `table` of pyproject.toml, whose keys are `keys` (also settings and
    /// variables) and `tables` (only in pyproject.toml), under the overrides.
    pub(crate) fn build(
        table: &toml::Table,
        overrides: &Overrides,
        keys: &'static [KeyDef],
        tables: &[&str],
    ) -> Result<Self, ConfigError> {
        check_top_keys(table, keys, tables)?;
        let settings = settings(overrides, keys)?;
        let mut values = BTreeMap::new();
        for def in keys {
            if let Some(v) = layer(def, table, &settings, overrides) {
                values.insert(def.name, v);
            }
        }
        Ok(Layered { values })
    }
}

impl Source for Layered {
    fn field(&self, name: &str) -> Option<Field> {
        self.values.get(name).map(|(value, origin)| Field {
            key: self.key(name),
            value: value.clone(),
            origin: origin.clone(),
        })
    }

    fn key(&self, name: &str) -> String {
        format!("tool.cudawheel.{name}")
    }
}

/// Every key of `[tool.cudawheel]` in pyproject.toml is a top-level key or a table.
fn check_top_keys(
    table: &toml::Table,
    keys: &[KeyDef],
    tables: &[&str],
) -> Result<(), ConfigError> {
    let known = || keys.iter().map(|k| k.name).chain(tables.iter().copied());
    match table.keys().find(|key| !known().any(|k| k == *key)) {
        None => Ok(()),
        Some(key) => Err(ConfigError::UnknownKey {
            key: format!("tool.cudawheel.{key}"),
            origin: Origin::Pyproject,
            suggestion: suggest(key, known()).map(|s| format!("tool.cudawheel.{s}")),
        }),
    }
}

/// Config settings by key: `key` or `cudawheel.key` -> (the name as spelled, the value);
/// anything else is a mistake worth reporting.
fn settings(
    overrides: &Overrides,
    keys: &'static [KeyDef],
) -> Result<BTreeMap<&'static str, (String, String)>, ConfigError> {
    let mut settings = BTreeMap::new();
    for (name, value) in &overrides.settings {
        let bare = name.strip_prefix("cudawheel.").unwrap_or(name);
        let Some(k) = keys.iter().find(|k| k.name == bare) else {
            return Err(ConfigError::UnknownKey {
                key: name.clone(),
                origin: Origin::Setting(name.clone()),
                suggestion: suggest(bare, keys.iter().map(|k| k.name)),
            });
        };
        settings.insert(k.name, (name.clone(), value.clone()));
    }
    Ok(settings)
}

/// The value of `def` from the first place that sets it, with that place.
fn layer(
    def: &KeyDef,
    table: &toml::Table,
    settings: &BTreeMap<&'static str, (String, String)>,
    overrides: &Overrides,
) -> Option<(toml::Value, Origin)> {
    let kind = def.ty.into();
    let from_env = |vars: &[&str], non_blank: bool| {
        vars.iter().find_map(|var| {
            let raw = overrides.env.get(*var)?;
            let set = if non_blank {
                !raw.trim().is_empty()
            } else {
                !raw.is_empty()
            };
            set.then(|| (coerce(raw, kind), Origin::Env(var.to_string())))
        })
    };
    if let Some((name, raw)) = settings.get(def.name) {
        return Some((coerce(raw, kind), Origin::Setting(name.clone())));
    }
    // `CUDAWHEEL_<KEY>` counts when not empty; the other variables when not blank above
    // pyproject.toml (`CUDAARCHS`), when not empty below it (`CXX`).
    from_env(&[def.env_var().as_str()], false)
        .or_else(|| from_env(def.env_above, true))
        .or_else(|| {
            let value = table.get(def.name)?;
            Some((value.clone(), Origin::Pyproject))
        })
        .or_else(|| from_env(def.env_below, false))
}

/// `TORCH_CUDA_ARCH_LIST`, unless `archs` came from a place above it (`archs`: its origin).
pub(super) fn torch_archs(
    archs: Option<Origin>,
    overrides: &Overrides,
) -> Result<Option<Sourced<Vec<String>>>, ConfigError> {
    if archs.is_some_and(|o| o != Origin::Pyproject) {
        return Ok(None);
    }
    let Some(raw) = overrides.env_set(TORCH_ARCHS_ENV) else {
        return Ok(None);
    };
    let field = Field {
        key: "tool.cudawheel.archs".into(),
        value: coerce(raw, Kind::List),
        origin: Origin::Env(TORCH_ARCHS_ENV.into()),
    };
    values::archs(&field).map(|list| Some(field.sourced(list)))
}

/// How a string from `-C` or the environment becomes a TOML value.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Str,
    Int,
    Bool,
    /// `;`-separated list (also split on whitespace).
    List,
    /// `;`-separated list whose items keep their inner spaces.
    SemicolonList,
    /// An integer when it parses as one, else a string (`cuda = 13` or `"auto"`).
    IntOrStr,
}

impl From<Ty> for Kind {
    fn from(ty: Ty) -> Kind {
        match ty {
            Ty::Str | Ty::Pattern(_) | Ty::Choice(_) => Kind::Str,
            Ty::PositiveInt => Kind::Int,
            Ty::Bool => Kind::Bool,
            Ty::List | Ty::ListOrStr => Kind::List,
            Ty::CudaMajor | Ty::Size => Kind::IntOrStr,
            Ty::SemicolonList => Kind::SemicolonList,
        }
    }
}

fn coerce(raw: &str, kind: Kind) -> toml::Value {
    let strings = |items: Vec<String>| {
        toml::Value::Array(items.into_iter().map(toml::Value::String).collect())
    };
    match kind {
        Kind::Str => toml::Value::String(raw.to_string()),
        Kind::Int => raw.trim().parse::<i64>().map_or_else(
            |_| toml::Value::String(raw.to_string()),
            toml::Value::Integer,
        ),
        Kind::IntOrStr => raw.trim().parse::<i64>().map_or_else(
            |_| toml::Value::String(raw.trim().to_string()),
            toml::Value::Integer,
        ),
        Kind::Bool => match raw.trim().to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" | "on" => toml::Value::Boolean(true),
            "false" | "0" | "no" | "off" | "" => toml::Value::Boolean(false),
            _ => toml::Value::String(raw.to_string()),
        },
        Kind::List => strings(split_list(raw)),
        Kind::SemicolonList => strings(split_semicolons(raw)),
    }
}
