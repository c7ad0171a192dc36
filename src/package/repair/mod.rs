//! THROWAWAY STUB of the repair (the real one is built on another branch): same signatures,
//! `repair_wheel` only copies the wheel into `out_dir`.

use std::path::{Path, PathBuf};

use crate::config::ToolConfig;

/// How a wheel is repaired.
#[derive(Debug, Clone, Default)]
#[allow(dead_code)]
pub(crate) struct RepairSettings {
    /// `name-suffix` (unused by the stub).
    pub(crate) name_suffix: String,
}

impl RepairSettings {
    /// `python -m cudawheel repair` with no project: the defaults.
    #[allow(dead_code)]
    pub(crate) fn standalone() -> Self {
        RepairSettings::default()
    }

    /// Wrap mode: the project's `[tool.cudawheel]`.
    pub(crate) fn from_tool(tool: &ToolConfig) -> Self {
        RepairSettings {
            name_suffix: tool.name_suffix.clone(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum RepairError {
    #[error("Cannot repair {}: {source}", wheel.display())]
    Io {
        wheel: PathBuf,
        source: std::io::Error,
    },
}

/// The stub: copies `wheel` into `out_dir` unchanged.
pub(crate) fn repair_wheel(
    wheel: &Path,
    out_dir: &Path,
    _settings: &RepairSettings,
) -> Result<PathBuf, RepairError> {
    let io = |source| RepairError::Io {
        wheel: wheel.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(out_dir).map_err(io)?;
    let out = out_dir.join(wheel.file_name().unwrap_or_default());
    std::fs::copy(wheel, &out).map_err(io)?;
    Ok(out)
}
