//! Stage 3, toolchain and library discovery: WITH WHAT to build.
//!
//! Finds nvcc (system toolkit or NVIDIA's pip wheels), the host compiler, and libcudart, and
//! records where each came from and which distribution provides it at run time. Runs
//! `nvcc --version` / `--list-gpu-arch` to learn the toolkit; compiles nothing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use pep440_rs::Version;

use crate::config::{CudaChoice, Cudart, Origin, Sourced, ToolConfig, ToolkitChoice};
use crate::error::Hint;
use crate::python::PythonInfo;

#[derive(Debug, thiserror::Error)]
pub enum ToolchainError {
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
    #[error("`tool.cudawheel.toolkit` = \"pip\" (from {origin}) cannot build CUDA {major}: NVIDIA ships a complete nvcc on PyPI only for CUDA 13 and newer")]
    NoPipToolkit { major: u32, origin: Origin },
    #[error("Running {} failed: {message}", path.display())]
    NvccBroken { path: PathBuf, message: String },
    #[error("The host compiler {name:?} (from {origin}) was not found on PATH")]
    HostCompilerNotFound { name: String, origin: String },
    #[error("{name} ({file}) not found for CUDA {major}; searched:\n{}", probes.iter().map(|p| format!("    {p}")).collect::<Vec<_>>().join("\n"))]
    LibraryNotFound {
        name: String,
        file: String,
        major: u32,
        probes: Vec<String>,
        env_prefix: String,
    },
    #[error("`tool.cudawheel.compiler-launcher` = {name:?} was not found on PATH")]
    LauncherNotFound { name: String },
}

impl Hint for ToolchainError {
    fn hints(&self) -> Vec<String> {
        match self {
            ToolchainError::NvccNotFound { pip_possible: true, .. } => vec![
                "with build isolation (the default) cudawheel installs nvcc from PyPI by itself; with `--no-build-isolation`, `pip install \"nvidia-cuda-nvcc>=13,<14\" \"nvidia-cuda-cccl>=13,<14\"` first".into(),
                "or point `CUDA_HOME` at a CUDA toolkit".into(),
            ],
            ToolchainError::NvccNotFound { .. } => vec![
                "install that CUDA toolkit and set `CUDA_HOME` (or `CUDACXX`) to it".into(),
                "or build for CUDA 13, whose toolkit cudawheel can take from PyPI: `-C cuda=13`".into(),
            ],
            ToolchainError::WrongMajor { .. } => vec![
                "set `CUDA_HOME` to a toolkit of the wanted major, or change `cuda` (e.g. `-C cuda=auto`)".into(),
            ],
            ToolchainError::NoPipToolkit { .. } => {
                vec!["install that toolkit and use `toolkit = \"system\"` (or `\"auto\"`), or build with `cuda = 13`".into()]
            }
            ToolchainError::HostCompilerNotFound { .. } => vec![
                "install a C++ compiler (e.g. `apt-get install g++`) or set `host-compiler` / `CUDAHOSTCXX`".into(),
            ],
            ToolchainError::LibraryNotFound { env_prefix, .. } => vec![format!(
                "set `{env_prefix}_LIBRARY_PATH` and `{env_prefix}_INCLUDE_PATH` (or `{env_prefix}_DIR`) to where it is installed"
            )],
            ToolchainError::LauncherNotFound { .. } => vec!["install it, or drop `compiler-launcher`".into()],
            ToolchainError::NvccBroken { .. } => Vec::new(),
        }
    }
}

/// Where nvcc was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NvccOrigin {
    /// `CUDACXX`, `CUDA_HOME`, `CUDA_PATH`, `PATH` or the default `/usr/local/cuda`.
    System(String),
    /// NVIDIA's `nvidia-cuda-nvcc` wheel in this `sys.path` entry.
    Pip(PathBuf),
}

#[derive(Debug, Clone)]
pub struct Nvcc {
    pub path: PathBuf,
    /// The toolkit folder (parent of `bin/`).
    pub root: PathBuf,
    pub major: u32,
    pub minor: u32,
    /// `13.5.37`
    pub full_version: String,
    pub origin: NvccOrigin,
    /// Virtual architectures it supports, without `compute_`: `75`, `90a`, ...
    pub archs: Vec<String>,
}

