//! Stage 3c, the header set: ONE coherent set of CUDA headers per build.
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

use std::path::{Path, PathBuf};
use std::process::Command;

use pep440_rs::Version;

use super::{Nvcc, NvccOrigin};
use crate::hint::Hint;
use crate::libraries::{owning_distribution, FoundLibrary};

#[derive(Debug, thiserror::Error)]
pub enum HeaderError {
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
    #[error("{file} uses {}, which {} of {dist} (linked from {}) does not define: it was compiled against CUDA {headers} headers, and that runtime wheel is older", symbols.join(", "), soname, lib.display())]
    RuntimeTooOld {
        file: String,
        symbols: Vec<String>,
        soname: String,
        lib: PathBuf,
        dist: String,
        headers: String,
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
            HeaderError::RuntimeTooOld { dist, headers, .. } => vec![
                format!("upgrade it in the build environment: `pip install \"{dist}>={headers},<{}\"`", headers.split('.').next().and_then(|m| m.parse::<u32>().ok()).map_or(0, |m| m + 1)),
                "or build with a toolkit no newer than that runtime wheel, or with build isolation (the toolkit's own libcudart is linked then)".into(),
            ],
            HeaderError::Probe { .. } => vec![
                "check that this nvcc runs (`nvcc --dryrun -c x.cu`), or point `CUDA_HOME` / `CUDACXX` at a working toolkit".into(),
            ],
        }
    }
}

/// The header set of one toolkit.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HeaderSet {
    /// `-I` folders, in nvcc's order.
    pub include: Vec<PathBuf>,
    /// `-isystem` folders (CUDA 13's `include/cccl`), in nvcc's order.
    pub system: Vec<PathBuf>,
    /// Folders every compiler searches by itself (never passed): where a toolkit keeps its
    /// headers in `/usr/include`.
    pub implicit: Vec<PathBuf>,
    /// The `cuda_runtime_api.h` the set provides.
    pub runtime_header: PathBuf,
    /// Its `CUDART_VERSION` as (major, minor).
    pub version: Option<(u32, u32)>,
    /// The distribution owning those headers, where the toolkit is made of NVIDIA's wheels.
    pub owner: Option<(String, Version)>,
    /// Where the set comes from, for reports.
    pub from: String,
    /// Headers of the set that belong to another CUDA release than nvcc (one shared folder of
    /// NVIDIA's wheels holding two releases): said as a warning, not an error.
    pub mixed: Vec<String>,
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
    pub fn dirs(&self) -> impl Iterator<Item = &PathBuf> {
        self.include.iter().chain(&self.system)
    }

    /// The compiler arguments, as nvcc gives them to itself.
    pub fn args(&self) -> Vec<String> {
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
    pub fn version_text(&self) -> String {
        self.version
            .map_or("(version unknown)".into(), |(a, b)| format!("{a}.{b}"))
    }
}

/// Reads the header set of `nvcc`'s toolkit: `INCLUDES` and `SYSTEM_INCLUDES` of
/// `nvcc --dryrun`, then checks that the headers every compile needs are there.
pub fn probe(nvcc: &Nvcc) -> Result<HeaderSet, super::ToolchainError> {
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
    let searched: Vec<PathBuf> = set.dirs().chain(&set.implicit).cloned().collect();
    let nvcc_owner = owning_distribution(&nvcc.path);
    let pip_made = matches!(nvcc.origin, NvccOrigin::Pip(_)) || nvcc_owner.is_some();
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
    set.version = std::fs::read_to_string(&set.runtime_header)
        .ok()
        .and_then(|t| cudart_version(&t));
    set.owner = owning_distribution(&set.runtime_header);
    Ok(set)
}

