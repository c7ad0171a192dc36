//! `target = "aarch64"` on an x86_64 machine: a cross-build for ARM64 Linux (SBSA).
//!
//! nvcc (x86_64, from PyPI) compiles the device code as for any build; zig (`zig.rs`, implied
//! by the target) compiles the host code and links for `aarch64-linux-gnu.<glibc>`; the CUDA
//! libraries linked (libcudart, cuBLAS, ...) come from NVIDIA's aarch64 wheels, downloaded with
//! pip for that platform into `build-dir/aarch64/wheels` and unpacked into
//! `build-dir/aarch64/site` (the wheel file is then deleted) once per distribution and version (a later build downloads
//! nothing). The versions are those of the x86_64 wheels of the build environment, so the
//! headers compiled against and the libraries linked are one release.
//!
//! Python's own headers are the build interpreter's: CPython's ABI is the same for x86_64 and
//! aarch64 Linux (LP64, little-endian); only `EXT_SUFFIX` names the target.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::config::{Bindings, CudaChoice, Glibc, Origin, PythonInfo, ToolConfig, ToolkitChoice};
use crate::hint::Hint;

/// The build requirement a cross-build adds: pip downloads the target's NVIDIA wheels (a build
/// environment made by a frontend holds only what the backend asks for).
pub(crate) const PIP_REQUIREMENT: &str = "pip>=21";

#[derive(Debug, thiserror::Error)]
pub(crate) enum CrossError {
    #[error("`tool.cudawheel.target` = \"{target}\" (from {origin}): cudawheel cross-builds only from x86_64 Linux, and this machine is {host}")]
    Host {
        target: String,
        origin: Origin,
        host: String,
    },
    #[error("`tool.cudawheel.target` = \"aarch64\" (from {origin}) cannot build with a system CUDA toolkit (`toolkit = \"system\"`): its libraries are x86_64 ones; the cross-build takes nvcc from PyPI and the libraries from NVIDIA's aarch64 wheels")]
    SystemToolkit { origin: Origin },
    #[error("`tool.cudawheel.target` = \"aarch64\" builds with CUDA 13 or newer only (nvcc from PyPI; a system toolkit's libraries are x86_64), but `tool.cudawheel.cuda` = {major} (from {origin})")]
    CudaMajor { major: u32, origin: Origin },
    #[error("`tool.cudawheel.target` = \"aarch64\" cannot build torch extensions ({key}): torch's aarch64 libraries cannot be asked about themselves or linked from an x86_64 build environment")]
    Torch { key: String },
    #[error("`tool.cudawheel.target` = \"aarch64\": the CUDA library `{library}` was found in {found_in}, not in one of NVIDIA's wheels, so there is no aarch64 copy of it to link")]
    NotInWheel { library: String, found_in: String },
    #[error("`tool.cudawheel.target` = \"aarch64\": {header} differs between {dist} for x86_64 ({}) and for aarch64 ({}); nvcc compiles with the x86_64 copy, so the build would not match the runtime it links", host.display(), target.display())]
    HeadersDiffer {
        dist: String,
        header: String,
        host: PathBuf,
        target: PathBuf,
    },
    #[error("`tool.cudawheel.target` = \"aarch64\": {dist} {version} has no wheel for {platform} on the package index (`pip download` said: {message})")]
    NoWheel {
        dist: String,
        version: String,
        platform: String,
        message: String,
    },
    #[error("`tool.cudawheel.target` = \"aarch64\": running pip ({python} -m pip download) failed: {message}")]
    Pip { python: String, message: String },
    #[error("Cannot unpack {} into {}: {message}", wheel.display(), dest.display())]
    Unpack {
        wheel: PathBuf,
        dest: PathBuf,
        message: String,
    },
}

