//! The built-in catalogue of CUDA libraries , per CUDA major: which headers prove
//! a library is there, which shared/static libraries to link, and which NVIDIA wheel provides
//! it at run time and where that wheel puts it inside site-packages.
//!
//! Facts read from NVIDIA's real wheels: CUDA 11/12 wheels use
//! one folder per component (`nvidia/cublas/`), CUDA 13 toolkit wheels share `nvidia/cu13/`,
//! and nccl/cudnn/nvshmem keep `nvidia/<name>/` with `-cu12`/`-cu13` twins that collide, so a
//! wheel's major is told by its distribution name, never by its folder or SONAMEs.

/// Where one CUDA major's wheel installs a library.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WheelLayout {
    /// Distribution name (`nvidia-cublas-cu12`, `nvidia-cublas`, `nvidia-nccl-cu13`).
    pub(crate) dist: &'static str,
    /// Folder inside site-packages holding `include/` and `lib/`.
    pub(crate) dir: &'static str,
    /// Include folder below `dir` (CUDA 13's CCCL adds a `cccl/` level).
    pub(crate) include: &'static str,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct CatalogEntry {
    pub(crate) name: &'static str,
    pub(crate) env_prefix: &'static str,
    /// Headers that must be found.
    pub(crate) headers: &'static [&'static str],
    /// Shared libraries to link (`cublas` -> `libcublas.so*`, linked by SONAME).
    pub(crate) shared: &'static [&'static str],
    /// Static libraries for the device link (`rdc = true`).
    pub(crate) statics: &'static [&'static str],
    /// The extra of NVIDIA's `cuda-toolkit` meta package that installs it, if it is a toolkit
    /// component (nccl, cudnn and nvshmem are not).
    pub(crate) toolkit_extra: Option<&'static str>,
    /// Wheels for CUDA 11, 12 and 13.
    pub(crate) wheels: [Option<WheelLayout>; 3],
}

const fn w(dist: &'static str, dir: &'static str) -> Option<WheelLayout> {
    Some(WheelLayout {
        dist,
        dir,
        include: "include",
    })
}

/// A toolkit component: `-cu11`/`-cu12` wheels in `nvidia/<dir>`, the unsuffixed CUDA 13 one in
/// `nvidia/cu13`.
macro_rules! toolkit {
    ($name:literal, $prefix:literal, $dist:literal, $dir:literal, $headers:expr, $shared:expr, cu11: $cu11:expr) => {
        CatalogEntry {
            name: $name,
            env_prefix: $prefix,
            headers: $headers,
            shared: $shared,
            statics: &[],
            toolkit_extra: Some($name),
            wheels: [
                if $cu11 {
                    w(concat!($dist, "-cu11"), concat!("nvidia/", $dir))
                } else {
                    None
                },
                w(concat!($dist, "-cu12"), concat!("nvidia/", $dir)),
                w($dist, "nvidia/cu13"),
            ],
        }
    };
}

