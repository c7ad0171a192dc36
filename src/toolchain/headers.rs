//! The header set: ONE coherent set of CUDA headers per build.
//!
//! The headers every compile sees (nvcc's and the host compiler's alike) are those of the
//! toolkit nvcc belongs to: the include folders its own `nvcc.profile` gives it, read from
//! `nvcc --dryrun` (so a Debian, a conda or a pip layout is read as nvcc itself reads it).
//! Never a partial runtime wheel's: `nvidia-cuda-runtime` ships `cuda_runtime_api.h` without
//! the `crt/` headers it includes (those are `nvidia-cuda-crt`) nor `<nv/target>` (CCCL).
//!
//! This module also says, for reports, which libcudart is linked and why, and gives the
//! runtime's `Requires-Dist` floor: not above the runtime wheel installed, not above the headers
//! compiled against (the code uses no API newer than either).

use std::path::PathBuf;
use std::process::Command;

use pep440_rs::Version;

use super::{Nvcc, NvccOrigin};
use crate::hint::Hint;
use crate::inspect::site::owning_distribution;

#[derive(Debug, thiserror::Error)]
pub(crate) enum HeaderError {
    #[error(
        "The CUDA headers of {toolkit} are incomplete: no {missing} in {}",
        list(searched)
    )]
    Incomplete {
        toolkit: String,
        missing: String,
        searched: Vec<PathBuf>,
        /// The wheel to install where the toolkit is made of NVIDIA's wheels.
        wheel: Option<String>,
    },
    #[error("Cannot read the include folders of {} from `nvcc --dryrun`: {message}", nvcc.display())]
    Probe { nvcc: PathBuf, message: String },
}

impl From<HeaderError> for super::ToolchainError {
    fn from(e: HeaderError) -> Self {
        super::ToolchainError::Headers(Box::new(e))
    }
}

