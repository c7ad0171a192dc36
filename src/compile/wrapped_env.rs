//! The environment that hands a build cudawheel does not run (wrap mode, `python -m cudawheel
//! env`) cudawheel's choices: the toolkit folder (`CUDACXX`, `CUDA_HOME`, `CUDA_PATH`,
//! `CUDAToolkit_ROOT`), the archs (`CUDAARCHS` for CMake, `TORCH_CUDA_ARCH_LIST` for torch),
//! the host compiler (`CUDAHOSTCXX`; `CXX`/`CC` when `host-compiler` is set), the compiler
//! launcher (`CMAKE_<LANG>_COMPILER_LAUNCHER` and its own variables), the memory admission
//! (`gate`, first in CMake's compiler launchers, with `CMAKE_BUILD_PARALLEL_LEVEL` at `jobs`)
//! and, for builds no launcher reaches (torch's `MAX_JOBS`), the parallelism memory allows at
//! the estimate.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::gate;
use super::memory::MemoryLimit;
use super::schedule::NVCC_ESTIMATE;
use crate::config::wrapped::Wrapped;
use crate::config::{inside_project, ConfigError, Cudart, PythonInfo, ToolConfig};
use crate::hint::Hint;
use crate::plan::arch::{self, ArchError, ArchList, ArchSpec, NvccArchs};
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
    #[error("cannot write the memory admission's launcher in {path}: {source}")]
    Gate {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl Hint for EnvError {
    fn hints(&self) -> Vec<String> {
        match self {
            EnvError::Config(e) => e.hints(),
            EnvError::Toolchain(e) => e.hints(),
            EnvError::Arch(e) => e.hints(),
            EnvError::Gate { .. } => {
                vec!["`tool.cudawheel.build-dir` must be a folder the build can write to".into()]
            }
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
    /// nvcc's CUDA major: the repair's, for GPU code that links no libcudart by SONAME (the
    /// static runtime).
    pub(crate) cuda_major: u32,
    /// nvcc's minor: with the major, the release whose runtime API the build compiled against.
    pub(crate) cuda_minor: u32,
    /// The `-gencode` pairs `archs` asked for (handed over as CUDAARCHS and
    /// TORCH_CUDA_ARCH_LIST), to compare with what was built.
    pub(crate) gencodes: Vec<crate::plan::arch::Gencode>,
    /// The memory admission of the build's compiles (`gate`), once `prepare` installed it.
    pub(crate) gate: Option<GateSetup>,
    /// The `compiler-launcher` the compiles go through (after the gate): its counters give
    /// the build's cache and cluster line.
    pub(crate) launcher: Option<crate::toolchain::launcher::Launcher>,
}

/// A wrapped build's memory gate: its folder and the limit it admits under.
#[derive(Debug)]
pub(crate) struct GateSetup {
    pub(crate) dir: PathBuf,
    pub(crate) limit: Option<MemoryLimit>,
}

/// Finds the toolchain, makes the toolkit folder in `build-dir/toolkit` and works out the
/// environment of a wrapped build.
pub(crate) fn prepare(
    w: &Wrapped,
    env: &BTreeMap<String, String>,
    python: &PythonInfo,
) -> Result<Prepared, EnvError> {
    let tc = toolchain::discover(&w.tool, env, python)?;
    let mut p = plan(w, &tc, env, python)?;
    toolkit_dir::make(&p.toolkit.root, &tc.nvcc, python).map_err(ToolchainError::from)?;
    toolkit_dir::driver_stub(&p.toolkit.root, &tc.host).map_err(ToolchainError::from)?;
    if let Some(exe) = &python.executable {
        let dir = p.build_dir.join("memory");
        let launcher = gate::install(&dir, exe).map_err(|source| EnvError::Gate {
            path: dir.clone(),
            source,
        })?;
        let limit = MemoryLimit::new(w.tool.max_memory);
        p.env
            .add_gate(&launcher, &dir, limit.as_ref(), w.tool.jobs_or_cores(), env);
        p.gate = Some(GateSetup { dir, limit });
    }
    Ok(p)
}

/// The environment a wrapped build gets with the toolchain `tc`, the toolkit folder named but
/// not made (`prepare` makes it; `doctor` shows it).
pub(crate) fn plan(
    w: &Wrapped,
    tc: &Toolchain,
    env: &BTreeMap<String, String>,
    python: &PythonInfo,
) -> Result<Prepared, EnvError> {
    let build_dir = inside_project(&w.root, &w.tool.build_dir, "tool.cudawheel.build-dir")?;
    let root = build_dir.join("toolkit");
    let toolkit = ToolkitDir {
        nvcc: root.join("bin/nvcc"),
        sources: toolkit_dir::sources(&tc.nvcc, python),
        root,
    };
    let tool = &w.tool;
    let list = arch_list(tool)?;
    let gencodes = arch::gencodes(list.as_ref(), tool.ptx, &tc.arch_info())?;
    let launcher_env = tc
        .launcher
        .as_ref()
        .map(|l| l.environment(&w.root, &build_dir, &identity::full(tc, python)))
        .unwrap_or_default();
    let vars = build_env(&EnvInputs {
        toolkit: &toolkit,
        toolchain: tc,
        archs: arch::build_system_spellings(&gencodes),
        jobs: tool.jobs_or_cores(),
        max_memory: tool.max_memory,
        host_configured: tool.host_compiler.is_some(),
        cudart: tool.cudart,
        launcher_env,
        backend_sets_archs: w.passed.iter().any(|(k, v)| {
            k.contains("CMAKE_CUDA_ARCHITECTURES") || v.contains("CMAKE_CUDA_ARCHITECTURES")
        }),
        env,
    });
    Ok(Prepared {
        toolkit,
        env: vars,
        build_dir,
        nvcc_version: tc.nvcc.full_version.clone(),
        cuda_major: tc.nvcc.major,
        cuda_minor: tc.nvcc.minor,
        gencodes,
        gate: None,
        launcher: tc.launcher.clone(),
    })
}

/// `archs` (else `TORCH_CUDA_ARCH_LIST`'s value) as read, `None` for the defaults.
fn arch_list(tool: &ToolConfig) -> Result<Option<ArchList>, ArchError> {
    tool.archs
        .as_ref()
        .or(tool.torch_archs.as_ref())
        .map(|s| arch::parse_items(&s.value, "tool.cudawheel.archs", &s.origin))
        .transpose()
}

/// The environment of a hook that runs the wrapped backend before the toolkit is installed
/// (`get_requires_for_build_wheel` under build isolation, where the pip toolkit is what is being
/// asked for; the sdist's hooks, on a machine that may have no CUDA): the toolkit variables
/// name the folder the build will make at `toolkit_root`, which need not exist yet. Enough for
/// build files that only read them (torch's `CUDAExtension` joins `CUDA_HOME` with `lib64` and
/// raises when it is unset). The archs are the pip toolkit's (CUDA 13) spelling of `archs` or
/// its defaults, unchecked against an nvcc (the build checks them); left out where they need
/// one (`native`, a list that does not parse).
pub(crate) fn planned(toolkit_root: &Path, tool: &ToolConfig) -> BuildEnv {
    let root = toolkit_root.display().to_string();
    let mut vars: Vec<(String, String)> = vec![
        (
            "CUDACXX".into(),
            toolkit_root.join("bin/nvcc").display().to_string(),
        ),
        ("CUDA_HOME".into(), root.clone()),
        ("CUDA_PATH".into(), root.clone()),
        ("CUDAToolkit_ROOT".into(), root),
    ];
    if let Some((cmake, torch)) = planned_archs(tool) {
        vars.push(("CUDAARCHS".into(), cmake));
        vars.push(("TORCH_CUDA_ARCH_LIST".into(), torch));
    }
    BuildEnv { vars }
}

/// `(CUDAARCHS, TORCH_CUDA_ARCH_LIST)` without an nvcc: the archs named, else CUDA 13's defaults.
fn planned_archs(tool: &ToolConfig) -> Option<(String, String)> {
    let list = arch_list(tool).ok()?;
    let mut supported: Vec<String> = arch::default_archs(toolchain::PIP_MAJOR)
        .iter()
        .map(u32::to_string)
        .collect();
    for spec in list.iter().flat_map(|l| &l.specs) {
        match spec {
            ArchSpec::One(a) => supported.push(format!("{}{}", a.number, a.suffix)),
            ArchSpec::Native => return None,
            ArchSpec::All | ArchSpec::AllMajor => {}
        }
    }
    let info = NvccArchs {
        major: toolchain::PIP_MAJOR,
        version: toolchain::PIP_MAJOR.to_string(),
        supported,
        sbsa: false,
    };
    let gencodes = arch::gencodes(list.as_ref(), tool.ptx, &info).ok()?;
    Some(arch::build_system_spellings(&gencodes))
}

/// The environment that hands a build system cudawheel's choices.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct BuildEnv {
    pub(crate) vars: Vec<(String, String)>,
}

impl BuildEnv {
    /// Puts the memory gate (`launcher`, its folder `dir`) in front of each compile CMake
    /// starts: first in `CMAKE_<LANG>_COMPILER_LAUNCHER`, before a launcher cudawheel or the
    /// caller set (then marked `--chained`: that launcher's server runs the compiler, out of
    /// the gate's sight). The gate bounds the memory, so CMake's parallelism is `jobs` again
    /// (where cudawheel set it), not the static bound of `parallelism`. torch's `MAX_JOBS`
    /// keeps that bound: its builds take no launcher.
    fn add_gate(
        &mut self,
        launcher: &Path,
        dir: &Path,
        limit: Option<&MemoryLimit>,
        jobs: usize,
        caller: &BTreeMap<String, String>,
    ) {
        let launcher = launcher.display().to_string();
        for lang in ["CUDA", "CXX", "C"] {
            let key = format!("CMAKE_{lang}_COMPILER_LAUNCHER");
            let after = self
                .vars
                .iter()
                .rev()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| v.clone())
                .or_else(|| caller.get(&key).cloned())
                .filter(|v| !v.is_empty());
            let value = match after {
                Some(after) => format!("{launcher};--chained;{after}"),
                None => launcher.clone(),
            };
            self.vars.retain(|(k, _)| *k != key);
            self.vars.push((key, value));
        }
        self.vars
            .push((gate::DIR_VAR.into(), dir.display().to_string()));
        if let Some(limit) = limit {
            self.vars
                .push((gate::LIMIT_VAR.into(), limit.bytes.to_string()));
            if limit.is_measured() {
                self.vars.push((gate::MEASURE_VAR.into(), "1".into()));
            }
        }
        for (k, v) in &mut self.vars {
            if k == "CMAKE_BUILD_PARALLEL_LEVEL" {
                *v = jobs.to_string();
            }
        }
    }

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
    /// The wrapped backend's own settings name `CMAKE_CUDA_ARCHITECTURES` (`-C
    /// cmake.define.CMAKE_CUDA_ARCHITECTURES=...`): the archs are then not added to `CMAKE_ARGS`.
    pub(crate) backend_sets_archs: bool,
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
    // A build that takes the toolkit as the folder above `nvcc` on PATH, reading none of the
    // variables above (pycuda's configure), finds the same one.
    let path = i.env.get("PATH").map_or(String::new(), |p| format!(":{p}"));
    vars.push((
        "PATH".into(),
        format!("{}{path}", i.toolkit.root.join("bin").display()),
    ));
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
    if let Some(flags) = ldflags(i.env) {
        vars.push(("LDFLAGS".into(), flags));
    }
    // The memory admission's launcher seeds each nvcc compile's internal symbol names with its
    // object's path (`gate::SEED_VAR`): two builds of one tree give one object.
    if i.toolchain.nvcc.takes_random_seed() {
        vars.push((gate::SEED_VAR.into(), "1".into()));
    }
    // CMake links the static runtime unless told; `cudart` says which (a project that sets
    // `CMAKE_CUDA_RUNTIME_LIBRARY` or a target's `CUDA_RUNTIME_LIBRARY` keeps its own).
    let runtime = match i.cudart {
        Cudart::Shared => "Shared",
        Cudart::Static => "Static",
    };
    let archs = (!i.backend_sets_archs && !i.archs.0.is_empty()).then_some(i.archs.0.as_str());
    let existing = i.env.get("CMAKE_ARGS").map(String::as_str);
    let lib64 = i.toolkit.root.join("lib64");
    let build_rpath = matches!(i.cudart, Cudart::Shared).then_some(lib64.as_path());
    vars.push((
        "CMAKE_ARGS".into(),
        cmake_args(existing, runtime, archs, build_rpath),
    ));
    let jobs = parallelism(i.jobs, i.max_memory).to_string();
    for var in ["CMAKE_BUILD_PARALLEL_LEVEL", "MAX_JOBS"] {
        if i.env.get(var).is_none_or(|v| v.is_empty()) {
            vars.push((var.into(), jobs.clone()));
        }
    }
    BuildEnv { vars }
}

/// `CMAKE_ARGS`: the caller's, then what it does not already say: the CUDA runtime, the
/// toolkit folder's `lib64` as `CMAKE_BUILD_RPATH` with the shared runtime (`build_rpath`), the
/// archs as `CMAKE_CUDA_ARCHITECTURES`, and `CMAKE_BUILD_RPATH_USE_ORIGIN`. The shared runtime
/// is cudawheel's choice where the project's own build links the static one, so a build that loads what it just built (nanobind's
/// stubgen imports each module) must find `libcudart.so.N`: the build tree's RPATH names the
/// folder, the installed files never carry it (CMake swaps in the install RPATH, the repair
/// sets its own), and nothing else in the build sees it (no `LD_LIBRARY_PATH`, which would put
/// the folder's runtime before a framework's own in every process the build starts). `CUDAARCHS` only initialises that variable when CUDA is
/// enabled, and a project that picks its own default under `if(NOT DEFINED
/// CMAKE_CUDA_ARCHITECTURES)` before (ggml, llama.cpp's) would never see it; a definition on
/// the command line is the override such a project asks for. A project that sets the variable
/// unconditionally still wins (the built-archs line then says so).
fn cmake_args(
    existing: Option<&str>,
    runtime: &str,
    archs: Option<&str>,
    build_rpath: Option<&Path>,
) -> String {
    let mut out = existing.unwrap_or_default().to_string();
    let mut add = |arg: String| {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(&arg);
    };
    if !existing.is_some_and(|a| a.contains("CMAKE_CUDA_RUNTIME_LIBRARY")) {
        add(format!("-DCMAKE_CUDA_RUNTIME_LIBRARY={runtime}"));
    }
    if let Some(dir) =
        build_rpath.filter(|_| !existing.is_some_and(|a| a.contains("CMAKE_BUILD_RPATH")))
    {
        // Quoted for the shell-like split scikit-build-core and setuptools' CMake helpers make.
        let dir = dir.display().to_string();
        if dir.contains(char::is_whitespace) {
            add(format!("'-DCMAKE_BUILD_RPATH={dir}'"));
        } else {
            add(format!("-DCMAKE_BUILD_RPATH={dir}"));
        }
    }
    if let Some(archs) =
        archs.filter(|_| !existing.is_some_and(|a| a.contains("CMAKE_CUDA_ARCHITECTURES")))
    {
        add(format!("-DCMAKE_CUDA_ARCHITECTURES={archs}"));
    }
    // The build tree's RPATH to the project's own libraries as `$ORIGIN/...`, not the build
    // folder (scikit-build-core's is a fresh temporary one each build): the link's build ID
    // hashes it, so the same project built twice would give two wheels.
    if !existing.is_some_and(|a| a.contains("CMAKE_BUILD_RPATH_USE_ORIGIN")) {
        add("-DCMAKE_BUILD_RPATH_USE_ORIGIN=ON".into());
    }
    out
}

/// `LDFLAGS`: the caller's, then `-Xlinker --discard-all`, as cudawheel's own links do
/// (`link::DISCARD_LOCALS`): the objects' local symbols stay out of what is linked. A launcher
/// that runs nvcc's steps itself names the host compile's input its own way (sccache, here or on
/// a build server), each object's STT_FILE symbol says so, and the link's build ID hashes it
/// (it stays when the build strips the rest): without local symbols a cluster build, a cache
/// hit and a build with no launcher give one wheel. `-Xlinker` because nvcc, which CMake links a
/// CUDA-only target with, refuses `-Wl,`; GCC and Clang take both. CMake (at the first
/// configure), setuptools and meson read `LDFLAGS`. `None` where the caller's flags already
/// say it.
fn ldflags(env: &BTreeMap<String, String>) -> Option<String> {
    let existing = env.get("LDFLAGS").map_or("", String::as_str);
    if existing.contains("--discard-all") {
        return None;
    }
    let flag = "-Xlinker --discard-all";
    Some(if existing.trim().is_empty() {
        flag.into()
    } else {
        format!("{existing} {flag}")
    })
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
    fn cmake_args_say_the_runtime_and_the_archs_unless_already_said() {
        let lib64 = Path::new("/p/build/cudawheel/toolkit/lib64");
        assert_eq!(
            cmake_args(None, "Shared", Some("90-real;90-virtual"), Some(lib64)),
            "-DCMAKE_CUDA_RUNTIME_LIBRARY=Shared -DCMAKE_BUILD_RPATH=/p/build/cudawheel/toolkit/lib64 -DCMAKE_CUDA_ARCHITECTURES=90-real;90-virtual -DCMAKE_BUILD_RPATH_USE_ORIGIN=ON"
        );
        assert_eq!(
            cmake_args(None, "Shared", None, Some(Path::new("/a b/lib64"))),
            "-DCMAKE_CUDA_RUNTIME_LIBRARY=Shared '-DCMAKE_BUILD_RPATH=/a b/lib64' -DCMAKE_BUILD_RPATH_USE_ORIGIN=ON"
        );
        // Control: the caller's own definitions are kept and not repeated.
        let mine = "-DGGML_CUDA=on -DCMAKE_CUDA_ARCHITECTURES=80 -DCMAKE_CUDA_RUNTIME_LIBRARY=Static -DCMAKE_BUILD_RPATH=/x -DCMAKE_BUILD_RPATH_USE_ORIGIN=OFF";
        assert_eq!(
            cmake_args(Some(mine), "Shared", Some("90-real"), Some(lib64)),
            mine
        );
        assert_eq!(
            cmake_args(Some("-DX=1"), "Static", None, None),
            "-DX=1 -DCMAKE_CUDA_RUNTIME_LIBRARY=Static -DCMAKE_BUILD_RPATH_USE_ORIGIN=ON"
        );
    }

    #[test]
    fn the_gate_goes_first_in_each_compiler_launcher_and_cmake_gets_every_slot() {
        let mut env = BuildEnv {
            vars: vec![
                ("CMAKE_CUDA_COMPILER_LAUNCHER".into(), "/bin/sccache".into()),
                ("CMAKE_BUILD_PARALLEL_LEVEL".into(), "3".into()),
                ("MAX_JOBS".into(), "3".into()),
            ],
        };
        let caller = BTreeMap::from([("CMAKE_CXX_COMPILER_LAUNCHER".into(), "ccache".into())]);
        let limit = MemoryLimit {
            bytes: 6 << 30,
            source: "max-memory".into(),
        };
        env.add_gate(
            Path::new("/b/memory/launch"),
            Path::new("/b/memory"),
            Some(&limit),
            16,
            &caller,
        );
        let get = |k: &str| var(&env, k).map(String::from);
        assert_eq!(
            get("CMAKE_CUDA_COMPILER_LAUNCHER").as_deref(),
            Some("/b/memory/launch;--chained;/bin/sccache")
        );
        assert_eq!(
            get("CMAKE_CXX_COMPILER_LAUNCHER").as_deref(),
            Some("/b/memory/launch;--chained;ccache")
        );
        assert_eq!(
            get("CMAKE_C_COMPILER_LAUNCHER").as_deref(),
            Some("/b/memory/launch")
        );
        assert_eq!(get("CUDAWHEEL_GATE").as_deref(), Some("/b/memory"));
        assert_eq!(get("CUDAWHEEL_GATE_LIMIT"), Some((6u64 << 30).to_string()));
        // The user's max-memory is kept to the letter: no admission on the memory free now.
        assert_eq!(get("CUDAWHEEL_GATE_MEASURE"), None);
        let mut measured = BuildEnv { vars: vec![] };
        let free = MemoryLimit {
            bytes: 6 << 30,
            source: "MemAvailable".into(),
        };
        measured.add_gate(Path::new("/l"), Path::new("/d"), Some(&free), 2, &caller);
        assert_eq!(var(&measured, "CUDAWHEEL_GATE_MEASURE"), Some("1"));
        // CMake's slots are `jobs` (the gate bounds memory); torch's MAX_JOBS keeps the bound.
        assert_eq!(get("CMAKE_BUILD_PARALLEL_LEVEL").as_deref(), Some("16"));
        assert_eq!(get("MAX_JOBS").as_deref(), Some("3"));
    }

    #[test]
    fn a_wrapped_build_links_without_local_symbols_and_keeps_the_callers_flags() {
        let env = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| ((*k).into(), (*v).into()))
                .collect()
        };
        assert_eq!(
            ldflags(&env(&[])).as_deref(),
            Some("-Xlinker --discard-all")
        );
        assert_eq!(
            ldflags(&env(&[("LDFLAGS", "-L/opt/x")])).as_deref(),
            Some("-L/opt/x -Xlinker --discard-all")
        );
        // Control: flags that already say it are kept as they are.
        assert_eq!(ldflags(&env(&[("LDFLAGS", "-Wl,--discard-all")])), None);
    }

    #[test]
    fn parallelism_never_exceeds_jobs_nor_falls_below_one() {
        assert_eq!(parallelism(4, Some(64 << 30)), 4);
        assert_eq!(parallelism(16, Some(3 << 30)), 3);
        assert_eq!(parallelism(8, Some(1 << 20)), 1);
    }

    fn tool(archs: Option<&str>) -> ToolConfig {
        let mut table = toml::Table::new();
        if let Some(a) = archs {
            table.insert("archs".into(), toml::Value::String(a.into()));
        }
        ToolConfig::parse(&table, &Default::default()).unwrap()
    }

    fn var<'a>(env: &'a BuildEnv, name: &str) -> Option<&'a str> {
        env.vars
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    #[test]
    fn a_planned_environment_names_the_folder_the_build_will_make() {
        let env = planned(Path::new("/p/build/cudawheel/toolkit"), &tool(Some("90")));
        assert_eq!(
            env.cuda_summary(),
            "CUDACXX=/p/build/cudawheel/toolkit/bin/nvcc, CUDA_HOME=/p/build/cudawheel/toolkit, CUDAToolkit_ROOT=/p/build/cudawheel/toolkit, CUDAARCHS=90"
        );
        assert_eq!(var(&env, "CUDA_PATH"), Some("/p/build/cudawheel/toolkit"));
        assert_eq!(var(&env, "TORCH_CUDA_ARCH_LIST"), Some("9.0+PTX"));
        // The defaults: CUDA 13's list, PTX of the highest.
        let env = planned(Path::new("/tk"), &tool(None));
        let torch = var(&env, "TORCH_CUDA_ARCH_LIST").unwrap();
        assert!(
            torch.starts_with("7.5;8.0;") && torch.ends_with("12.0+PTX"),
            "{torch}"
        );
        // `native` needs the GPU the build runs on: left to the build.
        let env = planned(Path::new("/tk"), &tool(Some("native")));
        assert_eq!(var(&env, "CUDAARCHS"), None);
        assert_eq!(var(&env, "CUDA_HOME"), Some("/tk"));
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