pub(crate) static CATALOG: &[CatalogEntry] = &[
    toolkit!("cudart", "CUDART", "nvidia-cuda-runtime", "cuda_runtime", &["cuda_runtime_api.h"], &["cudart"], cu11: true),
    CatalogEntry {
        name: "cccl",
        env_prefix: "CCCL",
        headers: &["cub/cub.cuh", "thrust/version.h"],
        shared: &[],
        statics: &[],
        toolkit_extra: Some("cccl"),
        wheels: [
            w("nvidia-cuda-cccl-cu11", "nvidia/cuda_cccl"),
            w("nvidia-cuda-cccl-cu12", "nvidia/cuda_cccl"),
            Some(WheelLayout {
                dist: "nvidia-cuda-cccl",
                dir: "nvidia/cu13",
                include: "include/cccl",
            }),
        ],
    },
    toolkit!("cublas", "CUBLAS", "nvidia-cublas", "cublas", &["cublas_v2.h", "cublasLt.h"], &["cublas", "cublasLt"], cu11: true),
    toolkit!("cufft", "CUFFT", "nvidia-cufft", "cufft", &["cufft.h"], &["cufft"], cu11: true),
    toolkit!("curand", "CURAND", "nvidia-curand", "curand", &["curand.h"], &["curand"], cu11: true),
    toolkit!("cusolver", "CUSOLVER", "nvidia-cusolver", "cusolver", &["cusolverDn.h"], &["cusolver"], cu11: true),
    toolkit!("cusparse", "CUSPARSE", "nvidia-cusparse", "cusparse", &["cusparse.h"], &["cusparse"], cu11: true),
    toolkit!("nvrtc", "NVRTC", "nvidia-cuda-nvrtc", "cuda_nvrtc", &["nvrtc.h"], &["nvrtc"], cu11: true),
    toolkit!("nvjitlink", "NVJITLINK", "nvidia-nvjitlink", "nvjitlink", &["nvJitLink.h"], &["nvJitLink"], cu11: false),
    // NVTX3 is header-only: nothing to link (the wheels' interop library changed SONAME in 12.9).
    toolkit!("nvtx", "NVTX", "nvidia-nvtx", "nvtx", &["nvtx3/nvToolsExt.h"], &[], cu11: true),
    toolkit!("cupti", "CUPTI", "nvidia-cuda-cupti", "cuda_cupti", &["cupti.h"], &["cupti"], cu11: true),
    CatalogEntry {
        name: "nvshmem",
        env_prefix: "NVSHMEM",
        headers: &["nvshmem.h"],
        shared: &["nvshmem_host"],
        statics: &["nvshmem_device"],
        toolkit_extra: None,
        wheels: [
            w("nvidia-nvshmem-cu11", "nvidia/nvshmem"),
            w("nvidia-nvshmem-cu12", "nvidia/nvshmem"),
            w("nvidia-nvshmem-cu13", "nvidia/nvshmem"),
        ],
    },
    CatalogEntry {
        name: "nccl",
        env_prefix: "NCCL",
        headers: &["nccl.h"],
        shared: &["nccl"],
        statics: &[],
        toolkit_extra: None,
        wheels: [
            w("nvidia-nccl-cu11", "nvidia/nccl"),
            w("nvidia-nccl-cu12", "nvidia/nccl"),
            w("nvidia-nccl-cu13", "nvidia/nccl"),
        ],
    },
    CatalogEntry {
        name: "cudnn",
        env_prefix: "CUDNN",
        headers: &["cudnn.h"],
        shared: &["cudnn"],
        statics: &[],
        toolkit_extra: None,
        wheels: [
            w("nvidia-cudnn-cu11", "nvidia/cudnn"),
            w("nvidia-cudnn-cu12", "nvidia/cudnn"),
            w("nvidia-cudnn-cu13", "nvidia/cudnn"),
        ],
    },
];

pub(crate) fn entry(name: &str) -> Option<&'static CatalogEntry> {
    CATALOG.iter().find(|e| e.name == name)
}

impl CatalogEntry {
    pub(crate) fn wheel(&self, major: u32) -> Option<WheelLayout> {
        match major {
            11 => self.wheels[0],
            12 => self.wheels[1],
            13 => self.wheels[2],
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuda13_toolkit_libraries_share_one_tree_and_keep_unsuffixed_names() {
        let cublas = entry("cublas").unwrap();
        assert_eq!(
            cublas.wheel(13).unwrap(),
            WheelLayout {
                dist: "nvidia-cublas",
                dir: "nvidia/cu13",
                include: "include"
            }
        );
        assert_eq!(cublas.wheel(12).unwrap().dist, "nvidia-cublas-cu12");
        assert_eq!(
            entry("cudart").unwrap().wheel(11).unwrap().dir,
            "nvidia/cuda_runtime"
        );
        assert!(entry("nvjitlink").unwrap().wheel(11).is_none());
        assert_eq!(
            entry("nccl").unwrap().wheel(13).unwrap().dist,
            "nvidia-nccl-cu13"
        );
        assert_eq!(
            entry("cccl").unwrap().wheel(13).unwrap().include,
            "include/cccl"
        );
        for e in CATALOG {
            if let Some(w) = e.wheel(13) {
                assert!(
                    !w.dist.ends_with("-cu13") || e.toolkit_extra.is_none(),
                    "{} uses a deprecated -cu13 stub",
                    w.dist
                );
            }
        }
    }
}