fn list(dirs: &[PathBuf]) -> String {
    dirs.iter()
        .map(|d| d.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

impl Hint for HeaderError {
    fn hints(&self) -> Vec<String> {
        match self {
            HeaderError::Incomplete { wheel: Some(w), .. } => vec![
                format!("this toolkit is made of NVIDIA's wheels: `pip install \"{w}\"` into it (or build with build isolation, which installs a complete, consistent set)"),
                "or point `CUDA_HOME` at a complete CUDA toolkit".into(),
            ],
            HeaderError::Incomplete { .. } => vec![
                "install the missing component of that toolkit (NVIDIA's `cuda-crt` / `cuda-cccl` / `cuda-cudart-dev` packages), or point `CUDA_HOME` at a complete toolkit".into(),
            ],
            HeaderError::Probe { .. } => vec![
                "check that this nvcc runs (`nvcc --dryrun -c x.cu`), or point `CUDA_HOME` / `CUDACXX` at a working toolkit".into(),
            ],
        }
    }
}

/// The header set of one toolkit.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct HeaderSet {
    /// `-I` folders, in nvcc's order.
    pub(crate) include: Vec<PathBuf>,
    /// `-isystem` folders (CUDA 13's `include/cccl`), in nvcc's order.
    pub(crate) system: Vec<PathBuf>,
    /// Folders every compiler searches by itself (never passed): where a toolkit keeps its
    /// headers in `/usr/include`.
    pub(crate) implicit: Vec<PathBuf>,
    /// The `cuda_runtime_api.h` the set provides.
    pub(crate) runtime_header: PathBuf,
    /// Its `CUDART_VERSION` as (major, minor).
    pub(crate) version: Option<(u32, u32)>,
    /// The distribution owning those headers, where the toolkit is made of NVIDIA's wheels.
    pub(crate) owner: Option<(String, Version)>,
    /// Where the set comes from, for reports.
    pub(crate) from: String,
    /// Headers of the set that belong to another CUDA release than nvcc (one shared folder of
    /// NVIDIA's wheels holding two releases): said as a warning, not an error.
    pub(crate) mixed: Vec<String>,
}

/// Headers every CUDA compile needs, with the CUDA 13 wheel that ships each.
fn required(major: u32) -> Vec<(&'static str, &'static str)> {
    let mut out = vec![
        ("cuda_runtime.h", "nvidia-cuda-runtime"),
        ("cuda_runtime_api.h", "nvidia-cuda-runtime"),
        ("cuda_fp16.h", "nvidia-cuda-runtime"),
        ("crt/host_defines.h", "nvidia-cuda-crt"),
    ];
    if major >= 12 {
        // CUDA 12's and 13's cuda_fp16.h include <nv/target> (CCCL).
        out.push(("nv/target", "nvidia-cuda-cccl"));
    }
    out
}

impl HeaderSet {
    /// Every folder, `-I` ones first (the host compiler searches `-isystem` after `-I`).
    pub(crate) fn dirs(&self) -> impl Iterator<Item = &PathBuf> {
        self.include.iter().chain(&self.system)
    }

    /// The compiler arguments, as nvcc gives them to itself.
    pub(crate) fn args(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .include
            .iter()
            .map(|d| format!("-I{}", d.display()))
            .collect();
        for d in &self.system {
            out.extend(["-isystem".to_string(), d.display().to_string()]);
        }
        out
    }

    fn find(&self, rel: &str) -> Option<PathBuf> {
        self.dirs()
            .chain(&self.implicit)
            .map(|d| d.join(rel))
            .find(|p| p.exists())
    }

    /// `13.5` for reports.
    pub(crate) fn version_text(&self) -> String {
        self.version
            .map_or("(version unknown)".into(), |(a, b)| format!("{a}.{b}"))
    }
}

/// Reads the header set of `nvcc`'s toolkit: `INCLUDES` and `SYSTEM_INCLUDES` of
/// `nvcc --dryrun`, then checks that the headers every compile needs are there.
///
/// NVIDIA's wheels of one release can be installed into two folders of one build
/// environment: pip puts `[build-system].requires` (a framework's `cuda-toolkit` pin and the
/// CCCL it brings) in one prefix and the backend's requirements (nvcc) in another, both on
/// `sys.path`. A header nvcc's own folders lack is then taken from the same major's wheel
/// folder in another of `sites` (`other_site`), and said in `from`.
pub(crate) fn probe(nvcc: &Nvcc, sites: &[PathBuf]) -> Result<HeaderSet, super::ToolchainError> {
    let probe_err = |message: String| {
        super::ToolchainError::from(HeaderError::Probe {
            nvcc: nvcc.path.clone(),
            message,
        })
    };
    #[allow(clippy::disallowed_methods)] // asking nvcc its own include folders
    let out = Command::new(&nvcc.path)
        .args([
            "--dryrun",
            "-c",
            "cudawheel-probe.cu",
            "-o",
            "cudawheel-probe.o",
        ])
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| probe_err(e.to_string()))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if !out.status.success() {
        return Err(probe_err(format!(
            "exit {}: {}",
            out.status,
            text.lines().last().unwrap_or("no output")
        )));
    }
    let (mut include, system) = parse_dryrun(&text);
    let mut from = format!(
        "the include folders nvcc {} gives itself",
        nvcc.full_version
    );
    let mut implicit = Vec::new();
    if include.is_empty() && system.is_empty() {
        // A profile without INCLUDES (Debian's nvidia-cuda-toolkit: headers in /usr/include,
        // which every compiler searches anyway): the toolkit's own folders, if any.
        include = [
            "include",
            "targets/x86_64-linux/include",
            "targets/sbsa-linux/include",
        ]
        .iter()
        .map(|d| nvcc.root.join(d))
        .filter(|d| d.is_dir())
        .map(|d| std::fs::canonicalize(&d).unwrap_or(d))
        .collect();
        include.dedup();
        implicit.push(PathBuf::from("/usr/include"));
        from = format!(
            "nvcc {}'s toolkit folder and the compilers' default /usr/include",
            nvcc.full_version
        );
    }
    let mut set = HeaderSet {
        include,
        system,
        implicit,
        runtime_header: PathBuf::new(),
        version: None,
        owner: None,
        from,
        mixed: Vec::new(),
    };
    let toolkit = match &nvcc.origin {
        NvccOrigin::System(label) => {
            format!("the CUDA toolkit at {} ({label})", nvcc.root.display())
        }
        NvccOrigin::Pip(site) => format!("NVIDIA's nvcc wheel in {}", site.display()),
    };
    let nvcc_owner = owning_distribution(&nvcc.path);
    let pip_made = matches!(nvcc.origin, NvccOrigin::Pip(_)) || nvcc_owner.is_some();
    if pip_made {
        add_other_sites(&mut set, nvcc, sites);
    }
    let searched: Vec<PathBuf> = set.dirs().chain(&set.implicit).cloned().collect();
    for (rel, wheel) in required(nvcc.major) {
        let Some(found) = set.find(rel) else {
            return Err(super::ToolchainError::from(HeaderError::Incomplete {
                toolkit,
                missing: rel.to_string(),
                searched,
                wheel: (pip_made && nvcc.major >= 13)
                    .then(|| format!("{wheel}=={}.{}.*", nvcc.major, nvcc.minor)),
            }));
        };
        // One folder of NVIDIA's wheels can hold two releases (`--no-deps`, or a runtime
        // wheel upgraded on its own): name what does not match nvcc.
        if pip_made && rel != "nv/target" {
            if let Some((dist, v)) = owning_distribution(&found) {
                let r = v.release();
                let mm = (r.first().copied(), r.get(1).copied());
                if mm != (Some(nvcc.major.into()), Some(nvcc.minor.into())) {
                    let note = format!(
                        "{dist} {v}, not nvcc's {}: `pip install \"{dist}=={}.{}.*\"`",
                        nvcc.full_version, nvcc.major, nvcc.minor
                    );
                    if !set.mixed.contains(&note) {
                        set.mixed.push(note);
                    }
                }
            }
        }
    }
    set.runtime_header = set.find("cuda_runtime_api.h").unwrap_or_default();
    set.version = header_release(&set.runtime_header);
    set.owner = owning_distribution(&set.runtime_header);
    Ok(set)
}