/// Who provides a library at run time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Provider {
    /// Distribution name, as the wheel's `Requires-Dist` will spell it.
    pub dist: String,
    /// The version built against: `major.minor` of the distribution's own scheme.
    pub floor: (u64, u64),
}

/// A CUDA library as found for linking.
#[derive(Debug, Clone)]
pub struct FoundLibrary {
    pub name: String,
    pub include_dir: PathBuf,
    pub lib_dir: PathBuf,
    /// File to link: the SONAME-named shared library, or a static archive.
    pub file: String,
    /// SONAME when linked dynamically.
    pub soname: Option<String>,
    /// Folder relative to site-packages where the provider installs it (for `$ORIGIN` RPATHs).
    pub site_dir: String,
    pub provider: Option<Provider>,
    /// Where it was found, for messages.
    pub found_in: String,
}

#[derive(Debug, Clone)]
pub struct HostCompiler {
    pub path: PathBuf,
    /// Extra words from a value like `"g++-11 -m64"`.
    pub args: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct Toolchain {
    pub nvcc: Nvcc,
    pub host: HostCompiler,
    pub launcher: Option<PathBuf>,
    pub cudart: FoundLibrary,
}

/// The catalogue entry of cudart for one CUDA major (contract §3; facts/nvidia-wheels.md).
pub struct CudartEntry {
    pub dist: &'static str,
    pub site_dir: &'static str,
    pub soname: &'static str,
}

pub fn cudart_entry(major: u32) -> CudartEntry {
    match major {
        11 => CudartEntry {
            dist: "nvidia-cuda-runtime-cu11",
            site_dir: "nvidia/cuda_runtime",
            soname: "libcudart.so.11.0",
        },
        12 => CudartEntry {
            dist: "nvidia-cuda-runtime-cu12",
            site_dir: "nvidia/cuda_runtime",
            soname: "libcudart.so.12",
        },
        _ => CudartEntry {
            dist: "nvidia-cuda-runtime",
            site_dir: "nvidia/cu13",
            soname: "libcudart.so.13",
        },
    }
}

/// The newest CUDA major whose complete toolkit is on PyPI, and what to install for it.
pub const PIP_MAJOR: u32 = 13;
pub fn pip_toolkit_requirements() -> Vec<String> {
    [
        "nvidia-cuda-nvcc",
        "nvidia-cuda-cccl",
        "nvidia-cuda-runtime",
    ]
    .iter()
    .map(|d| format!("{d}>={PIP_MAJOR},<{}", PIP_MAJOR + 1))
    .collect()
}

type Env = BTreeMap<String, String>;

fn env_path(env: &Env, var: &str) -> Option<PathBuf> {
    env.get(var).filter(|v| !v.is_empty()).map(PathBuf::from)
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// `name` if it is a path, else its first hit on `PATH`.
pub fn which(name: &str, env: &Env) -> Option<PathBuf> {
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
pub fn parse_nvcc_version(text: &str) -> Option<(u32, u32, String)> {
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

fn probe_nvcc(path: &Path, origin: NvccOrigin) -> Result<Nvcc, ToolchainError> {
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

/// System nvcc candidates in contract order, each with a label for messages.
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
        .sys_path
        .iter()
        .map(|site| (site.join("nvidia/cu13/bin/nvcc"), site.clone()))
        .filter(|(p, _)| is_executable(p))
        .collect()
}

/// Which nvcc a build uses, or why none fits. `Ok(None)` means: CUDA 13 from PyPI, not yet
/// installed (what `get_requires_for_build_wheel` asks for).
pub fn choose_nvcc(
    tool: &ToolConfig,
    env: &Env,
    python: &PythonInfo,
) -> Result<Option<Nvcc>, ToolchainError> {
    let want = tool.cuda.value;
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
            let nvcc = probe_nvcc(&path, NvccOrigin::System(label.clone()))?;
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
            return probe_nvcc(&path, NvccOrigin::Pip(site)).map(Some);
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
        },
        probes,
        pip_possible: false,
    })
}

/// The CUDA major a build will use, without needing the pip toolkit installed yet.
pub fn resolve_major(
    tool: &ToolConfig,
    env: &Env,
    python: &PythonInfo,
) -> Result<u32, ToolchainError> {
    Ok(choose_nvcc(tool, env, python)?.map_or(PIP_MAJOR, |n| n.major))
}

/// What `get_requires_for_build_wheel` returns: the pip toolkit when no system one is used.
pub fn build_requirements(
    tool: &ToolConfig,
    env: &Env,
    python: &PythonInfo,
) -> Result<Vec<String>, ToolchainError> {
    Ok(match choose_nvcc(tool, env, python)? {
        Some(n) if matches!(n.origin, NvccOrigin::System(_)) => Vec::new(),
        _ => pip_toolkit_requirements(),
    })
}

/// The distribution in `site` whose RECORD lists `rel` (a path relative to `site`).
fn owning_distribution(site: &Path, rel: &str) -> Option<(String, Version)> {
    let entries = std::fs::read_dir(site).ok()?;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(stem) = name.strip_suffix(".dist-info") else {
            continue;
        };
        if !stem.to_ascii_lowercase().starts_with("nvidia") {
            continue;
        }
        let Ok(record) = std::fs::read_to_string(entry.path().join("RECORD")) else {
            continue;
        };
        if !record.lines().any(|l| l.split(',').next() == Some(rel)) {
            continue;
        }
        let metadata = std::fs::read_to_string(entry.path().join("METADATA")).ok()?;
        let field = |key: &str| {
            metadata
                .lines()
                .take_while(|l| !l.is_empty())
                .find_map(|l| l.strip_prefix(key).map(|v| v.trim().to_string()))
        };
        let version: Version = field("Version:")?.parse().ok()?;
        return Some((field("Name:")?, version));
    }
    None
}

