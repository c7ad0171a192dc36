//! Stage 2, the build plan: WHAT to build, independent of the toolchain.
//!
//! Input: `Config` and `PythonInfo`. Output: `BuildPlan` (targets with their resolved source
//! files, include folders, output paths inside the wheel, the packages to ship, parsed archs).
//! Touches the filesystem read-only (globs) and spawns nothing.

use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};

use crate::config::{self, suggest, Bindings, Config, ConfigError, Origin, Ptx, Sourced};
use crate::hint::Hint;
use crate::python::PythonInfo;

#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("`{key}.name` = {name:?} is not a dotted Python module name")]
    BadModuleName { key: String, name: String },
    #[error("`{key}.name` = {name:?} is used by another target too")]
    DuplicateTarget { key: String, name: String },
    #[error("`{key}.sources` has no file to compile (only headers matched)")]
    NoCompilableSource { key: String },
    #[error("`{key}.sources`: {} has an extension cudawheel does not compile", path.display())]
    UnknownSourceKind { key: String, path: PathBuf },
    #[error("`tool.cudawheel.extension` is empty: there is nothing to build")]
    NoTargets,
    #[error("`{key}` (from {origin}): {value:?} is not a CUDA architecture")]
    BadArch {
        key: String,
        origin: Origin,
        value: String,
    },
    #[error("`{key}.link-with` names {name:?}, which is not a `[[tool.cudawheel.shared-library]]` of this project")]
    UnknownLinkWith {
        key: String,
        name: String,
        suggestion: Option<String>,
    },
    #[error("`{key}.destination` = {value:?} is not a folder inside the wheel")]
    BadDestination { key: String, value: String },
    #[error(
        "`{key}` uses {bindings} with `tool.cudawheel.py-limited-api` = \"cp3{minor}\": {why}"
    )]
    BindingsLimitedApi {
        key: String,
        bindings: &'static str,
        minor: u32,
        why: String,
    },
    #[error("`tool.cudawheel.packages`: the package folder {} does not exist", path.display())]
    MissingPackage { path: PathBuf },
    #[error(
        "`{key}`: architecture {arch} is not supported by nvcc {version} (it supports {supported})"
    )]
    ArchNotSupported {
        key: String,
        arch: String,
        version: String,
        supported: String,
    },
}

impl Hint for PlanError {
    fn hints(&self) -> Vec<String> {
        match self {
            PlanError::Config(e) => e.hints(),
            PlanError::BadArch { .. } => vec![
                "architectures are written CMake style: \"80\", \"90a\", \"86-real\", \"90-virtual\", \"all-major\"".into(),
            ],
            PlanError::NoTargets => vec!["add a `[[tool.cudawheel.extension]]` table with `name` and `sources`".into()],
            PlanError::UnknownSourceKind { .. } => {
                vec![".cu files go to nvcc; .c, .cc, .cpp and .cxx to the host compiler".into()]
            }
            PlanError::UnknownLinkWith { suggestion: Some(s), .. } => vec![format!("did you mean {s:?}?")],
            PlanError::UnknownLinkWith { .. } => {
                vec!["declare the library as `[[tool.cudawheel.shared-library]]` with `name`, `sources` and `destination`".into()]
            }
            PlanError::BindingsLimitedApi { bindings: "nanobind", .. } => vec![
                "set `py-limited-api = \"cp312\"` (nanobind's stable ABI floor), or drop `py-limited-api` for one wheel per Python version".into(),
            ],
            PlanError::BindingsLimitedApi { .. } => vec![
                "drop `py-limited-api` (one wheel per Python version), or use `bindings = \"nanobind\"` with `py-limited-api = \"cp312\"`".into(),
            ],
            PlanError::ArchNotSupported { .. } => {
                vec!["drop that architecture from `archs`, or build with a CUDA major that supports it (`cuda`)".into()]
            }
            PlanError::BadModuleName { .. } => vec![
                "a module name is dot-separated Python identifiers, e.g. \"pkg._core\"".into(),
            ],
            PlanError::DuplicateTarget { .. } => vec![
                "give every `[[tool.cudawheel.extension]]` and `[[tool.cudawheel.shared-library]]` its own `name`".into(),
            ],
            PlanError::NoCompilableSource { .. } => vec![
                "list at least one .cu, .c, .cc, .cpp or .cxx file in `sources`".into(),
            ],
            PlanError::BadDestination { .. } => vec![
                "use a relative folder inside the wheel such as \"pkg/lib\", without `..`".into(),
            ],
            PlanError::MissingPackage { .. } => vec![
                "create the package folder under `python-source`, or fix `packages`".into(),
            ],
        }
    }
}

