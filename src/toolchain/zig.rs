//! zig mode (`manylinux = "2_N"`): zig's clang, with glibc stubs of every version and its own
//! libc++, compiles the host code, is nvcc's host compiler (`-ccbin`) and links, so a wheel built
//! on any Linux machine needs no newer glibc than 2.N and no libstdc++ at all.
//!
//! zig comes from PyPI's `ziglang` (a build requirement in this mode) and is found on `sys.path`
//! like NVIDIA's wheels (`<site>/ziglang/zig`). In `build-dir/zig/<target>/` this module writes
//! (only when the content changed, so incremental builds keep trusting earlier steps):
//!
//! - `zig-c++`: `exec <zig> c++ -target <arch>-linux-gnu.2.N -I<shim> "$@"`, the host compiler;
//! - `shim/bits/mathcalls.h`: zig's own `bits/mathcalls.h` with its C23 declarations (`sinpi`,
//!   `cospi`, `rsqrt`, ...) gated on `__GLIBC_PREREQ (2, 41)`. zig ships one set of glibc
//!   headers (from a glibc >= 2.41) for every target and declares them without that gate;
//!   CUDA's `crt/math_functions.h` declares them differently below glibc 2.41, and nvcc stops
//!   with "exception specification is incompatible". The shim comes first (`-I`, which is
//!   searched before zig's own `-isystem` folders);
//! - `shim/<triple>/pythonX.Y/pyconfig.h`: a copy of the multiarch `pyconfig.h` a Debian or
//!   Ubuntu system Python's headers include (its `pyconfig.h` is `#include
//!   <x86_64-linux-gnu/python3.11/pyconfig.h>`, found in `/usr/include`, which zig's clang
//!   does not search: it has its own glibc headers, and `/usr/include` must not come before
//!   them);
//! - `extension.map` / `library.map`: version scripts. An extension exports only `PyInit_*`;
//!   a project shared library everything but the C++ runtime linked into it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::config::PythonInfo;
use crate::config::{Glibc, Sourced, ToolConfig};
use crate::hint::Hint;

use super::HostCompiler;

/// The build requirement this mode adds. zig is a 0.x compiler whose C++ driver, libc++ and
/// glibc headers change between minor releases: the range the shim and the flags were tested
/// with.
pub(crate) const REQUIREMENT: &str = "ziglang>=0.17,<0.18";