impl Hint for CrossError {
    fn hints(&self) -> Vec<String> {
        match self {
            CrossError::Host { .. } => vec![
                "build on the target itself without `target` (e.g. a native ARM runner with cibuildwheel), or on an x86_64 Linux machine".into(),
            ],
            CrossError::SystemToolkit { .. } => {
                vec!["drop `toolkit = \"system\"` (the cross-build uses `toolkit = \"pip\"`, CUDA 13)".into()]
            }
            CrossError::CudaMajor { .. } => vec![
                "build the aarch64 wheel for CUDA 13 (`--cuda 13 -C target=aarch64`) and CUDA 12 wheels for x86_64 only".into(),
            ],
            CrossError::Torch { .. } => vec![
                "build torch extensions on an aarch64 machine (a native ARM runner), without `target`".into(),
            ],
            CrossError::NotInWheel { .. } => vec![
                "let the library come from NVIDIA's wheels: unset its `<PREFIX>_LIBRARY_PATH`/`_DIR` variables, and for a declared library set `pip-package`".into(),
                "`cudart = \"static\"` links the toolkit's x86_64 libcudart_static.a: use the default `cudart = \"shared\"`".into(),
            ],
            CrossError::HeadersDiffer { .. } => vec![
                "report it to cudawheel: NVIDIA's runtime headers have been the same for both CPUs; meanwhile build on an aarch64 machine".into(),
            ],
            CrossError::NoWheel { .. } => vec![
                "NVIDIA publishes most CUDA wheels for manylinux aarch64; pick a version that has one, or raise `manylinux` if the wheel needs a newer glibc".into(),
            ],
            CrossError::Pip { .. } => vec![
                "with build isolation cudawheel asks for pip itself; with `--no-build-isolation`, `pip install pip` into the build environment; without network, run one cross-build with network first (its downloads are kept in build-dir)".into(),
            ],
            CrossError::Unpack { .. } => vec!["delete build-dir and build again".into()],
        }
    }
}

/// A cross-build: the CPU the wheel is for and the glibc it targets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cross {
    /// `aarch64`
    pub(crate) machine: &'static str,
    pub(crate) glibc: Glibc,
}

/// The cross-build `target` asks for, or `None` (unset, or the build machine's own CPU).
pub(crate) fn cross(tool: &ToolConfig, python: &PythonInfo) -> Result<Option<Cross>, CrossError> {
    let Some(target) = &tool.target else {
        return Ok(None);
    };
    if target.value == python.machine {
        return Ok(None);
    }
    if python.machine != "x86_64" {
        return Err(CrossError::Host {
            target: target.value.to_string(),
            origin: target.origin.clone(),
            host: python.machine.clone(),
        });
    }
    if tool.toolkit.value == ToolkitChoice::System {
        return Err(CrossError::SystemToolkit {
            origin: tool.toolkit.origin.clone(),
        });
    }
    if let CudaChoice::Major(major) = tool.cuda.value {
        if major < super::PIP_MAJOR {
            return Err(CrossError::CudaMajor {
                major,
                origin: tool.cuda.origin.clone(),
            });
        }
    }
    let torch = |b: Option<Bindings>| b.unwrap_or(tool.bindings.value) == Bindings::Torch;
    if let Some(i) = tool.extensions.iter().position(|e| torch(e.bindings)) {
        let key = match tool.extensions[i].bindings {
            Some(_) => format!("tool.cudawheel.extension[{i}].bindings"),
            None => "tool.cudawheel.bindings".to_string(),
        };
        return Err(CrossError::Torch { key });
    }
    let glibc = tool.manylinux.as_ref().map_or(
        Glibc {
            major: 2,
            minor: crate::config::AARCH64_MANYLINUX,
        },
        |m| m.value,
    );
    Ok(Some(Cross {
        machine: target.value,
        glibc,
    }))
}

/// The interpreter as the target sees it: its CPU and `EXT_SUFFIX`
/// (`.cpython-311-aarch64-linux-gnu.so`); `sys.path` (nvcc, zig, binding libraries) and the
/// Python headers stay the build machine's.
pub(crate) fn target_python(python: &PythonInfo, cross: &Cross) -> PythonInfo {
    let mut out = python.clone();
    let host = format!("{}-linux-gnu", python.machine);
    let target = format!("{}-linux-gnu", cross.machine);
    out.ext_suffix = if python.ext_suffix.contains(&host) {
        python.ext_suffix.replace(&host, &target)
    } else if python.implementation == "cpython" {
        let flags = python
            .abi_tag
            .strip_prefix(&python.python_tag)
            .unwrap_or("");
        let (major, minor) = python.version;
        format!(".cpython-{major}{minor}{flags}-{target}.so")
    } else {
        python.ext_suffix.clone()
    };
    out.machine = cross.machine.to_string();
    out
}

