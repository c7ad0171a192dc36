//! The import side of a repaired wheel. Each package gets `_cuda_libs.py` (the same helper a
//! cudawheel build writes: the NVIDIA libraries to preload, the GPU code of its ELFs), and,
//! with the GPU check on, each extension module a generated loader in its place: the real
//! extension moves beside it under a name no import finds (`mod.cudawheel-ext<suffix>`, a dot
//! in the stem), and `mod.py` runs the helper's `preload()` (driver and GPU check, NVIDIA
//! libraries), then loads the real file with importlib's `ExtensionFileLoader` under the same
//! module name and puts it in `sys.modules`. So `import pkg.mod` and `from pkg import mod` give
//! the extension module itself (`__name__` `pkg.mod`, `__file__` the real `.so`), whose
//! `PyInit_mod` the loader finds by that name. The project changes nothing.

use std::collections::BTreeMap;

use super::needs::Needs;
use super::wheel_in::Member;
use super::{RepairError, RepairSettings};
use crate::audit::elf_rules::ElfReport;
use crate::inspect::fatbin::GpuCode;
use crate::package::import_helper::{self, Preload};
use crate::package::wheel::helper_path;

/// An extension module replaced by a loader.
pub(super) struct Extension {
    /// Its path in the wheel (the `.so`).
    pub(super) member: String,
    /// Where the real extension goes.
    pub(super) real_path: String,
    /// `pkg/mod.py`'s text.
    pub(super) loader: String,
    /// `pkg/mod.py`
    pub(super) loader_path: String,
}

/// `mod.cpython-311-x86_64-linux-gnu.so` -> (`mod`, `.cpython-311-x86_64-linux-gnu.so`).
fn split_module(file: &str) -> Option<(&str, &str)> {
    let (stem, suffix) = file.split_at(file.find('.')?);
    let valid = stem
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && stem.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    (valid && suffix.ends_with(".so")).then_some((stem, suffix))
}

/// The ELF members that are Python extension modules: named `<module><suffix>.so` and
/// exporting `PyInit_<module>`.
fn extension_members(members: &[Member]) -> Vec<(&Member, String, String)> {
    let mut out = Vec::new();
    for m in members.iter().filter(|m| m.is_elf()) {
        if m.path.contains(".libs/")
            || m.path
                .split('/')
                .next()
                .is_some_and(|t| t.ends_with(".data"))
        {
            continue;
        }
        let (dir, file) = m.path.rsplit_once('/').unwrap_or(("", &m.path));
        let Some((module, suffix)) = split_module(file) else {
            continue;
        };
        let Ok(exports) = crate::inspect::elf::exported_in(std::path::Path::new(&m.path), &m.bytes)
        else {
            continue;
        };
        if exports.contains(&format!("PyInit_{module}")) {
            let dotted = if dir.is_empty() {
                module.to_string()
            } else {
                format!("{}.{module}", dir.replace('/', "."))
            };
            out.push((m, dotted, suffix.to_string()));
        }
    }
    out
}

/// With the GPU check on, the loader of each extension module.
pub(super) fn extensions(
    members: &[Member],
    settings: &RepairSettings,
) -> Result<Vec<Extension>, RepairError> {
    if !settings.check_gpu {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for (m, dotted, suffix) in extension_members(members) {
        let (dir, file) = m
            .path
            .rsplit_once('/')
            .map_or(("", m.path.as_str()), |(d, f)| (d, f));
        let module = &file[..file.len() - suffix.len()];
        let join = |f: String| {
            if dir.is_empty() {
                f
            } else {
                format!("{dir}/{f}")
            }
        };
        let loader_path = join(format!("{module}.py"));
        if members.iter().any(|o| o.path == loader_path) {
            return Err(RepairError::Shadowed {
                member: m.path.clone(),
                shadow: loader_path,
            });
        }
        let real_file = format!("{module}.cudawheel-ext{suffix}");
        let helper = crate::bindings::import_check::helper_module(&dotted);
        out.push(Extension {
            member: m.path.clone(),
            real_path: join(real_file.clone()),
            loader: LOADER
                .replace("@HELPER@", &helper)
                .replace("@REAL@", &real_file),
            loader_path,
        });
    }
    Ok(out)
}

/// One helper's libraries to preload and the GPU code of its package's ELFs.
type HelperData = (Vec<Preload>, Vec<(String, GpuCode)>);

/// `_cuda_libs.py` for every package (or top-level module) with an extension or ELF: the
/// NVIDIA libraries its ELFs need, the GPU code they carry.
pub(super) fn helpers(
    members: &[Member],
    reports: &BTreeMap<String, ElfReport>,
    needs: &Needs,
    settings: &RepairSettings,
    dist: &str,
) -> Vec<(String, String)> {
    let requirements: BTreeMap<String, String> = needs
        .nvidia
        .iter()
        .map(|(soname, n)| (soname.clone(), n.provider.requirement()))
        .collect();
    let mut by_helper: BTreeMap<String, HelperData> = BTreeMap::new();
    for m in members.iter().filter(|m| reports.contains_key(&m.path)) {
        if m.path.contains(".libs/")
            || m.path
                .split('/')
                .next()
                .is_some_and(|t| t.ends_with(".data"))
        {
            continue;
        }
        let (libs, gpus) = by_helper.entry(helper_path(&m.path)).or_default();
        for lib in &reports[&m.path].needed {
            let (Some(n), Some(req)) = (needs.nvidia.get(lib), requirements.get(lib)) else {
                continue;
            };
            let p = Preload {
                soname: lib.clone(),
                site_dir: n.site_dir.clone(),
                requirement: req.clone(),
            };
            if !libs.contains(&p) {
                libs.push(p);
            }
        }
        let code = crate::inspect::fatbin::gpu_code(&m.bytes);
        if !code.is_empty() {
            gpus.push((m.path.clone(), code));
        }
    }
    let cuda = (needs.major, needs.cudart_minor());
    let floors = crate::plan::driver_floors::floors(cuda.0, cuda.1, &[]);
    let extra = (settings.cuda_deps == crate::config::CudaDeps::Extra)
        .then_some(settings.cuda_extra.as_str());
    by_helper
        .into_iter()
        .map(|(path, (mut libs, gpus))| {
            libs.sort_by_key(|l| !l.soname.starts_with("libcudart."));
            let text = import_helper::render(&import_helper::Helper {
                libs: &libs,
                cuda,
                torch: needs
                    .pins
                    .iter()
                    .any(|p| p.dist == crate::bindings::torch::DIST),
                gpus: &gpus,
                floors: &floors,
            });
            let text = import_helper::with_loads(&text, &[], extra.map(|e| (dist, e)));
            (path, text)
        })
        .collect()
}

const LOADER: &str = r#""""Generated by `cudawheel repair`: runs the GPU check (@HELPER@.preload(): the CUDA
driver, every visible GPU against this wheel's GPU code, the NVIDIA libraries), then loads the
real extension module, @REAL@ beside this file, under this module's name.
CUDAWHEEL_SKIP_GPU_CHECK=1 skips the check."""

import importlib
import importlib.machinery
import importlib.util
import os
import sys

importlib.import_module("@HELPER@").preload()
_path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "@REAL@")
_spec = importlib.util.spec_from_file_location(
    __name__, _path, loader=importlib.machinery.ExtensionFileLoader(__name__, _path)
)
_module = importlib.util.module_from_spec(_spec)
sys.modules[__name__] = _module
_spec.loader.exec_module(_module)
"#;
