//! The toolchain's identity: everything outside the command lines that shapes what the
//! compilers produce, as versions and content, never paths or timestamps. pip reinstalls the
//! toolkit at a new path with new timestamps in every isolated build; the same versions must
//! still count as the same toolchain (for the incremental records, and as ccache's
//! `compiler_check` string, where other machines must agree too).

use std::path::Path;

use sha2::{Digest, Sha256};

use super::{NvccOrigin, Toolchain};
use crate::python::PythonInfo;

fn sha256(path: &Path) -> String {
    match std::fs::read(path) {
        Ok(bytes) => format!("{:x}", Sha256::digest(&bytes)),
        Err(_) => "missing".into(),
    }
}

fn size(path: &Path) -> String {
    std::fs::metadata(path).map_or("missing".into(), |m| m.len().to_string())
}

/// The compilers: nvcc (its version; for NVIDIA's wheels the versions of every `nvidia-*`
/// distribution beside it — nvcc, nvvm, crt, cccl, runtime; for a system toolkit the sizes of
/// its main programs) and the host compiler (`--version`, the size and content of its driver,
/// its extra words).
pub fn compilers(tc: &Toolchain) -> String {
    let nvcc = &tc.nvcc;
    let kit = match &nvcc.origin {
        NvccOrigin::Pip(site) => {
            let mut dists: Vec<String> = std::fs::read_dir(site)
                .map(|rd| {
                    rd.flatten()
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .filter(|n| n.starts_with("nvidia_") && n.ends_with(".dist-info"))
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
    format!(
        "nvcc {} [{kit}]\nhost {:?} {} {} {:?}",
        nvcc.full_version,
        super::compiler_version(&tc.host.path).unwrap_or_default(),
        size(&tc.host.path),
        sha256(&tc.host.path),
        tc.host.args,
    )
}

/// The compilers and the Python headers (version, extension suffix, content of `Python.h`
/// and `pyconfig.h`).
pub fn full(tc: &Toolchain, python: &PythonInfo) -> String {
    format!(
        "{}\npython {:?} {} {} {}",
        compilers(tc),
        python.version,
        python.ext_suffix,
        sha256(&python.include_dir.join("Python.h")),
        sha256(&python.include_dir.join("pyconfig.h")),
    )
}
