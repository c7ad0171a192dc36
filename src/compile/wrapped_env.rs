//! The environment that hands a build cudawheel does not run (wrap mode, `python -m cudawheel
//! env`) cudawheel's choices: the toolkit folder (`CUDACXX`, `CUDA_HOME`, `CUDA_PATH`,
//! `CUDAToolkit_ROOT`), the archs (`CUDAARCHS` for CMake, `TORCH_CUDA_ARCH_LIST` for torch),
//! the host compiler (`CUDAHOSTCXX`; `CXX`/`CC` when `host-compiler` is set), the compiler
//! launcher (`CMAKE_<LANG>_COMPILER_LAUNCHER` and its own variables) and the parallelism the
//! memory admission allows (`CMAKE_BUILD_PARALLEL_LEVEL`, torch's `MAX_JOBS`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::memory::MemoryLimit;
use super::schedule::NVCC_ESTIMATE;
use crate::config::wrapped::Wrapped;
use crate::config::{inside_project, ConfigError, Cudart, PythonInfo};
use crate::hint::Hint;
use crate::plan::arch::{self, ArchError};
use crate::toolchain::toolkit_dir::{self, ToolkitDir};
use crate::toolchain::{self, identity, Toolchain, ToolchainError};

#[derive(Debug, thiserror::Error)]
pub(crate) enum EnvError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Toolchain(#[from] ToolchainError),
    #[error(transparent)]
    Arch(#[from] ArchError),
}

impl Hint for EnvError {
    fn hints(&self) -> Vec<String> {
        match self {
            EnvError::Config(e) => e.hints(),
            EnvError::Toolchain(e) => e.hints(),
            EnvError::Arch(e) => e.hints(),
        }
    }
}

/// A wrapped build's environment, ready.
#[derive(Debug)]
pub(crate) struct Prepared {
    pub(crate) toolkit: ToolkitDir,
    pub(crate) env: BuildEnv,
    /// `build-dir`, absolute.
    pub(crate) build_dir: PathBuf,
    /// nvcc's version, for the status line.
    pub(crate) nvcc_version: String,
}

/// Finds the toolchain, makes the toolkit folder in `build-dir/toolkit` and works out the
/// environment of a wrapped build.
pub(crate) fn prepare(
    w: &Wrapped,
    env: &BTreeMap<String, String>,
    python: &PythonInfo,
) -> Result<Prepared, EnvError> {
    let tc = toolchain::discover(&w.tool, env, python)?;
    let build_dir = inside_project(&w.root, &w.tool.build_dir, "tool.cudawheel.build-dir")?;
    let toolkit = toolkit_dir::make(&build_dir.join("toolkit"), &tc.nvcc, python)
        .map_err(ToolchainError::from)?;
    let tool = &w.tool;
    let list = tool
        .archs
        .as_ref()
        .or(tool.torch_archs.as_ref())
        .map(|s| arch::parse_items(&s.value, "tool.cudawheel.archs", &s.origin))
        .transpose()?;
    let gencodes = arch::gencodes(list.as_ref(), tool.ptx, &tc.arch_info())?;
    let launcher_env = tc
        .launcher
        .as_ref()
        .map(|l| l.environment(&w.root, &build_dir, &identity::full(&tc, python)))
        .unwrap_or_default();
    let vars = build_env(&EnvInputs {
        toolkit: &toolkit,
        toolchain: &tc,
        archs: arch::build_system_spellings(&gencodes),
        jobs: tool.jobs_or_cores(),
        max_memory: tool.max_memory,
        host_configured: tool.host_compiler.is_some(),
        cudart: tool.cudart,
        launcher_env,
        env,
    });
    Ok(Prepared {
        toolkit,
        env: vars,
        build_dir,
        nvcc_version: tc.nvcc.full_version.clone(),
    })
}

/// The environment of a hook that runs the wrapped backend before the toolkit is installed
/// (`get_requires_for_build_wheel` under build isolation, where the pip toolkit is what is being
/// asked for; `build_sdist` on a machine without CUDA): the toolkit variables name the folder
/// the build will make at `toolkit_root`, which need not exist yet. Enough for build files
/// that only read them (torch's `CUDAExtension` joins `CUDA_HOME` with `lib64` and raises when
/// it is unset); the archs need nvcc and come with the build.
pub(crate) fn planned(toolkit_root: &Path) -> BuildEnv {
    let root = toolkit_root.display().to_string();
    BuildEnv {
        vars: vec![
            (
                "CUDACXX".into(),
                toolkit_root.join("bin/nvcc").display().to_string(),
            ),
            ("CUDA_HOME".into(), root.clone()),
            ("CUDA_PATH".into(), root.clone()),
            ("CUDAToolkit_ROOT".into(), root),
        ],
    }
}

/// The environment that hands a build system cudawheel's choices.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct BuildEnv {
    pub(crate) vars: Vec<(String, String)>,
}

