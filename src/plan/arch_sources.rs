//! Where the GPU architectures of each target come from, as data for a report: the top-level
//! list (`archs`, `CUDAARCHS`, else the CUDA major's default), the targets with a list of their
//! own, and the torch extensions that take `TORCH_CUDA_ARCH_LIST` (the other targets ignore
//! it). The rules are the plan's (`bindings_of`, the target's own list first).

use crate::config::{Bindings, Origin, ToolConfig};

use super::arch::{self, ArchError, ArchList};
use super::bindings_of;

/// Every list a build would use, and where each came from.
#[derive(Debug)]
pub(crate) struct ArchSources {
    /// The top-level list as written (`None`: unset).
    pub(crate) top_raw: Option<String>,
    /// It parsed; `Ok(None)`: the CUDA major's default.
    pub(crate) top: Result<Option<ArchList>, ArchError>,
    /// Targets whose own `archs` override the top-level list.
    pub(crate) overrides: Vec<TargetArchs>,
    /// `TORCH_CUDA_ARCH_LIST`, when it is set.
    pub(crate) torch: Option<TorchArchs>,
}

/// A target's own `archs`.
#[derive(Debug)]
pub(crate) struct TargetArchs {
    /// The target's module name.
    pub(crate) name: String,
    /// `tool.cudawheel.shared-library[0].archs`
    pub(crate) key: String,
    /// The list as written, space-separated.
    pub(crate) raw: String,
    pub(crate) list: Result<ArchList, ArchError>,
}

/// `TORCH_CUDA_ARCH_LIST` and the targets it applies to.
#[derive(Debug)]
pub(crate) struct TorchArchs {
    /// As written, space-separated.
    pub(crate) raw: String,
    pub(crate) origin: Origin,
    /// The torch extensions without `archs` of their own, which take it: (name, list).
    pub(crate) takers: Vec<(String, ArchList)>,
    /// The targets that ignore it (not torch extensions).
    pub(crate) ignored: Vec<String>,
}

/// The targets of `tool` with whether each is a shared library, in the plan's order.
fn targets(tool: &ToolConfig) -> impl Iterator<Item = (&crate::config::TargetConfig, bool)> {
    let libs = tool.shared_libraries.iter().map(|t| (t, true));
    libs.chain(tool.extensions.iter().map(|t| (t, false)))
}

/// Where the archs of every target of `tool` come from.
pub(crate) fn sources(tool: &ToolConfig) -> ArchSources {
    let top = match &tool.archs {
        None => Ok(None),
        Some(s) => arch::parse_items(&s.value, "tool.cudawheel.archs", &s.origin).map(Some),
    };
    let mut overrides = Vec::new();
    for (t, _) in targets(tool) {
        let Some(raw) = &t.archs else { continue };
        let key = format!("{}.archs", t.key);
        overrides.push(TargetArchs {
            name: t.name.clone(),
            list: arch::parse_items(raw, &key, &Origin::Pyproject),
            key,
            raw: raw.join(" "),
        });
    }
    let torch = tool.torch_archs.as_ref().map(|torch| {
        let mut takers = Vec::new();
        let mut ignored = Vec::new();
        for (t, is_lib) in targets(tool) {
            if bindings_of(t, is_lib, tool) != Bindings::Torch {
                ignored.push(t.name.clone());
            } else if t.archs.is_none() {
                let parsed = arch::parse_items(&torch.value, "tool.cudawheel.archs", &torch.origin);
                if let Ok(list) = parsed {
                    takers.push((t.name.clone(), list));
                }
            }
        }
        TorchArchs {
            raw: torch.value.join(" "),
            origin: torch.origin.clone(),
            takers,
            ignored,
        }
    });
    ArchSources {
        top_raw: tool.archs.as_ref().map(|s| s.value.join(" ")),
        top,
        overrides,
        torch,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Config, Overrides, PythonInfo};
    use crate::plan::BuildPlan;

    #[test]
    fn the_report_names_the_targets_the_plan_gives_torch_archs() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for pkg in ["t", "p"] {
            std::fs::create_dir_all(root.join(pkg)).unwrap();
        }
        std::fs::write(root.join("k.cu"), "").unwrap();
        let text = "[project]\nname = \"demo\"\nversion = \"1\"\n[tool.cudawheel]\n\
            [[tool.cudawheel.extension]]\nname = \"t._C\"\nsources = [\"k.cu\"]\nbindings = \"torch\"\n\
            [[tool.cudawheel.extension]]\nname = \"p._core\"\nsources = [\"k.cu\"]\n\
            [[tool.cudawheel.extension]]\nname = \"t._own\"\nsources = [\"k.cu\"]\nbindings = \"torch\"\narchs = [\"80\"]\n";
        let overrides = Overrides {
            settings: Default::default(),
            env: [("TORCH_CUDA_ARCH_LIST".to_string(), "9.0a".to_string())].into(),
        };
        let config = Config::from_text(root, text.into(), &overrides).unwrap();
        let report = sources(&config.tool);
        let torch = report.torch.unwrap();
        let takers: Vec<&str> = torch.takers.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(takers, ["t._C"]);
        assert_eq!(torch.ignored, ["p._core"]);
        assert_eq!(report.overrides.len(), 1);
        assert_eq!(report.overrides[0].key, "tool.cudawheel.extension[2].archs");
        // The plan gives the same targets that list.
        let plan = BuildPlan::new(&config, &PythonInfo::for_tests(root)).unwrap();
        let t = plan.targets.iter().find(|t| t.module == "t._C").unwrap();
        assert_eq!(t.archs(&plan).unwrap().specs, torch.takers[0].1.specs);
        let p = plan.targets.iter().find(|t| t.module == "p._core").unwrap();
        assert!(p.archs(&plan).is_none());
    }
}
