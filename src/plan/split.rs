//! `split = "library"`: every extension's GPU code (its `.cu` sources and device link) moves
//! into a generated shared-library target, `lib<module>_gpu.so`, installed in a folder of its
//! own (`<name>_lib_cu<major>/`) and shipped in a Python-independent wheel; the extension keeps
//! its host sources and links that library by SONAME (`link-with`, an `$ORIGIN` RPATH).
//! A variant build (`variant`, `null-variant`) names the library `<name>-lib` (folder
//! `<name>_lib/`): its variant label carries the CUDA major, as the binding wheels' does.
//!
//! Input: the plan after the binding libraries were applied, the configuration, the CUDA
//! major. Output: the plan with the generated targets first (they are shared libraries).
//! Refuses what it cannot split into working wheels, with a typed error.

use crate::config::{self, Bindings, Config, CudaDeps, Origin, TargetConfig};
use crate::hint::Hint;

use super::{BuildPlan, Lang, PlanError, TargetKind, TargetPlan};

#[derive(Debug, thiserror::Error)]
pub(crate) enum SplitError {
    #[error("`tool.cudawheel.split` = \"library\" (from {origin}) cannot be combined with `cuda-deps = \"extra\"`: the binding wheel's extra would not reach the library wheel's NVIDIA requirements")]
    CudaDepsExtra { origin: Origin },
    #[error("`tool.cudawheel.split` = \"library\" (from {origin}): `{key}` uses bindings = \"{bindings}\", whose CUDA code needs the framework's (Python-specific) headers")]
    Bindings {
        origin: Origin,
        key: String,
        bindings: &'static str,
    },
    #[error("`tool.cudawheel.split` = \"library\" (from {origin}): `{key}.sources` has only .cu files, so its bindings would move into the Python-independent library")]
    NoHostSource { origin: Origin, key: String },
    #[error("`tool.cudawheel.split` = \"library\" (from {origin}): no extension has .cu sources, so there is no GPU code to split off")]
    NothingToSplit { origin: Origin },
}

impl Hint for SplitError {
    fn hints(&self) -> Vec<String> {
        let drop = "drop `split` (`-C split=none`) to build one wheel per Python".to_string();
        match self {
            SplitError::CudaDepsExtra { .. } => vec![
                drop,
                "or keep `cuda-deps = \"required\"` (the default)".into(),
            ],
            SplitError::Bindings { .. } => vec![drop],
            SplitError::NoHostSource { .. } => vec![
                "move the binding code (PYBIND11_MODULE, NB_MODULE, PyInit_*) into a .cpp/.c file that calls the CUDA code through a plain C/C++ interface, as examples/pybind_saxpy does".into(),
                drop,
            ],
            SplitError::NothingToSplit { .. } => vec![drop],
        }
    }
}

/// `-lib-cu13`: what the library wheel's name adds to the project's; `-lib` for a variant
/// build, whose wheels keep the project's name and carry the major in their label.
pub(crate) fn library_suffix(config: &Config, major: u32) -> String {
    let tool = &config.tool;
    let variant = tool.variant.is_some() || tool.null_variant.as_ref().is_some_and(|n| n.value);
    if variant {
        "-lib".into()
    } else {
        format!("-lib-cu{major}")
    }
}

/// `pybind_saxpy_lib_cu13` (`pybind_saxpy_lib` for a variant build): the folder (and
/// import-name form of the library wheel's distribution) the generated libraries are installed in.
pub(crate) fn library_folder(config: &Config, major: u32) -> String {
    format!(
        "{}{}",
        config.project.normalized_name.as_dist_info_name(),
        library_suffix(config, major).replace('-', "_")
    )
}

/// `demo-lib-cu13==1.0` (`demo-lib==1.0` for a variant build): what each binding wheel
/// requires of the library wheel.
pub(crate) fn library_requirement(config: &Config, major: u32) -> String {
    let project = &config.project;
    format!(
        "{}{}=={}",
        project.normalized_name,
        library_suffix(config, major),
        project.version
    )
}

/// What `split = "library"` refuses, checked before any toolchain is looked for.
pub(crate) fn check(plan: &BuildPlan, config: &Config) -> Result<(), PlanError> {
    let tool = &config.tool;
    let Some(origin) = tool.split.clone() else {
        return Ok(());
    };
    if tool.cuda_deps == CudaDeps::Extra {
        return Err(SplitError::CudaDepsExtra { origin }.into());
    }
    let mut any = false;
    for t in plan.targets.iter().filter(|t| has_gpu_code(t)) {
        any = true;
        let bindings = match t.bindings {
            Bindings::Torch => "torch",
            Bindings::Jax => "jax",
            _ => "",
        };
        if !bindings.is_empty() {
            return Err(SplitError::Bindings {
                origin,
                key: t.key.clone(),
                bindings,
            }
            .into());
        }
        // The project's own host sources (not those a binding library or the import check add).
        let own_host = super::sources_of(&config.root, &own_config(config, t))?
            .iter()
            .any(|s| s.lang != Lang::Cuda);
        if !own_host {
            return Err(SplitError::NoHostSource {
                origin,
                key: t.key.clone(),
            }
            .into());
        }
    }
    if !any {
        return Err(SplitError::NothingToSplit { origin }.into());
    }
    Ok(())
}

fn has_gpu_code(t: &TargetPlan) -> bool {
    t.kind == TargetKind::Extension && t.sources.iter().any(|s| s.lang == Lang::Cuda)
}

