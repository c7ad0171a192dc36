//! Stage 4, library discovery: for each CUDA library a target uses (catalogued or declared in
//! `[tool.cudawheel.library.<name>]`), find its headers and libraries in the documented order
//! (docs/explanations/discovery.md) and record which distribution provides it at run time.
//!
//! Order, first hit wins: `<PREFIX>_INCLUDE_PATH`/`_LIBRARY_PATH` (+ `_LDFLAGS`) else
//! `<PREFIX>_DIR`; NVIDIA wheels on `sys.path` (told apart by their distribution, never by
//! folder); the CUDA toolkit in use; Debian multiarch and RPM layouts plus `search` entries.

pub(crate) mod catalog;
pub(crate) mod cross;
pub(crate) mod cudart;
pub(crate) mod targets;
pub(crate) mod toolkit_components;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use pep440_rs::Version;

use crate::config::{suggest, LibraryConfig, ToolConfig};
use crate::hint::Hint;
use crate::inspect::site::owning_distribution;
use crate::toolchain::{Nvcc, ToolkitRequest};
use catalog::WheelLayout;

type Env = BTreeMap<String, String>;

/// What library discovery can fail at: a library no search found, or a name neither
/// catalogued nor declared.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LibraryError {
    #[error("The CUDA library `{name}` was not found for CUDA {major}; searched:\n{}", probes.iter().map(|p| format!("    {p}")).collect::<Vec<_>>().join("\n"))]
    NotFound {
        name: String,
        major: u32,
        probes: Vec<String>,
        env_prefix: String,
    },
    /// A cross-build's libraries (`cross.rs`).
    #[error(transparent)]
    Cross(#[from] crate::toolchain::cross::CrossError),
    #[error("`{key}` names the library {name:?}, which is neither in cudawheel's catalogue nor declared in `[tool.cudawheel.library.{name}]`")]
    Unknown {
        key: String,
        name: String,
        suggestion: Option<String>,
    },
}

impl Hint for LibraryError {
    fn hints(&self) -> Vec<String> {
        match self {
            LibraryError::Cross(e) => e.hints(),
            LibraryError::NotFound { env_prefix, .. } => vec![format!(
                "set `{env_prefix}_LIBRARY_PATH` and `{env_prefix}_INCLUDE_PATH` (or `{env_prefix}_DIR`) to where it is installed"
            )],
            LibraryError::Unknown { suggestion: Some(s), .. } => vec![format!("did you mean {s:?}?")],
            LibraryError::Unknown { name, .. } => vec![format!(
                "describe it in `[tool.cudawheel.library.{name}]` (`headers`, `shared`, `pip-package`, ...)"
            )],
        }
    }
}

/// What to look for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LibrarySpec {
    pub(crate) name: String,
    pub(crate) env_prefix: String,
    pub(crate) headers: Vec<String>,
    pub(crate) shared: Vec<String>,
    pub(crate) statics: Vec<String>,
    /// Where this major's NVIDIA wheel installs it (owned copy of the catalogue's layout).
    pub(crate) wheel: Option<(String, String, String)>,
    /// The distribution that provides it at run time when it is not found inside a wheel.
    pub(crate) pip_package: Option<String>,
    pub(crate) search: Vec<String>,
}

/// Who provides a library at run time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Provider {
    /// Distribution name as `Requires-Dist` spells it.
    pub(crate) dist: String,
    /// The version built against: `major.minor` of the distribution's own scheme.
    pub(crate) floor: (u64, u64),
    /// Which later versions are compatible.
    pub(crate) span: Span,
}

/// The releases from a provider's floor on that a build runs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Span {
    /// Within the floor's major (NVIDIA's libraries).
    Major,
    /// Within the floor's minor only (torch's C++ ABI changes between minors).
    Minor,
    /// Every later release, below `below` when given (torch's stable ABI: no upper bound but
    /// the CUDA major's).
    Open { below: Option<(u64, u64)> },
}