#[derive(Debug, thiserror::Error)]
pub(crate) enum ZigError {
    #[error("`tool.cudawheel.manylinux` = \"2_{minor}\" (from {origin}) builds with zig, which was not found in the build environment; searched:\n{}", probes.iter().map(|p| format!("    {p}")).collect::<Vec<_>>().join("\n"))]
    NotFound {
        minor: u32,
        origin: crate::config::Origin,
        probes: Vec<String>,
    },
    #[error("Running {} failed: {message}", path.display())]
    Broken { path: PathBuf, message: String },
    #[error("zig {version}'s {} no longer has the shape cudawheel patches: it declares {names} without the `#if __GLIBC_USE (IEC_60559_FUNCS_EXT_C23)` lines the glibc-version gate is added to", path.display())]
    ShimDoesNotApply {
        version: String,
        path: PathBuf,
        names: String,
    },
    #[error("`tool.cudawheel.manylinux` = \"2_{minor}\" (from {origin}) is not a manylinux policy cudawheel knows for {arch}; known: {}", known.join(", "))]
    UnknownPolicy {
        minor: u32,
        origin: crate::config::Origin,
        arch: String,
        known: Vec<String>,
    },
    #[error("`tool.cudawheel.manylinux` and `tool.cudawheel.system-rpath = true` exclude each other: a wheel with absolute RPATHs into this machine is tagged linux_<arch>, never manylinux")]
    SystemRpath,
    #[error("`tool.cudawheel.manylinux` and `bindings = \"torch\"` ({key}) exclude each other: torch's C++ API is built with GCC's libstdc++, and zig mode links LLVM's libc++, so the extension could not pass a `std::string` or a tensor to torch")]
    Torch { key: String },
    #[error("nvcc {version} ({}) refuses zig's libc++ as the host C++ library (\"libc++ is not supported on x86 system\" in {}), so `tool.cudawheel.manylinux` cannot build with it", nvcc.display(), header.display())]
    NvccRejectsLibcxx {
        version: String,
        nvcc: PathBuf,
        header: PathBuf,
    },
    #[error("Cannot write {}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl Hint for ZigError {
    fn hints(&self) -> Vec<String> {
        match self {
            ZigError::NotFound { .. } => vec![
                format!("with build isolation (the default) cudawheel asks for it by itself; with `--no-build-isolation`, `pip install \"{REQUIREMENT}\"` first"),
                "or drop `manylinux` to build with the host compiler (the wheel then gets the tag its glibc allows)".into(),
            ],
            ZigError::Broken { .. } => vec![format!("reinstall zig: `pip install --force-reinstall \"{REQUIREMENT}\"`")],
            ZigError::ShimDoesNotApply { .. } => vec![
                format!("use a zig release cudawheel was tested with: `{REQUIREMENT}`"),
                "or drop `manylinux` to build with the host compiler".into(),
            ],
            ZigError::Write { .. } => vec!["choose a writable `build-dir`".into()],
            ZigError::NvccRejectsLibcxx { .. } => vec![
                "build with CUDA 13 from PyPI (`toolkit = \"pip\"`, or `cuda = 13` without a system toolkit): its nvcc accepts libc++ 22 on Linux".into(),
                "or drop `manylinux` to build with the host compiler".into(),
            ],
            ZigError::UnknownPolicy { .. } => vec!["use one of the known values, e.g. `manylinux = \"2_28\"` or `\"2_17\"`".into()],
            ZigError::SystemRpath => vec![
                "drop `system-rpath` for a portable wheel, or drop `manylinux` for a wheel for this machine".into(),
            ],
            ZigError::Torch { .. } => vec![
                "drop `manylinux` for torch extensions: the host compiler's tag is the one torch's own wheels need anyway (manylinux_2_28)".into(),
                "or write the extension against torch's stable ABI and set `torch-stable-abi`: such an extension passes no C++ type to torch and builds in zig mode".into(),
            ],
        }
    }
}

/// zig as found in the build environment, and what it targets.
#[derive(Debug, Clone)]
pub(crate) struct Zig {
    /// `<site>/ziglang/zig`
    pub(crate) binary: PathBuf,
    /// `0.17.1`
    pub(crate) version: String,
    pub(crate) glibc: Glibc,
    /// `x86_64-linux-gnu.2.28`
    pub(crate) target: String,
    /// `build-dir/zig/<target>`, once `place` has chosen it.
    pub(crate) dir: Option<PathBuf>,
    /// zig's global cache (`ZIG_GLOBAL_CACHE_DIR`, else `$XDG_CACHE_HOME/zig`, `~/.cache/zig`).
    pub(crate) cache: PathBuf,
}