/// Language of one source file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Lang {
    Cuda,
    C,
    Cxx,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    /// Absolute path.
    pub path: PathBuf,
    /// Relative to the project root (used for object names and messages).
    pub rel: PathBuf,
    pub lang: Lang,
}

/// What a target produces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetKind {
    /// A CPython extension module.
    Extension,
    /// A plain shared library shipped in the wheel; `soname` = `lib<name>.so`.
    SharedLibrary { soname: String },
}

/// One thing to compile and link: an extension module or a shared library.
#[derive(Debug, Clone)]
pub struct TargetPlan {
    /// `tool.cudawheel.extension[i]` / `tool.cudawheel.shared-library[i]`.
    pub key: String,
    /// Dotted module name, or the library name.
    pub module: String,
    pub kind: TargetKind,
    pub sources: Vec<Source>,
    /// Absolute include folders.
    pub include_dirs: Vec<PathBuf>,
    pub defines: Vec<String>,
    pub nvcc_flags: Vec<String>,
    pub cxx_flags: Vec<String>,
    pub link_flags: Vec<String>,
    /// CUDA libraries besides cudart (catalogue or `[tool.cudawheel.library.*]` names).
    pub cuda_libraries: Vec<String>,
    /// Shared-library targets of this project to link.
    pub link_with: Vec<String>,
    pub rdc: bool,
    pub optional: bool,
    /// The binding library (extensions; `None` for shared libraries). `bindings::apply` adds
    /// its include folders, sources and flags once the build environment is known.
    pub bindings: Bindings,
    /// Path inside the wheel: `saxpy/_core.abi3.so`, `pkg/lib/libcalc.so`.
    pub wheel_path: String,
}

/// How one architecture is embedded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArchKind {
    /// SASS, plus PTX as `ptx` says.
    Default,
    /// `-real`: SASS only.
    Real,
    /// `-virtual`: PTX only.
    Virtual,
}

/// One entry of `archs`, e.g. `90a-real`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arch {
    pub number: u32,
    /// `a` or `f` family suffix, or empty.
    pub suffix: String,
    pub kind: ArchKind,
}

impl Arch {
    pub fn id(&self) -> String {
        format!("{}{}", self.number, self.suffix)
    }
}

/// `archs` after parsing; groups expand against the toolchain's list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArchSpec {
    One(Arch),
    AllMajor,
    All,
}

/// One `-gencode` pair.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Gencode {
    /// `compute_90a`
    pub arch: String,
    /// `sm_90a` or `compute_90a`
    pub code: String,
}

impl fmt::Display for Gencode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "arch={},code={}", self.arch, self.code)
    }
}

#[derive(Debug, Clone)]
pub struct BuildPlan {
    /// Shared libraries first (extensions may link them), then extensions.
    pub targets: Vec<TargetPlan>,
    /// Package folders (relative to `python_source`) whose files go into the wheel.
    pub packages: Vec<PathBuf>,
    /// Absolute.
    pub python_source: PathBuf,
    pub archs: Option<Sourced<Vec<ArchSpec>>>,
    pub ptx: Ptx,
    /// Absolute.
    pub build_dir: PathBuf,
    /// The project folder, absolute (mapped away in compiled files for reproducible builds).
    pub root: PathBuf,
    pub jobs: usize,
    /// `Py_LIMITED_API` value when building for the stable ABI.
    pub limited_api: Option<u32>,
}

const HEADER_EXTS: &[&str] = &["h", "hh", "hpp", "hxx", "cuh", "inl", "inc", "tcc"];

fn classify(path: &Path) -> Option<Option<Lang>> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    Some(match ext.as_str() {
        "cu" => Some(Lang::Cuda),
        "c" => Some(Lang::C),
        "cc" | "cpp" | "cxx" | "c++" => Some(Lang::Cxx),
        e if HEADER_EXTS.contains(&e) => None,
        _ => return Option::None,
    })
}

fn is_module_name(name: &str) -> bool {
    !name.is_empty()
        && name.split('.').all(|part| {
            let mut c = part.chars();
            c.next()
                .is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
                && c.all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
        })
}

