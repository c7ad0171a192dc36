//! One wheel holding a build per CUDA major (`cuda = ["12", "13"]`): what it holds besides each
//! major's files, as data. Each major's build names its extensions
//! `<module>.cudawheel-cu<major><EXT_SUFFIX>` and its helpers `_cuda_libs_cu<major>.py`
//! (`plan::part_infix`, `part_helper_path`); this module adds, per top-level package,
//! `_cuda_select.py` (which major this process loads, and why: `_cuda_select.py`'s rules) and
//! `_cuda_libs.py` (the chosen major's helper, for the package's own `preload()` call), and per
//! extension module a loader `<module>.py` that loads the chosen major's file under the
//! module's name. METADATA: each major's NVIDIA wheels under the extra `cu<major>`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use super::archive::{ArchiveError, Files};
use super::wheel as wheel_files;
use crate::config::Bindings;
use crate::plan::{TargetKind, TargetPlan};

/// One major's finished build, as the wheel takes it.
pub(crate) struct Part<'a> {
    pub(crate) major: u32,
    pub(crate) targets: &'a [TargetPlan],
    /// Staging folder holding its targets at their wheel paths.
    pub(crate) out_dir: &'a Path,
    /// `(wheel path, text)` of its helpers (`part_helper_path`'s names).
    pub(crate) helpers: Vec<(String, String)>,
}

/// `pkg/_cuda_libs.py` -> `pkg/_cuda_libs_cu12.py`: one major's helper beside the others.
pub(crate) fn part_helper_path(path: &str, major: u32) -> String {
    match path.strip_suffix(".py") {
        Some(stem) => format!("{stem}_cu{major}.py"),
        None => path.to_string(),
    }
}