impl Provider {
    /// `nvidia-cufft-cu12>=11.4,<12`; `torch>=2.15,<2.16` within a minor; `torch>=2.11` open.
    pub(crate) fn requirement(&self) -> String {
        let (major, minor) = self.floor;
        match self.span {
            Span::Minor => format!("{}>={major}.{minor},<{major}.{}", self.dist, minor + 1),
            Span::Major => format!("{}>={major}.{minor},<{}", self.dist, major + 1),
            Span::Open { below: None } => format!("{}>={major}.{minor}", self.dist),
            Span::Open {
                below: Some((a, b)),
            } => format!("{}>={major}.{minor},<{a}.{b}", self.dist),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SharedLib {
    pub(crate) soname: String,
    /// The file found (linked by `-l:<soname>` from `dir`, or by this path if no file is named
    /// after the SONAME).
    pub(crate) path: PathBuf,
}

#[derive(Debug, Clone)]
pub(crate) struct FoundLibrary {
    pub(crate) name: String,
    pub(crate) include_dirs: Vec<PathBuf>,
    pub(crate) shared: Vec<SharedLib>,
    pub(crate) statics: Vec<PathBuf>,
    /// `<PREFIX>_LDFLAGS`, shell-split.
    pub(crate) ldflags: Vec<String>,
    /// The library folder relative to site-packages where its wheel lives (for `$ORIGIN`).
    pub(crate) site_lib_dir: Option<String>,
    /// Found outside NVIDIA's wheels (env, toolkit, system): its folder for `system-rpath`.
    pub(crate) outside_dir: Option<PathBuf>,
    pub(crate) provider: Option<Provider>,
    pub(crate) found_in: String,
    /// Found inside NVIDIA's wheels: the `sys.path` entry and the distribution owning the copy
    /// (whose RECORD tells its own headers from those of the wheels sharing its folder).
    pub(crate) wheel_dist: Option<(PathBuf, String)>,
}

/// The spec of `name` for CUDA `major`: the catalogue's, with `[tool.cudawheel.library.<name>]`
/// overriding field by field; a declared name outside the catalogue stands alone.
pub(crate) fn spec_for(
    name: &str,
    major: u32,
    tool: &ToolConfig,
    key: &str,
) -> Result<LibrarySpec, LibraryError> {
    let declared: Option<&LibraryConfig> = tool.libraries.get(name);
    let entry = catalog::entry(name);
    if entry.is_none() && declared.is_none() {
        let known: Vec<&str> = catalog::CATALOG
            .iter()
            .map(|e| e.name)
            .chain(tool.libraries.keys().map(String::as_str))
            .collect();
        return Err(LibraryError::Unknown {
            key: key.to_string(),
            name: name.to_string(),
            suggestion: suggest(name, known.iter().copied()),
        });
    }
    let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let expand = |s: &String| s.replace("{major}", &major.to_string());
    let wheel = entry
        .and_then(|e| e.wheel(major))
        .map(|WheelLayout { dist, dir, include }| {
            (dist.to_string(), dir.to_string(), include.to_string())
        });
    let mut spec = LibrarySpec {
        name: name.to_string(),
        env_prefix: entry.map_or_else(
            || name.to_ascii_uppercase().replace('-', "_"),
            |e| e.env_prefix.to_string(),
        ),
        headers: entry.map(|e| strings(e.headers)).unwrap_or_default(),
        shared: entry.map(|e| strings(e.shared)).unwrap_or_default(),
        statics: entry.map(|e| strings(e.statics)).unwrap_or_default(),
        pip_package: wheel.as_ref().map(|w| w.0.clone()),
        wheel,
        search: Vec::new(),
    };
    if let Some(d) = declared {
        if !d.headers.is_empty() {
            spec.headers = d.headers.clone();
        }
        if !d.shared.is_empty() {
            spec.shared = d.shared.clone();
        }
        if !d.r#static.is_empty() {
            spec.statics = d.r#static.clone();
        }
        spec.search = d.search.iter().map(expand).collect();
        if let Some(p) = &d.pip_package {
            spec.pip_package = Some(expand(p));
        }
        if let Some(p) = &d.env_prefix {
            spec.env_prefix = p.clone();
        }
    }
    Ok(spec)
}

/// The spec of libcudart linked statically.
pub(crate) fn static_cudart_spec() -> LibrarySpec {
    LibrarySpec {
        name: "cudart".into(),
        env_prefix: "CUDART".into(),
        headers: vec!["cuda_runtime_api.h".into()],
        shared: Vec::new(),
        statics: vec!["cudart_static".into()],
        wheel: None,
        pip_package: None,
        search: Vec::new(),
    }
}

/// One place to look.
struct Candidate {
    label: String,
    include_dirs: Vec<PathBuf>,
    lib_dirs: Vec<PathBuf>,
    /// `sys.path` entry when the candidate is a wheel folder.
    site: Option<PathBuf>,
}

fn env_list(env: &Env, var: &str) -> Option<Vec<PathBuf>> {
    env.get(var)
        .filter(|v| !v.is_empty())
        .map(|v| std::env::split_paths(v).collect())
}

fn candidates(
    spec: &LibrarySpec,
    major: u32,
    toolkit: Option<&Nvcc>,
    env: &Env,
    sys_path: &[PathBuf],
) -> Vec<Candidate> {
    let p = &spec.env_prefix;
    let mut out = Vec::new();
    let inc = env_list(env, &format!("{p}_INCLUDE_PATH"));
    let lib = env_list(env, &format!("{p}_LIBRARY_PATH"));
    if inc.is_some() || lib.is_some() {
        out.push(Candidate {
            label: format!("{p}_INCLUDE_PATH / {p}_LIBRARY_PATH"),
            include_dirs: inc.unwrap_or_default(),
            lib_dirs: lib.unwrap_or_default(),
            site: None,
        });
    } else if let Some(dir) = env.get(&format!("{p}_DIR")).filter(|v| !v.is_empty()) {
        let dir = PathBuf::from(dir);
        out.push(Candidate {
            label: format!("{p}_DIR"),
            include_dirs: vec![dir.join("include")],
            lib_dirs: vec![dir.join("lib"), dir.join("lib64")],
            site: None,
        });
    }
    if let Some((dist, dir, include)) = &spec.wheel {
        for site in sys_path {
            let base = site.join(dir);
            out.push(Candidate {
                label: format!("{dist} in {}", site.display()),
                include_dirs: vec![base.join(include)],
                lib_dirs: vec![base.join("lib")],
                site: Some(site.clone()),
            });
        }
    }
    if let Some(root) = toolkit.map(|n| &n.root) {
        out.push(Candidate {
            label: format!("the CUDA toolkit at {}", root.display()),
            include_dirs: vec![
                root.join("include"),
                root.join("include/cccl"),
                root.join("targets/x86_64-linux/include"),
            ],
            lib_dirs: vec![
                root.join("lib64"),
                root.join("lib"),
                root.join("targets/x86_64-linux/lib"),
            ],
            site: None,
        });
    }
    let name = &spec.name;
    out.push(Candidate {
        label: "the system (Debian multiarch)".into(),
        include_dirs: vec!["/usr/include".into()],
        lib_dirs: vec![
            "/usr/lib/x86_64-linux-gnu".into(),
            "/usr/lib/aarch64-linux-gnu".into(),
        ],
        site: None,
    });
    out.push(Candidate {
        label: "the system (RPM layout)".into(),
        include_dirs: vec![
            format!("/usr/include/{name}_{major}").into(),
            "/usr/include".into(),
        ],
        lib_dirs: vec![
            format!("/usr/lib64/{name}/{major}").into(),
            "/usr/lib64".into(),
        ],
        site: None,
    });
    for s in &spec.search {
        let d = PathBuf::from(s);
        out.push(Candidate {
            label: format!("`search` entry {s}"),
            include_dirs: vec![d.join("include"), d.clone()],
            lib_dirs: vec![d.join("lib"), d.join("lib64"), d.clone()],
            site: None,
        });
    }
    out
}

/// `lib<name>.so` or `lib<name>.so.<...>` files in `dir`, shortest name first.
fn shared_files(dir: &Path, name: &str) -> Vec<PathBuf> {
    let stem = format!("lib{name}.so");
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            let f = e.file_name();
            let f = f.to_string_lossy();
            f == stem.as_str()
                || f.strip_prefix(stem.as_str())
                    .is_some_and(|rest| rest.starts_with('.'))
        })
        .map(|e| e.path())
        .collect();
    found.sort_by_key(|p| (p.as_os_str().len(), p.clone()));
    found
}

