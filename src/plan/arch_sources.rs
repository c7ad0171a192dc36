//! Where the GPU architectures of each target come from, as data for a report: the top-level
//! list (`archs`, `CUDAARCHS`, else the CUDA major's default), the targets with a list of their
//! own, and the torch extensions that take `TORCH_CUDA_ARCH_LIST` (the other targets ignore
//! it). The rules are the plan's (`bindings_of`, the target's own list first).

use crate::config::{Bindings, Origin, ToolConfig};

use super::arch::{self, ArchError, ArchList};
use super::bindings_of;

/// Every list a build would use, and where each came from.
#[derive(Debug)]
pub struct ArchSources {
    /// The top-level list as written (`None`: unset).
    pub top_raw: Option<String>,
    /// It parsed; `Ok(None)`: the CUDA major's default.
    pub top: Result<Option<ArchList>, ArchError>,
    /// Targets whose own `archs` override the top-level list.
    pub overrides: Vec<TargetArchs>,
    /// `TORCH_CUDA_ARCH_LIST`, when it is set.
    pub torch: Option<TorchArchs>,
}

/// A target's own `archs`.
#[derive(Debug)]
pub struct TargetArchs {
    /// The target's module name.
    pub name: String,
    /// `tool.cudawheel.shared-library[0].archs`
    pub key: String,
    /// The list as written, space-separated.
    pub raw: String,
    pub list: Result<ArchList, ArchError>,
}

/// `TORCH_CUDA_ARCH_LIST` and the targets it applies to.
#[derive(Debug)]
pub struct TorchArchs {
    /// As written, space-separated.
    pub raw: String,
    pub origin: Origin,
    /// The torch extensions without `archs` of their own, which take it: (name, list).
    pub takers: Vec<(String, ArchList)>,
    /// The targets that ignore it (not torch extensions).
    pub ignored: Vec<String>,
}

/// The targets of `tool` with whether each is a shared library, in the plan's order.
fn targets(tool: &ToolConfig) -> impl Iterator<Item = (&crate::config::TargetConfig, bool)> {
    let libs = tool.shared_libraries.iter().map(|t| (t, true));
    libs.chain(tool.extensions.iter().map(|t| (t, false)))
}

/// Where the archs of every target of `tool` come from.
pub fn sources(tool: &ToolConfig) -> ArchSources {
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