/// `-I` and `-isystem` folders from `nvcc --dryrun` output (`#$ INCLUDES="-I/a" "-I/b"`,
/// `#$ SYSTEM_INCLUDES="-isystem" "/c"`), each resolved to a real path.
pub fn parse_dryrun(text: &str) -> (Vec<PathBuf>, Vec<PathBuf>) {
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
pub fn cudart_version(header: &str) -> Option<(u32, u32)> {
    let v: u32 = header.lines().find_map(|l| {
        let rest = l.trim().strip_prefix("#define")?.trim();
        rest.strip_prefix("CUDART_VERSION")?.trim().parse().ok()
    })?;
    Some((v / 1000, (v % 1000) / 10))
}

fn same_dir(a: &Path, b: &Path) -> bool {
    a == b
        || std::fs::canonicalize(a)
            .ok()
            .zip(std::fs::canonicalize(b).ok())
            .is_some_and(|(x, y)| x == y)
}

/// The CUDA include arguments of one target, in this order:
/// 1. each library's own headers: its folder where that holds no runtime headers
///    (`nvidia/cublas/include`, a `<PREFIX>_INCLUDE_PATH`); where it does (CUDA 13's wheels
///    share `nvidia/cu13/include` with `nvidia-cuda-runtime`), a folder under `own_root` holding
///    links to the headers its distribution's RECORD lists, and nothing else: a library's
///    headers come from where it was found;
/// 2. the toolkit's header set (`-I`, then its `-isystem` folders);
/// 3. library folders holding runtime headers that no RECORD describes (`/usr/include` with a
///    distribution's CUDA): after the set, so `cuda_runtime.h` always comes from the toolkit.
///
/// libcudart's own folder is never added: its headers are the toolkit's.
pub fn include_args(
    set: &HeaderSet,
    libs: &[&FoundLibrary],
    own_root: &Path,
) -> std::io::Result<Vec<String>> {
    let mut before: Vec<PathBuf> = Vec::new();
    let mut after: Vec<PathBuf> = Vec::new();
    for lib in libs.iter().filter(|l| l.name != "cudart") {
        for (k, dir) in lib.include_dirs.iter().enumerate() {
            let known = set
                .dirs()
                .chain(&before)
                .chain(&after)
                .any(|d| same_dir(d, dir));
            if known {
                continue;
            }
            if !dir.join("cuda_runtime_api.h").exists() {
                before.push(dir.clone());
                continue;
            }
            let own = lib
                .wheel_dist
                .as_ref()
                .and_then(|(site, dist)| record_headers(site, dist, dir));
            match own {
                Some(files) => {
                    let link_dir = match k {
                        0 => own_root.join(&lib.name),
                        _ => own_root.join(format!("{}.{k}", lib.name)),
                    };
                    sync_links(&link_dir, dir, &files)?;
                    before.push(link_dir);
                }
                None => after.push(dir.clone()),
            }
        }
    }
    let mut out: Vec<String> = before
        .iter()
        .map(|d| format!("-I{}", d.display()))
        .collect();
    out.extend(set.args());
    out.extend(after.iter().map(|d| format!("-I{}", d.display())));
    Ok(out)
}

/// The files `dist` installed below `include` (relative to it), from its `.dist-info/RECORD`
/// in `site`; `None` when no RECORD says.
fn record_headers(site: &Path, dist: &str, include: &Path) -> Option<Vec<String>> {
    let rel = include.strip_prefix(site).ok()?;
    let prefix = format!("{}/", crate::package::metadata::portable(rel));
    for entry in std::fs::read_dir(site).ok()?.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(stem) = name.strip_suffix(".dist-info") else {
            continue;
        };
        let normalized = stem
            .rsplit_once('-')
            .map_or(stem, |(n, _)| n)
            .to_ascii_lowercase()
            .replace(['_', '.'], "-");
        if normalized != dist {
            continue;
        }
        let record = std::fs::read_to_string(entry.path().join("RECORD")).ok()?;
        let files: Vec<String> = record
            .lines()
            .filter_map(|l| l.split(',').next())
            .filter_map(|p| p.strip_prefix(&prefix))
            .filter(|p| !p.ends_with("__init__.py") && !p.contains("__pycache__"))
            .map(str::to_string)
            .collect();
        return (!files.is_empty()).then_some(files);
    }
    None
}

/// Makes `link_dir` hold exactly one symbolic link per file, `link_dir/<rel>` -> `dir/<rel>`,
/// touching links that are already right not at all (their targets' times decide incremental
/// builds).
fn sync_links(link_dir: &Path, dir: &Path, files: &[String]) -> std::io::Result<()> {
    let wanted: std::collections::BTreeSet<PathBuf> =
        files.iter().map(|f| link_dir.join(f)).collect();
    if link_dir.exists() {
        for entry in walkdir::WalkDir::new(link_dir).contents_first(true) {
            let entry = entry.map_err(std::io::Error::other)?;
            let path = entry.path();
            if entry.path_is_symlink() && !wanted.contains(path) {
                std::fs::remove_file(path)?;
            } else if entry.file_type().is_dir() && path != link_dir {
                // Empty after the clean-up: gone; otherwise kept.
                let _ = std::fs::remove_dir(path);
            }
        }
    }
    for f in files {
        let link = link_dir.join(f);
        let target = dir.join(f);
        if std::fs::read_link(&link).is_ok_and(|t| t == target) {
            continue;
        }
        if let Some(parent) = link.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&target, &link)?;
    }
    Ok(())
}