/// The SONAME of the first readable `lib<name>.so*` in `dirs`.
fn find_shared(dirs: &[PathBuf], name: &str) -> Option<SharedLib> {
    for dir in dirs {
        for path in shared_files(dir, name) {
            let Ok(report) = crate::inspect::elf::read(&path) else {
                continue;
            };
            let soname = report.soname.unwrap_or_else(|| {
                path.file_name()
                    .map(|f| f.to_string_lossy().into_owned())
                    .unwrap_or_default()
            });
            let by_soname = dir.join(&soname);
            let path = if by_soname.is_file() { by_soname } else { path };
            return Some(SharedLib { soname, path });
        }
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

/// The version a file name carries after `.so.`: a release's file `libcufft.so.11.2.1.3` ->
/// (11, Some(2)); a file named by its SONAME (`libcublas.so.13`, `libcudart.so.11.0`: NVIDIA's
/// wheels' names, whose second number is not the release's minor) -> (major, None).
fn file_version(path: &Path) -> Option<(u64, Option<u64>)> {
    let real = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let name = real.file_name()?.to_string_lossy().into_owned();
    let (_, tail) = name.split_once(".so.")?;
    let parts: Vec<u64> = tail
        .split('.')
        .map(str::parse)
        .collect::<Result<_, _>>()
        .ok()?;
    let major = *parts.first()?;
    Some((major, parts.get(1).copied().filter(|_| parts.len() >= 3)))
}

/// The floor of a library found outside NVIDIA's wheels: the version its file name carries;
/// a name with the major only (`libcudart.so.12`, as NVIDIA's wheels and a toolkit made from
/// them name it) takes the toolkit's minor when the majors agree (the runtime is the toolkit's
/// release), else `.0`; no version at all, the toolkit's.
fn outside_floor(path: Option<&Path>, toolkit: (u32, u32)) -> (u64, u64) {
    let toolkit = (u64::from(toolkit.0), u64::from(toolkit.1));
    match path.and_then(file_version) {
        Some((major, Some(minor))) => (major, minor),
        Some((major, None)) if major == toolkit.0 => toolkit,
        Some((major, None)) => (major, 0),
        None => toolkit,
    }
}

/// Finds one library. `need_static`: also require its static libraries (device linking).
pub(crate) fn find(
    spec: &LibrarySpec,
    major: u32,
    nvcc: &Nvcc,
    env: &Env,
    sys_path: &[PathBuf],
    need_static: bool,
) -> Result<FoundLibrary, LibraryError> {
    find_in(spec, major, Some(nvcc), env, sys_path, need_static)
}

/// `find`, where the CUDA toolkit in use is searched only when there is one (`None`: no nvcc
/// here yet, e.g. before an isolated build installs it).
pub(crate) fn find_in(
    spec: &LibrarySpec,
    major: u32,
    toolkit: Option<&Nvcc>,
    env: &Env,
    sys_path: &[PathBuf],
    need_static: bool,
) -> Result<FoundLibrary, LibraryError> {
    let mut probes = Vec::new();
    for cand in candidates(spec, major, toolkit, env, sys_path) {
        let where_ = cand
            .include_dirs
            .iter()
            .chain(&cand.lib_dirs)
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(", ");
        let files = match files_in(&cand, spec, need_static) {
            Ok(files) => files,
            Err(m) => {
                if cand.site.is_none() || cand.include_dirs.iter().any(|d| d.exists()) {
                    probes.push(format!("{} ({where_}): no {m}", cand.label));
                }
                continue;
            }
        };
        // The file that tells who owns this copy: a shared library, else a header.
        let evidence = files
            .shared
            .first()
            .map(|s| s.path.clone())
            .or_else(|| files.statics.first().cloned())
            .or_else(|| {
                spec.headers
                    .first()
                    .and_then(|h| files.include_dirs.first().map(|d| d.join(h)))
            });
        let owner = evidence.as_deref().and_then(owning_distribution);
        if let (Some(_), Some((want, _, _)), Some((dist, _))) = (&cand.site, &spec.wheel, &owner) {
            // nccl/cudnn/nvshmem -cu12 and -cu13 share a folder: only the distribution tells.
            if dist != want {
                probes.push(format!(
                    "{} ({where_}): belongs to {dist}, not to {want}",
                    cand.label
                ));
                continue;
            }
        }
        let version = toolkit.map_or((major, 0), |n| (n.major, n.minor));
        return Ok(found(spec, version, env, cand, files, owner));
    }
    Err(LibraryError::NotFound {
        name: spec.name.clone(),
        major,
        probes,
        env_prefix: spec.env_prefix.clone(),
    })
}

/// The files of a library in one candidate place.
struct Files {
    include_dirs: Vec<PathBuf>,
    shared: Vec<SharedLib>,
    statics: Vec<PathBuf>,
}

/// Every header, shared library and (when needed) static archive the spec names, in `cand`;
/// else the first one missing.
fn files_in(cand: &Candidate, spec: &LibrarySpec, need_static: bool) -> Result<Files, String> {
    let mut include_dirs = Vec::new();
    for h in &spec.headers {
        let d = cand
            .include_dirs
            .iter()
            .find(|d| d.join(h).is_file())
            .ok_or_else(|| h.clone())?;
        if !include_dirs.contains(d) {
            include_dirs.push(d.clone());
        }
    }
    let mut shared = Vec::new();
    for name in &spec.shared {
        shared.push(find_shared(&cand.lib_dirs, name).ok_or_else(|| format!("lib{name}.so*"))?);
    }
    let mut statics = Vec::new();
    if need_static || spec.shared.is_empty() {
        for name in &spec.statics {
            let path = cand
                .lib_dirs
                .iter()
                .map(|d| d.join(format!("lib{name}.a")))
                .find(|p| p.is_file())
                .ok_or_else(|| format!("lib{name}.a"))?;
            statics.push(path);
        }
    }
    Ok(Files {
        include_dirs,
        shared,
        statics,
    })
}

/// The library as found in `cand`, with the distribution that provides it at run time.
fn found(
    spec: &LibrarySpec,
    toolkit_version: (u32, u32),
    env: &Env,
    cand: Candidate,
    files: Files,
    owner: Option<(String, Version)>,
) -> FoundLibrary {
    let provider = if spec.shared.is_empty() {
        None
    } else {
        match (&owner, &spec.pip_package) {
            (Some((dist, version)), _)
                if dist.starts_with("nvidia-") || Some(dist) == spec.pip_package.as_ref() =>
            {
                Some(Provider {
                    dist: dist.clone(),
                    floor: floor_of(version),
                    span: Span::Major,
                })
            }
            (_, Some(pkg)) => {
                let floor = outside_floor(
                    files.shared.first().map(|s| s.path.as_path()),
                    toolkit_version,
                );
                Some(Provider {
                    dist: pkg.clone(),
                    floor,
                    span: Span::Major,
                })
            }
            _ => None,
        }
    };
    // Where the providing wheel puts it, wherever this copy was found.
    let site_lib_dir = spec.wheel.as_ref().map(|(_, dir, _)| format!("{dir}/lib"));
    let from_wheel = cand.site.is_some()
        || owner
            .as_ref()
            .is_some_and(|(d, _)| d.starts_with("nvidia-"));
    let outside_dir = if from_wheel {
        None
    } else {
        files
            .shared
            .first()
            .and_then(|s| s.path.parent().map(Path::to_path_buf))
    };
    let ldflags = env
        .get(&format!("{}_LDFLAGS", spec.env_prefix))
        .and_then(|v| shlex::split(v))
        .unwrap_or_default();
    FoundLibrary {
        name: spec.name.clone(),
        include_dirs: files.include_dirs,
        shared: files.shared,
        statics: files.statics,
        ldflags,
        site_lib_dir,
        outside_dir,
        provider,
        wheel_dist: cand.site.clone().zip(owner.map(|(d, _)| d)),
        found_in: cand.label,
    }
}

/// What `get_requires_for_build_wheel` asks PyPI for the CUDA libraries and the toolkit:
/// `cuda-toolkit[<extras>]<pin>` (the compiler's extras plus the catalogued libraries' extras:
/// `cuda-toolkit[cublas]==12.4.*` for what a system CUDA 12.4 lacks in wheel form), then the
/// wheels no extra holds (`nvidia-nccl-cu13`, a `pip-package`). Libraries of `optional` targets
/// are not asked for (they are used when found).
pub(crate) fn build_requirements(tool: &ToolConfig, toolkit: &ToolkitRequest) -> Vec<String> {
    let mut extras = toolkit.extras.clone();
    let mut others = Vec::new();
    let targets = tool
        .extensions
        .iter()
        .chain(&tool.shared_libraries)
        .filter(|t| !t.optional);
    // Wrap mode's `libraries`: the wrapped build links them, so they must be installed first.
    let wrapped = tool.wrap_libraries.iter().flatten();
    for name in targets.flat_map(|t| t.cuda_libraries.iter()).chain(wrapped) {
        match from_pypi(tool, toolkit, name) {
            Some(PypiSource::Extra(extra)) => extras.push(extra),
            Some(PypiSource::Wheel(dist)) => others.push(dist),
            None => {}
        }
    }
    if tool.build_backend.is_some() {
        // Wrap mode: a build written for a standard toolkit includes any of its header-only
        // parts (pycuda's `cudaProfiler.h`, NVTX's `nvtx3/`), which the toolkit folder then has
        // as a system toolkit does. Two small wheels (about 20 and 200 kB).
        extras.extend(WRAPPED_HEADERS);
    }
    if toolkit.system {
        // The system toolkit brings its own runtime, CCCL, profiler API and NVTX headers.
        extras.retain(|e| !SYSTEM_TOOLKIT_HAS.contains(e));
    }
    extras.sort_unstable();
    extras.dedup();
    let mut reqs = Vec::new();
    if !extras.is_empty() {
        reqs.push(format!("cuda-toolkit[{}]{}", extras.join(","), toolkit.pin));
    }
    others.sort();
    others.dedup();
    reqs.extend(others);
    reqs
}

/// The `cuda-toolkit` extras a system toolkit brings itself.
const SYSTEM_TOOLKIT_HAS: [&str; 4] = ["cudart", "cccl", "profiler", "nvtx"];

/// The header-only `cuda-toolkit` extras a wrapped build gets besides nvcc's (a standard
/// toolkit's `include/` holds them).
const WRAPPED_HEADERS: [&str; 2] = ["profiler", "nvtx"];

/// Where an isolated build gets a library from PyPI.
enum PypiSource {
    /// A `cuda-toolkit[<extra>]`.
    Extra(&'static str),
    /// A wheel of its own (`nvidia-nccl-cu13`, a `pip-package`).
    Wheel(String),
}

fn from_pypi(tool: &ToolConfig, toolkit: &ToolkitRequest, name: &str) -> Option<PypiSource> {
    let major = toolkit.major;
    let declared = tool.libraries.get(name);
    match (
        catalog::entry(name),
        declared.and_then(|d| d.pip_package.as_ref()),
    ) {
        (_, Some(pkg)) => Some(PypiSource::Wheel(
            pkg.replace("{major}", &major.to_string()),
        )),
        (Some(e), None) => match (e.toolkit_extra, e.wheel(major)) {
            (Some(extra), Some(_)) => Some(PypiSource::Extra(extra)),
            (None, Some(w)) => Some(PypiSource::Wheel(w.dist.to_string())),
            _ => None,
        },
        (None, None) => None,
    }
}

/// Whether an isolated build has the library `name` (`cudart` included): `build_requirements`
/// asks PyPI for it, or the toolkit requested brings it.
pub(crate) fn isolated_build_has(tool: &ToolConfig, toolkit: &ToolkitRequest, name: &str) -> bool {
    if toolkit.system && SYSTEM_TOOLKIT_HAS.contains(&name) {
        return true;
    }
    let used = tool
        .extensions
        .iter()
        .chain(&tool.shared_libraries)
        .any(|t| !t.optional && t.cuda_libraries.iter().any(|l| l == name));
    match from_pypi(tool, toolkit, name) {
        Some(PypiSource::Extra(extra)) => used || toolkit.extras.contains(&extra),
        Some(PypiSource::Wheel(_)) => used,
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_from_file_names() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("libcufft.so.11.2.1.3");
        std::fs::write(&real, b"").unwrap();
        std::os::unix::fs::symlink(&real, dir.path().join("libcufft.so.11")).unwrap();
        assert_eq!(
            file_version(&dir.path().join("libcufft.so.11")),
            Some((11, Some(2)))
        );
        std::fs::write(dir.path().join("libcublas.so.13"), b"").unwrap();
        assert_eq!(
            file_version(&dir.path().join("libcublas.so.13")),
            Some((13, None))
        );
        assert_eq!(file_version(Path::new("/x/libfoo.so")), None);
        std::fs::write(dir.path().join("libcudart.so.11.0"), b"").unwrap();
        let cudart11 = dir.path().join("libcudart.so.11.0");
        assert_eq!(file_version(&cudart11), Some((11, None)));
        assert_eq!(outside_floor(Some(&cudart11), (11, 8)), (11, 8));
        // Floors: the file's own version; the major alone takes the toolkit's minor if the
        // majors agree (a CUDA 12.4 toolkit's libcudart.so.12: 12.4, not 12.0), else `.0`.
        let cufft = dir.path().join("libcufft.so.11");
        assert_eq!(outside_floor(Some(&cufft), (12, 4)), (11, 2));
        std::fs::write(dir.path().join("libcudart.so.12"), b"").unwrap();
        let cudart = dir.path().join("libcudart.so.12");
        assert_eq!(outside_floor(Some(&cudart), (12, 4)), (12, 4));
        let cublas = dir.path().join("libcublas.so.13");
        assert_eq!(outside_floor(Some(&cublas), (12, 4)), (13, 0));
        assert_eq!(outside_floor(None, (12, 4)), (12, 4));
    }

    #[test]
    fn owner_of_a_wheel_file_comes_from_record() {
        let site = tempfile::tempdir().unwrap();
        let di = site.path().join("nvidia_nccl_cu12-2.32.3.dist-info");
        std::fs::create_dir_all(&di).unwrap();
        std::fs::create_dir_all(site.path().join("nvidia/nccl/lib")).unwrap();
        let lib = site.path().join("nvidia/nccl/lib/libnccl.so.2");
        std::fs::write(&lib, b"").unwrap();
        std::fs::write(
            di.join("METADATA"),
            "Metadata-Version: 2.1\nName: nvidia-nccl-cu12\nVersion: 2.32.3\n\nbody",
        )
        .unwrap();
        std::fs::write(
            di.join("RECORD"),
            "nvidia/nccl/lib/libnccl.so.2,sha256=x,1\n",
        )
        .unwrap();
        let (name, version) = owning_distribution(&lib).unwrap();
        assert_eq!(name, "nvidia-nccl-cu12");
        assert_eq!(floor_of(&version), (2, 32));
    }

    #[test]
    fn what_an_isolated_build_has_follows_the_build_requirements() {
        let text = "[[extension]]\nname = \"m\"\nsources = [\"k.cu\"]\ncuda-libraries = [\"cublas\", \"nccl\"]\n\
            [[extension]]\nname = \"o\"\nsources = [\"k.cu\"]\ncuda-libraries = [\"cufft\"]\noptional = true\n";
        let table: toml::Table = toml::from_str(text).unwrap();
        let tool = crate::config::ToolConfig::parse(&table, &Default::default()).unwrap();
        let pip = ToolkitRequest {
            major: 13,
            pin: ">=13,<14".into(),
            extras: vec!["nvcc", "cccl", "cudart"],
            system: false,
        };
        let reqs = build_requirements(&tool, &pip);
        assert_eq!(
            reqs,
            [
                "cuda-toolkit[cccl,cublas,cudart,nvcc]>=13,<14",
                "nvidia-nccl-cu13"
            ]
        );
        for name in ["cudart", "cccl", "cublas", "nccl"] {
            assert!(isolated_build_has(&tool, &pip, name), "{name}");
        }
        // An optional target's library is not asked for; one no target uses neither.
        assert!(!isolated_build_has(&tool, &pip, "cufft"));
        assert!(!isolated_build_has(&tool, &pip, "curand"));
        let system = ToolkitRequest {
            major: 12,
            pin: "==12.4.*".into(),
            extras: Vec::new(),
            system: true,
        };
        assert!(isolated_build_has(&tool, &system, "cudart"));
        assert!(isolated_build_has(&tool, &system, "cublas"));
    }

    #[test]
    fn a_wrapped_build_gets_the_header_only_parts_of_a_standard_toolkit() {
        let pip = ToolkitRequest {
            major: 13,
            pin: ">=13,<14".into(),
            extras: vec!["nvcc", "cccl", "cudart"],
            system: false,
        };
        let parse = |text: &str| {
            let table: toml::Table = toml::from_str(text).unwrap();
            crate::config::ToolConfig::parse(&table, &Default::default()).unwrap()
        };
        let wrapped =
            parse("build-backend = \"setuptools.build_meta\"\nlibraries = [\"curand\"]\n");
        assert_eq!(
            build_requirements(&wrapped, &pip),
            ["cuda-toolkit[cccl,cudart,curand,nvcc,nvtx,profiler]>=13,<14"]
        );
        // Controls: a native build asks only for what its targets use; a system toolkit has
        // those headers itself.
        let native = parse("[[extension]]\nname = \"m\"\nsources = [\"k.cu\"]\n");
        assert_eq!(
            build_requirements(&native, &pip),
            ["cuda-toolkit[cccl,cudart,nvcc]>=13,<14"]
        );
        let system = ToolkitRequest {
            major: 13,
            pin: "==13.0.*".into(),
            extras: Vec::new(),
            system: true,
        };
        assert_eq!(
            build_requirements(&wrapped, &system),
            ["cuda-toolkit[curand]==13.0.*"]
        );
    }

    #[test]
    fn unknown_library_names_suggest_the_catalogue() {
        let tool =
            crate::config::ToolConfig::parse(&toml::Table::new(), &Default::default()).unwrap();
        let e = spec_for(
            "cublass",
            13,
            &tool,
            "tool.cudawheel.extension[0].cuda-libraries",
        )
        .unwrap_err();
        assert!(
            matches!(e, LibraryError::Unknown { suggestion: Some(ref s), .. } if s == "cublas"),
            "{e:?}"
        );
        let s = spec_for("cufft", 12, &tool, "k").unwrap();
        assert_eq!(s.wheel.unwrap().0, "nvidia-cufft-cu12");
        assert_eq!(s.env_prefix, "CUFFT");
    }
}