/// A pip-made nvcc's header set completed from the other folders of the build environment
/// (`sites`): the runtime headers of nvcc's release first where nvcc's own are another
/// release's (`same_release_runtime`), and each required header nvcc's folders lack from the
/// same major's wheels elsewhere (`other_site`); each said in `from`.
fn add_other_sites(set: &mut HeaderSet, nvcc: &Nvcc, sites: &[PathBuf]) {
    if let Some(dir) = same_release_runtime(nvcc, set, sites) {
        set.from.push_str(&format!(
            ", with the runtime's headers of nvcc's release from {} first",
            dir.display()
        ));
        set.include.insert(0, dir);
    }
    for (rel, _) in required(nvcc.major) {
        if set.find(rel).is_some() {
            continue;
        }
        if let Some((dir, is_system)) = other_site(nvcc.major, rel, sites) {
            set.from
                .push_str(&format!(", and {} for {rel}", dir.display()));
            if is_system {
                set.system.push(dir);
            } else {
                set.include.push(dir);
            }
        }
    }
}

/// The runtime's release of an include folder: `CUDART_VERSION` of its `cuda_runtime_api.h`.
pub(crate) fn runtime_release(include: &std::path::Path) -> Option<(u32, u32)> {
    header_release(&include.join("cuda_runtime_api.h"))
}

/// `CUDART_VERSION` of one `cuda_runtime_api.h` as (major, minor).
fn header_release(header: &std::path::Path) -> Option<(u32, u32)> {
    std::fs::read_to_string(header)
        .ok()
        .and_then(|t| cudart_version(&t))
}

/// Where nvcc's own folders hold another release's runtime headers (pip installs the backend's
/// requirements into a prefix of their own, where nvcc's unpinned dependency on the runtime
/// comes at the newest release, while the framework's pinned runtime, nvcc's release, sits in
/// the other prefix): the include folder of NVIDIA's wheels in `sites` whose runtime is nvcc's
/// release, to search first. `None` when nvcc's own runtime headers are its release already.
fn same_release_runtime(nvcc: &Nvcc, set: &HeaderSet, sites: &[PathBuf]) -> Option<PathBuf> {
    let want = (nvcc.major, nvcc.minor);
    let own = set.find("cuda_runtime_api.h")?;
    if own.parent().and_then(runtime_release) == Some(want) {
        return None;
    }
    sites
        .iter()
        .map(|site| site.join(format!("nvidia/cu{}/include", nvcc.major)))
        .find(|dir| runtime_release(dir) == Some(want))
        .map(|dir| std::fs::canonicalize(&dir).unwrap_or(dir))
}

/// The include folder of NVIDIA's CUDA `major` wheels in one of `sites` that holds `rel`:
/// `nvidia/cu<major>/include` (an `-I` folder) or its `cccl/` (`-isystem`, as nvcc gives
/// itself CCCL's), or `None`.
fn other_site(major: u32, rel: &str, sites: &[PathBuf]) -> Option<(PathBuf, bool)> {
    sites.iter().find_map(|site| {
        let include = site.join(format!("nvidia/cu{major}/include"));
        [(include.clone(), false), (include.join("cccl"), true)]
            .into_iter()
            .find(|(dir, _)| dir.join(rel).exists())
            .map(|(dir, sys)| (std::fs::canonicalize(&dir).unwrap_or(dir), sys))
    })
}