/// Moves each extension's `.cu` sources into a generated shared library it links (after
/// `check`).
pub(crate) fn apply(plan: &mut BuildPlan, config: &Config, major: u32) -> Result<(), PlanError> {
    if config.tool.split.is_none() {
        return Ok(());
    }
    check(plan, config)?;
    let folder = library_folder(config, major);
    let requirement = library_requirement(config, major);
    let mut libs = Vec::new();
    for t in plan.targets.iter_mut().filter(|t| has_gpu_code(t)) {
        let (cuda, host): (Vec<_>, Vec<_>) = t
            .sources
            .iter()
            .cloned()
            .partition(|s| s.lang == Lang::Cuda);
        let lib = library_of(config, t, cuda, (&folder, &requirement))?;
        t.sources = host;
        t.rdc = false;
        t.link_with.push(lib.module.clone());
        libs.push(lib);
    }
    libs.append(&mut plan.targets);
    plan.targets = libs;
    Ok(())
}

/// Extension `t` as pyproject.toml declares it.
fn own_config(config: &Config, t: &TargetPlan) -> TargetConfig {
    config
        .tool
        .extensions
        .iter()
        .find(|e| e.key == t.key)
        .cloned()
        .unwrap_or_default()
}

/// The generated library of extension `t`: its own settings (include folders, defines, flags,
/// CUDA libraries, archs, `rdc`) as written in pyproject.toml, without the binding library's.
fn library_of(
    config: &Config,
    t: &TargetPlan,
    cuda: Vec<super::Source>,
    (folder, requirement): (&str, &str),
) -> Result<TargetPlan, PlanError> {
    let own = own_config(config, t);
    let mut include_dirs = Vec::new();
    for dir in &own.include_dirs {
        let key = format!("{}.include-dirs", t.key);
        include_dirs.push(config::inside_project(&config.root, dir, &key)?);
    }
    let name = format!("{}_gpu", t.module.replace('.', "_"));
    let soname = format!("lib{name}.so");
    Ok(TargetPlan {
        key: format!("{} (its GPU code, split = \"library\")", t.key),
        module: name,
        kind: TargetKind::SharedLibrary {
            soname: soname.clone(),
        },
        sources: cuda,
        include_dirs,
        defines: own.defines,
        nvcc_flags: own.nvcc_flags,
        cxx_flags: own.cxx_flags,
        link_flags: own.link_flags,
        cuda_libraries: t.cuda_libraries.clone(),
        link_with: Vec::new(),
        free_threaded: false,
        rdc: t.rdc,
        optional: t.optional,
        bindings: Bindings::None,
        wheel_path: format!("{folder}/{soname}"),
        archs: t.archs.clone(),
        split_library: Some(requirement.to_string()),
        torch_stable_abi: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Overrides, PythonInfo};

    fn planned(extra: &str, sources: &str) -> Result<BuildPlan, PlanError> {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("p")).unwrap();
        for f in ["k.cu", "m.cpp"] {
            std::fs::write(root.join(f), "").unwrap();
        }
        let text = format!(
            "[project]\nname = \"Demo.X\"\nversion = \"1\"\n[tool.cudawheel]\nsplit = \"library\"\n{extra}\n\
             [[tool.cudawheel.extension]]\nname = \"p._core\"\nsources = {sources}\nrdc = true\n"
        );
        let config = Config::from_text(root, text, &Overrides::default()).unwrap();
        let mut plan = BuildPlan::new(&config, &PythonInfo::for_tests(root)).unwrap();
        apply(&mut plan, &config, 13)?;
        Ok(plan)
    }

    #[test]
    fn gpu_code_moves_into_a_library_the_extension_links() {
        let plan = planned("", "[\"k.cu\", \"m.cpp\"]").unwrap();
        let (lib, ext) = (&plan.targets[0], &plan.targets[1]);
        assert_eq!(lib.wheel_path, "demo_x_lib_cu13/libp__core_gpu.so");
        assert_eq!(lib.split_library.as_deref(), Some("demo-x-lib-cu13==1"));
        assert!(lib.rdc && !ext.rdc);
        assert!(lib.sources.iter().all(|s| s.lang == Lang::Cuda));
        assert!(ext.sources.iter().all(|s| s.lang != Lang::Cuda));
        assert_eq!(ext.link_with, ["p__core_gpu"]);
        // A variant build: the label carries the major, the name does not.
        for variant in ["variant = \"cuda\"", "null-variant = true"] {
            let plan = planned(variant, "[\"k.cu\", \"m.cpp\"]").unwrap();
            assert_eq!(plan.targets[0].wheel_path, "demo_x_lib/libp__core_gpu.so");
            assert_eq!(
                plan.targets[0].split_library.as_deref(),
                Some("demo-x-lib==1")
            );
        }
        // Control: the errors.
        assert!(matches!(
            planned("", "[\"k.cu\"]"),
            Err(PlanError::Split(SplitError::NoHostSource { .. }))
        ));
        assert!(matches!(
            planned("", "[\"m.cpp\"]"),
            Err(PlanError::Split(SplitError::NothingToSplit { .. }))
        ));
        assert!(matches!(
            planned("cuda-deps = \"extra\"", "[\"k.cu\", \"m.cpp\"]"),
            Err(PlanError::Split(SplitError::CudaDepsExtra { .. }))
        ));
    }
}