/// The runtime's `Requires-Dist` floor: the linked wheel's version, lowered to the headers'
/// release when those are older (code compiled against 13.0 headers needs nothing newer than
/// a 13.0 runtime). Never above the wheel installed, so the build environment satisfies it.
pub fn runtime_floor(set: &HeaderSet, wheel_floor: (u64, u64)) -> (u64, u64) {
    match set.version {
        Some((a, b))
            if (u64::from(a), u64::from(b)) < wheel_floor && u64::from(a) == wheel_floor.0 =>
        {
            (a.into(), b.into())
        }
        _ => wheel_floor,
    }
}

/// Refuses an ELF that imports CUDA runtime functions the linked libcudart lacks: headers newer
/// than the runtime wheel linked (13.5 headers, a 13.0 wheel) declare API that wheel does not
/// have, and the extension would fail at import with `undefined symbol`. Checked only then.
pub fn check_runtime(
    set: &HeaderSet,
    cudart: &FoundLibrary,
    file: &str,
    report: &crate::audit::elf::ElfReport,
) -> Result<(), super::ToolchainError> {
    let (Some(p), Some(lib), Some((a, b))) = (&cudart.provider, cudart.shared.first(), set.version)
    else {
        return Ok(());
    };
    if p.floor >= (a.into(), b.into()) || !report.needed.contains(&lib.soname) {
        return Ok(());
    }
    let Ok(exported) = crate::audit::elf::exported(&lib.path) else {
        return Ok(());
    };
    let symbols: Vec<String> = report
        .undefined
        .iter()
        .filter(|s| s.starts_with("cuda") || s.starts_with("__cuda"))
        .filter(|s| !exported.contains(*s))
        .cloned()
        .collect();
    if symbols.is_empty() {
        return Ok(());
    }
    Err(HeaderError::RuntimeTooOld {
        file: file.to_string(),
        symbols,
        soname: lib.soname.clone(),
        lib: lib.path.clone(),
        dist: p.dist.clone(),
        headers: set.version_text(),
    }
    .into())
}

/// The release of the linked libcudart's distribution (`nvidia-cuda-runtime 13.5.37` -> 13.5).
fn linked_release(rt: &FoundLibrary) -> Option<(u64, u64)> {
    let (_, v) = owning_distribution(&rt.shared.first()?.path)?;
    let r = v.release();
    Some((*r.first()?, r.get(1).copied().unwrap_or(0)))
}

/// Whether the headers compiled against and the libcudart linked are of different releases
/// (or one wheel folder mixes releases): then a build says which is which, and why.
pub fn runtime_differs(set: &HeaderSet, rt: &FoundLibrary) -> bool {
    let headers = set.version.map(|(a, b)| (u64::from(a), u64::from(b)));
    !set.mixed.is_empty() || linked_release(rt).is_some_and(|v| Some(v) != headers)
}

