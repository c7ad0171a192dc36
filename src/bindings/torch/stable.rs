//! `torch-stable-abi`: a torch extension written against PyTorch's stable ABI (the C shims
//! `aoti_torch_*`/`torch_*`, the header-only `torch/csrc/stable` and `torch/headeronly`), built
//! once and run on its torch floor and every later release.
//!
//! - flags: `TORCH_TARGET_VERSION` for every compiler (torch's non-stable headers then expand
//!   to nothing, and an API newer than the floor is a compile error), `USE_CUDA` for nvcc (the
//!   declaration of `aoti_torch_get_current_cuda_stream`); none of the C++-ABI defines of a
//!   pinned extension (no C++ type crosses into torch);
//! - libraries: `torch_cpu` (the shims), and `torch_cuda` with CUDA sources; never
//!   `libtorch_python` or `c10`;
//! - requirements: torch from the floor on with no upper bound but the CUDA major's. PyPI's
//!   torch is built for CUDA 12 up to 2.10 and for CUDA 13 from 2.11 (`PYPI_TORCH_CUDA`), so a
//!   CUDA 13 wheel asks for `torch>=2.11` at least and a CUDA 12 one for `torch<2.11`; the
//!   NVIDIA floors are lowered to the CUDA of the oldest such torch, whose `==` pins they must
//!   fit beside.

use crate::bindings::torch::probe::TorchInfo;
use crate::bindings::BindingsError;
use crate::libraries::{FoundLibrary, Span};
use crate::plan::{BuildPlan, Lang, TargetPlan};

/// `major.minor` of a release.
pub(crate) type Release = (u64, u64);

/// PyPI's torch releases with a stable ABI and the CUDA their Linux x86_64 wheels depend on
/// (2.9 and 2.10: `nvidia-*-cu12` 12.8; 2.11 and later: `cuda-toolkit==13.0.2`, `13.0.3`,
/// `13.2.2`).
pub(crate) const PYPI_TORCH_CUDA: &[(Release, Release)] = &[
    ((2, 9), (12, 8)),
    ((2, 10), (12, 8)),
    ((2, 11), (13, 0)),
    ((2, 12), (13, 0)),
    ((2, 13), (13, 0)),
    ((2, 14), (13, 0)),
    ((2, 15), (13, 2)),
];

/// The first PyPI torch built for CUDA 13.
pub(crate) const FIRST_CUDA13: (u64, u64) = (2, 11);

/// `TORCH_TARGET_VERSION` of torch `major.minor`: `[major][minor][patch][5-byte tag]`, patch
/// and tag 0 (`0x020a000000000000` for 2.10).
pub(crate) fn target_version(v: (u64, u64)) -> String {
    format!("0x{:02x}{:02x}000000000000", v.0, v.1)
}

/// The torch releases a stable-ABI wheel built for CUDA `major` runs beside: the floor and
/// an exclusive upper bound. Without CUDA sources the CUDA major does not matter.
pub(crate) fn torch_range(
    floor: (u64, u64),
    cuda_major: Option<u32>,
) -> ((u64, u64), Option<(u64, u64)>) {
    match cuda_major {
        Some(13) => (floor.max(FIRST_CUDA13), None),
        Some(12) if floor < FIRST_CUDA13 => (floor, Some(FIRST_CUDA13)),
        _ => (floor, None),
    }
}

/// The CUDA `major.minor` of the oldest PyPI torch at or above `floor` built for `major`: the
/// NVIDIA floors a wheel must keep to install beside it (None: no such torch known).
pub(crate) fn cuda_floor(floor: (u64, u64), major: u32) -> Option<(u64, u64)> {
    PYPI_TORCH_CUDA
        .iter()
        .find(|(torch, cuda)| *torch >= floor && cuda.0 == u64::from(major))
        .map(|(_, cuda)| *cuda)
}

/// A target above the torch that builds it is refused (its headers would not compile it).
pub(crate) fn check_build_torch(info: &TorchInfo, plan: &BuildPlan) -> Result<(), BindingsError> {
    for t in &plan.targets {
        if let Some(target) = t.torch_stable_abi.filter(|v| *v > info.minor()) {
            return Err(BindingsError::StableAbiAboveTorch {
                key: format!("{}.torch-stable-abi", t.key),
                target,
                torch_version: info.version.clone(),
                dir: info.dir.clone(),
            });
        }
    }
    Ok(())
}