fn floor_of(v: &Version) -> (u64, u64) {
    let r = v.release();
    (
        r.first().copied().unwrap_or(0),
        r.get(1).copied().unwrap_or(0),
    )
}

/// Finds libcudart (contract §3 order: env overrides, NVIDIA wheels, the toolkit, system).
pub fn find_cudart(
    nvcc: &Nvcc,
    mode: Cudart,
    env: &Env,
    python: &PythonInfo,
) -> Result<FoundLibrary, ToolchainError> {
    let entry = cudart_entry(nvcc.major);
    let file = match mode {
        Cudart::Shared => entry.soname.to_string(),
        Cudart::Static => "libcudart_static.a".to_string(),
    };
    let header = "cuda_runtime_api.h";
    let mut probes = Vec::new();
    // (include dir, lib dir, label, site-packages entry when from a wheel)
    let mut candidates: Vec<(PathBuf, PathBuf, String, Option<PathBuf>)> = Vec::new();
    let inc_var = env_path(env, "CUDART_INCLUDE_PATH");
    if let Some(libs) = env.get("CUDART_LIBRARY_PATH").filter(|v| !v.is_empty()) {
        for lib in std::env::split_paths(libs) {
            let inc = inc_var.clone().unwrap_or_else(|| lib.join("../include"));
            candidates.push((inc, lib, "CUDART_LIBRARY_PATH".into(), None));
        }
    } else if let Some(dir) = env_path(env, "CUDART_DIR") {
        for lib in ["lib", "lib64"] {
            candidates.push((
                dir.join("include"),
                dir.join(lib),
                "CUDART_DIR".into(),
                None,
            ));
        }
    }
    for site in &python.sys_path {
        let base = site.join(entry.site_dir);
        candidates.push((
            base.join("include"),
            base.join("lib"),
            format!("wheel folder {}", base.display()),
            Some(site.clone()),
        ));
    }
    for lib in [
        "lib64",
        "lib",
        "targets/x86_64-linux/lib",
        "targets/sbsa-linux/lib",
    ] {
        let inc = if lib.starts_with("targets") {
            nvcc.root.join(lib).with_file_name("include")
        } else {
            nvcc.root.join("include")
        };
        candidates.push((inc, nvcc.root.join(lib), "toolkit".into(), None));
    }
    for (inc, lib) in [
        ("/usr/include", "/usr/lib/x86_64-linux-gnu"),
        ("/usr/include", "/usr/lib/aarch64-linux-gnu"),
        ("/usr/include", "/usr/lib64"),
    ] {
        candidates.push((inc.into(), lib.into(), "system".into(), None));
    }
    for (inc, lib, label, site) in candidates {
        let path = lib.join(&file);
        if !path.is_file() || !inc.join(header).is_file() {
            probes.push(format!("{} ({label})", path.display()));
            continue;
        }
        let lib = std::fs::canonicalize(&lib).unwrap_or(lib);
        let inc = std::fs::canonicalize(&inc).unwrap_or(inc);
        let (site_dir, provider) = if mode == Cudart::Static {
            (String::new(), None)
        } else {
            let owner = site.as_ref().and_then(|s| {
                let rel = format!("{}/lib/{file}", entry.site_dir);
                owning_distribution(s, &rel)
            });
            let provider = match owner {
                Some((dist, version)) => Provider {
                    dist: dist.to_ascii_lowercase().replace('_', "-"),
                    floor: floor_of(&version),
                },
                None => Provider {
                    dist: entry.dist.to_string(),
                    floor: (nvcc.major.into(), nvcc.minor.into()),
                },
            };
            (format!("{}/lib", entry.site_dir), Some(provider))
        };
        return Ok(FoundLibrary {
            name: "cudart".into(),
            include_dir: inc,
            lib_dir: lib,
            soname: (mode == Cudart::Shared).then(|| file.clone()),
            file,
            site_dir,
            provider,
            found_in: label,
        });
    }
    Err(ToolchainError::LibraryNotFound {
        name: "cudart".into(),
        file,
        major: nvcc.major,
        probes,
        env_prefix: "CUDART".into(),
    })
}