/// What a build compiles against and links, and why: the lines `doctor` and a build show.
pub fn explain(set: &HeaderSet, cudart: Option<&FoundLibrary>) -> Vec<String> {
    let mut out = Vec::new();
    let owner = set
        .owner
        .as_ref()
        .map(|(d, v)| format!(", from {d} {v}"))
        .unwrap_or_default();
    out.push(format!(
        "headers: CUDA {} ({}{owner}): {}",
        set.version_text(),
        set.from,
        set.dirs()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    ));
    if !set.mixed.is_empty() {
        out.push(format!(
            "warning: that folder mixes two CUDA releases: {}",
            set.mixed.join("; ")
        ));
    }
    let Some(rt) = cudart else {
        return out;
    };
    let file = rt
        .shared
        .first()
        .map(|s| s.path.clone())
        .or_else(|| rt.statics.first().cloned())
        .unwrap_or_default();
    let how = if rt.shared.is_empty() {
        "linked statically"
    } else {
        "linked by SONAME"
    };
    let why = if rt.found_in.starts_with("the CUDA toolkit") {
        "no NVIDIA runtime wheel of this CUDA major in the build environment, so the toolkit's own"
    } else if rt.found_in.contains(" in ") && rt.provider.is_some() {
        "NVIDIA's runtime wheel in the build environment comes before the toolkit, so the extension loads the copy this environment (and its Requires-Dist) provides"
    } else {
        "the first place discovery found it"
    };
    out.push(format!(
        "libcudart: {} ({how}; found in {}): {why}",
        file.display(),
        rt.found_in
    ));
    if let Some(p) = &rt.provider {
        out.push(format!(
            "Requires-Dist for it: {}{}",
            p.requirement(),
            match linked_release(rt) {
                Some(v) if runtime_differs(set, rt) => format!(
                    " (headers {} and the runtime {}.{} differ: the floor is the lower of the two, never above the runtime installed)",
                    set.version_text(),
                    v.0,
                    v.1
                ),
                _ => String::new(),
            }
        ));
    }
    out
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

    #[test]
    fn cudart_versions_and_floors() {
        assert_eq!(
            cudart_version("#define CUDART_VERSION  13050\n"),
            Some((13, 5))
        );
        assert_eq!(
            cudart_version("#define CUDART_VERSION 12040"),
            Some((12, 4))
        );
        assert_eq!(
            cudart_version("# define __CUDART_API_VERSION CUDART_VERSION"),
            None
        );
        let set = |v| HeaderSet {
            include: vec![],
            system: vec![],
            implicit: vec![],
            runtime_header: PathBuf::new(),
            version: Some(v),
            owner: None,
            from: String::new(),
            mixed: vec![],
        };
        // Headers older than the wheel: the floor follows the headers.
        assert_eq!(runtime_floor(&set((13, 0)), (13, 5)), (13, 0));
        // Headers newer than the wheel: never above the wheel installed.
        assert_eq!(runtime_floor(&set((13, 5)), (13, 0)), (13, 0));
        assert_eq!(runtime_floor(&set((12, 4)), (12, 9)), (12, 4));
    }

    fn lib(name: &str, dir: &Path, wheel: Option<(&Path, &str)>) -> FoundLibrary {
        FoundLibrary {
            name: name.into(),
            include_dirs: vec![dir.to_path_buf()],
            shared: vec![],
            statics: vec![],
            ldflags: vec![],
            site_lib_dir: None,
            outside_dir: None,
            provider: None,
            found_in: "test".into(),
            wheel_dist: wheel.map(|(s, d)| (s.to_path_buf(), d.to_string())),
        }
    }

    #[test]
    fn library_headers_first_toolkit_next_shared_runtime_folders_last() {
        let t = tempfile::tempdir().unwrap();
        let touch = |p: &Path| {
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "").unwrap();
        };
        // A site whose nvidia/cu13/include holds the runtime wheel's and nvtx's headers.
        let site = t.path().join("site");
        let shared = site.join("nvidia/cu13/include");
        touch(&shared.join("cuda_runtime_api.h"));
        touch(&shared.join("nvtx3/nvToolsExt.h"));
        let di = site.join("nvidia_nvtx-13.1.68.dist-info");
        std::fs::create_dir_all(&di).unwrap();
        std::fs::write(
            di.join("RECORD"),
            "nvidia/cu13/include/nvtx3/nvToolsExt.h,sha256=x,0\nnvidia_nvtx-13.1.68.dist-info/RECORD,,\n",
        )
        .unwrap();
        // A dedicated library folder, and a system folder with runtime headers and no RECORD.
        let dedicated = t.path().join("nccl/include");
        touch(&dedicated.join("nccl.h"));
        let system = t.path().join("usr/include");
        touch(&system.join("cuda_runtime_api.h"));
        let kit = t.path().join("kit/include");
        touch(&kit.join("cuda_runtime_api.h"));
        let set = HeaderSet {
            include: vec![kit.clone()],
            system: vec![kit.join("cccl")],
            implicit: vec![],
            runtime_header: kit.join("cuda_runtime_api.h"),
            version: Some((13, 5)),
            owner: None,
            from: String::new(),
            mixed: vec![],
        };
        let own = t.path().join("build/cuda-headers");
        let libs = [
            lib("cudart", &shared, Some((&site, "nvidia-cuda-runtime"))),
            lib("nvtx", &shared, Some((&site, "nvidia-nvtx"))),
            lib("nccl", &dedicated, None),
            lib("other", &system, None),
            lib("kitlib", &kit, None),
        ];
        let refs: Vec<&FoundLibrary> = libs.iter().collect();
        let args = include_args(&set, &refs, &own).unwrap();
        let d = |p: &Path| format!("-I{}", p.display());
        assert_eq!(
            args,
            vec![
                d(&own.join("nvtx")),
                d(&dedicated),
                d(&kit),
                "-isystem".into(),
                kit.join("cccl").display().to_string(),
                d(&system),
            ]
        );
        // Only nvtx's own file is linked, to where the wheel put it.
        let link = own.join("nvtx/nvtx3/nvToolsExt.h");
        assert_eq!(
            std::fs::read_link(&link).unwrap(),
            shared.join("nvtx3/nvToolsExt.h")
        );
        assert!(!own.join("nvtx/cuda_runtime_api.h").exists());
        // A link the RECORD no longer lists goes; the right ones are left alone.
        std::os::unix::fs::symlink(&kit, own.join("nvtx/stale.h")).unwrap();
        include_args(&set, &refs, &own).unwrap();
        assert!(std::fs::symlink_metadata(own.join("nvtx/stale.h")).is_err());
        assert!(link.exists());
    }
}