/// The flags of a stable-ABI target (the project's own stay last).
pub(crate) fn apply(target: &mut TargetPlan, info: &TorchInfo, floor: (u64, u64)) {
    let name = target.module.rsplit('.').next().unwrap_or(&target.module);
    let mut defines = vec![
        format!("TORCH_EXTENSION_NAME={name}"),
        format!("TORCH_TARGET_VERSION={}", target_version(floor)),
    ];
    defines.append(&mut target.defines);
    target.defines = defines;
    let std = super::std_flag(info);
    let prefix_map = format!("-ffile-prefix-map={}/=torch/", info.dir.display());
    let mut cxx = vec![std.clone(), prefix_map.clone()];
    cxx.append(&mut target.cxx_flags);
    target.cxx_flags = cxx;
    let mut nvcc = vec![
        "-DUSE_CUDA".to_string(),
        "--expt-relaxed-constexpr".to_string(),
        std,
        "-Xcompiler".into(),
        prefix_map.replace(',', "\\,"),
    ];
    nvcc.append(&mut target.nvcc_flags);
    target.nvcc_flags = nvcc;
}

/// The library groups (`super::GROUPS`) a stable-ABI target links.
pub(crate) fn groups_for(target: &TargetPlan) -> Vec<&'static str> {
    let mut out = vec!["torch_cpu"];
    if target.sources.iter().any(|s| s.lang == Lang::Cuda) {
        out.push("torch_cuda_shims");
    }
    out
}

/// Torch's library as a stable-ABI target needs it: required from the floor on, within the
/// CUDA major's releases.
pub(crate) fn open_up(lib: &mut FoundLibrary, target: &TargetPlan, floor: (u64, u64), major: u32) {
    let cuda = target
        .sources
        .iter()
        .any(|s| s.lang == Lang::Cuda)
        .then_some(major);
    let (from, below) = torch_range(floor, cuda);
    if let Some(p) = lib.provider.as_mut() {
        p.floor = from;
        p.span = Span::Open { below };
    }
}

/// Lowers the NVIDIA floors of a build with stable-ABI CUDA targets to the CUDA of the oldest
/// torch of that major the wheel supports, so that it installs beside that torch's pins.
pub(crate) fn fit_floors(
    libs: &mut std::collections::BTreeMap<String, FoundLibrary>,
    plan: &BuildPlan,
    major: u32,
) {
    let Some(floor) = plan
        .targets
        .iter()
        .filter(|t| t.sources.iter().any(|s| s.lang == Lang::Cuda))
        .filter_map(|t| t.torch_stable_abi)
        .min()
    else {
        return;
    };
    let Some(cap) = cuda_floor(floor, major) else {
        return;
    };
    for lib in libs.values_mut() {
        if let Some(p) = lib.provider.as_mut() {
            if p.dist.starts_with("nvidia-") && p.floor.0 == cap.0 && p.floor > cap {
                p.floor = cap;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_versions() {
        assert_eq!(target_version((2, 10)), "0x020a000000000000");
        assert_eq!(target_version((2, 15)), "0x020f000000000000");
    }

    #[test]
    fn the_cuda_major_bounds_the_torch_range() {
        assert_eq!(torch_range((2, 10), Some(13)), ((2, 11), None));
        assert_eq!(torch_range((2, 13), Some(13)), ((2, 13), None));
        assert_eq!(torch_range((2, 10), Some(12)), ((2, 10), Some((2, 11))));
        // A CUDA 12 build against a later torch (PyTorch's own index): no PyPI bound to keep.
        assert_eq!(torch_range((2, 12), Some(12)), ((2, 12), None));
        // No CUDA sources: every torch from the floor on.
        assert_eq!(torch_range((2, 10), None), ((2, 10), None));
        assert_eq!(cuda_floor((2, 10), 13), Some((13, 0)));
        assert_eq!(cuda_floor((2, 10), 12), Some((12, 8)));
        assert_eq!(cuda_floor((2, 15), 13), Some((13, 2)));
        assert_eq!(cuda_floor((2, 11), 12), None);
    }
}