/// The platform tags pip may take the target's wheels from: `manylinux_2_N` down to 2_17 and
/// `manylinux2014` (pip does not widen a `--platform` by itself).
pub(crate) fn platforms(cross: &Cross) -> Vec<String> {
    let m = cross.machine;
    let mut out: Vec<String> = (crate::config::OLDEST_MANYLINUX..=cross.glibc.minor)
        .rev()
        .map(|n| format!("manylinux_2_{n}_{m}"))
        .collect();
    out.push(format!("manylinux2014_{m}"));
    out
}

/// `build-dir/<machine>`: the cross-build's own build folder (objects, records, downloads), so
/// that x86_64 and aarch64 builds of one project do not invalidate each other.
pub(crate) fn build_dir(build_dir: &Path, machine: &str) -> PathBuf {
    build_dir.join(machine)
}

/// The folder NVIDIA's target wheels are unpacked into (a `sys.path`-like site).
pub(crate) fn site(build_dir: &Path) -> PathBuf {
    build_dir.join("site")
}

fn marker(site: &Path, dist: &str, version: &str) -> PathBuf {
    site.join(".cudawheel").join(format!("{dist}-{version}"))
}

/// The NVIDIA wheels already unpacked into `site`: `dist version` each.
pub(crate) fn unpacked(site: &Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(site.join(".cudawheel"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter_map(|n| n.rsplit_once('-').map(|(d, v)| format!("{d} {v}")))
        .collect();
    out.sort();
    out
}

/// Makes sure every `(distribution, version)` is unpacked into `site(build_dir)`, downloading
/// what is missing with `python -m pip download` for the target's platforms. Returns the site
/// (each download is said as it starts).
pub(crate) fn fetch(
    python: &PythonInfo,
    cross: &Cross,
    build_dir: &Path,
    wanted: &[(String, String)],
) -> Result<PathBuf, CrossError> {
    let site = site(build_dir);
    let wheels = build_dir.join("wheels");
    for (dist, version) in wanted {
        if marker(&site, dist, version).is_file() {
            continue;
        }
        crate::ui::status(&format!(
            "cross-build: downloading {dist} {version} for {} (once)",
            cross.machine
        ));
        let wheel = download(python, cross, &wheels, dist, version)?;
        unpack(&wheel, &site)?;
        // pip's own cache keeps the file; the unpacked copy is what builds use.
        let _ = std::fs::remove_file(&wheel);
        let mark = marker(&site, dist, version);
        let done = mark
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(&mark, wheel.to_string_lossy().as_bytes()));
        done.map_err(|e| CrossError::Unpack {
            wheel: wheel.clone(),
            dest: site.clone(),
            message: e.to_string(),
        })?;
    }
    Ok(site)
}

fn download(
    python: &PythonInfo,
    cross: &Cross,
    dest: &Path,
    dist: &str,
    version: &str,
) -> Result<PathBuf, CrossError> {
    let exe = python
        .executable
        .clone()
        .unwrap_or_else(|| PathBuf::from("python3"));
    let mut args: Vec<String> = ["-m", "pip", "download", "-q", "--no-deps"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    args.extend(["--only-binary=:all:".into(), "-d".into()]);
    args.push(dest.to_string_lossy().into_owned());
    for p in platforms(cross) {
        args.extend(["--platform".into(), p]);
    }
    args.push(format!("{dist}=={version}"));
    #[allow(clippy::disallowed_methods)] // pip fetches the target's NVIDIA wheels
    let out = Command::new(&exe)
        .args(&args)
        .output()
        .map_err(|e| CrossError::Pip {
            python: exe.display().to_string(),
            message: e.to_string(),
        })?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        let message = stderr
            .lines()
            .filter(|l| l.starts_with("ERROR"))
            .collect::<Vec<_>>()
            .join(" ");
        if stderr.contains("No matching distribution") {
            return Err(CrossError::NoWheel {
                dist: dist.to_string(),
                version: version.to_string(),
                platform: format!("manylinux_2_{}_{}", cross.glibc.minor, cross.machine),
                message,
            });
        }
        return Err(CrossError::Pip {
            python: exe.display().to_string(),
            message: if message.is_empty() {
                stderr.trim().to_string()
            } else {
                message
            },
        });
    }
    let prefix = format!("{}-{version}-", dist.replace('-', "_"));
    std::fs::read_dir(dest)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name().is_some_and(|f| {
                let f = f.to_string_lossy();
                f.starts_with(&prefix) && f.ends_with(&format!("{}.whl", cross.machine))
            })
        })
        .ok_or_else(|| CrossError::Pip {
            python: exe.display().to_string(),
            message: format!("no {prefix}*{}.whl in {}", cross.machine, dest.display()),
        })
}

