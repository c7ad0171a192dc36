//! Stage 5, bindings: binding libraries, one file each, each owning
//! how it is found and what it adds to a target: `pybind11.rs`, `nanobind.rs`, `torch/` (with
//! its probe, `torch/probe.rs`). `bindings = "..."` per extension, or the top-level default.
//!
//! Each adds a build requirement from PyPI (`get_requires_for_build_wheel`), and once the build
//! environment is known, its include folders, sources and flags to the target — pybind11 and
//! nanobind found on `sys.path` like NVIDIA's wheels (`<site>/pybind11/include`,
//! `<site>/nanobind/...`), so no Python has to run; torch asked about itself. Paths of the build
//! environment are mapped away (`-ffile-prefix-map`) so wheels stay reproducible across isolated
//! build environments. The limited API is checked by the plan: pybind11 has none, nanobind's
//! starts at Python 3.12.
//! jax (`jax.rs`): the extension is a nanobind module, and jax's XLA FFI headers go on every
//! target (asked of the jax in use).
//! What can fail here is one type, `BindingsError` (`error.rs`), jax's own errors inside it.

use std::path::{Path, PathBuf};

use crate::bindings::torch::probe::TorchInfo;
use crate::config::{Bindings, ToolConfig};
use crate::plan::{BuildPlan, TargetPlan};

mod error;
pub(crate) mod import_check;
pub(crate) mod jax;
mod nanobind;
mod probe;
mod pybind11;
pub(crate) mod torch;

pub(crate) use error::BindingsError;

/// The requirement `get_requires_for_build_wheel` adds for a binding library (torch's depends
/// on the configuration: `torch::requirement`).
pub(crate) fn requirement(b: Bindings) -> Option<&'static str> {
    match b {
        Bindings::None | Bindings::Torch => None,
        // 2.12: the first with NumPy 2 support; 3.x works the same way here.
        Bindings::Pybind11 => Some("pybind11>=2.12"),
        // 2.0: the current `nb_combined.cpp` + robin_map layout of the wheel.
        Bindings::Nanobind => Some("nanobind>=2.0"),
        // JAX extensions are nanobind modules; `jax` itself: `jax::REQUIREMENT`.
        Bindings::Jax => Some(jax::NANOBIND),
    }
}

/// The binding libraries the extensions use, each once, in a stable order.
pub(crate) fn used(tool: &ToolConfig) -> Vec<Bindings> {
    let mut out: Vec<Bindings> = tool
        .extensions
        .iter()
        .map(|e| e.bindings.unwrap_or(tool.bindings.value))
        .filter(|b| *b != Bindings::None)
        .collect();
    out.sort_by_key(|b| b.name());
    out.dedup();
    out
}

/// The package a binding library is found as on `sys.path`: a JAX extension is a nanobind
/// module (jax itself is asked about itself: `jax::probe`).
pub(crate) fn package_of(b: Bindings) -> Bindings {
    match b {
        Bindings::Jax => Bindings::Nanobind,
        b => b,
    }
}

/// The binding packages the extensions need on `sys.path`, each once (`locate` finds them).
pub(crate) fn packages(tool: &ToolConfig) -> Vec<Bindings> {
    let mut out: Vec<Bindings> = used(tool).into_iter().map(package_of).collect();
    out.dedup();
    out
}

/// The build requirements of the binding libraries in use, for CUDA `major`.
pub(crate) fn requirements(tool: &ToolConfig, major: u32) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    if jax::wanted(tool) {
        out.push(jax::REQUIREMENT.to_string());
    }
    let mut reqs: Vec<String> = used(tool)
        .into_iter()
        .filter_map(|b| match b {
            Bindings::Torch => Some(torch::requirement(tool, major)),
            b => requirement(b).map(str::to_string),
        })
        .collect();
    // torch before 2.11 (PyPI's CUDA 12 releases) imports setuptools in
    // `torch.utils.cpp_extension`, which the torch probe reads.
    if major == 12 && reqs.iter().any(|r| r.starts_with(torch::DIST)) {
        reqs.push("setuptools".to_string());
    }
    for r in reqs {
        if !out.contains(&r) {
            out.push(r);
        }
    }
    out
}

