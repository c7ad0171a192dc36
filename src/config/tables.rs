//! The tables of `[tool.cudawheel]` that only pyproject.toml holds: `[[extension]]` and
//! `[[shared-library]]` (arrays of tables) and `[library.<name>]` (a table of tables). Each
//! entry must be a table whose keys are known; the caller reads it (`TableSource`).

use std::collections::BTreeMap;

use super::error::ConfigError;
use super::field::{Field, TableSource};
use super::layered::suggest;
use super::origin::Origin;

/// `[[tool.cudawheel.<kind>]]`: each entry read by `read`; `allowed`: its keys.
pub(super) fn array_of_tables<T>(
    table: &toml::Table,
    kind: &str,
    allowed: &[&str],
    read: impl Fn(&TableSource<'_>) -> Result<T, ConfigError>,
) -> Result<Vec<T>, ConfigError> {
    let Some(value) = table.get(kind) else {
        return Ok(Vec::new());
    };
    let Some(items) = value.as_array() else {
        return Err(pyproject_field(format!("tool.cudawheel.{kind}"), value)
            .wrong_type(&format!("an array of tables (`[[tool.cudawheel.{kind}]]`)")));
    };
    let mut out = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let source = table_source(format!("tool.cudawheel.{kind}[{index}]"), item, allowed)?;
        out.push(read(&source)?);
    }
    Ok(out)
}

/// `[tool.cudawheel.<kind>.<name>]`: each entry by name, read by `read`; `allowed`: its keys,
/// `plural`: what the entries are (`libraries`), for messages.
pub(super) fn table_of_tables<T>(
    table: &toml::Table,
    kind: &str,
    plural: &str,
    allowed: &[&str],
    read: impl Fn(&TableSource<'_>) -> Result<T, ConfigError>,
) -> Result<BTreeMap<String, T>, ConfigError> {
    let mut out = BTreeMap::new();
    let Some(value) = table.get(kind) else {
        return Ok(out);
    };
    let Some(entries) = value.as_table() else {
        return Err(
            pyproject_field(format!("tool.cudawheel.{kind}"), value).wrong_type(&format!(
                "a table of {plural} (`[tool.cudawheel.{kind}.<name>]`)"
            )),
        );
    };
    for (name, value) in entries {
        let source = table_source(format!("tool.cudawheel.{kind}.{name}"), value, allowed)?;
        out.insert(name.clone(), read(&source)?);
    }
    Ok(out)
}

/// `value` at `key` in pyproject.toml, for a message about it.
fn pyproject_field(key: String, value: &toml::Value) -> Field {
    Field {
        key,
        value: value.clone(),
        origin: Origin::Pyproject,
    }
}

/// The table `value` at `key`, whose keys must be among `allowed`.
fn table_source<'a>(
    key: String,
    value: &'a toml::Value,
    allowed: &[&str],
) -> Result<TableSource<'a>, ConfigError> {
    let Some(table) = value.as_table() else {
        return Err(pyproject_field(key, value).wrong_type("a table"));
    };
    if let Some(k) = table.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(ConfigError::UnknownKey {
            key: format!("{key}.{k}"),
            origin: Origin::Pyproject,
            suggestion: suggest(k, allowed.iter().copied()).map(|s| format!("{key}.{s}")),
        });
    }
    Ok(TableSource {
        prefix: key,
        table,
        origin: Origin::Pyproject,
    })
}
