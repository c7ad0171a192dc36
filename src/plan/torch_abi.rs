//! `torch-stable-abi`: which extensions use PyTorch's stable ABI and from which torch release,
//! and the limited API that follows (the wheel is `cp3N-abi3` with the oldest Python the torch
//! floor supports). The flags, libraries and requirements are the bindings stage's
//! (`bindings::torch::stable`).

use crate::config::{self, Bindings, TargetConfig};

use super::PlanError;

/// The oldest CPython each torch release supports (PyPI's `Requires-Python`): 2.10 to 2.14
/// need 3.10, 2.15 needs 3.11. A later torch is assumed to need what the newest known one does.
pub(crate) fn python_floor(torch: (u64, u64)) -> u32 {
    if torch >= (2, 15) {
        11
    } else {
        10
    }
}

/// A target's stable-ABI torch floor: its own `torch-stable-abi`, else the top-level one for a
/// torch extension; refused on an extension that is not a torch one.
pub(crate) fn of_target(
    t: &TargetConfig,
    bindings: Bindings,
    tool: &config::ToolConfig,
) -> Result<Option<(u64, u64)>, PlanError> {
    match (t.torch_stable_abi, bindings) {
        (Some(v), Bindings::Torch) => Ok(Some(v)),
        (Some(_), _) => Err(PlanError::StableAbiWithoutTorch {
            key: format!("{}.torch-stable-abi", t.key),
        }),
        (None, Bindings::Torch) => Ok(tool.torch_stable_abi),
        (None, _) => Ok(None),
    }
}

/// The limited API of the build: `py-limited-api` when set, else with stable-ABI torch
/// extensions the oldest Python of their lowest torch floor. Refuses a top-level
/// `torch-stable-abi` without any torch extension.
pub(crate) fn limited_api(tool: &config::ToolConfig) -> Result<Option<u32>, PlanError> {
    let mut floors = Vec::new();
    for t in &tool.extensions {
        let bindings = super::bindings_of(t, false, tool);
        if let Some(v) = of_target(t, bindings, tool)? {
            floors.push(v);
        }
    }
    if tool.torch_stable_abi.is_some()
        && !tool
            .extensions
            .iter()
            .any(|t| super::bindings_of(t, false, tool) == Bindings::Torch)
    {
        return Err(PlanError::StableAbiWithoutTorch {
            key: "tool.cudawheel.torch-stable-abi".into(),
        });
    }
    Ok(tool
        .py_limited_api
        .or_else(|| floors.into_iter().min().map(python_floor)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ToolConfig;

    fn tool(text: &str) -> ToolConfig {
        let doc: toml::Table = toml::from_str(text).unwrap();
        ToolConfig::parse(&doc, &Default::default()).unwrap()
    }

    #[test]
    fn the_torch_floor_picks_the_python_floor() {
        assert_eq!(python_floor((2, 10)), 10);
        assert_eq!(python_floor((2, 14)), 10);
        assert_eq!(python_floor((2, 15)), 11);
        let t = tool(
            "bindings = \"torch\"\ntorch-stable-abi = \"2.10\"\n[[extension]]\nname = \"a._C\"\nsources = [\"a.cpp\"]\n",
        );
        assert_eq!(limited_api(&t).unwrap(), Some(10));
        let t = tool(
            "bindings = \"torch\"\ntorch-stable-abi = \"2.15\"\npy-limited-api = \"cp312\"\n[[extension]]\nname = \"a._C\"\nsources = [\"a.cpp\"]\n",
        );
        assert_eq!(limited_api(&t).unwrap(), Some(12));
        // Control: a pinned torch extension keeps the version-specific ABI.
        let t =
            tool("bindings = \"torch\"\n[[extension]]\nname = \"a._C\"\nsources = [\"a.cpp\"]\n");
        assert_eq!(limited_api(&t).unwrap(), None);
    }

    #[test]
    fn only_torch_extensions_take_it() {
        let t = tool(
            "[[extension]]\nname = \"a._C\"\nsources = [\"a.cpp\"]\ntorch-stable-abi = \"2.10\"\n",
        );
        let err = limited_api(&t).unwrap_err().to_string();
        assert!(
            err.contains("tool.cudawheel.extension[0].torch-stable-abi"),
            "{err}"
        );
        let t = tool(
            "torch-stable-abi = \"2.10\"\n[[extension]]\nname = \"a._C\"\nsources = [\"a.cpp\"]\n",
        );
        let err = limited_api(&t).unwrap_err().to_string();
        assert!(err.contains("tool.cudawheel.torch-stable-abi"), "{err}");
    }
}
