//! Which libraries each target links: libcudart (shared or static, `cudart`), the libraries a
//! binding framework brings (torch's), then the target's `cuda-libraries`, found once each. An
//! `optional` target whose library is missing (or that links a skipped shared library) is
//! dropped with a warning, never built half.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::{find, spec_for, FoundLibrary, LibraryError, Provider};
use crate::config::{Cudart, ToolConfig};
use crate::plan::TargetPlan;
use crate::toolchain::headers::HeaderSet;
use crate::toolchain::Nvcc;
use crate::ui;

/// Where libraries are looked for.
pub(crate) struct Search<'a> {
    pub(crate) tool: &'a ToolConfig,
    pub(crate) major: u32,
    pub(crate) nvcc: &'a Nvcc,
    pub(crate) headers: &'a HeaderSet,
    pub(crate) env: &'a BTreeMap<String, String>,
    pub(crate) sys_path: &'a [PathBuf],
}

/// The targets kept, what each links (names into `libs`, cudart first), and every library
/// found, by name.
pub(crate) struct Linked {
    pub(crate) targets: Vec<TargetPlan>,
    pub(crate) target_libs: Vec<Vec<String>>,
    pub(crate) libs: BTreeMap<String, FoundLibrary>,
}

/// libcudart as `cudart` says (shared by default, or the static archive), its `Requires-Dist`
/// floor fitted to the headers compiled against.
pub(crate) fn find_cudart(s: &Search<'_>) -> Result<FoundLibrary, LibraryError> {
    let spec = match s.tool.cudart {
        Cudart::Shared => spec_for("cudart", s.major, s.tool, "tool.cudawheel.cudart")?,
        Cudart::Static => super::static_cudart_spec(),
    };
    let mut cudart = find(&spec, s.major, s.nvcc, s.env, s.sys_path, false)?;
    if let Some(p) = cudart.provider.as_mut() {
        p.floor = super::cudart::runtime_floor(s.headers, p.floor);
    }
    Ok(cudart)
}

/// `framework(target)`: the libraries a binding framework links into that target (torch's
/// groups), already found.
pub(crate) fn for_targets(
    targets: Vec<TargetPlan>,
    s: &Search<'_>,
    framework: &dyn Fn(&TargetPlan) -> Vec<(String, FoundLibrary)>,
) -> Result<Linked, LibraryError> {
    let mut libs = BTreeMap::new();
    libs.insert("cudart".to_string(), find_cudart(s)?);
    let mut out = Linked {
        targets: Vec::new(),
        target_libs: Vec::new(),
        libs,
    };
    let mut skipped: Vec<String> = Vec::new();
    for target in targets {
        let mut names = vec!["cudart".to_string()];
        let mut missing = target
            .link_with
            .iter()
            .find(|l| skipped.contains(l))
            .map(|lib| format!("it links the skipped shared library {lib:?}"));
        for (name, found) in framework(&target) {
            out.libs.entry(name.clone()).or_insert(found);
            names.push(name);
        }
        let key = format!("{}.cuda-libraries", target.key);
        for name in &target.cuda_libraries {
            if missing.is_some() {
                break;
            }
            let spec = spec_for(name, s.major, s.tool, &key)?;
            match find(&spec, s.major, s.nvcc, s.env, s.sys_path, target.rdc) {
                Ok(found) => {
                    out.libs.entry(name.clone()).or_insert(found);
                    names.push(name.clone());
                }
                Err(e @ LibraryError::NotFound { .. }) if target.optional => {
                    missing = Some(e.to_string());
                }
                Err(e) => return Err(e),
            }
        }
        if let Some(why) = missing {
            ui::warn(&format!(
                "skipping the optional target `{}` ({}): {why}",
                target.module, target.key
            ));
            skipped.push(target.module.clone());
        } else {
            out.target_libs.push(names);
            out.targets.push(target);
        }
    }
    Ok(out)
}

/// `Requires-Dist` entries for the libraries providing `sonames`: one per distribution, with
/// the highest floor when two libraries of one distribution disagree.
pub(crate) fn requirements_for<'a>(
    libs: impl IntoIterator<Item = &'a FoundLibrary>,
    sonames: &std::collections::BTreeSet<String>,
) -> Vec<String> {
    let mut by_dist: BTreeMap<String, Provider> = BTreeMap::new();
    for lib in libs {
        let Some(p) = &lib.provider else { continue };
        if !lib.shared.iter().any(|s| sonames.contains(&s.soname)) {
            continue;
        }
        let slot = by_dist.entry(p.dist.clone()).or_insert_with(|| p.clone());
        if p.floor > slot.floor {
            slot.floor = p.floor;
        }
        // One target pinned to a torch minor pins the wheel.
        if p.span == super::Span::Minor {
            slot.span = p.span;
        }
    }
    by_dist.values().map(Provider::requirement).collect()
}