/// The `cuda-toolkit` pin of the torch already installed where the build requirements are
/// asked for (`==13.2.2`), when the extensions use torch and the pip toolkit of its major is
/// asked for: the toolkit then comes at the release torch pins (`torch::toolkit_pin`).
pub(crate) fn toolkit_pin(
    tool: &ToolConfig,
    sys_path: &[PathBuf],
    toolkit: &crate::toolchain::ToolkitRequest,
) -> Option<String> {
    if toolkit.system || !used(tool).contains(&Bindings::Torch) {
        return None;
    }
    torch::toolkit_pin(sys_path).filter(|pin| pin.starts_with(&format!("=={}.", toolkit.major)))
}

/// A binding library found in the build environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Found {
    /// `<site>/pybind11` or `<site>/nanobind`.
    pub(crate) root: PathBuf,
    /// From the `.dist-info` next to it, when there is one.
    pub(crate) version: Option<String>,
}

/// Files that prove a usable copy, relative to the package folder.
fn markers(b: Bindings) -> &'static [&'static str] {
    match b {
        Bindings::None => &[],
        Bindings::Torch => &["include/torch/library.h", "lib/libc10.so"],
        Bindings::Pybind11 => &["include/pybind11/pybind11.h"],
        Bindings::Nanobind | Bindings::Jax => &[
            "include/nanobind/nanobind.h",
            "src/nb_combined.cpp",
            "ext/robin_map/include/tsl/robin_map.h",
        ],
    }
}

fn dist_version(site: &Path, name: &str) -> Option<String> {
    std::fs::read_dir(site).ok()?.flatten().find_map(|e| {
        let file = e.file_name().to_string_lossy().into_owned();
        let stem = file.strip_suffix(".dist-info")?;
        let (dist, version) = stem.split_once('-')?;
        dist.eq_ignore_ascii_case(name).then(|| version.to_string())
    })
}

/// The first `sys.path` entry holding the package with all its marker files.
pub(crate) fn locate(b: Bindings, sys_path: &[PathBuf]) -> Result<Found, BindingsError> {
    let name = b.name();
    let probes = match probe::find_package(sys_path, name, markers(b)) {
        Ok((site, root)) => {
            return Ok(Found {
                version: dist_version(&site, name),
                root,
            })
        }
        Err(probes) => probes,
    };
    if b == Bindings::Torch {
        return Err(BindingsError::TorchNotFound { probes });
    }
    Err(BindingsError::NotFound {
        name: name.to_string(),
        requirement: requirement(b).unwrap_or_default().to_string(),
        probes,
    })
}

/// Adds each extension's binding library (include folders, sources, flags) to the plan;
/// `torch`: what the torch in use reported (given when an extension uses torch).
pub(crate) fn apply(
    plan: &mut BuildPlan,
    sys_path: &[PathBuf],
    torch: Option<&TorchInfo>,
) -> Result<(), BindingsError> {
    for target in &mut plan.targets {
        // A JAX extension is a nanobind module (jax's headers: `jax::apply`).
        let b = package_of(target.bindings);
        if b == Bindings::None {
            continue;
        }
        if b == Bindings::Torch {
            let info = torch.ok_or_else(|| BindingsError::TorchNotFound {
                probes: vec!["torch was not asked about itself".into()],
            })?;
            torch::apply(target, info);
            continue;
        }
        let found = locate(b, sys_path)?;
        match b {
            Bindings::Nanobind => nanobind::apply(target, &found.root),
            _ => pybind11::apply(target, &found.root),
        }
    }
    Ok(())
}

/// What pybind11 and nanobind modules share (their CMake helpers' defaults): C++17, hidden
/// visibility, the package's `include/`, and its build-environment path mapped away. The
/// project's own flags come last, so they can override these. `extra_cxx` / `extra_nvcc` go
/// between the two.
fn add_module_flags(
    target: &mut TargetPlan,
    root: &Path,
    name: &str,
    extra_cxx: &[&str],
    extra_nvcc: &[&str],
) {
    let prefix_map = format!("-ffile-prefix-map={}/={name}/", root.display());
    let mut cxx: Vec<String> = vec![
        "-std=c++17".into(),
        "-fvisibility=hidden".into(),
        prefix_map.clone(),
    ];
    cxx.extend(extra_cxx.iter().map(|f| f.to_string()));
    let mut nvcc: Vec<String> = vec![
        "-std=c++17".into(),
        "-Xcompiler".into(),
        "-fvisibility=hidden".into(),
        "-Xcompiler".into(),
        prefix_map.replace(',', "\\,"),
    ];
    nvcc.extend(extra_nvcc.iter().map(|f| f.to_string()));
    cxx.append(&mut target.cxx_flags);
    target.cxx_flags = cxx;
    nvcc.append(&mut target.nvcc_flags);
    target.nvcc_flags = nvcc;
    add_include(target, root.join("include"));
}

