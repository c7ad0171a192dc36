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
    /// `pkg.mod`
    pub(super) module: String,
    /// What it links and carries, itself and through the wheel's own libraries.
    pub(super) reach: Reach,
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

/// A member auditwheel grafted (`<pkg>.libs/`) or one of the `.data` folders: in no package.
pub(super) fn grafted_or_data(path: &str) -> bool {
    path.contains(".libs/") || path.split('/').next().is_some_and(|t| t.ends_with(".data"))
}

/// The ELF members that are Python extension modules: named `<module><suffix>.so` and
/// exporting `PyInit_<module>`.
fn extension_members(members: &[Member]) -> Vec<(&Member, String, String)> {
    let mut out = Vec::new();
    for m in members.iter().filter(|m| m.is_elf()) {
        if grafted_or_data(&m.path) {
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

/// What an ELF links and carries, itself and through the wheel's own libraries it loads
/// (NEEDED, followed by SONAME or file name among the wheel's ELFs): the NVIDIA SONAMEs (in
/// NEEDED order) and the members with GPU code.
#[derive(Debug, Default, Clone)]
pub(super) struct Reach {
    pub(super) nvidia: Vec<String>,
    pub(super) code: Vec<String>,
    /// Every ELF of the wheel it loads, itself included.
    pub(super) files: Vec<String>,
}

impl Reach {
    fn is_empty(&self) -> bool {
        self.nvidia.is_empty() && self.code.is_empty()
    }
}

/// The reach of the ELF at `start` (`gpu`: the members with GPU code).
fn reach(
    start: &str,
    reports: &BTreeMap<String, ElfReport>,
    gpu: &BTreeMap<String, GpuCode>,
    needs: &Needs,
) -> Reach {
    let mut by_name: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (path, r) in reports {
        let file = path.rsplit('/').next().unwrap_or(path);
        for name in [r.soname.as_deref(), Some(file)].into_iter().flatten() {
            by_name.entry(name).or_default().push(path);
        }
    }
    let mut out = Reach::default();
    let mut seen = std::collections::BTreeSet::new();
    let mut todo = vec![start];
    while let Some(path) = todo.pop() {
        if !seen.insert(path) {
            continue;
        }
        out.files.push(path.to_string());
        if gpu.contains_key(path) {
            out.code.push(path.to_string());
        }
        for lib in reports.get(path).map_or(&[][..], |r| &r.needed[..]) {
            if needs.nvidia.contains_key(lib) && !out.nvidia.contains(lib) {
                out.nvidia.push(lib.clone());
            }
            todo.extend(by_name.get(lib.as_str()).into_iter().flatten());
        }
    }
    out.code.sort();
    out
}

/// The members with GPU code, and what it is: read once per repair (walking the fatbins of
/// big libraries takes time) and passed to `extensions`, `helpers` and the package hook.
pub(super) fn gpu_members(members: &[Member]) -> BTreeMap<String, GpuCode> {
    members
        .iter()
        .filter(|m| m.is_elf())
        .filter_map(|m| {
            let code = crate::inspect::fatbin::gpu_code(&m.bytes);
            (!code.is_empty()).then(|| (m.path.clone(), code))
        })
        .collect()
}

/// With the GPU check on, the loader of each extension module that links or carries CUDA
/// (itself or through the wheel's own libraries it loads); a module with neither stays as it
/// is. Each extension's module name and reach, for its helper's `MODULES`.
pub(super) fn extensions(
    members: &[Member],
    reports: &BTreeMap<String, ElfReport>,
    gpu: &BTreeMap<String, GpuCode>,
    needs: &Needs,
    settings: &RepairSettings,
) -> Result<Vec<Extension>, RepairError> {
    if !settings.check_gpu || !needs.links_cuda() {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for (m, dotted, suffix) in extension_members(members) {
        let reached = reach(&m.path, reports, gpu, needs);
        if reached.is_empty() {
            continue;
        }
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
            loader: [LOADER, crate::package::import_helper::LOAD_EXTENSION]
                .concat()
                .replace("@HELPER@", &helper)
                .replace("@REAL@", &real_file),
            loader_path,
            module: dotted,
            reach: reached,
        });
    }
    Ok(out)
}

/// One helper's libraries to preload, the GPU code of its package's ELFs, its modules.
type HelperData = (
    Vec<Preload>,
    Vec<(String, GpuCode)>,
    Vec<import_helper::Module>,
);

/// `_cuda_libs.py` for every package (or top-level module) whose ELFs link or carry CUDA: the
/// NVIDIA libraries its ELFs need, the GPU code they carry, and per wrapped extension what
/// that module itself reaches (`MODULES`). None for a wheel that links no CUDA.
pub(super) fn helpers(
    members: &[Member],
    reports: &BTreeMap<String, ElfReport>,
    gpu: &BTreeMap<String, GpuCode>,
    needs: &Needs,
    settings: &RepairSettings,
    (dist, extensions): (&str, &[Extension]),
) -> Vec<(String, String)> {
    let Some(major) = needs.major else {
        return Vec::new();
    };
    let preload = |lib: &String| {
        needs.nvidia.get(lib).map(|n| Preload {
            soname: lib.clone(),
            site_dir: n.site_dir.clone(),
            requirement: n.provider.requirement(),
        })
    };
    let mut by_helper: BTreeMap<String, HelperData> = BTreeMap::new();
    let add = |data: &mut HelperData, libs: &mut dyn Iterator<Item = &String>, code: &[String]| {
        for p in libs.filter_map(preload) {
            if !data.0.contains(&p) {
                data.0.push(p);
            }
        }
        for path in code {
            if let Some(c) = gpu
                .get(path)
                .filter(|_| !data.1.iter().any(|(p, _)| p == path))
            {
                data.1.push((path.clone(), c.clone()));
            }
        }
    };
    for m in members.iter().filter(|m| reports.contains_key(&m.path)) {
        if grafted_or_data(&m.path) {
            continue;
        }
        let data = by_helper.entry(helper_path(&m.path)).or_default();
        let code: Vec<String> = gpu
            .contains_key(&m.path)
            .then(|| m.path.clone())
            .into_iter()
            .collect();
        add(data, &mut reports[&m.path].needed.iter(), &code);
    }
    for ext in extensions {
        let data = by_helper.entry(helper_path(&ext.member)).or_default();
        add(data, &mut ext.reach.nvidia.iter(), &ext.reach.code);
        data.2.push(import_helper::Module {
            name: ext.module.clone(),
            sonames: ext.reach.nvidia.clone(),
            code: ext.reach.code.clone(),
        });
    }
    let cuda = (major, needs.cudart_minor());
    let floors = crate::plan::driver_floors::floors(cuda.0, cuda.1, &[]);
    let extra = (settings.cuda_deps == crate::config::CudaDeps::Extra)
        .then_some(settings.cuda_extra.as_str());
    by_helper
        .into_iter()
        .filter(|(_, (libs, gpus, modules))| {
            !(libs.is_empty() && gpus.is_empty() && modules.is_empty())
        })
        .map(|(path, (mut libs, gpus, modules))| {
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
            let text = import_helper::with_modules(&text, &modules);
            let text = import_helper::with_loads(&text, &[], extra.map(|e| (dist, e)));
            (path, text)
        })
        .collect()
}

const LOADER: &str = r#""""Generated by `cudawheel repair`: runs the GPU check (@HELPER@.preload(): the CUDA
driver, every visible GPU against this module's GPU code, the NVIDIA libraries it links), then loads the
real extension module, @REAL@ beside this file, under this module's name.
CUDAWHEEL_SKIP_GPU_CHECK=1 skips the check."""

import importlib
import importlib.machinery
import importlib.util
import os
import sys

importlib.import_module("@HELPER@").preload(__name__)
_path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "@REAL@")
"#;