/// `-I` and `-isystem` folders from `nvcc --dryrun` output (`#$ INCLUDES="-I/a" "-I/b"`,
/// `#$ SYSTEM_INCLUDES="-isystem" "/c"`), each resolved to a real path.
pub(crate) fn parse_dryrun(text: &str) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let mut include = Vec::new();
    let mut system = Vec::new();
    for line in text.lines() {
        let line = line.trim_start_matches("#$").trim();
        let words = match line
            .strip_prefix("INCLUDES=")
            .or_else(|| line.strip_prefix("SYSTEM_INCLUDES="))
        {
            Some(rest) => shlex::split(rest).unwrap_or_default(),
            None => continue,
        };
        let mut it = words.into_iter().filter(|w| !w.is_empty());
        while let Some(w) = it.next() {
            let (dir, is_system) = if w == "-isystem" {
                match it.next() {
                    Some(d) => (d, true),
                    None => break,
                }
            } else if let Some(d) = w.strip_prefix("-isystem") {
                (d.to_string(), true)
            } else if w == "-I" {
                match it.next() {
                    Some(d) => (d, false),
                    None => break,
                }
            } else if let Some(d) = w.strip_prefix("-I") {
                (d.to_string(), false)
            } else {
                continue;
            };
            let dir = PathBuf::from(&dir);
            let dir = std::fs::canonicalize(&dir).unwrap_or(dir);
            let into = if is_system { &mut system } else { &mut include };
            if !into.contains(&dir) {
                into.push(dir);
            }
        }
    }
    (include, system)
}

/// `#define CUDART_VERSION  13050` -> (13, 5).
pub(crate) fn cudart_version(header: &str) -> Option<(u32, u32)> {
    let v: u32 = header.lines().find_map(|l| {
        let rest = l.trim().strip_prefix("#define")?.trim();
        rest.strip_prefix("CUDART_VERSION")?.trim().parse().ok()
    })?;
    Some((v / 1000, (v % 1000) / 10))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_nvccs_own_include_folders() {
        let text = "#$ _HERE_=/opt/cuda/bin\n#$ INCLUDES=\"-I/opt/cuda/include\" \"-I/opt/x\"  \n#$ SYSTEM_INCLUDES=\"-isystem\" \"/opt/cuda/include/cccl\"\n#$ LIBRARIES=  \"-L/opt/cuda/lib\"\n";
        let (inc, sys) = parse_dryrun(text);
        assert_eq!(
            inc,
            vec![PathBuf::from("/opt/cuda/include"), PathBuf::from("/opt/x")]
        );
        assert_eq!(sys, vec![PathBuf::from("/opt/cuda/include/cccl")]);
        assert_eq!(parse_dryrun("nothing"), (vec![], vec![]));
    }

    fn nvcc(minor: u32) -> Nvcc {
        Nvcc {
            path: PathBuf::from("/n/nvidia/cu13/bin/nvcc"),
            root: PathBuf::from("/n/nvidia/cu13"),
            major: 13,
            minor,
            full_version: format!("13.{minor}.0"),
            origin: NvccOrigin::Pip(PathBuf::from("/n")),
            archs: Vec::new(),
        }
    }

    #[test]
    fn the_runtime_of_nvccs_release_is_searched_first_where_nvccs_own_is_another() {
        let tmp = tempfile::tempdir().unwrap();
        let runtime = |site: &str, v: u32| {
            let dir = tmp.path().join(site).join("nvidia/cu13/include");
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(
                dir.join("cuda_runtime_api.h"),
                format!("#define CUDART_VERSION {v}\n"),
            )
            .unwrap();
            std::fs::canonicalize(dir).unwrap()
        };
        let (normal, overlay) = (runtime("normal", 13050), runtime("overlay", 13020));
        let set = HeaderSet {
            include: vec![normal.clone()],
            ..HeaderSet::default()
        };
        let sites = vec![tmp.path().join("normal"), tmp.path().join("overlay")];
        assert_eq!(same_release_runtime(&nvcc(2), &set, &sites), Some(overlay));
        // Control: nvcc 13.5 has its own release's runtime already.
        assert_eq!(same_release_runtime(&nvcc(5), &set, &sites), None);
        assert_eq!(runtime_release(&normal), Some((13, 5)));
    }

    #[test]
    fn a_header_of_the_same_release_is_found_in_another_folder_of_the_build_environment() {
        let tmp = tempfile::tempdir().unwrap();
        let (normal, overlay) = (tmp.path().join("normal"), tmp.path().join("overlay"));
        let cccl = overlay.join("nvidia/cu13/include/cccl/nv");
        std::fs::create_dir_all(&cccl).unwrap();
        std::fs::write(cccl.join("target"), "").unwrap();
        std::fs::create_dir_all(normal.join("nvidia/cu13/include")).unwrap();
        let sites = vec![normal.clone(), overlay.clone()];
        let (dir, system) = other_site(13, "nv/target", &sites).unwrap();
        assert!(
            system && dir.ends_with("overlay/nvidia/cu13/include/cccl"),
            "{dir:?}"
        );
        // Controls: another major's folder, or a header no folder has, gives nothing.
        assert_eq!(other_site(12, "nv/target", &sites), None);
        assert_eq!(other_site(13, "crt/host_defines.h", &sites), None);
    }
}