/// `x86_64-linux-gnu.2.28`
pub(crate) fn target_triple(machine: &str, glibc: Glibc) -> String {
    format!("{machine}-linux-gnu.{glibc}")
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// zig for `manylinux = "2_N"`, or `None` when the key is unset.
pub(crate) fn find(
    tool: &ToolConfig,
    env: &BTreeMap<String, String>,
    python: &PythonInfo,
) -> Result<Option<Zig>, ZigError> {
    let Some(Sourced {
        value: glibc,
        origin,
    }) = &tool.manylinux
    else {
        return Ok(None);
    };
    check(tool, &python.machine)?;
    if let Some(h) = &tool.host_compiler {
        // CXX / CUDAHOSTCXX in the environment are common and simply not used; a value the
        // project or the command line gave deserves a word.
        if matches!(
            h.origin,
            crate::config::Origin::Pyproject | crate::config::Origin::Setting(_)
        ) {
            crate::ui::warn(&format!(
                "`host-compiler` = {:?} (from {}) is not used: with `manylinux` zig compiles and links",
                h.value, h.origin
            ));
        }
    }
    let mut probes = Vec::new();
    for site in &python.sys_path {
        let binary = site.join("ziglang/zig");
        if !is_executable(&binary) {
            continue;
        }
        let version = version(&binary)?;
        return Ok(Some(Zig {
            binary,
            version,
            glibc: *glibc,
            target: target_triple(&python.machine, *glibc),
            dir: None,
            cache: global_cache(env),
        }));
    }
    probes.push(format!(
        "no `ziglang/zig` in any of the {} sys.path entries",
        python.sys_path.len()
    ));
    Err(ZigError::NotFound {
        minor: glibc.minor,
        origin: origin.clone(),
        probes,
    })
}

/// What cannot work in zig mode, refused before anything is compiled.
pub(crate) fn check(tool: &ToolConfig, machine: &str) -> Result<(), ZigError> {
    let Some(Sourced { value, origin }) = &tool.manylinux else {
        return Ok(());
    };
    if tool.system_rpath {
        return Err(ZigError::SystemRpath);
    }
    // A stable-ABI torch extension passes no C++ type to torch: zig's libc++ is fine there.
    let pinned_torch = |e: &crate::config::TargetConfig| {
        e.bindings.unwrap_or(tool.bindings.value) == crate::config::Bindings::Torch
            && e.torch_stable_abi.or(tool.torch_stable_abi).is_none()
    };
    if let Some(i) = tool.extensions.iter().position(pinned_torch) {
        let key = match tool.extensions[i].bindings {
            Some(_) => format!("tool.cudawheel.extension[{i}].bindings"),
            None => "tool.cudawheel.bindings".to_string(),
        };
        return Err(ZigError::Torch { key });
    }
    let stable_torch = |e: &crate::config::TargetConfig| {
        e.bindings.unwrap_or(tool.bindings.value) == crate::config::Bindings::Torch
    };
    if tool.extensions.iter().any(stable_torch) {
        // Measured: a C++ exception of libc++ reaches torch's libstdc++ frames as a foreign
        // exception, and torch's handler does not catch it.
        crate::ui::warn("zig mode links LLVM's libc++ into the stable-ABI torch extension: a C++ exception leaving a kernel (a failed STD_TORCH_CHECK) aborts the process instead of raising RuntimeError in Python; check inputs in Python before calling the operator, or build without `manylinux` for torch's own error path");
    }
    crate::inspect::manylinux::known_policy(value.minor, machine).map_err(|known| {
        ZigError::UnknownPolicy {
            minor: value.minor,
            origin: origin.clone(),
            arch: machine.to_string(),
            known,
        }
    })
}

/// Refuses an nvcc whose headers reject libc++ on x86 (CUDA before 13.x accepts only GCC's
/// libstdc++ there): `crt/host_defines.h` stops every compile with "libc++ is not supported on
/// x86 system" unless it has the exception for Linux libc++ 22 and newer.
pub(crate) fn check_nvcc(nvcc: &super::Nvcc) -> Result<(), ZigError> {
    // nvcc's own include folders, from the `#$ INCLUDES="-I..."` line of a dry run.
    #[allow(clippy::disallowed_methods)] // asking nvcc where its headers are
    let dry = Command::new(&nvcc.path)
        .args(["--dryrun", "-x", "cu", "-c", "/dev/null", "-o", "/dev/null"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
        .unwrap_or_default();
    let candidates: Vec<PathBuf> = dry
        .lines()
        .filter(|l| l.contains("INCLUDES="))
        .flat_map(|l| l.split('"'))
        .filter_map(|w| w.trim().strip_prefix("-I"))
        .map(|dir| Path::new(dir).join("crt/host_defines.h"))
        .chain([nvcc.root.join("include/crt/host_defines.h")])
        .collect();
    for header in candidates {
        let Ok(text) = std::fs::read_to_string(&header) else {
            continue;
        };
        if text.contains("libc++ is not supported") && !text.contains("_LIBCPP_VERSION >=") {
            return Err(ZigError::NvccRejectsLibcxx {
                version: nvcc.full_version.clone(),
                nvcc: nvcc.path.clone(),
                header,
            });
        }
        return Ok(());
    }
    Ok(())
}

/// zig's global cache folder, as zig itself chooses it.
fn global_cache(env: &BTreeMap<String, String>) -> PathBuf {
    let var = |k: &str| env.get(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    var("ZIG_GLOBAL_CACHE_DIR")
        .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("zig")))
        .or_else(|| var("HOME").map(|d| d.join(".cache/zig")))
        .unwrap_or_else(|| std::env::temp_dir().join("zig-cache"))
}

/// zig's `lib` folder (libc++ sources, glibc stubs and headers) at a path that does not change
/// between build environments: `<zig cache>/cudawheel-lib/<version>`, hard links (or copies) of
/// the installed files, made once per zig version. zig keys its cached libc++ by the path of
/// these sources; with the `lib` inside each (temporary, isolated) build environment, every
/// build would compile libc++ again (minutes).
fn stable_lib(zig: &Zig) -> Result<PathBuf, ZigError> {
    let source = zig.binary.parent().unwrap_or(Path::new("/")).join("lib");
    let root = zig.cache.join("cudawheel-lib");
    let dest = root.join(&zig.version);
    if dest.join(".complete").is_file() {
        return Ok(dest);
    }
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ZigError::Write { path, source }
    };
    std::fs::create_dir_all(&root).map_err(io(&root))?;
    let tmp = tempfile::Builder::new()
        .prefix(".tmp-")
        .tempdir_in(&root)
        .map_err(io(&root))?;
    for entry in walkdir::WalkDir::new(&source) {
        let entry = entry.map_err(|e| ZigError::Write {
            path: source.clone(),
            source: e.into(),
        })?;
        let rel = entry.path().strip_prefix(&source).unwrap_or(Path::new(""));
        let to = tmp.path().join(rel);
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&to).map_err(io(&to))?;
        } else if std::fs::hard_link(entry.path(), &to).is_err() {
            std::fs::copy(entry.path(), &to).map_err(io(&to))?;
        }
    }
    std::fs::write(tmp.path().join(".complete"), &zig.version).map_err(io(tmp.path()))?;
    let made = tmp.keep();
    if std::fs::rename(&made, &dest).is_err() {
        // Another build made it meanwhile.
        let _ = std::fs::remove_dir_all(&made);
        if !dest.join(".complete").is_file() {
            return Err(ZigError::Write {
                path: dest,
                source: std::io::Error::other("could not put zig's lib folder in place"),
            });
        }
    }
    Ok(dest)
}

