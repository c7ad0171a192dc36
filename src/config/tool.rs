//! `[tool.cudawheel]` -> `ToolConfig`: the layering of the top-level keys (`layered`), then the
//! reading of every key as `keys` declares it, then what one key implies for others
//! (`target = "aarch64"`).
//!
//! Values are read by hand from `toml::Value` (not serde) so that every message names the
//! dotted key, where the value came from, and suggests the closest known key.

use super::choices::{CudaChoice, ToolkitChoice};
use super::error::ConfigError;
use super::keys::{ToolConfig, TABLE_KEYS, TOP_KEYS};
use super::layered::{Layered, Overrides};
use super::origin::{Origin, Sourced};
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

    /// What a list of several majors rules out for now, each an error naming its key.
    pub(super) fn check_several(&self, variant: bool) -> Result<(), ConfigError> {
        let tool = self;
        let CudaChoice::Several(majors) = tool.cuda.value else {
            return Ok(());
        };
        let several = format!("several CUDA majors (`cuda` = [{}])", majors.list());
        let unsupported = |key: &str, what: &str, instead: &str| ConfigError::Unsupported {
            key: key.into(),
            what: format!("{what} with {several}"),
            instead: instead.into(),
        };
        if variant {
            return Err(unsupported("tool.cudawheel.variant", "a wheel variant", "variants are one wheel per major already: set `cuda` to one major and build each (`python -m cudawheel wheel . --cuda 12 --cuda 13 -C variant=cuda`), or drop `variant` for one wheel holding every major"));
        }
        if tool.split.is_some() {
            return Err(unsupported(
                "tool.cudawheel.split",
                "`split = \"library\"`",
                "drop `split`, or set `cuda` to one major",
            ));
        }
        if tool.name_suffix_origin.is_some() && tool.name_suffix.contains("{major}") {
            return Err(unsupported("tool.cudawheel.name-suffix", "`{major}` in the distribution name", "one wheel holds every major under one name: drop `name-suffix`, or give one without `{major}`"));
        }
        if let Some(lib) = tool.shared_libraries.first() {
            return Err(unsupported(&lib.key, "a shared-library target (not supported yet)", "build a wheel per major (`cuda` one major, `python -m cudawheel wheel . --cuda 12 --cuda 13`), or make the library's code part of the extension"));
        }
        if let Some(ext) = tool.extensions.iter().find(|e| !e.name.contains('.')) {
            return Err(unsupported(&format!("{}.name", ext.key), "an extension module outside a package (not supported yet)", "put the module in a package (`name = \"pkg._core\"`, with pkg/__init__.py): the loader that picks the major lives in the package"));
        }
        if let Some(m) = tool.toolkits.keys().find(|m| !majors.contains(**m)) {
            return Err(ConfigError::InvalidValue {
                key: format!("tool.cudawheel.toolkits.\"{m}\""),
                origin: Origin::Pyproject,
                value: format!("{:?}", tool.toolkits[m]),
                why: format!("CUDA {m} is not among {several}"),
            });
        }
        Ok(())
    }

    /// These settings building CUDA `major` alone (`cuda` that major, where it came from kept):
    /// one major's share of a `cuda` list.
    pub(crate) fn for_major(&self, major: u32) -> ToolConfig {
        let mut tool = self.clone();
        tool.cuda = Sourced {
            value: CudaChoice::Major(major),
            origin: self.cuda.origin.clone(),
        };
        tool
    }

    /// `name-suffix` with `{major}` filled in.
    pub(crate) fn suffix_for(&self, major: u32) -> String {
        self.name_suffix.replace("{major}", &major.to_string())
    }
}
