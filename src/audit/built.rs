//! The built ELF files read back and checked before they go into a wheel: NEEDED/RPATH against
//! ELF rules, CUDA runtime symbols against the linked libcudart, and the GPU code each carries
//! (for `_cuda_libs.py` and variants); a stable-ABI torch extension's imports (`torch_abi`).

use std::collections::BTreeSet;
use std::path::Path;

use super::elf_rules::{self as elf, ElfError, ElfReport};
use super::runtime_symbols::RuntimeTooOld;
use crate::inspect::fatbin::{self, GpuCode};
use crate::libraries::FoundLibrary;
use crate::plan::TargetPlan;
use crate::toolchain::headers::HeaderSet;

/// A built file fails its checks: an ELF rule, or a runtime symbol its libcudart lacks.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CheckError {
    #[error(transparent)]
    Elf(#[from] ElfError),
    #[error(transparent)]
    Runtime(#[from] Box<RuntimeTooOld>),
    #[error(transparent)]
    StableAbi(#[from] Box<super::torch_abi::StableAbiBroken>),
}

/// What the audit read back from the built files, in plan order.
pub(crate) struct Checked {
    pub(crate) reports: Vec<ElfReport>,
    pub(crate) gpu_code: Vec<GpuCode>,
    /// Every SONAME any of them needs.
    pub(crate) needed: BTreeSet<String>,
}

/// What the ELF checks compare against.
pub(crate) struct Expect<'a> {
    /// Each target's RPATH, as the link wrote it.
    pub(crate) rpaths: &'a [Vec<String>],
    /// SONAMEs the wheel's dependencies (or the wheel itself) provide.
    pub(crate) provided: &'a BTreeSet<String>,
    pub(crate) system_rpath: bool,
    pub(crate) headers: &'a HeaderSet,
    pub(crate) cudart: Option<&'a FoundLibrary>,
    /// Each target's object files, and the project root they are named from.
    pub(crate) objects: &'a [Vec<std::path::PathBuf>],
    pub(crate) root: &'a Path,
}

/// Reads and checks every target's file under `out_dir`.
pub(crate) fn check(
    targets: &[TargetPlan],
    out_dir: &Path,
    want: &Expect<'_>,
) -> Result<Checked, CheckError> {
    let mut out = Checked {
        reports: Vec::new(),
        gpu_code: Vec::new(),
        needed: BTreeSet::new(),
    };
    for (i, target) in targets.iter().enumerate() {
        let file = out_dir.join(&target.wheel_path);
        let report = elf::read(&file).map_err(ElfError::from)?;
        elf::audit(
            &report,
            &target.wheel_path,
            &want.rpaths[i],
            want.provided,
            want.system_rpath,
        )?;
        if let Some(rt) = want.cudart {
            super::runtime_symbols::check_runtime(want.headers, rt, &target.wheel_path, &report)?;
        }
        if target.torch_stable_abi.is_some() {
            let objects = want.objects.get(i).map_or(&[][..], Vec::as_slice);
            super::torch_abi::check_built(
                &file,
                &target.wheel_path,
                &target.key,
                objects,
                want.root,
            )?;
        }
        out.needed.extend(report.needed.iter().cloned());
        out.reports.push(report);
        // What GPU code it carries, read back from its fatbin.
        let bytes = std::fs::read(&file).unwrap_or_default();
        out.gpu_code.push(fatbin::gpu_code(&bytes));
    }
    Ok(out)
}