fn py_majors(majors: &[u32]) -> String {
    match majors {
        [one] => format!("({one},)"),
        _ => format!(
            "({})",
            majors
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// The framework requirements of every major's build as the one wheel's: each distribution
/// once, the ranges several majors ask for joined (`torch>=2.10,<2.11` from the CUDA 12 build
/// and `torch>=2.11` from the CUDA 13 build of a stable-ABI extension: `torch>=2.10`). `Err`
/// names a distribution whose requirements do not join: another operator than `>=` and `<`
/// (a pinned torch extension), or ranges with a gap between them.
pub(crate) fn framework_requires(per_major: &[Vec<String>]) -> Result<Vec<String>, String> {
    use std::str::FromStr;
    type Req = pep508_rs::Requirement<pep508_rs::VerbatimUrl>;
    let mut order: Vec<String> = Vec::new();
    let mut by_name: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for req in per_major.iter().flatten() {
        let name = Req::from_str(req).map_or_else(|_| req.clone(), |r| r.name.to_string());
        let seen = by_name.entry(name.clone()).or_default();
        if seen.is_empty() {
            order.push(name);
        }
        if !seen.contains(req) {
            seen.push(req.clone());
        }
    }
    order
        .into_iter()
        .map(|name| match &by_name[&name][..] {
            [one] => Ok(one.clone()),
            several => join_ranges(&name, several).ok_or_else(|| several.join(" and ")),
        })
        .collect()
}

/// `name>=lo[,<hi]` covering every range of `reqs` (each only `>=` and `<`), if they meet.
fn join_ranges(name: &str, reqs: &[String]) -> Option<String> {
    use pep440_rs::{Operator, Version};
    use std::str::FromStr;
    let mut ranges: Vec<(Version, Option<Version>)> = Vec::new();
    for req in reqs {
        let r = pep508_rs::Requirement::<pep508_rs::VerbatimUrl>::from_str(req).ok()?;
        let Some(pep508_rs::VersionOrUrl::VersionSpecifier(specs)) = r.version_or_url else {
            return None;
        };
        let (mut lo, mut hi) = (None, None);
        for spec in specs.iter() {
            match spec.operator() {
                Operator::GreaterThanEqual if lo.is_none() => lo = Some(spec.version().clone()),
                Operator::LessThan if hi.is_none() => hi = Some(spec.version().clone()),
                _ => return None,
            }
        }
        ranges.push((lo?, hi));
    }
    ranges.sort_by(|a, b| a.0.cmp(&b.0));
    let mut ranges = ranges.into_iter();
    let (lo, mut hi) = ranges.next()?;
    for (next_lo, next_hi) in ranges {
        if hi.as_ref().is_some_and(|h| next_lo > *h) {
            return None;
        }
        hi = match (hi, next_hi) {
            (Some(a), Some(b)) => Some(a.max(b)),
            _ => None,
        };
    }
    Some(match hi {
        Some(hi) => format!("{name}>={lo},<{hi}"),
        None => format!("{name}>={lo}"),
    })
}

/// `<package>/_cuda_select.py` for a package holding builds of `majors`. A package with torch
/// extensions imports torch first: every choice (the loaders', `python -m cudawheel check`'s)
/// then follows torch's CUDA (the second rule), and the build loaded finds torch's libraries
/// already in the process.
pub(crate) fn select_module(majors: &[u32], torch: bool) -> String {
    SELECT
        .replace("@VERSION@", env!("CARGO_PKG_VERSION"))
        .replace(
            "# @IMPORT_FIRST@\n",
            if torch {
                super::import_helper::TORCH_FIRST
            } else {
                ""
            },
        )
        .replace(
            "MAJORS = ()  # @MAJORS@",
            &format!("MAJORS = {}", py_majors(majors)),
        )
}

/// `<package>/_cuda_libs.py`: the helper of the major `_cuda_select` chose.
pub(crate) fn helper_alias(majors: &[u32]) -> String {
    let list: Vec<String> = majors.iter().map(|m| format!("_cuda_libs_cu{m}")).collect();
    format!(
        "\"\"\"Generated by cudawheel {}: this package holds a build per CUDA major, each with its own helper\n({}); this module is the helper of the major chosen for this process (``_cuda_select``),\nso ``from . import _cuda_libs; _cuda_libs.preload()`` works as with one major.\"\"\"\n# cudawheel: several CUDA majors\n\nimport importlib\nimport sys\n\nfrom . import _cuda_select\n\nsys.modules[__name__] = importlib.import_module(\"%s._cuda_libs_cu%d\" % (__package__, _cuda_select.major()))\n",
        env!("CARGO_PKG_VERSION"),
        list.join(", ")
    )
}

/// The loader `<module>.py` of the extension `module` (`pkg.sub._core`), whose build of each
/// major is `files` (major, file name beside the loader).
pub(crate) fn loader(module: &str, files: &[(u32, String)]) -> String {
    let package = module.split('.').next().unwrap_or(module);
    let mut table = String::new();
    for (major, file) in files {
        let _ = writeln!(table, "    {major}: {file:?},");
    }
    [LOADER, super::import_helper::LOAD_EXTENSION]
        .concat()
        .replace("@VERSION@", env!("CARGO_PKG_VERSION"))
        .replace("@MODULE@", module)
        .replace("@PACKAGE@", package)
        .replace("    # @FILES@\n", &table)
}

const SELECT: &str = include_str!("_cuda_select.py");

const LOADER: &str = r#""""Generated by cudawheel @VERSION@: loads the build of @MODULE@ for the CUDA major chosen for this
process (@PACKAGE@._cuda_select: the CUDA already loaded or installed), from the file beside this one,
under this module's name. The build of another major is never loaded."""

import importlib
import importlib.machinery
import importlib.util
import os
import sys

_FILES = {
    # @FILES@
}
_major = importlib.import_module("@PACKAGE@._cuda_select").major()
if _major not in _FILES:
    raise ImportError("@MODULE@ has no build for CUDA %d (builds: CUDA %s)" % (_major, ", ".join(map(str, _FILES))))
_path = os.path.join(os.path.dirname(os.path.abspath(__file__)), _FILES[_major])
"#;

/// The files of the one wheel: the packages (`packages` under `python_source`), every major's
/// targets and helpers, and per top-level package `_cuda_select.py` and `_cuda_libs.py`, per
/// extension module its loader. Returns them with the built ELF files they hold.
pub(crate) fn contents(
    parts: &[Part<'_>],
    python_source: &Path,
    packages: &[std::path::PathBuf],
) -> Result<(Files, Vec<std::path::PathBuf>), ArchiveError> {
    let majors: Vec<u32> = parts.iter().map(|p| p.major).collect();
    let mut files = Files::default();
    let mut elfs = Vec::new();
    // Per extension module: (major, file name) of each build, and whether it uses torch.
    type Builds = (Vec<(u32, String)>, bool);
    let mut builds: BTreeMap<&str, Builds> = BTreeMap::new();
    let mut stale: Vec<String> = Vec::new();
    for part in parts {
        for t in part.targets {
            stale.push(t.wheel_path.clone());
            if t.kind == TargetKind::Extension {
                let file = t.wheel_path.rsplit('/').next().unwrap_or(&t.wheel_path);
                let entry = builds.entry(&t.module).or_default();
                entry.0.push((part.major, file.to_string()));
                entry.1 |= t.bindings == Bindings::Torch;
            }
        }
    }
    for pkg in packages {
        wheel_files::add_package(&mut files, python_source, pkg, &stale)?;
    }
    // Per top-level package: whether any of its extensions uses torch.
    let mut tops: BTreeMap<String, bool> = BTreeMap::new();
    for (module, (list, torch)) in &builds {
        let path = crate::plan::loader_path(module);
        files.add_bytes(&path, loader(module, list), false);
        *tops
            .entry(module.split('.').next().unwrap_or(module).to_string())
            .or_default() |= torch;
    }
    for (top, torch) in tops {
        files.add_bytes(
            &format!("{top}/_cuda_select.py"),
            select_module(&majors, torch),
            false,
        );
        files.add_bytes(
            &format!("{top}/_cuda_libs.py"),
            helper_alias(&majors),
            false,
        );
    }
    for part in parts {
        for (path, text) in &part.helpers {
            files.add_bytes(path, text.clone(), false);
        }
        for t in part.targets {
            let from = part.out_dir.join(&t.wheel_path);
            files.add_file(&t.wheel_path, &from)?;
            elfs.push(from);
        }
    }
    Ok((files, elfs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn framework_ranges_of_the_majors_join() {
        let v = |items: &[&str]| items.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        // A stable-ABI torch extension: the CUDA 12 build beside torch 2.10, the CUDA 13 build
        // beside 2.11 and later.
        let joined = framework_requires(&[v(&["torch>=2.10,<2.11"]), v(&["torch>=2.11"])]);
        assert_eq!(joined, Ok(v(&["torch>=2.10"])));
        let joined =
            framework_requires(&[v(&["torch>=2.6,<2.11", "jax>=0.5"]), v(&["torch>=2.9,<3"])]);
        assert_eq!(joined, Ok(v(&["torch>=2.6,<3", "jax>=0.5"])));
        // The same requirement twice is kept once.
        let same = framework_requires(&[v(&["torch>=2.9,<2.10"]), v(&["torch>=2.9,<2.10"])]);
        assert_eq!(same, Ok(v(&["torch>=2.9,<2.10"])));
        // Controls: pinned extensions, and ranges with a gap, do not join.
        let pinned = framework_requires(&[v(&["torch==2.10.*"]), v(&["torch==2.15.*"])]);
        assert_eq!(pinned, Err("torch==2.10.* and torch==2.15.*".to_string()));
        let gap = framework_requires(&[v(&["torch>=2.6,<2.8"]), v(&["torch>=2.11"])]);
        assert!(gap.is_err(), "{gap:?}");
    }

    #[test]
    fn the_selector_lists_the_majors_and_fills_every_marker() {
        let text = select_module(&[12, 13], false);
        assert!(!text.contains("import torch"), "{text}");
        let torch = select_module(&[12, 13], true);
        let first = torch.find("\nimport torch  # noqa").expect("imports torch");
        assert!(first < torch.find("\ndef _from_torch").unwrap(), "{torch}");
        assert!(!torch.contains('@'), "{torch}");
        assert!(text.contains("\nMAJORS = (12, 13)\n"), "{text}");
        assert!(!text.contains('@'), "{text}");
        // The rules, in the documented order.
        assert!(text.contains("RULES = (_from_environment, _from_torch, _from_jax, _from_process, _from_wheels, _from_driver)"));
        assert!(text.contains("\"nvidia/cu13/lib\", \"libcudart.so.13\""));
        assert!(text.contains("\"nvidia/cuda_runtime/lib\", \"libcudart.so.12\""));
        assert!(text.contains("libcuda.cuDriverGetVersion(ctypes.byref(version))"));
        assert!(text.contains("supported = [m for m in MAJORS if m <= version.value // 1000]"));
        assert_eq!(
            select_module(&[13], false)
                .matches("MAJORS = (13,)")
                .count(),
            1
        );
    }

    #[test]
    fn the_loader_loads_the_chosen_file_under_the_module_s_name() {
        let files = [
            (12, "_core.cudawheel-cu12.abi3.so".to_string()),
            (13, "_core.cudawheel-cu13.abi3.so".to_string()),
        ];
        let text = loader("saxpy._core", &files);
        assert!(text.contains(
            "_FILES = {\n    12: \"_core.cudawheel-cu12.abi3.so\",\n    13: \"_core.cudawheel-cu13.abi3.so\",\n}\n"
        ), "{text}");
        assert!(text.contains("importlib.import_module(\"saxpy._cuda_select\").major()"));
        assert!(text.contains("ExtensionFileLoader(__name__, _path)"));
        assert!(text.contains("sys.modules[__name__] = _module"));
        assert!(!text.contains('@'), "{text}");
        let alias = helper_alias(&[12, 13]);
        assert!(
            alias.contains("(_cuda_libs_cu12, _cuda_libs_cu13)"),
            "{alias}"
        );
        assert!(alias.contains(
            "import_module(\"%s._cuda_libs_cu%d\" % (__package__, _cuda_select.major()))"
        ));
        assert_eq!(
            part_helper_path("saxpy/_cuda_libs.py", 12),
            "saxpy/_cuda_libs_cu12.py"
        );
    }
}