/// `zig version` -> `0.17.1`
fn version(binary: &Path) -> Result<String, ZigError> {
    #[allow(clippy::disallowed_methods)] // probing the compiler is part of discovery
    let out = Command::new(binary)
        .arg("version")
        .output()
        .map_err(|e| ZigError::Broken {
            path: binary.to_path_buf(),
            message: e.to_string(),
        })?;
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !out.status.success() || text.is_empty() {
        return Err(ZigError::Broken {
            path: binary.to_path_buf(),
            message: format!(
                "`zig version` exited with {}: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        });
    }
    Ok(text)
}

/// The C23 functions zig's headers declare that CUDA's math headers declare too.
const C23_NAMES: &[&str] = &["sinpi", "cospi", "rsqrt"];
const C23_GATE: &str = "#if __GLIBC_USE (IEC_60559_FUNCS_EXT_C23)";

/// zig's `bits/mathcalls.h` with every C23 block additionally gated on glibc 2.41 (which
/// introduced those functions). `Ok(None)`: nothing to patch (the header does not declare them).
pub(crate) fn patch_mathcalls(original: &str) -> Result<Option<String>, Vec<&'static str>> {
    let declared: Vec<&'static str> = C23_NAMES
        .iter()
        .copied()
        .filter(|n| original.contains(&format!("({n},")))
        .collect();
    if declared.is_empty() {
        return Ok(None);
    }
    let mut patched = 0;
    let mut out = String::with_capacity(original.len() + 128);
    for line in original.split_inclusive('\n') {
        if line.trim_end() == C23_GATE {
            out.push_str(C23_GATE);
            out.push_str(" && __GLIBC_PREREQ (2, 41)\n");
            patched += 1;
        } else {
            out.push_str(line);
        }
    }
    if patched == 0 {
        return Err(declared);
    }
    Ok(Some(out))
}

/// Chooses `build-dir/zig/<target>/` for the generated files and makes the wrapper there the
/// host compiler (nothing is written yet: `write_files` does, under the build-dir lock).
pub(crate) fn place(zig: &mut Zig, build_dir: &Path) -> HostCompiler {
    let dir = build_dir.join("zig").join(&zig.target);
    let host = HostCompiler {
        path: dir.join("zig-c++"),
        args: Vec::new(),
    };
    zig.dir = Some(dir);
    host
}

fn write_if_changed(path: &Path, content: &str, executable: bool) -> Result<(), ZigError> {
    use std::os::unix::fs::PermissionsExt;
    let io = |source| ZigError::Write {
        path: path.to_path_buf(),
        source,
    };
    if std::fs::read_to_string(path).is_ok_and(|old| old == content) {
        return Ok(());
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(io)?;
    }
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, content).map_err(io)?;
    if executable {
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755)).map_err(io)?;
    }
    std::fs::rename(&tmp, path).map_err(io)
}