fn add_include(target: &mut TargetPlan, dir: PathBuf) {
    if !target.include_dirs.contains(&dir) {
        target.include_dirs.push(dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_site(dir: &Path, name: &str, version: &str) {
        for m in markers(if name == "nanobind" {
            Bindings::Nanobind
        } else {
            Bindings::Pybind11
        }) {
            let f = dir.join(name).join(m);
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(f, "").unwrap();
        }
        std::fs::create_dir_all(dir.join(format!("{name}-{version}.dist-info"))).unwrap();
    }

    #[test]
    fn locates_packages_on_sys_path_with_their_version() {
        let empty = tempfile::tempdir().unwrap();
        let site = tempfile::tempdir().unwrap();
        fake_site(site.path(), "nanobind", "2.9.2");
        let path = vec![empty.path().to_path_buf(), site.path().to_path_buf()];
        let found = locate(Bindings::Nanobind, &path).unwrap();
        assert_eq!(found.root, site.path().join("nanobind"));
        assert_eq!(found.version.as_deref(), Some("2.9.2"));
        let err = locate(Bindings::Pybind11, &path).unwrap_err();
        assert!(
            matches!(&err, BindingsError::NotFound { requirement, .. } if requirement == "pybind11>=2.12"),
            "{err:?}"
        );
    }

    #[test]
    fn requirements_follow_the_extensions() {
        let doc: toml::Table = toml::from_str(
            r#"
            bindings = "pybind11"
            [[extension]]
            name = "a._x"
            sources = ["x.cpp"]
            [[extension]]
            name = "a._y"
            sources = ["y.cpp"]
            bindings = "nanobind"
            "#,
        )
        .unwrap();
        let tool = ToolConfig::parse(&doc, &Default::default()).unwrap();
        assert_eq!(
            requirements(&tool, 13),
            vec!["nanobind>=2.0".to_string(), "pybind11>=2.12".to_string()]
        );
        let tool = ToolConfig::parse(&toml::Table::new(), &Default::default()).unwrap();
        assert!(requirements(&tool, 13).is_empty());
        let doc: toml::Table = toml::from_str(
            r#"
            bindings = "torch"
            [[extension]]
            name = "a._C"
            sources = ["x.cpp"]
            "#,
        )
        .unwrap();
        let tool = ToolConfig::parse(&doc, &Default::default()).unwrap();
        assert_eq!(
            requirements(&tool, 13),
            vec!["torch>=2.11,<3,==2.*".to_string()]
        );
    }

    #[test]
    fn torch_mixed_with_another_binding_library_is_refused() {
        for text in [
            "bindings = [\"torch\", \"pybind11\"]",
            "[[extension]]\nname = \"a._C\"\nsources = [\"x.cpp\"]\nbindings = [\"nanobind\", \"torch\"]",
        ] {
            let doc: toml::Table = toml::from_str(text).unwrap();
            let err = ToolConfig::parse(&doc, &Default::default()).unwrap_err();
            let msg = err.to_string();
            assert!(msg.contains("one binding library"), "{msg}");
        }
        // A plain list without torch stays a type error.
        let doc: toml::Table = toml::from_str("bindings = [\"pybind11\"]").unwrap();
        let err = ToolConfig::parse(&doc, &Default::default()).unwrap_err();
        assert!(!err.to_string().contains("one binding library"), "{err}");
    }

    #[test]
    fn bindings_in_a_shared_library_is_an_unknown_key() {
        let doc: toml::Table = toml::from_str(
            r#"
            [[shared-library]]
            name = "calc"
            sources = ["x.cpp"]
            destination = "p/lib"
            bindings = "pybind11"
            "#,
        )
        .unwrap();
        let err = ToolConfig::parse(&doc, &Default::default()).unwrap_err();
        assert!(err.to_string().contains("bindings"), "{err}");
    }
}