impl BuildEnv {
    /// `NAME=value, ...` of the variables that point at CUDA, for messages.
    pub(crate) fn cuda_summary(&self) -> String {
        let wanted = ["CUDACXX", "CUDA_HOME", "CUDAToolkit_ROOT", "CUDAARCHS"];
        self.vars
            .iter()
            .filter(|(k, _)| wanted.contains(&k.as_str()))
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// What goes into `BuildEnv`.
pub(crate) struct EnvInputs<'a> {
    pub(crate) toolkit: &'a ToolkitDir,
    pub(crate) toolchain: &'a Toolchain,
    /// `(CMake spelling, PyTorch spelling)` of the archs (`plan::arch::build_system_spellings`).
    pub(crate) archs: (String, String),
    /// `jobs`, else the CPUs.
    pub(crate) jobs: usize,
    pub(crate) max_memory: Option<u64>,
    /// `host-compiler` was set: the C and C++ compilers are it too.
    pub(crate) host_configured: bool,
    /// The launcher's own variables (`Launcher::environment`).
    pub(crate) launcher_env: Vec<(String, String)>,
    /// `cudart`: CMake's `CMAKE_CUDA_RUNTIME_LIBRARY`.
    pub(crate) cudart: Cudart,
    /// The caller's environment: a parallelism it sets is kept, `CMAKE_ARGS` extended.
    pub(crate) env: &'a BTreeMap<String, String>,
}

/// The parallel steps the memory admission allows: `jobs`, fewer when the memory free (or
/// `max-memory`) holds fewer nvcc compiles at the estimate the scheduler starts from.
pub(crate) fn parallelism(jobs: usize, max_memory: Option<u64>) -> usize {
    let by_memory = MemoryLimit::new(max_memory).map_or(usize::MAX, |m| {
        usize::try_from(m.bytes / NVCC_ESTIMATE).unwrap_or(usize::MAX)
    });
    jobs.min(by_memory).max(1)
}

pub(crate) fn build_env(i: &EnvInputs<'_>) -> BuildEnv {
    let root = i.toolkit.root.display().to_string();
    let mut vars: Vec<(String, String)> = vec![
        ("CUDACXX".into(), i.toolkit.nvcc.display().to_string()),
        ("CUDA_HOME".into(), root.clone()),
        ("CUDA_PATH".into(), root.clone()),
        ("CUDAToolkit_ROOT".into(), root),
        ("CUDAARCHS".into(), i.archs.0.clone()),
        ("TORCH_CUDA_ARCH_LIST".into(), i.archs.1.clone()),
    ];
    let host = &i.toolchain.host;
    let host_cmd = std::iter::once(host.path.display().to_string())
        .chain(host.args.iter().cloned())
        .collect::<Vec<_>>()
        .join(" ");
    vars.push(("CUDAHOSTCXX".into(), host_cmd.clone()));
    if i.host_configured {
        vars.push(("CXX".into(), host_cmd));
        if let Some(cc) = c_compiler_beside(&host.path) {
            vars.push(("CC".into(), cc.display().to_string()));
        }
    }
    if let Some(l) = &i.toolchain.launcher {
        for lang in ["CUDA", "CXX", "C"] {
            vars.push((
                format!("CMAKE_{lang}_COMPILER_LAUNCHER"),
                l.path.display().to_string(),
            ));
        }
        vars.extend(i.launcher_env.iter().cloned());
    }
    // CMake links the static runtime unless told; `cudart` says which (a project that sets
    // `CMAKE_CUDA_RUNTIME_LIBRARY` or a target's `CUDA_RUNTIME_LIBRARY` keeps its own).
    let runtime = match i.cudart {
        Cudart::Shared => "Shared",
        Cudart::Static => "Static",
    };
    let mut cmake_args = i.env.get("CMAKE_ARGS").cloned().unwrap_or_default();
    if !cmake_args.contains("CMAKE_CUDA_RUNTIME_LIBRARY") {
        if !cmake_args.is_empty() {
            cmake_args.push(' ');
        }
        cmake_args.push_str(&format!("-DCMAKE_CUDA_RUNTIME_LIBRARY={runtime}"));
    }
    vars.push(("CMAKE_ARGS".into(), cmake_args));
    let jobs = parallelism(i.jobs, i.max_memory).to_string();
    for var in ["CMAKE_BUILD_PARALLEL_LEVEL", "MAX_JOBS"] {
        if i.env.get(var).is_none_or(|v| v.is_empty()) {
            vars.push((var.into(), jobs.clone()));
        }
    }
    BuildEnv { vars }
}

/// `gcc` beside `g++`, `clang` beside `clang++`, `cc` beside `c++`, if it is there.
fn c_compiler_beside(cxx: &Path) -> Option<PathBuf> {
    let name = cxx.file_name()?.to_str()?;
    let c = [("clang++", "clang"), ("g++", "gcc"), ("c++", "cc")]
        .iter()
        .find_map(|(from, to)| name.contains(from).then(|| name.replacen(from, to, 1)))?;
    let path = cxx.with_file_name(c);
    path.is_file().then_some(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parallelism_never_exceeds_jobs_nor_falls_below_one() {
        assert_eq!(parallelism(4, Some(64 << 30)), 4);
        assert_eq!(parallelism(16, Some(3 << 30)), 3);
        assert_eq!(parallelism(8, Some(1 << 20)), 1);
    }

    #[test]
    fn a_planned_environment_names_the_folder_the_build_will_make() {
        let env = planned(Path::new("/p/build/cudawheel/toolkit"));
        assert_eq!(
            env.cuda_summary(),
            "CUDACXX=/p/build/cudawheel/toolkit/bin/nvcc, CUDA_HOME=/p/build/cudawheel/toolkit, CUDAToolkit_ROOT=/p/build/cudawheel/toolkit"
        );
        assert!(env
            .vars
            .contains(&("CUDA_PATH".into(), "/p/build/cudawheel/toolkit".into())));
    }

    #[test]
    fn messages_name_the_variables_that_point_at_cuda() {
        let env = BuildEnv {
            vars: vec![
                ("CUDAARCHS".into(), "80-real;90".into()),
                ("CUDA_HOME".into(), "/a b/tk".into()),
            ],
        };
        assert_eq!(
            env.cuda_summary(),
            "CUDAARCHS=80-real;90, CUDA_HOME=/a b/tk"
        );
    }
}