/// Parses one CMake-style architecture entry.
pub fn parse_arch(raw: &str) -> Option<ArchSpec> {
    match raw {
        "all-major" => return Some(ArchSpec::AllMajor),
        "all" => return Some(ArchSpec::All),
        _ => {}
    }
    let (body, kind) = if let Some(b) = raw.strip_suffix("-real") {
        (b, ArchKind::Real)
    } else if let Some(b) = raw.strip_suffix("-virtual") {
        (b, ArchKind::Virtual)
    } else {
        (raw, ArchKind::Default)
    };
    let digits: String = body.chars().take_while(char::is_ascii_digit).collect();
    let suffix = &body[digits.len()..];
    if digits.len() < 2 || !matches!(suffix, "" | "a" | "f") {
        return None;
    }
    Some(ArchSpec::One(Arch {
        number: digits.parse().ok()?,
        suffix: suffix.to_string(),
        kind,
    }))
}

/// The default `archs` of contract §4 for a CUDA major.
pub fn default_archs(major: u32) -> &'static [u32] {
    match major {
        11 => &[70, 75, 80, 86],
        12 => &[70, 75, 80, 86, 89, 90],
        _ => &[75, 80, 86, 89, 90, 100, 120],
    }
}

/// Expands `archs` into `-gencode` pairs. `supported` are the virtual archs nvcc lists
/// (`--list-gpu-arch`, without the `compute_` prefix); `major` picks the defaults.
pub fn gencodes(
    archs: Option<&Sourced<Vec<ArchSpec>>>,
    ptx: Ptx,
    major: u32,
    supported: &[String],
    nvcc_version: &str,
) -> Result<Vec<Gencode>, PlanError> {
    let key = "tool.cudawheel.archs";
    let plain = |n: u32| Arch {
        number: n,
        suffix: String::new(),
        kind: ArchKind::Default,
    };
    let supported_plain = || {
        supported
            .iter()
            .filter_map(|s| s.parse::<u32>().ok())
            .collect::<BTreeSet<u32>>()
    };
    let mut list: Vec<Arch> = Vec::new();
    match archs {
        None => list.extend(default_archs(major).iter().map(|&n| plain(n))),
        Some(s) => {
            for spec in &s.value {
                match spec {
                    ArchSpec::One(a) => list.push(a.clone()),
                    ArchSpec::All => list.extend(supported_plain().into_iter().map(plain)),
                    ArchSpec::AllMajor => {
                        list.extend(
                            supported_plain()
                                .into_iter()
                                .filter(|n| n % 10 == 0)
                                .map(plain),
                        );
                    }
                }
            }
        }
    }
    for a in &list {
        if !supported.iter().any(|s| *s == a.id()) {
            return Err(PlanError::ArchNotSupported {
                key: key.into(),
                arch: a.id(),
                version: nvcc_version.into(),
                supported: supported.join(", "),
            });
        }
    }
    let mut out: Vec<Gencode> = Vec::new();
    let push = |out: &mut Vec<Gencode>, g: Gencode| {
        if !out.contains(&g) {
            out.push(g);
        }
    };
    for a in &list {
        if a.kind != ArchKind::Virtual {
            push(
                &mut out,
                Gencode {
                    arch: format!("compute_{}", a.id()),
                    code: format!("sm_{}", a.id()),
                },
            );
        }
    }
    // PTX: `-virtual` entries always; otherwise as `ptx` says.
    let candidates: Vec<&Arch> = list
        .iter()
        .filter(|a| a.kind == ArchKind::Default)
        .collect();
    let mut ptx_archs: Vec<&Arch> = list
        .iter()
        .filter(|a| a.kind == ArchKind::Virtual)
        .collect();
    match ptx {
        Ptx::None => {}
        Ptx::All => ptx_archs.extend(candidates.iter().copied()),
        Ptx::Highest => {
            if let Some(top) = candidates
                .iter()
                .max_by_key(|a| (a.number, a.suffix.clone()))
            {
                ptx_archs.push(top);
            }
        }
    }
    for a in ptx_archs {
        push(
            &mut out,
            Gencode {
                arch: format!("compute_{}", a.id()),
                code: format!("compute_{}", a.id()),
            },
        );
    }
    Ok(out)
}

