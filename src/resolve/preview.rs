//! What a resolution tells before compiling: the wheel it makes (`WheelPreview`), why its
//! stages stopped (`Failure`), and what an isolated build installs that this environment
//! lacks (`Isolation`).

use crate::bindings::jax::JaxError;
use crate::bindings::BindingsError;
use crate::config::ToolConfig;
use crate::error::Error;
use crate::libraries::{self, LibraryError};
use crate::plan::driver_floors::Floor;
use crate::toolchain::headers::HeaderError;
use crate::toolchain::zig::ZigError;
use crate::toolchain::{ToolchainError, ToolkitRequest};

use super::Resolved;

/// The wheel a build would make now, before compiling.
#[derive(Debug, Clone)]
pub(crate) struct WheelPreview {
    /// `saxpy_cu13-0.1.0-cp39-abi3` (the platform tag comes from the linked ELF files).
    pub(crate) file_prefix: String,
    /// `Requires-Dist` entries.
    pub(crate) requires: Vec<String>,
    /// Why it needs a driver this new.
    pub(crate) floors: Vec<Floor>,
    /// The extensions whose import runs the GPU check first.
    pub(crate) checked_at_import: Vec<String>,
}

impl Resolved {
    /// The wheel these stages make.
    pub(crate) fn preview(&self) -> WheelPreview {
        let (py, abi) = self.python.tag(self.plan.limited_api);
        let requires = self
            .dist_info()
            .metadata()
            .lines()
            .take_while(|l| !l.is_empty())
            .filter_map(|l| l.strip_prefix("Requires-Dist: ").map(str::to_string))
            .collect();
        WheelPreview {
            file_prefix: format!(
                "{}-{}-{py}-{abi}",
                self.name.file_stem(),
                self.config.project.version
            ),
            requires,
            checked_at_import: self
                .plan
                .generated
                .iter()
                .filter_map(|(path, _)| path.file_stem())
                .map(|stem| stem.to_string_lossy().into_owned())
                .collect(),
            floors: self.floors.clone(),
        }
    }
}

/// Why the wheel's stages stopped: the error, wherever the resolution keeps it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Failure<'a> {
    Error(&'a Error),
    /// The toolchain's, kept by the survey.
    Toolchain(&'a ToolchainError),
    /// jax's, kept by the survey.
    Jax(&'a JaxError),
}

impl Failure<'_> {
    /// The text a user reads (`error::render`).
    pub(crate) fn render(&self) -> String {
        match self {
            Failure::Error(e) => crate::error::render(*e),
            Failure::Toolchain(e) => crate::error::render(*e),
            Failure::Jax(e) => crate::error::render(*e),
        }
    }

    /// Whether what is missing is among what an isolated build installs (`toolkit` and the
    /// build requirements of `tool`).
    pub(crate) fn supplied_by_isolation(
        &self,
        tool: &ToolConfig,
        toolkit: &ToolkitRequest,
    ) -> bool {
        match *self {
            Failure::Toolchain(e) | Failure::Error(Error::Toolchain(e)) => {
                toolchain_supplied(e, toolkit)
            }
            Failure::Jax(e) | Failure::Error(Error::Bindings(BindingsError::Jax(e))) => {
                matches!(e, JaxError::NotFound { .. })
            }
            Failure::Error(Error::Bindings(
                BindingsError::NotFound { .. } | BindingsError::TorchNotFound { .. },
            )) => true,
            Failure::Error(Error::Library(LibraryError::NotFound { name, .. })) => {
                libraries::isolated_build_has(tool, toolkit, name)
            }
            Failure::Error(_) => false,
        }
    }
}

fn toolchain_supplied(e: &ToolchainError, toolkit: &ToolkitRequest) -> bool {
    match e {
        ToolchainError::NvccNotFound { pip_possible, .. } => *pip_possible,
        ToolchainError::Zig(z) => matches!(z, ZigError::NotFound { .. }),
        ToolchainError::LauncherNotFound { name } => name == "ccache",
        // NVIDIA's wheels of another toolkit part missing: an isolated build installs the set.
        ToolchainError::Headers(h) => {
            matches!(**h, HeaderError::Incomplete { wheel: Some(_), .. }) && !toolkit.system
        }
        _ => false,
    }
}

/// What an isolated build (`pip wheel .`, `pip install .`) does that one in this environment
/// (`--no-build-isolation`) does not.
#[derive(Debug)]
pub(crate) struct Isolation<'a> {
    /// What pip installs into the isolated build environment first.
    pub(crate) requirements: &'a [String],
    /// The wheel's stages failed here for want of something those requirements bring.
    pub(crate) supplies_missing: bool,
}
