//! What the running Python told us about itself (collected by `cudawheel/__init__.py` from
//! `sys` and `sysconfig`, passed in as JSON). An input of the plan and the toolchain stages.

use std::path::PathBuf;

use serde::Deserialize;

#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct PythonInfo {
    /// `(3, 11)`
    pub version: (u32, u32),
    /// `cpython`
    pub implementation: String,
    /// `cp311`
    pub python_tag: String,
    /// `cp311` (or `cp313t`)
    pub abi_tag: String,
    /// `.cpython-311-x86_64-linux-gnu.so`
    pub ext_suffix: String,
    /// Folder holding `Python.h`.
    pub include_dir: PathBuf,
    /// `sys.path`: where NVIDIA's wheels of the build environment are looked for.
    pub sys_path: Vec<PathBuf>,
    /// `platform.machine()`: `x86_64`, `aarch64`.
    pub machine: String,
    /// `sys.executable`: runs probes that must import packages of the build environment
    /// (torch); absent from older shells.
    #[serde(default)]
    pub executable: Option<PathBuf>,
}

impl PythonInfo {
    /// The interpreter/ABI part of the wheel tag: `cp311-cp311` or `cp39-abi3`.
    pub fn tag(&self, limited_api: Option<u32>) -> (String, String) {
        match limited_api {
            Some(minor) => (format!("cp3{minor}"), "abi3".to_string()),
            None => (self.python_tag.clone(), self.abi_tag.clone()),
        }
    }
}

#[cfg(test)]
impl PythonInfo {
    /// A CPython 3.11 on x86_64 with its headers in `include_dir` and an empty `sys.path`: what
    /// unit tests that plan a build need.
    pub fn for_tests(include_dir: &std::path::Path) -> PythonInfo {
        PythonInfo {
            version: (3, 11),
            implementation: "cpython".into(),
            python_tag: "cp311".into(),
            abi_tag: "cp311".into(),
            ext_suffix: ".so".into(),
            include_dir: include_dir.to_path_buf(),
            sys_path: Vec::new(),
            machine: "x86_64".into(),
            executable: None,
        }
    }
}