impl BuildPlan {
    pub fn new(config: &Config, python: &PythonInfo) -> Result<BuildPlan, PlanError> {
        let tool = &config.tool;
        let root = &config.root;
        if tool.extensions.is_empty() && tool.shared_libraries.is_empty() {
            return Err(PlanError::NoTargets);
        }
        let ext_suffix = match tool.py_limited_api {
            Some(_) => ".abi3.so".to_string(),
            None => python.ext_suffix.clone(),
        };
        let lib_names: Vec<&str> = tool
            .shared_libraries
            .iter()
            .map(|t| t.name.as_str())
            .collect();
        let mut seen = BTreeSet::new();
        let mut targets = Vec::new();
        let all = tool
            .shared_libraries
            .iter()
            .map(|t| (t, true))
            .chain(tool.extensions.iter().map(|t| (t, false)));
        for (t, is_lib) in all {
            let valid_name = if is_lib {
                !t.name.is_empty()
                    && t.name
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "_-+.".contains(c))
            } else {
                is_module_name(&t.name)
            };
            if !valid_name {
                return Err(PlanError::BadModuleName {
                    key: t.key.clone(),
                    name: t.name.clone(),
                });
            }
            if !seen.insert((is_lib, t.name.clone())) {
                return Err(PlanError::DuplicateTarget {
                    key: t.key.clone(),
                    name: t.name.clone(),
                });
            }
            for name in &t.link_with {
                if !lib_names.contains(&name.as_str()) {
                    return Err(PlanError::UnknownLinkWith {
                        key: t.key.clone(),
                        name: name.clone(),
                        suggestion: suggest(name, lib_names.iter().copied()),
                    });
                }
            }
            let (kind, wheel_path) = if is_lib {
                let dest = t
                    .destination
                    .clone()
                    .ok_or_else(|| ConfigError::MissingKey {
                        key: format!("{}.destination", t.key),
                    })?;
                let clean = dest.trim_matches('/');
                let bad = clean.is_empty()
                    || dest.starts_with('/')
                    || clean
                        .split('/')
                        .any(|c| c.is_empty() || c == ".." || c == ".");
                if bad {
                    return Err(PlanError::BadDestination {
                        key: t.key.clone(),
                        value: dest,
                    });
                }
                let soname = format!("lib{}.so", t.name);
                (
                    TargetKind::SharedLibrary {
                        soname: soname.clone(),
                    },
                    format!("{clean}/{soname}"),
                )
            } else {
                (
                    TargetKind::Extension,
                    format!("{}{ext_suffix}", t.name.replace('.', "/")),
                )
            };
            let sources_key = format!("{}.sources", t.key);
            let mut sources = Vec::new();
            for pattern in &t.sources {
                let found = config::expand_glob(root, pattern, &sources_key)?;
                if found.is_empty() {
                    return Err(ConfigError::GlobMatchedNothing {
                        key: sources_key,
                        pattern: pattern.clone(),
                    }
                    .into());
                }
                for rel in found {
                    match classify(&rel) {
                        None => {
                            return Err(PlanError::UnknownSourceKind {
                                key: t.key.clone(),
                                path: rel,
                            })
                        }
                        Some(None) => {}
                        Some(Some(lang)) => {
                            if !sources.iter().any(|s: &Source| s.rel == rel) {
                                sources.push(Source {
                                    path: root.join(&rel),
                                    rel,
                                    lang,
                                });
                            }
                        }
                    }
                }
            }
            if sources.is_empty() {
                return Err(PlanError::NoCompilableSource { key: t.key.clone() });
            }
            let mut include_dirs = Vec::new();
            for dir in &t.include_dirs {
                let key = format!("{}.include-dirs", t.key);
                let path = config::inside_project(root, dir, &key)?;
                if !path.is_dir() {
                    return Err(ConfigError::ReadFile {
                        key,
                        path,
                        source: std::io::Error::new(std::io::ErrorKind::NotFound, "no such folder"),
                    }
                    .into());
                }
                include_dirs.push(path);
            }
            let bindings = if is_lib {
                Bindings::None
            } else {
                t.bindings.unwrap_or(tool.bindings.value)
            };
            match (bindings, tool.py_limited_api) {
                (Bindings::Pybind11, Some(minor)) => {
                    return Err(PlanError::BindingsLimitedApi {
                        key: t.key.clone(),
                        bindings: "pybind11",
                        minor,
                        why: "pybind11 does not support Python's limited API".into(),
                    })
                }
                (Bindings::Nanobind, Some(minor)) if minor < 12 => {
                    return Err(PlanError::BindingsLimitedApi {
                        key: t.key.clone(),
                        bindings: "nanobind",
                        minor,
                        why: "nanobind builds for the stable ABI only from Python 3.12 (cp312)"
                            .into(),
                    })
                }
                _ => {}
            }
            let mut cuda_libraries: Vec<String> = Vec::new();
            for l in &t.cuda_libraries {
                if l != "cudart" && !cuda_libraries.contains(l) {
                    cuda_libraries.push(l.clone());
                }
            }
            targets.push(TargetPlan {
                key: t.key.clone(),
                module: t.name.clone(),
                kind,
                sources,
                include_dirs,
                defines: t.defines.clone(),
                nvcc_flags: t.nvcc_flags.clone(),
                cxx_flags: t.cxx_flags.clone(),
                link_flags: t.link_flags.clone(),
                cuda_libraries,
                link_with: t.link_with.clone(),
                rdc: t.rdc,
                optional: t.optional,
                bindings,
                wheel_path,
            });
        }
        let python_source =
            config::inside_project(root, &tool.python_source, "tool.cudawheel.python-source")?;
        let packages = match &tool.packages {
            Some(list) => {
                let mut out = Vec::new();
                for p in list {
                    let rel = PathBuf::from(p.replace('.', "/"));
                    if !python_source.join(&rel).is_dir() {
                        return Err(PlanError::MissingPackage {
                            path: python_source.join(&rel),
                        });
                    }
                    out.push(rel);
                }
                out
            }
            None => targets
                .iter()
                .filter_map(|t| {
                    t.wheel_path
                        .split_once('/')
                        .map(|(top, _)| PathBuf::from(top))
                })
                .filter(|top| python_source.join(top).is_dir())
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect(),
        };
        let archs = match &tool.archs {
            None => None,
            Some(s) => {
                let mut specs = Vec::new();
                for raw in &s.value {
                    specs.push(parse_arch(raw).ok_or_else(|| PlanError::BadArch {
                        key: "tool.cudawheel.archs".into(),
                        origin: s.origin.clone(),
                        value: raw.clone(),
                    })?);
                }
                Some(Sourced {
                    value: specs,
                    origin: s.origin.clone(),
                })
            }
        };
        let build_dir = config::inside_project(root, &tool.build_dir, "tool.cudawheel.build-dir")?;
        let jobs = tool
            .jobs
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        Ok(BuildPlan {
            targets,
            packages,
            python_source,
            archs,
            ptx: tool.ptx,
            build_dir,
            root: root.clone(),
            jobs,
            limited_api: tool.py_limited_api,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arch_list(raw: &[&str]) -> Sourced<Vec<ArchSpec>> {
        Sourced {
            value: raw.iter().map(|r| parse_arch(r).unwrap()).collect(),
            origin: Origin::Pyproject,
        }
    }

    fn supported() -> Vec<String> {
        ["75", "80", "86", "89", "90", "90a", "100", "120"]
            .iter()
            .map(|s| s.to_string())
            .collect()
    }

    #[test]
    fn default_archs_give_sass_each_and_ptx_of_the_highest() {
        let g = gencodes(None, Ptx::Highest, 13, &supported(), "13.5").unwrap();
        let text: Vec<String> = g.iter().map(ToString::to_string).collect();
        assert_eq!(
            text,
            [
                "arch=compute_75,code=sm_75",
                "arch=compute_80,code=sm_80",
                "arch=compute_86,code=sm_86",
                "arch=compute_89,code=sm_89",
                "arch=compute_90,code=sm_90",
                "arch=compute_100,code=sm_100",
                "arch=compute_120,code=sm_120",
                "arch=compute_120,code=compute_120",
            ]
        );
    }

    #[test]
    fn real_and_virtual_suffixes() {
        let g = gencodes(
            Some(&arch_list(&["80-real", "90a", "75-virtual"])),
            Ptx::All,
            13,
            &supported(),
            "13.5",
        )
        .unwrap();
        let text: Vec<String> = g.iter().map(ToString::to_string).collect();
        assert_eq!(
            text,
            [
                "arch=compute_80,code=sm_80",
                "arch=compute_90a,code=sm_90a",
                "arch=compute_75,code=compute_75",
                "arch=compute_90a,code=compute_90a"
            ]
        );
    }

    #[test]
    fn all_major_and_unsupported() {
        let g = gencodes(
            Some(&arch_list(&["all-major"])),
            Ptx::None,
            13,
            &supported(),
            "13.5",
        )
        .unwrap();
        assert_eq!(g.len(), 4); // 80 90 100 120
        let err = gencodes(
            Some(&arch_list(&["70"])),
            Ptx::None,
            13,
            &supported(),
            "13.5",
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .contains("architecture 70 is not supported by nvcc 13.5"),
            "{err}"
        );
    }

    #[test]
    fn arch_syntax() {
        assert!(parse_arch("sm_80").is_none());
        assert!(parse_arch("8").is_none());
        assert!(parse_arch("90b").is_none());
        assert_eq!(
            parse_arch("100f-real"),
            Some(ArchSpec::One(Arch {
                number: 100,
                suffix: "f".into(),
                kind: ArchKind::Real
            }))
        );
    }
}
