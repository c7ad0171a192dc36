//! `[tool.cudawheel]` -> `ToolConfig`: the layering of the top-level keys (`layered`), then the
//! reading of every key as `keys` declares it, then what one key implies for others
//! (`target = "aarch64"`).
//!
//! Values are read by hand from `toml::Value` (not serde) so that every message names the
//! dotted key, where the value came from, and suggests the closest known key.

use super::choices::ToolkitChoice;
use super::error::ConfigError;
use super::keys::{ToolConfig, TABLE_KEYS, TOP_KEYS};
use super::layered::{Layered, Overrides};
use super::origin::Sourced;
use super::values::{Glibc, AARCH64_MANYLINUX};

impl ToolConfig {
    /// Reads `[tool.cudawheel]` (`table` may be empty) and applies the overrides: the layering
    /// step (setting > environment > pyproject.toml, per key), then each key's reader.
    pub(crate) fn parse(table: &toml::Table, overrides: &Overrides) -> Result<Self, ConfigError> {
        let layered = Layered::build(table, overrides, TOP_KEYS, TABLE_KEYS)?;
        Ok(ToolConfig::read(&layered, table, overrides)?.apply_target())
    }

    /// `target = "aarch64"` implies zig mode (`manylinux`, default 2_28) and the toolkit from
    /// PyPI (an x86_64 nvcc whose libraries are never linked); an explicit `toolkit` stays, and
    /// `toolchain::cross` refuses "system".
    fn apply_target(mut self) -> Self {
        let Some(t) = self.target.clone().filter(|t| t.value == "aarch64") else {
            return self;
        };
        if self.manylinux.is_none() {
            self.manylinux = Some(Sourced {
                value: Glibc {
                    major: 2,
                    minor: AARCH64_MANYLINUX,
                },
                origin: t.origin.clone(),
            });
        }
        if self.toolkit.value == ToolkitChoice::Auto {
            self.toolkit = Sourced {
                value: ToolkitChoice::Pip,
                origin: t.origin,
            };
        }
        self
    }

    /// `jobs`, or this machine's cores when it is not set.
    pub(crate) fn jobs_or_cores(&self) -> usize {
        self.jobs
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
    }

    /// `name-suffix` with `{major}` filled in.
    pub(crate) fn suffix_for(&self, major: u32) -> String {
        self.name_suffix.replace("{major}", &major.to_string())
    }
}