/// Unpacks a wheel (a zip) into `site`, as `pip install --target` lays it out.
fn unpack(wheel: &Path, site: &Path) -> Result<(), CrossError> {
    let fail = |message: String| CrossError::Unpack {
        wheel: wheel.to_path_buf(),
        dest: site.to_path_buf(),
        message,
    };
    let file = std::fs::File::open(wheel).map_err(|e| fail(e.to_string()))?;
    let mut zip = zip::ZipArchive::new(file).map_err(|e| fail(e.to_string()))?;
    std::fs::create_dir_all(site).map_err(|e| fail(e.to_string()))?;
    zip.extract(site).map_err(|e| fail(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Overrides;

    fn tool(settings: &[(&str, &str)]) -> ToolConfig {
        let overrides = Overrides {
            settings: settings
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            env: Default::default(),
        };
        ToolConfig::parse(&toml::Table::new(), &overrides).unwrap()
    }

    #[test]
    fn target_implies_zig_and_pip_and_needs_an_x86_64_host() {
        let t = tool(&[("target", "aarch64")]);
        assert_eq!(t.manylinux.as_ref().unwrap().value.minor, 28);
        assert_eq!(t.toolkit.value, ToolkitChoice::Pip);
        let mut py = PythonInfo::for_tests(Path::new("/inc"));
        let c = cross(&t, &py).unwrap().unwrap();
        assert_eq!((c.machine, c.glibc.minor), ("aarch64", 28));
        // `manylinux` picks the glibc; the host's own CPU is no cross-build.
        let t = tool(&[("target", "aarch64"), ("manylinux", "2_31")]);
        assert_eq!(cross(&t, &py).unwrap().unwrap().glibc.minor, 31);
        assert_eq!(cross(&tool(&[("target", "x86_64")]), &py).unwrap(), None);
        assert_eq!(tool(&[("target", "x86_64")]).manylinux, None);
        // From an aarch64 machine: refused.
        py.machine = "aarch64".into();
        let e = cross(&tool(&[("target", "x86_64")]), &py).unwrap_err();
        assert!(
            e.to_string()
                .contains("cross-builds only from x86_64 Linux, and this machine is aarch64"),
            "{e}"
        );
        assert_eq!(cross(&tool(&[("target", "aarch64")]), &py).unwrap(), None);
        // A system toolkit: refused.
        py.machine = "x86_64".into();
        let e = cross(&tool(&[("target", "aarch64"), ("toolkit", "system")]), &py).unwrap_err();
        assert!(matches!(e, CrossError::SystemToolkit { .. }), "{e}");
    }

    #[test]
    fn target_python_names_the_target() {
        let mut py = PythonInfo::for_tests(Path::new("/inc"));
        py.ext_suffix = ".cpython-311-x86_64-linux-gnu.so".into();
        let cross = Cross {
            machine: "aarch64",
            glibc: Glibc {
                major: 2,
                minor: 28,
            },
        };
        let t = target_python(&py, &cross);
        assert_eq!(t.ext_suffix, ".cpython-311-aarch64-linux-gnu.so");
        assert_eq!(t.machine, "aarch64");
        py.ext_suffix = ".so".into();
        py.abi_tag = "cp313t".into();
        py.python_tag = "cp313".into();
        py.version = (3, 13);
        assert_eq!(
            target_python(&py, &cross).ext_suffix,
            ".cpython-313t-aarch64-linux-gnu.so"
        );
        let p = platforms(&cross);
        assert_eq!(p.first().unwrap(), "manylinux_2_28_aarch64");
        assert!(p.contains(&"manylinux_2_17_aarch64".to_string()));
        assert_eq!(p.last().unwrap(), "manylinux2014_aarch64");
    }
}
