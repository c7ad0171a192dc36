//! What the running Python told us about itself (collected by `cudawheel/__init__.py` from
//! `sys` and `sysconfig`, passed in as JSON). An input of the plan and the toolchain stages.

use std::path::PathBuf;

use serde::Deserialize;

#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub(crate) struct PythonInfo {
    /// `(3, 11)`
    pub(crate) version: (u32, u32),
    /// `cpython`
    pub(crate) implementation: String,
    /// `cp311`
    pub(crate) python_tag: String,
    /// `cp311` (or `cp313t`)
    pub(crate) abi_tag: String,
    /// `.cpython-311-x86_64-linux-gnu.so`
    pub(crate) ext_suffix: String,
    /// Folder holding `Python.h`.
    pub(crate) include_dir: PathBuf,
    /// `sys.path`: where NVIDIA's wheels of the build environment are looked for.
    pub(crate) sys_path: Vec<PathBuf>,
    /// `platform.machine()`: `x86_64`, `aarch64`.
    pub(crate) machine: String,
    /// `sys.executable`: runs probes that must import packages of the build environment
    /// (torch); absent from older shells.
    #[serde(default)]
    pub(crate) executable: Option<PathBuf>,
    /// The `sys.path` of the environment running cudawheel, when it builds for another
    /// interpreter (`python -m cudawheel wheel --python PY`): where the CUDA toolkit (nvcc, its
    /// headers, libcudart) is also looked for, after `sys_path`. Binding libraries (pybind11,
    /// nanobind, torch) come from `sys_path` only. Empty when the build's interpreter runs
    /// cudawheel itself.
    #[serde(default)]
    pub(crate) toolkit_path: Vec<PathBuf>,
    /// `sysconfig.get_config_var("Py_GIL_DISABLED") == 1`: a free-threaded CPython (ABI flag
    /// `t`: `cp313t`, `.cpython-313t-...so`, headers in `include/python3.13t`).
    #[serde(default)]
    pub(crate) gil_disabled: bool,
}

impl PythonInfo {
    /// The interpreter/ABI part of the wheel tag: `cp311-cp311` or `cp39-abi3`.
    pub(crate) fn tag(&self, limited_api: Option<u32>) -> (String, String) {
        match limited_api {
            Some(minor) => (format!("cp3{minor}"), "abi3".to_string()),
            None => (self.python_tag.clone(), self.abi_tag.clone()),
        }
    }

    /// The `Py_LIMITED_API` version a build for this interpreter uses, given the project's
    /// `py-limited-api`: none on a free-threaded CPython, where the limited API does not exist
    /// (`Python.h` refuses `Py_LIMITED_API` with `Py_GIL_DISABLED`; 3.15's abi3t is another
    /// ABI), so such a build is version-specific (`cp313-cp313t`).
    pub(crate) fn limited_api(&self, requested: Option<u32>) -> Option<u32> {
        requested.filter(|_| !self.gil_disabled)
    }

    /// Where NVIDIA's toolkit wheels are looked for: `sys_path`, then the folders of
    /// `toolkit_path` not already in it.
    pub(crate) fn toolkit_sites(&self) -> impl Iterator<Item = &PathBuf> {
        self.sys_path.iter().chain(
            self.toolkit_path
                .iter()
                .filter(|p| !self.sys_path.contains(p)),
        )
    }
}

#[cfg(test)]
impl PythonInfo {
    /// A CPython 3.11 on x86_64 with its headers in `include_dir` and an empty `sys.path`: what
    /// unit tests that plan a build need.
    pub(crate) fn for_tests(include_dir: &std::path::Path) -> PythonInfo {
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
            toolkit_path: Vec::new(),
            gil_disabled: false,
        }
    }

    /// A free-threaded CPython 3.13t on x86_64, as `for_tests`.
    pub(crate) fn free_threaded_for_tests(include_dir: &std::path::Path) -> PythonInfo {
        PythonInfo {
            version: (3, 13),
            python_tag: "cp313".into(),
            abi_tag: "cp313t".into(),
            ext_suffix: ".cpython-313t-x86_64-linux-gnu.so".into(),
            gil_disabled: true,
            ..PythonInfo::for_tests(include_dir)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_toolkit_is_looked_for_on_sys_path_then_where_cudawheel_runs() {
        let mut info = PythonInfo::for_tests(std::path::Path::new("/inc"));
        info.sys_path = vec!["/a".into(), "/b".into()];
        info.toolkit_path = vec!["/b".into(), "/tools".into()];
        let sites: Vec<&PathBuf> = info.toolkit_sites().collect();
        assert_eq!(
            sites,
            [&PathBuf::from("/a"), &"/b".into(), &"/tools".into()]
        );
        // Facts from an older shell (no `toolkit_path`) still parse.
        let json = r#"{"version": [3, 11], "implementation": "cpython", "python_tag": "cp311",
            "abi_tag": "cp311", "ext_suffix": ".so", "include_dir": "/inc", "sys_path": [],
            "machine": "x86_64"}"#;
        let old: PythonInfo = serde_json::from_str(json).unwrap();
        assert!(old.toolkit_path.is_empty() && old.executable.is_none() && !old.gil_disabled);
    }

    #[test]
    fn a_free_threaded_python_has_no_limited_api_and_keeps_its_t() {
        let gil = PythonInfo::for_tests(std::path::Path::new("/inc"));
        assert_eq!(gil.limited_api(Some(9)), Some(9));
        assert_eq!(
            gil.tag(gil.limited_api(Some(9))),
            ("cp39".into(), "abi3".into())
        );
        let ft = PythonInfo::free_threaded_for_tests(std::path::Path::new("/inc"));
        assert_eq!(ft.limited_api(Some(9)), None);
        assert_eq!(ft.limited_api(None), None);
        assert_eq!(
            ft.tag(ft.limited_api(Some(9))),
            ("cp313".into(), "cp313t".into())
        );
    }
}
