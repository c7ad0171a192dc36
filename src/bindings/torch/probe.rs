//! The torch of the build environment, for `bindings = "torch"`: located on `sys.path`, then
//! asked about itself by a small probe run with the build's own interpreter (the way torch's
//! extension builder reads these facts): its version, CUDA version, C++ ABI and standard,
//! include folders, and the versions of the NVIDIA wheels installed beside it (the ones its
//! `==` pins chose). `bindings::torch` turns the answer into flags, libraries and checks.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

use crate::bindings::BindingsError;
use crate::config::PythonInfo;
use crate::inspect::site::same_dir;

/// What the probe prints (one JSON object on its last line of stdout).
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub(crate) struct TorchInfo {
    /// `torch.__version__`: `2.15.0+cu132`.
    pub(crate) version: String,
    /// The folder of the `torch` package.
    pub(crate) dir: PathBuf,
    /// `torch.version.cuda`: `13.2`, or None for a CPU-only torch.
    pub(crate) cuda: Option<String>,
    /// `torch._C._GLIBCXX_USE_CXX11_ABI`.
    pub(crate) cxx11_abi: bool,
    /// `__cplusplus` torch was built with (`C++ Version:` of `torch.__config__.show()`).
    pub(crate) cplusplus: Option<u32>,
    /// `torch._C._PYBIND11_{COMPILER_TYPE,STDLIB,BUILD_ABI}` where this torch has them.
    #[serde(default)]
    pub(crate) pybind11_abi: BTreeMap<String, String>,
    /// `torch.utils.cpp_extension.include_paths()`.
    pub(crate) include_dirs: Vec<PathBuf>,
    /// `torch.cuda.get_arch_list()`: the GPU code torch itself carries (for messages).
    #[serde(default)]
    pub(crate) arch_list: Vec<String>,
    /// Installed `nvidia-*` distributions (normalized name -> version): what torch's pins
    /// resolved to in this environment.
    #[serde(default)]
    pub(crate) installed: BTreeMap<String, String>,
}

impl TorchInfo {
    /// `(2, 15)` from `2.15.0+cu132`.
    pub(crate) fn minor(&self) -> (u64, u64) {
        let release = self.version.split(['+', 'a', 'b', 'r', 'd']).next();
        let mut parts = release
            .unwrap_or("")
            .split('.')
            .map(|p| p.parse::<u64>().unwrap_or(0));
        (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
    }

    /// `(13, 2)` from `torch.version.cuda`.
    pub(crate) fn cuda_version(&self) -> Option<(u32, u32)> {
        let cuda = self.cuda.as_deref()?;
        let mut parts = cuda.split('.').map(|p| p.parse::<u32>().ok());
        Some((parts.next()??, parts.next().flatten().unwrap_or(0)))
    }
}

const PROBE: &str = r#"
import json, os, re, sys
sys.path[:0] = json.loads(sys.argv[1])
try:
    import torch
    import torch.utils.cpp_extension as ext
except Exception as e:
    print(json.dumps({"error": "%s: %s" % (type(e).__name__, e)}))
    raise SystemExit(0)
import importlib.metadata as md
m = re.search(r"C\+\+ Version: (\d+)", torch.__config__.show())
installed = {}
for d in md.distributions():
    name = re.sub(r"[-_.]+", "-", (d.metadata["Name"] or "")).lower()
    if name.startswith("nvidia-") and name not in installed:
        installed[name] = d.version
print(json.dumps({
    "version": torch.__version__,
    "dir": os.path.dirname(os.path.abspath(torch.__file__)),
    "cuda": torch.version.cuda,
    "cxx11_abi": bool(getattr(torch._C, "_GLIBCXX_USE_CXX11_ABI", True)),
    "cplusplus": int(m.group(1)) if m else None,
    "pybind11_abi": {k: getattr(torch._C, "_PYBIND11_" + k) for k in ("COMPILER_TYPE", "STDLIB", "BUILD_ABI") if isinstance(getattr(torch._C, "_PYBIND11_" + k, None), str)},
    "include_dirs": ext.include_paths(),
    "arch_list": torch.cuda.get_arch_list() if torch.version.cuda else [],
    "installed": installed,
}))
"#;

/// The first `sys.path` entry holding a torch package with its headers and `libc10.so`.
pub(crate) fn locate(sys_path: &[PathBuf]) -> Result<PathBuf, BindingsError> {
    crate::bindings::probe::find_package(
        sys_path,
        "torch",
        &["include/torch/library.h", "lib/libc10.so"],
    )
    .map(|(_, dir)| dir)
    .map_err(|probes| BindingsError::TorchNotFound { probes })
}

/// Locates torch on `sys.path` and runs the probe with the build's interpreter.
pub(crate) fn probe(python: &PythonInfo) -> Result<TorchInfo, BindingsError> {
    let dir = locate(&python.sys_path)?;
    let exe = crate::bindings::probe::interpreter(python);
    let failed = |message: String| BindingsError::TorchProbe {
        python: exe.clone(),
        torch: dir.clone(),
        message,
    };
    let value = crate::bindings::probe::run(python, PROBE, &[]).map_err(failed)?;
    if let Some(e) = value.get("error").and_then(|e| e.as_str()) {
        return Err(failed(format!("`import torch` failed: {e}")));
    }
    let info: TorchInfo =
        serde_json::from_value(value).map_err(|e| failed(format!("unreadable answer: {e}")))?;
    if !same_dir(&info.dir, &dir) {
        return Err(failed(format!(
            "the interpreter imports torch from {}, but sys.path finds it first in {}",
            info.dir.display(),
            dir.display()
        )));
    }
    Ok(info)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(version: &str, cuda: Option<&str>) -> TorchInfo {
        TorchInfo {
            version: version.into(),
            dir: "/site/torch".into(),
            cuda: cuda.map(str::to_string),
            cxx11_abi: true,
            cplusplus: Some(202002),
            pybind11_abi: BTreeMap::new(),
            include_dirs: Vec::new(),
            arch_list: Vec::new(),
            installed: BTreeMap::new(),
        }
    }

    #[test]
    fn versions_from_the_probe() {
        let t = info("2.15.0+cu132", Some("13.2"));
        assert_eq!(t.minor(), (2, 15));
        assert_eq!(t.cuda_version(), Some((13, 2)));
        assert_eq!(info("2.16.0rc1", None).minor(), (2, 16));
        assert_eq!(info("2.16.0.dev20260101", None).minor(), (2, 16));
        assert_eq!(info("2.9.1", None).cuda_version(), None);
    }

    #[test]
    fn locate_needs_headers_and_libc10() {
        let site = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(site.path().join("torch/include/torch")).unwrap();
        std::fs::write(site.path().join("torch/include/torch/library.h"), "").unwrap();
        let err = locate(&[site.path().to_path_buf()]).unwrap_err();
        assert!(err.to_string().contains("no lib/libc10.so"), "{err}");
        std::fs::create_dir_all(site.path().join("torch/lib")).unwrap();
        std::fs::write(site.path().join("torch/lib/libc10.so"), "").unwrap();
        assert_eq!(
            locate(&[site.path().to_path_buf()]).unwrap(),
            site.path().join("torch")
        );
        let err = locate(&[]).unwrap_err();
        assert!(err.to_string().contains("no `torch` package"), "{err}");
    }
}
