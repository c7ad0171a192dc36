//! Stage 2, the build plan: WHAT to build, independent of the toolchain.
//!
//! Input: `Config` and `PythonInfo`. Output: `BuildPlan` (targets with their resolved source
//! files, include folders, output paths inside the wheel, the packages to ship, parsed archs).
//! Touches the filesystem read-only (globs) and spawns nothing.

pub(crate) mod arch;
pub(crate) mod arch_sources;
pub(crate) mod driver_floors;
pub(crate) mod split;
pub(crate) mod torch_abi;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::config::PythonInfo;
use crate::config::{self, suggest, Bindings, Config, ConfigError, Origin, Ptx, TargetConfig};
use crate::hint::Hint;
use arch::{ArchError, ArchList};

#[derive(Debug, thiserror::Error)]
pub(crate) enum PlanError {
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
    #[error(transparent)]
    Arch(#[from] ArchError),
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
    #[error("`{key}.free-threaded` = true with bindings = {bindings:?}: only nanobind (and jax) modules are built differently for free-threaded Python")]
    FreeThreadedNotNanobind { key: String, bindings: &'static str },
    #[error(transparent)]
    Split(#[from] split::SplitError),
    #[error("`tool.cudawheel.packages`: the package folder {} does not exist", path.display())]
    MissingPackage { path: PathBuf },
    #[error("`{key}` is set, but no extension it applies to uses `bindings = \"torch\"`")]
    StableAbiWithoutTorch { key: String },
    #[error("`{key}`: with several CUDA majors the module {module:?} is loaded by a generated {file}, but the project has that file already")]
    LoaderShadowed {
        key: String,
        module: String,
        file: String,
    },
}

impl Hint for PlanError {
    fn hints(&self) -> Vec<String> {
        match self {
            PlanError::Config(e) => e.hints(),
            PlanError::Arch(e) => e.hints(),
            PlanError::Split(e) => e.hints(),
            PlanError::NoTargets => vec!["add a `[[tool.cudawheel.extension]]` table with `name` and `sources`".into()],
            PlanError::UnknownSourceKind { .. } => {
                vec![".cu files go to nvcc; .c, .cc, .cpp and .cxx to the host compiler".into()]
            }
            PlanError::UnknownLinkWith { suggestion: Some(s), .. } => vec![format!("did you mean {s:?}?")],
            PlanError::UnknownLinkWith { .. } => {
                vec!["declare the library as `[[tool.cudawheel.shared-library]]` with `name`, `sources` and `destination`".into()]
            }
            PlanError::BindingsLimitedApi { bindings: "nanobind" | "jax", .. } => vec![
                "set `py-limited-api = \"cp312\"` (nanobind's stable ABI floor), or drop `py-limited-api` for one wheel per Python version".into(),
            ],
            PlanError::BindingsLimitedApi { .. } => vec![
                "drop `py-limited-api` (one wheel per Python version), or use `bindings = \"nanobind\"` with `py-limited-api = \"cp312\"`".into(),
            ],
            PlanError::BadModuleName { .. } => vec![
                "a module name is dot-separated Python identifiers, e.g. \"pkg._core\"".into(),
            ],
            PlanError::DuplicateTarget { .. } => vec![
                "give every `[[tool.cudawheel.extension]]` and `[[tool.cudawheel.shared-library]]` its own `name`".into(),
            ],
            PlanError::NoCompilableSource { .. } => vec![
                "list at least one .cu, .c, .cc, .cpp or .cxx file in `sources`".into(),
            ],
            PlanError::LoaderShadowed { .. } => vec![
                "rename the Python file, or the extension module (`name`): the wheel's loader takes the module's place".into(),
            ],
            PlanError::BadDestination { .. } => vec![
                "use a relative folder inside the wheel such as \"pkg/lib\", without `..`".into(),
            ],
            PlanError::FreeThreadedNotNanobind { bindings: "pybind11", .. } => vec![
                "drop `free-threaded` and declare the module GIL-free in its source: `PYBIND11_MODULE(name, m, py::mod_gil_not_used())`".into(),
            ],
            PlanError::FreeThreadedNotNanobind { .. } => vec![
                "drop `free-threaded` and declare the module GIL-free in its source: the `{Py_mod_gil, Py_MOD_GIL_NOT_USED}` slot (multi-phase init) or `PyUnstable_Module_SetGIL(m, Py_MOD_GIL_NOT_USED)` (single-phase)".into(),
            ],
            PlanError::MissingPackage { .. } => vec![
                "create the package folder under `python-source`, or fix `packages`".into(),
            ],
            PlanError::StableAbiWithoutTorch { .. } => vec![
                "set `bindings = \"torch\"` on the extension (or at the top level), or remove `torch-stable-abi`".into(),
            ],
        }
    }
}

/// Language of one source file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Lang {
    Cuda,
    C,
    Cxx,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Source {
    /// Absolute path.
    pub(crate) path: PathBuf,
    /// Relative to the project root (used for object names and messages).
    pub(crate) rel: PathBuf,
    pub(crate) lang: Lang,
}

/// What a target produces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TargetKind {
    /// A CPython extension module.
    Extension,
    /// A plain shared library shipped in the wheel; `soname` = `lib<name>.so`.
    SharedLibrary { soname: String },
}

/// One thing to compile and link: an extension module or a shared library.
#[derive(Debug, Clone)]
pub(crate) struct TargetPlan {
    /// `tool.cudawheel.extension[i]` / `tool.cudawheel.shared-library[i]`.
    pub(crate) key: String,
    /// Dotted module name, or the library name.
    pub(crate) module: String,
    pub(crate) kind: TargetKind,
    pub(crate) sources: Vec<Source>,
    /// Absolute include folders.
    pub(crate) include_dirs: Vec<PathBuf>,
    pub(crate) defines: Vec<String>,
    pub(crate) nvcc_flags: Vec<String>,
    pub(crate) cxx_flags: Vec<String>,
    pub(crate) link_flags: Vec<String>,
    /// CUDA libraries besides cudart (catalogue or `[tool.cudawheel.library.*]` names).
    pub(crate) cuda_libraries: Vec<String>,
    /// Shared-library targets of this project to link.
    pub(crate) link_with: Vec<String>,
    pub(crate) rdc: bool,
    pub(crate) optional: bool,
    /// The binding library (extensions; `None` for shared libraries). `bindings::apply` adds
    /// its include folders, sources and flags once the build environment is known.
    pub(crate) bindings: Bindings,
    /// Path inside the wheel: `saxpy/_core.abi3.so`, `pkg/lib/libcalc.so`.
    pub(crate) wheel_path: String,
    /// This target's own `archs`, replacing the top-level list.
    pub(crate) archs: Option<ArchList>,
    /// Generated by `split = "library"` (`split.rs`): the requirement on the library wheel
    /// that ships it (`demo-lib-cu13==1.0`). Compiled without Python's headers.
    pub(crate) split_library: Option<String>,
    /// Built in its binding library's free-threaded form: the project declares the module
    /// GIL-free (`free-threaded = true`) and the interpreter is free-threaded.
    pub(crate) free_threaded: bool,
    /// `torch-stable-abi` of a torch extension: the oldest torch it supports, `(2, 10)`.
    pub(crate) torch_stable_abi: Option<(u64, u64)>,
}

#[derive(Debug, Clone)]
pub(crate) struct BuildPlan {
    /// Shared libraries first (extensions may link them), then extensions.
    pub(crate) targets: Vec<TargetPlan>,
    /// Package folders (relative to `python_source`) whose files go into the wheel.
    pub(crate) packages: Vec<PathBuf>,
    /// Absolute.
    pub(crate) python_source: PathBuf,
    /// The top-level `archs` (`None`: the default of the CUDA major).
    pub(crate) archs: Option<ArchList>,
    pub(crate) ptx: Ptx,
    /// Absolute.
    pub(crate) build_dir: PathBuf,
    /// The project folder, absolute (mapped away in compiled files for reproducible builds).
    pub(crate) root: PathBuf,
    pub(crate) jobs: usize,
    /// `Py_LIMITED_API` value when building for the stable ABI.
    pub(crate) limited_api: Option<u32>,
    /// Sources the build writes into `build_dir` before compiling (path, text), such as the
    /// import check's (`bindings::import_check`).
    pub(crate) generated: Vec<(PathBuf, String)>,
    /// One major's build of a `cuda` list (`config::Part`): each extension is named
    /// `<module>.cudawheel-cu<major><EXT_SUFFIX>` (beside the other majors' in one wheel, its
    /// init still `PyInit_<module>`) and runs its own major's helper (`_cuda_libs_cu<major>`).
    pub(crate) cuda_part: Option<u32>,
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

impl TargetPlan {
    /// The archs this target is built for: its own, else the top-level list.
    pub(crate) fn archs<'a>(&'a self, plan: &'a BuildPlan) -> Option<&'a ArchList> {
        self.archs.as_ref().or(plan.archs.as_ref())
    }
}

impl BuildPlan {
    pub(crate) fn new(config: &Config, python: &PythonInfo) -> Result<BuildPlan, PlanError> {
        let tool = &config.tool;
        let root = &config.root;
        if tool.extensions.is_empty() && tool.shared_libraries.is_empty() {
            return Err(PlanError::NoTargets);
        }
        // A free-threaded interpreter has no limited API: a version-specific build instead.
        let limited_api = python.limited_api(torch_abi::limited_api(tool)?);
        let ext_suffix = match limited_api {
            Some(_) => ".abi3.so".to_string(),
            None => python.ext_suffix.clone(),
        };
        let cuda_part = config.part.as_ref().map(|p| p.major);
        let ext_suffix = match cuda_part {
            Some(major) => format!("{}{ext_suffix}", part_infix(major)),
            None => ext_suffix,
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
            check_target(t, is_lib, &lib_names)?;
            if !seen.insert((is_lib, t.name.clone())) {
                return Err(PlanError::DuplicateTarget {
                    key: t.key.clone(),
                    name: t.name.clone(),
                });
            }
            targets.push(plan_target(
                config,
                t,
                is_lib,
                &ext_suffix,
                python.gil_disabled,
            )?);
        }
        let python_source =
            config::inside_project(root, &tool.python_source, "tool.cudawheel.python-source")?;
        let build_dir = config::inside_project(root, &tool.build_dir, "tool.cudawheel.build-dir")?;
        let packages = packages(
            tool.packages.as_deref(),
            &python_source,
            &build_dir,
            &targets,
        )?;
        let archs = tool
            .archs
            .as_ref()
            .map(|s| arch::parse_items(&s.value, "tool.cudawheel.archs", &s.origin))
            .transpose()?;
        if cuda_part.is_some() {
            check_loaders(tool, &python_source)?;
        }
        let jobs = tool.jobs_or_cores();
        Ok(BuildPlan {
            targets,
            packages,
            python_source,
            archs,
            ptx: tool.ptx,
            build_dir,
            root: root.clone(),
            jobs,
            limited_api,
            generated: Vec::new(),
            cuda_part,
        })
    }
}

/// What a `cuda` list's build of one major puts between an extension's module name and its
/// `EXT_SUFFIX`: `.cudawheel-cu12` (a dot in the stem: no import finds the file by itself).
fn part_infix(major: u32) -> String {
    format!(".cudawheel-cu{major}")
}

/// The CUDA major a file of a wheel holding several majors is built for, from its name
/// (`pkg/_core.cudawheel-cu12.abi3.so`: 12); `None` for any other file.
pub(crate) fn part_major(file: &str) -> Option<u32> {
    let name = file.rsplit('/').next().unwrap_or(file);
    let (_, rest) = name.split_once(".cudawheel-cu")?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let major = digits.parse().ok()?;
    rest[digits.len()..].starts_with('.').then_some(major)
}

/// The loader of the extension `module` in a wheel holding several CUDA majors (`pkg/_core.py`).
pub(crate) fn loader_path(module: &str) -> String {
    format!("{}.py", module.replace('.', "/"))
}

/// Several CUDA majors: no project file is where an extension's loader goes (`pkg/_core.py`).
fn check_loaders(tool: &config::ToolConfig, python_source: &Path) -> Result<(), PlanError> {
    for t in &tool.extensions {
        let file = loader_path(&t.name);
        if python_source.join(&file).exists() {
            return Err(PlanError::LoaderShadowed {
                key: t.key.clone(),
                module: t.name.clone(),
                file,
            });
        }
    }
    Ok(())
}

/// A target's name and `link-with` entries are valid.
fn check_target(t: &TargetConfig, is_lib: bool, lib_names: &[&str]) -> Result<(), PlanError> {
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
    for name in &t.link_with {
        if !lib_names.contains(&name.as_str()) {
            return Err(PlanError::UnknownLinkWith {
                key: t.key.clone(),
                name: name.clone(),
                suggestion: suggest(name, lib_names.iter().copied()),
            });
        }
    }
    Ok(())
}

fn plan_target(
    config: &Config,
    t: &TargetConfig,
    is_lib: bool,
    ext_suffix: &str,
    gil_disabled: bool,
) -> Result<TargetPlan, PlanError> {
    let tool = &config.tool;
    let (kind, wheel_path) = kind_and_path(t, is_lib, ext_suffix)?;
    let sources = sources_of(&config.root, t)?;
    let mut include_dirs = Vec::new();
    for dir in &t.include_dirs {
        let key = format!("{}.include-dirs", t.key);
        let path = config::inside_project(&config.root, dir, &key)?;
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
    let bindings = bindings_of(t, is_lib, tool);
    check_limited_api(t, bindings, torch_abi::limited_api(tool)?)?;
    check_free_threaded(t, bindings)?;
    let mut cuda_libraries: Vec<String> = Vec::new();
    for l in &t.cuda_libraries {
        if l != "cudart" && !cuda_libraries.contains(l) {
            cuda_libraries.push(l.clone());
        }
    }
    Ok(TargetPlan {
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
        archs: target_archs(t, bindings, tool)?,
        split_library: None,
        free_threaded: t.free_threaded && gil_disabled,
        torch_stable_abi: torch_abi::of_target(t, bindings, tool)?,
    })
}

/// A target's binding library: an extension's own `bindings`, else the top-level one; shared
/// libraries have none.
pub(crate) fn bindings_of(t: &TargetConfig, is_lib: bool, tool: &config::ToolConfig) -> Bindings {
    if is_lib {
        Bindings::None
    } else {
        t.bindings.unwrap_or(tool.bindings.value)
    }
}

/// A target's own `archs`; for a torch extension without one, PyTorch's
/// `TORCH_CUDA_ARCH_LIST` when nothing above it set the top-level list (`torch_archs`).
fn target_archs(
    t: &TargetConfig,
    bindings: Bindings,
    tool: &config::ToolConfig,
) -> Result<Option<ArchList>, PlanError> {
    if let Some(a) = &t.archs {
        return Ok(Some(arch::parse_items(
            a,
            &format!("{}.archs", t.key),
            &Origin::Pyproject,
        )?));
    }
    match (&tool.torch_archs, bindings) {
        (Some(s), Bindings::Torch) => Ok(Some(arch::parse_items(
            &s.value,
            "tool.cudawheel.archs",
            &s.origin,
        )?)),
        _ => Ok(None),
    }
}

/// An extension's module path (`pkg/_core<EXT_SUFFIX>`), or a shared library's
/// `<destination>/lib<name>.so` with that SONAME.
fn kind_and_path(
    t: &TargetConfig,
    is_lib: bool,
    ext_suffix: &str,
) -> Result<(TargetKind, String), PlanError> {
    if !is_lib {
        return Ok((
            TargetKind::Extension,
            format!("{}{ext_suffix}", t.name.replace('.', "/")),
        ));
    }
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
    Ok((
        TargetKind::SharedLibrary {
            soname: soname.clone(),
        },
        format!("{clean}/{soname}"),
    ))
}

/// The files `sources` matches, each once, classified by language (headers skipped).
fn sources_of(root: &Path, t: &TargetConfig) -> Result<Vec<Source>, PlanError> {
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
    Ok(sources)
}

/// pybind11 has no limited API; nanobind's starts at Python 3.12.
fn check_limited_api(
    t: &TargetConfig,
    bindings: Bindings,
    limited: Option<u32>,
) -> Result<(), PlanError> {
    match (bindings, limited) {
        (Bindings::Pybind11, Some(minor)) => Err(PlanError::BindingsLimitedApi {
            key: t.key.clone(),
            bindings: "pybind11",
            minor,
            why: "pybind11 does not support Python's limited API".into(),
        }),
        (Bindings::Nanobind, Some(minor)) if minor < 12 => Err(PlanError::BindingsLimitedApi {
            key: t.key.clone(),
            bindings: "nanobind",
            minor,
            why: "nanobind builds for the stable ABI only from Python 3.12 (cp312)".into(),
        }),
        (Bindings::Jax, Some(minor)) if minor < 12 => Err(PlanError::BindingsLimitedApi {
            key: t.key.clone(),
            bindings: "jax",
            minor,
            why: "a JAX extension is a nanobind module, and nanobind builds for the stable ABI only from Python 3.12 (cp312)".into(),
        }),
        _ => Ok(()),
    }
}

/// `free-threaded = true` builds nanobind's free-threaded form: C API and pybind11 modules say
/// they are GIL-free in their own source, torch extensions through torch.
fn check_free_threaded(t: &TargetConfig, bindings: Bindings) -> Result<(), PlanError> {
    match bindings {
        Bindings::Nanobind | Bindings::Jax => Ok(()),
        _ if !t.free_threaded => Ok(()),
        other => Err(PlanError::FreeThreadedNotNanobind {
            key: t.key.clone(),
            bindings: other.name(),
        }),
    }
}

/// Folder names discovery never ships, whatever they hold: setuptools' list for a flat layout
/// (tests, docs, examples, build output, tool folders), so a project moving from
/// `find_packages()` ships what it shipped.
const NOT_PACKAGES: &[&str] = &[
    "benchmark",
    "benchmarks",
    "bin",
    "build",
    "changelog",
    "ci",
    "debian",
    "dist",
    "doc",
    "docs",
    "documentation",
    "env",
    "example",
    "examples",
    "exercise",
    "exercises",
    "fabfile",
    "htmlcov",
    "manpages",
    "news",
    "newsfragments",
    "python",
    "requirements",
    "scripts",
    "site_scons",
    "tasks",
    "test",
    "tests",
    "tools",
    "unit_test",
    "unit_tests",
    "util",
    "utils",
    "venv",
];

/// The Python packages to ship: `packages` as given; else every importable package folder
/// directly under `python-source` (an identifier holding `__init__.py`, not named in
/// `NOT_PACKAGES`, not starting with `.` or `_`, not the build folder), plus the top-level
/// folders of the extensions' module paths that exist there. Subpackages ship with their
/// package.
fn packages(
    listed: Option<&[String]>,
    python_source: &Path,
    build_dir: &Path,
    targets: &[TargetPlan],
) -> Result<Vec<PathBuf>, PlanError> {
    let Some(list) = listed else {
        let mut found: BTreeSet<PathBuf> = discover(python_source, build_dir);
        found.extend(
            targets
                .iter()
                .filter_map(|t| {
                    t.wheel_path
                        .split_once('/')
                        .map(|(top, _)| PathBuf::from(top))
                })
                .filter(|top| python_source.join(top).is_dir()),
        );
        return Ok(found.into_iter().collect());
    };
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
    Ok(out)
}

/// The importable package folders directly under `python_source` (see `packages`).
fn discover(python_source: &Path, build_dir: &Path) -> BTreeSet<PathBuf> {
    let Ok(entries) = std::fs::read_dir(python_source) else {
        return BTreeSet::new();
    };
    entries
        .flatten()
        .filter(|e| e.path().join("__init__.py").is_file() && e.path() != build_dir)
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|name| {
            let identifier = name.chars().next().is_some_and(|c| c.is_alphabetic())
                && name.chars().all(|c| c.is_alphanumeric() || c == '_');
            identifier && !NOT_PACKAGES.contains(&name.as_str())
        })
        .map(PathBuf::from)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_major_of_a_part_file_is_read_from_its_name() {
        assert_eq!(part_major("pkg/_core.cudawheel-cu12.abi3.so"), Some(12));
        assert_eq!(
            part_major("_C.cudawheel-cu13.cpython-311-x86_64-linux-gnu.so"),
            Some(13)
        );
        // Controls: a single-major extension, and lookalikes.
        assert_eq!(part_major("pkg/_core.abi3.so"), None);
        assert_eq!(part_major("pkg/_core.cudawheel-ext.abi3.so"), None);
        assert_eq!(part_major("pkg/_core.cudawheel-cu12abi3.so"), None);
    }

    #[test]
    fn discovery_finds_importable_packages_and_leaves_out_the_rest() {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path();
        for dir in [
            "pkg", "pkg/sub", "other", "tests", "docs", "_private", "build", "out", "not-id",
        ] {
            std::fs::create_dir_all(src.join(dir)).unwrap();
            std::fs::write(src.join(dir).join("__init__.py"), "").unwrap();
        }
        std::fs::create_dir_all(src.join("namespace_only")).unwrap();
        let found: Vec<PathBuf> = discover(src, &src.join("out")).into_iter().collect();
        assert_eq!(found, [PathBuf::from("other"), PathBuf::from("pkg")]);
        // Control: the same folders listed in `packages` are shipped as listed.
        let listed = ["tests".to_string(), "pkg.sub".to_string()];
        let out = packages(Some(&listed), src, &src.join("out"), &[]).unwrap();
        assert_eq!(out, [PathBuf::from("tests"), PathBuf::from("pkg/sub")]);
    }

    use crate::config::Overrides;

    /// A project with a torch extension and a plain one, planned under `env`.
    fn plan(env: &[(&str, &str)]) -> BuildPlan {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for pkg in ["t", "p"] {
            std::fs::create_dir_all(root.join(pkg)).unwrap();
        }
        std::fs::write(root.join("k.cu"), "").unwrap();
        let text = "[project]\nname = \"demo\"\nversion = \"1\"\n[tool.cudawheel]\narchs = [\"80\"]\n\
            [[tool.cudawheel.extension]]\nname = \"t._C\"\nsources = [\"k.cu\"]\nbindings = \"torch\"\n\
            [[tool.cudawheel.extension]]\nname = \"p._core\"\nsources = [\"k.cu\"]\n";
        let overrides = Overrides {
            settings: Default::default(),
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        };
        let config = Config::from_text(root, text.into(), &overrides).unwrap();
        let python = PythonInfo::for_tests(root);
        BuildPlan::new(&config, &python).unwrap()
    }

    fn archs(plan: &BuildPlan, module: &str) -> Vec<arch::ArchSpec> {
        let t = plan.targets.iter().find(|t| t.module == module).unwrap();
        t.archs(plan).map(|l| l.specs.clone()).unwrap_or_default()
    }

    fn specs(text: &str) -> Vec<arch::ArchSpec> {
        arch::parse_list(text, "k", &Origin::Pyproject).unwrap()
    }

    #[test]
    fn torch_arch_list_reaches_torch_targets_only() {
        let p = plan(&[("TORCH_CUDA_ARCH_LIST", "9.0a")]);
        assert_eq!(archs(&p, "t._C"), specs("9.0a"));
        assert_eq!(archs(&p, "p._core"), specs("80"));
        // A place above it (CMake's variable) sets both.
        let p = plan(&[("TORCH_CUDA_ARCH_LIST", "9.0a"), ("CUDAARCHS", "86")]);
        assert_eq!(archs(&p, "t._C"), specs("86"));
        assert_eq!(archs(&p, "p._core"), specs("86"));
        // Control: without it the torch target has the top-level list too.
        assert_eq!(archs(&plan(&[]), "t._C"), specs("80"));
    }

    /// A nanobind module and a second one (`other`: lines of its table), `top`-level keys,
    /// planned for `python`.
    fn plan_for(python: &PythonInfo, top: &str, other: &str) -> Result<BuildPlan, PlanError> {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("p")).unwrap();
        std::fs::write(root.join("k.cu"), "").unwrap();
        let text = format!(
            "[project]\nname = \"demo\"\nversion = \"1\"\n[tool.cudawheel]\n{top}\n\
             [[tool.cudawheel.extension]]\nname = \"p._nb\"\nsources = [\"k.cu\"]\nbindings = \"nanobind\"\nfree-threaded = true\n\
             [[tool.cudawheel.extension]]\nname = \"p._c\"\nsources = [\"k.cu\"]\n{other}\n"
        );
        let config = Config::from_text(root, text, &Overrides::default()).unwrap();
        BuildPlan::new(&config, python)
    }

    #[test]
    fn a_free_threaded_python_gets_a_version_specific_gil_free_build() {
        let dir = tempfile::tempdir().unwrap();
        let ft = PythonInfo::free_threaded_for_tests(dir.path());
        let gil = PythonInfo::for_tests(dir.path());
        // py-limited-api: abi3 on a GIL Python, version-specific (with its `t`) on 3.13t.
        let p = plan_for(&gil, "py-limited-api = \"cp312\"", "").unwrap();
        assert_eq!(p.limited_api, Some(12));
        assert_eq!(p.targets[1].wheel_path, "p/_c.abi3.so");
        let p = plan_for(&ft, "py-limited-api = \"cp312\"", "").unwrap();
        assert_eq!(p.limited_api, None);
        assert_eq!(
            p.targets[1].wheel_path,
            "p/_c.cpython-313t-x86_64-linux-gnu.so"
        );
        // `free-threaded = true` takes effect on a free-threaded Python only.
        let nb = |p: &BuildPlan| {
            p.targets
                .iter()
                .find(|t| t.module == "p._nb")
                .unwrap()
                .free_threaded
        };
        assert!(nb(&plan_for(&ft, "", "").unwrap()));
        assert!(!nb(&plan_for(&gil, "", "").unwrap()));
        assert!(!plan_for(&ft, "", "")
            .unwrap()
            .targets
            .iter()
            .any(|t| t.module == "p._c" && t.free_threaded));
        // pybind11 and C API modules declare it in their source: the key is refused there.
        for top in ["bindings = \"pybind11\"", ""] {
            let err = plan_for(&gil, top, "free-threaded = true")
                .map(|_| ())
                .unwrap_err();
            assert!(
                matches!(err, PlanError::FreeThreadedNotNanobind { .. }),
                "{err}"
            );
        }
        // Control: a pybind11 module without the key plans.
        assert!(plan_for(&ft, "bindings = \"pybind11\"", "").is_ok());
    }
}
