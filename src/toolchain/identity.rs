//! The toolchain's identity: everything outside the command lines that shapes what the
//! compilers produce, as versions and content, never paths or timestamps. pip reinstalls the
//! toolkit at a new path with new timestamps in every isolated build; the same versions must
//! still count as the same toolchain (for the incremental records, and as ccache's
//! `compiler_check` string, where other machines must agree too).

use std::path::Path;

use sha2::{Digest, Sha256};

use super::{NvccOrigin, Toolchain};
use crate::config::PythonInfo;

fn sha256(path: &Path) -> String {
    match std::fs::read(path) {
        Ok(bytes) => format!("{:x}", Sha256::digest(&bytes)),
        Err(_) => "missing".into(),
    }
}

fn size(path: &Path) -> String {
    std::fs::metadata(path).map_or("missing".into(), |m| m.len().to_string())
}

/// NVIDIA's wheels that make up the compiler (nvcc, cicc, the crt headers nvcc injects); the
/// headers of cccl, the runtime and the libraries are files the depfiles list, compared by content.
const COMPILER_DISTS: &[&str] = &["nvidia_cuda_nvcc-", "nvidia_nvvm-", "nvidia_cuda_crt-"];

/// The compilers: nvcc (its version; for NVIDIA's wheels the versions of the distributions
/// making up the compiler, `COMPILER_DISTS`; for a system toolkit the sizes of its main programs) and the host compiler (`--version`, the size and content of its driver,
/// its extra words).
pub(crate) fn compilers(tc: &Toolchain) -> String {
    let nvcc = &tc.nvcc;
    let kit = match &nvcc.origin {
        NvccOrigin::Pip(site) => {
            let mut dists: Vec<String> = std::fs::read_dir(site)
                .map(|rd| {
                    rd.flatten()
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .filter(|n| {
                            COMPILER_DISTS.iter().any(|d| n.starts_with(d))
                                && n.ends_with(".dist-info")
                        })
                        .collect()
                })
                .unwrap_or_default();
            dists.sort();
            dists.join(" ")
        }
        NvccOrigin::System(_) => ["bin/nvcc", "nvvm/bin/cicc", "bin/ptxas"]
            .iter()
            .map(|p| format!("{p}={}", size(&nvcc.root.join(p))))
            .collect::<Vec<_>>()
            .join(" "),
    };
    // zig mode: the host compiler is a wrapper in build-dir; zig's version and target count.
    let zig = tc
        .zig
        .as_ref()
        .map(|z| format!("\n{}", super::zig::identity(z)))
        .unwrap_or_default();
    format!(
        "nvcc {} [{kit}]\nhost {:?} {} {} {:?}{zig}",
        nvcc.full_version,
        super::compiler_version(&tc.host.path).unwrap_or_default(),
        size(&tc.host.path),
        sha256(&tc.host.path),
        tc.host.args,
    )
}

/// The compilers and the Python headers (version, extension suffix, content of `Python.h`
/// and `pyconfig.h`).
pub(crate) fn full(tc: &Toolchain, python: &PythonInfo) -> String {
    format!(
        "{}\npython {:?} {} {} {}",
        compilers(tc),
        python.version,
        python.ext_suffix,
        sha256(&python.include_dir.join("Python.h")),
        sha256(&python.include_dir.join("pyconfig.h")),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::toolchain::{HostCompiler, Nvcc};

    fn pip_toolchain(site: &Path) -> Toolchain {
        Toolchain {
            nvcc: Nvcc {
                path: site.join("nvidia/cu13/bin/nvcc"),
                root: site.join("nvidia/cu13"),
                major: 13,
                minor: 5,
                full_version: "13.5.37".into(),
                origin: NvccOrigin::Pip(site.to_path_buf()),
                archs: Vec::new(),
            },
            host: HostCompiler {
                path: "/bin/sh".into(),
                args: Vec::new(),
            },
            launcher: None,
            launcher_wraps_nvcc: true,
            headers: Default::default(),
            zig: None,
            compress: crate::config::compress::Compress::Size,
            compress_flags: vec!["--compress-mode=size".into()],
            cross: None,
        }
    }

    #[test]
    fn the_same_wheels_elsewhere_are_the_same_toolchain() {
        let tmp = tempfile::tempdir().unwrap();
        let site = |name: &str, nvcc: &str, extra: &[&str]| {
            let s = tmp.path().join(name);
            for d in [
                &[nvcc, "nvidia_nvvm-13.5.37", "nvidia_cuda_crt-13.5.37"][..],
                extra,
            ]
            .concat()
            {
                std::fs::create_dir_all(s.join(format!("{d}.dist-info"))).unwrap();
            }
            s
        };
        let a = site("pip-build-env-a", "nvidia_cuda_nvcc-13.5.37", &[]);
        // Another build environment (path, timestamps) with the same wheels, and libraries
        // whose headers the depfiles track anyway: the same identity.
        let b = site(
            "pip-build-env-b",
            "nvidia_cuda_nvcc-13.5.37",
            &["nvidia_cublas-13.1.0"],
        );
        let c = site("pip-build-env-c", "nvidia_cuda_nvcc-13.5.40", &[]);
        let id = |s: &Path| compilers(&pip_toolchain(s));
        assert_eq!(id(&a), id(&b));
        assert!(!id(&a).contains("pip-build-env"), "{}", id(&a));
        assert_ne!(id(&a), id(&c));
    }
}