fn host_compiler(tool: &ToolConfig, env: &Env) -> Result<HostCompiler, ToolchainError> {
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

/// Discovers everything a build needs.
pub fn discover(
    tool: &ToolConfig,
    env: &Env,
    python: &PythonInfo,
) -> Result<Toolchain, ToolchainError> {
    let mut nvcc = match choose_nvcc(tool, env, python)? {
        Some(n) => n,
        None => {
            let probes = system_candidates(env)
                .into_iter()
                .map(|(p, label)| format!("{} ({label})", p.display()))
                .chain(python.sys_path.iter().map(|s| {
                    format!(
                        "{} (NVIDIA wheel)",
                        s.join("nvidia/cu13/bin/nvcc").display()
                    )
                }))
                .collect();
            return Err(ToolchainError::NvccNotFound {
                wanted: PIP_MAJOR.to_string(),
                probes,
                pip_possible: true,
            });
        }
    };
    nvcc.archs = run_nvcc(&nvcc.path, &["--list-gpu-arch"])?
        .lines()
        .filter_map(|l| l.trim().strip_prefix("compute_").map(str::to_string))
        .collect();
    let host = host_compiler(tool, env)?;
    let launcher = match &tool.compiler_launcher {
        None => None,
        Some(name) => Some(
            which(name, env)
                .ok_or_else(|| ToolchainError::LauncherNotFound { name: name.clone() })?,
        ),
    };
    let cudart = find_cudart(&nvcc, tool.cudart, env, python)?;
    Ok(Toolchain {
        nvcc,
        host,
        launcher,
        cudart,
    })
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

    #[test]
    fn owner_of_a_wheel_file_comes_from_record() {
        let site = tempfile::tempdir().unwrap();
        let di = site.path().join("nvidia_cuda_runtime-13.5.37.dist-info");
        std::fs::create_dir_all(&di).unwrap();
        std::fs::write(
            di.join("METADATA"),
            "Metadata-Version: 2.1\nName: nvidia-cuda-runtime\nVersion: 13.5.37\n\nbody",
        )
        .unwrap();
        std::fs::write(
            di.join("RECORD"),
            "nvidia/cu13/lib/libcudart.so.13,sha256=x,1\n",
        )
        .unwrap();
        let (name, version) =
            owning_distribution(site.path(), "nvidia/cu13/lib/libcudart.so.13").unwrap();
        assert_eq!(name, "nvidia-cuda-runtime");
        assert_eq!(floor_of(&version), (13, 5));
        assert!(owning_distribution(site.path(), "nvidia/cu13/lib/libcublas.so.13").is_none());
    }
}