/// `'...'` for /bin/sh.
fn sh_quote(path: &Path) -> String {
    format!("'{}'", path.to_string_lossy().replace('\'', "'\\''"))
}

/// The multiarch headers `python`'s `pyconfig.h` includes by a path relative to the folder
/// above its include folder (Debian's `#  include <x86_64-linux-gnu/python3.11/pyconfig.h>`):
/// each as (that relative path, its content), for those that exist.
pub(crate) fn multiarch_pyconfig(python: &PythonInfo) -> Vec<(PathBuf, String)> {
    let Some(system) = python.include_dir.parent() else {
        return Vec::new();
    };
    let wrapper =
        std::fs::read_to_string(python.include_dir.join("pyconfig.h")).unwrap_or_default();
    wrapper
        .lines()
        .filter_map(|line| {
            let rest = line.trim_start().strip_prefix('#')?.trim_start();
            let target = rest.strip_prefix("include")?.trim().strip_prefix('<')?;
            let target = target.strip_suffix('>')?;
            let rel = Path::new(target);
            // Only `<triple>/pythonX.Y/pyconfig.h`, checked before anything is read: nothing
            // that climbs out of the folder.
            let shape = rel.components().count() == 3
                && rel.ends_with("pyconfig.h")
                && rel
                    .components()
                    .all(|c| matches!(c, std::path::Component::Normal(_)));
            if !shape {
                return None;
            }
            let text = std::fs::read_to_string(system.join(rel)).ok()?;
            Some((rel.to_path_buf(), text))
        })
        .collect()
}

/// Writes the wrapper, the header shim (with `python`'s multiarch `pyconfig.h`) and the
/// version scripts into the folder `place` chose.
pub(crate) fn write_files(zig: &Zig, python: &PythonInfo) -> Result<(), ZigError> {
    let Some(dir) = &zig.dir else {
        return Ok(());
    };
    let lib = stable_lib(zig)?;
    let header = lib.join("libc/include/generic-glibc/bits/mathcalls.h");
    let original = std::fs::read_to_string(&header).unwrap_or_default();
    let shim = dir.join("shim");
    let patched = patch_mathcalls(&original).map_err(|names| ZigError::ShimDoesNotApply {
        version: zig.version.clone(),
        path: header.clone(),
        names: names.join(", "),
    })?;
    if let Some(text) = patched {
        write_if_changed(&shim.join("bits/mathcalls.h"), &text, false)?;
    }
    for (rel, text) in multiarch_pyconfig(python) {
        write_if_changed(&shim.join(rel), &text, false)?;
    }
    let wrapper = format!(
        "#!/bin/sh\n# Written by cudawheel (manylinux = \"{}\"): zig {} as the host compiler.\nZIG_LIB_DIR={}\nexport ZIG_LIB_DIR\nexec {} c++ -target {} -I{} \"$@\"\n",
        zig.glibc.to_string().replace('.', "_"),
        zig.version,
        sh_quote(&lib),
        sh_quote(&zig.binary),
        zig.target,
        sh_quote(&shim),
    );
    write_if_changed(&dir.join("zig-c++"), &wrapper, true)?;
    write_if_changed(
        &dir.join("extension.map"),
        "{\n  global: PyInit_*;\n  local: *;\n};\n",
        false,
    )?;
    write_if_changed(&dir.join("library.map"), LIBRARY_MAP, false)?;
    Ok(())
}

/// A project shared library keeps its own symbols but not those of the C++ runtime linked into
/// it (libc++'s `std::` instantiations, `operator new`/`delete`).
const LIBRARY_MAP: &str = "{\n  local:\n    _ZNSt*; _ZNKSt*; _ZSt*; _ZTVSt*; _ZTISt*; _ZTSSt*; _ZTVNSt*; _ZTINSt*; _ZTSNSt*;\n    _Znw*; _Zna*; _Zdl*; _Zda*;\n};\n";

/// Extra nvcc flags: zig's clang is not on nvcc's list of tested host compilers.
pub(crate) fn nvcc_flags() -> Vec<String> {
    vec!["-allow-unsupported-compiler".into()]
}

/// Link flags replacing the host linker's `-Wl,-O1` (which zig's linker ignores with a
/// warning): `-O2` (zig builds and caches libc++ once per target and optimisation mode), `-s`
/// (no debug info: zig's libc++ would carry build-environment paths), the export list.
pub(crate) fn link_flags(zig: &Zig, extension: bool) -> Vec<String> {
    let dir = zig.dir.clone().unwrap_or_default();
    let map = dir.join(if extension {
        "extension.map"
    } else {
        "library.map"
    });
    vec![
        "-O2".into(),
        "-s".into(),
        format!("-Wl,--version-script={}", map.display()),
    ]
}

/// What the incremental cache must know about zig (its version and file, the target).
pub(crate) fn identity(zig: &Zig) -> String {
    let size = std::fs::metadata(&zig.binary).ok().map(|m| m.len());
    format!("zig {} {size:?} target {}", zig.version, zig.target)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_debian_pyconfig_brings_its_multiarch_header_and_nothing_else() {
        let tmp = tempfile::tempdir().unwrap();
        let usr = tmp.path();
        let inc = usr.join("python3.11");
        std::fs::create_dir_all(&inc).unwrap();
        std::fs::create_dir_all(usr.join("x86_64-linux-gnu/python3.11")).unwrap();
        std::fs::write(
            usr.join("x86_64-linux-gnu/python3.11/pyconfig.h"),
            "#define SIZEOF_LONG 8\n",
        )
        .unwrap();
        std::fs::write(usr.join("secret.h"), "no\n").unwrap();
        std::fs::write(
            inc.join("pyconfig.h"),
            "#if defined(__x86_64__)\n#  include <x86_64-linux-gnu/python3.11/pyconfig.h>\n\
             # elif defined(__aarch64__)\n#  include <aarch64-linux-gnu/python3.11/pyconfig.h>\n\
             #include <../python3.11/../secret.h>\n#endif\n",
        )
        .unwrap();
        let found = multiarch_pyconfig(&PythonInfo::for_tests(&inc));
        assert_eq!(
            found,
            [(
                PathBuf::from("x86_64-linux-gnu/python3.11/pyconfig.h"),
                "#define SIZEOF_LONG 8\n".to_string()
            )]
        );
        // Control: a pyconfig.h that is the configuration itself (pyenv, python.org) adds nothing.
        std::fs::write(inc.join("pyconfig.h"), "#define SIZEOF_LONG 8\n").unwrap();
        assert!(multiarch_pyconfig(&PythonInfo::for_tests(&inc)).is_empty());
    }

    #[test]
    fn c23_blocks_get_a_glibc_gate() {
        let header = "#if __GLIBC_USE (IEC_60559_FUNCS_EXT_C23)\n__MATHCALL_VEC (cospi,, (_Mdouble_ __x));\n#endif\n#if __GLIBC_USE (ISOC23)\nx\n#endif\n";
        let out = patch_mathcalls(header).unwrap().unwrap();
        assert!(out.starts_with(
            "#if __GLIBC_USE (IEC_60559_FUNCS_EXT_C23) && __GLIBC_PREREQ (2, 41)\n__MATHCALL_VEC (cospi,"
        ));
        assert!(out.contains("#if __GLIBC_USE (ISOC23)\n"), "{out}");
        // Nothing declared: nothing to patch.
        assert_eq!(
            patch_mathcalls("__MATHCALL (sin,, (_Mdouble_ __x));\n"),
            Ok(None)
        );
        // Declared under another gate: the patch no longer applies, which must be an error.
        let moved = "#if __GLIBC_USE (ISOC2Y)\n__MATHCALL (sinpi,, (_Mdouble_ __x));\n#endif\n";
        assert_eq!(patch_mathcalls(moved), Err(vec!["sinpi"]));
    }

    #[test]
    fn targets_name_arch_and_glibc() {
        let g = Glibc {
            major: 2,
            minor: 17,
        };
        assert_eq!(target_triple("aarch64", g), "aarch64-linux-gnu.2.17");
    }
}
