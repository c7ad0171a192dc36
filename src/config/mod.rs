//! Stage 1, configuration: pyproject.toml + PEP 517 config settings + environment -> `Config`.
//!
//! Reads files (pyproject.toml, readme, license files) but spawns nothing and knows no toolchain.

mod choices;
pub(crate) mod compress;
mod error;
mod field;
mod interpreter;
mod keydef;
mod keys;
mod layered;
mod majors;
mod origin;
mod paths;
mod project;
#[cfg(test)]
mod schema;
mod tables;
mod tool;
mod values;
pub(crate) mod variant;
mod version_file;
pub(crate) mod wrapped;

use std::path::{Path, PathBuf};

pub(crate) use choices::{Bindings, CudaChoice, CudaDeps, Cudart, DriverFloor, Ptx, ToolkitChoice};
pub(crate) use error::ConfigError;
pub(crate) use interpreter::PythonInfo;
pub(crate) use keydef::{KeyDef, Ty};
pub(crate) use keys::{LibraryConfig, TargetConfig, ToolConfig};
pub(crate) use keys::{LIBRARY_KEYS, TARGET_KEYS, TOP_KEYS};
pub(crate) use layered::{suggest, Overrides, TORCH_ARCHS_ENV};
pub(crate) use majors::Part;
pub(crate) use origin::{Origin, Sourced};
pub(crate) use paths::{expand_glob, inside_project};
pub(crate) use project::{
    name_problem as requirement_problem, requirement_name, License, Person, Project,
};
pub(crate) use values::{Glibc, AARCH64_MANYLINUX, MAX_WHEEL_SIZE, OLDEST_MANYLINUX};

/// Everything stage 1 produces.
#[derive(Debug, Clone)]
pub(crate) struct Config {
    /// The project folder (holds pyproject.toml), absolute.
    pub(crate) root: PathBuf,
    pub(crate) project: Project,
    pub(crate) tool: ToolConfig,
    /// `SOURCE_DATE_EPOCH`, for archive timestamps.
    pub(crate) source_date_epoch: Option<u64>,
    /// The pyproject.toml text as read (the sdist ships it).
    pub(crate) pyproject_text: String,
    /// The variant the build makes (PEP 825), or `None` for an ordinary wheel: the settings
    /// and pyproject.toml's `[variant]` table, cross-checked.
    pub(crate) variant: Option<variant::Spec>,
    /// One major's build of a `cuda` list (`Config::parts`); `None` otherwise.
    pub(crate) part: Option<Part>,
}

#[derive(serde::Deserialize)]
struct RawDocument {
    project: Option<toml::Value>,
    tool: Option<toml::Table>,
    variant: Option<toml::Value>,
}

impl RawDocument {
    /// pyproject.toml's text (`path` for the message); a syntax error names line and column.
    fn parse(path: &Path, text: &str) -> Result<RawDocument, ConfigError> {
        toml::from_str(text).map_err(|e| ConfigError::Toml {
            path: path.to_path_buf(),
            message: one_line(&e),
        })
    }

    /// `[tool.cudawheel]`, or `empty` when there is none; any other type is an error.
    fn cudawheel_table<'a>(
        &'a self,
        empty: &'a toml::Table,
    ) -> Result<&'a toml::Table, ConfigError> {
        match self.tool.as_ref().and_then(|t| t.get("cudawheel")) {
            None => Ok(empty),
            Some(toml::Value::Table(t)) => Ok(t),
            Some(_) => Err(ConfigError::WrongType {
                key: "tool.cudawheel".into(),
                origin: Origin::Pyproject,
                expected: "a table".into(),
                found: "another type".into(),
            }),
        }
    }
}

impl RawDocument {
    /// The top-level `[variant]` table (PEP 817's providers and priorities), if any; any
    /// other type is an error.
    fn variant_section(&self) -> Result<Option<&toml::Table>, ConfigError> {
        match &self.variant {
            None => Ok(None),
            Some(toml::Value::Table(t)) => Ok(Some(t)),
            Some(other) => Err(ConfigError::WrongType {
                key: "variant".into(),
                origin: Origin::Pyproject,
                expected: "a table (`[variant]`)".into(),
                found: other.type_str().into(),
            }),
        }
    }
}

/// The project's root: `source_tree` made absolute.
fn project_root(source_tree: &Path) -> Result<PathBuf, ConfigError> {
    std::path::absolute(source_tree).map_err(|source| ConfigError::Io {
        path: source_tree.to_path_buf(),
        source,
    })
}

/// pyproject.toml in `root`, as text.
fn read_pyproject(root: &Path) -> Result<String, ConfigError> {
    let path = root.join("pyproject.toml");
    std::fs::read_to_string(&path).map_err(|source| ConfigError::Io { path, source })
}

/// How the project is built, decided once per call from one read of pyproject.toml: by
/// cudawheel itself, or by the backend `build-backend` names (wrap mode). Every hook, `env`,
/// `doctor` and the build take this one answer.
#[derive(Debug, Clone)]
pub(crate) enum Mode {
    Native(Box<Config>),
    Wrapped(Box<wrapped::Wrapped>),
}

impl Mode {
    pub(crate) fn load(source_tree: &Path, overrides: &Overrides) -> Result<Mode, ConfigError> {
        let root = project_root(source_tree)?;
        let text = read_pyproject(&root)?;
        let doc = RawDocument::parse(&root.join("pyproject.toml"), &text)?;
        Ok(match wrapped::from_doc(&root, &doc, overrides)? {
            Some(w) => Mode::Wrapped(Box::new(w)),
            None => Mode::Native(Box::new(Config::from_doc(&root, text, doc, overrides)?)),
        })
    }
}

impl Config {
    /// The project's configuration for cudawheel's own build (whatever `build-backend` says:
    /// the code decides the mode with `Mode::load`; tests load a native project directly).
    #[cfg(test)]
    pub(crate) fn load(source_tree: &Path, overrides: &Overrides) -> Result<Config, ConfigError> {
        let root = project_root(source_tree)?;
        let text = read_pyproject(&root)?;
        Config::from_text(&root, text, overrides)
    }

    /// Parses and validates a pyproject.toml text as if it were `root/pyproject.toml` (readme
    /// and license files are still read relative to `root`). Pure apart from those reads: the
    /// entry point of the config fuzz target.
    pub(crate) fn from_text(
        root: &Path,
        text: String,
        overrides: &Overrides,
    ) -> Result<Config, ConfigError> {
        let doc = RawDocument::parse(&root.join("pyproject.toml"), &text)?;
        Config::from_doc(root, text, doc, overrides)
    }

    /// `from_text` of the document already parsed from `text`.
    fn from_doc(
        root: &Path,
        text: String,
        mut doc: RawDocument,
        overrides: &Overrides,
    ) -> Result<Config, ConfigError> {
        let root = root.to_path_buf();
        let path = root.join("pyproject.toml");
        let Some(raw_project) = doc.project.take() else {
            return Err(ConfigError::NoProject { path });
        };
        // Re-deserialize `[project]` from its own value so serde names the offending field.
        let raw: project::RawProject =
            raw_project
                .try_into()
                .map_err(|e: toml::de::Error| ConfigError::ProjectSyntax {
                    path: path.clone(),
                    message: one_line(&e),
                })?;
        let empty = toml::Table::new();
        let tool_table = doc.cudawheel_table(&empty)?;
        let tool = ToolConfig::parse(tool_table, overrides)?;
        let project = raw.validate(&root, tool.version_file.as_deref())?;
        let source_date_epoch = source_date_epoch(&overrides.env)?;
        let variant = variant::Spec::parse(&tool, doc.variant_section()?)?;
        tool.check_several(variant.is_some())?;
        Ok(Config {
            root,
            project,
            tool,
            source_date_epoch,
            pyproject_text: text,
            variant,
            part: None,
        })
    }
}

/// `SOURCE_DATE_EPOCH` (reproducible archive timestamps) from the environment: unset or empty
/// is `None`; anything but a number of seconds is an error, for every command that writes a
/// wheel (a build, wrap mode, `repair`).
pub(crate) fn source_date_epoch(
    env: &std::collections::BTreeMap<String, String>,
) -> Result<Option<u64>, ConfigError> {
    let Some(s) = env.get("SOURCE_DATE_EPOCH").filter(|s| !s.is_empty()) else {
        return Ok(None);
    };
    s.trim()
        .parse::<u64>()
        .map(Some)
        .map_err(|_| ConfigError::InvalidValue {
            key: "SOURCE_DATE_EPOCH".into(),
            origin: Origin::Env("SOURCE_DATE_EPOCH".into()),
            value: format!("{s:?}"),
            why: "expected a number of seconds since 1970".into(),
        })
}

/// `pyproject.toml` text -> `Config`, with `root` as the project folder: see `Config::from_text`.
pub(crate) fn parse_str(
    root: &Path,
    text: &str,
    overrides: &Overrides,
) -> Result<Config, ConfigError> {
    Config::from_text(root, text.to_string(), overrides)
}

/// toml's errors span several lines with a source excerpt; keep them readable in one block.
fn one_line(e: &toml::de::Error) -> String {
    e.to_string().trim_end().replace('\n', "\n    ")
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::hint::Hint;

    fn project(dir: &Path, tool: &str) {
        let text = format!(
            "[project]\nname = \"Demo_Pkg\"\nversion = \"1.0.0\"\ndependencies = [\"numpy>=1.22\"]\n\n[tool.cudawheel]\n{tool}\n"
        );
        std::fs::write(dir.join("pyproject.toml"), text).unwrap();
    }

    fn overrides(settings: &[(&str, &str)], env: &[(&str, &str)]) -> Overrides {
        let pairs = |kv: &[(&str, &str)]| -> BTreeMap<String, String> {
            kv.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        Overrides {
            settings: pairs(settings),
            env: pairs(env),
        }
    }

    fn load(
        tool: &str,
        settings: &[(&str, &str)],
        env: &[(&str, &str)],
    ) -> Result<Config, ConfigError> {
        let dir = tempfile::tempdir().unwrap();
        project(dir.path(), tool);
        Config::load(dir.path(), &overrides(settings, env))
    }

    #[test]
    fn defaults() {
        let c = load("", &[], &[]).unwrap();
        assert_eq!(c.tool.cuda.value, CudaChoice::Auto);
        assert_eq!(c.tool.suffix_for(13), "-cu13");
        assert_eq!(c.tool.build_dir, "build/cudawheel");
        assert_eq!(c.tool.ptx, Ptx::Highest);
        assert_eq!(c.project.normalized_name.to_string(), "demo-pkg");
    }

    #[test]
    fn setting_beats_env_beats_pyproject() {
        let c = load("cuda = 11", &[], &[]).unwrap();
        assert_eq!(c.tool.cuda.value, CudaChoice::Major(11));
        let c = load("cuda = 11", &[], &[("CUDAWHEEL_CUDA", "12")]).unwrap();
        assert_eq!(
            c.tool.cuda,
            Sourced {
                value: CudaChoice::Major(12),
                origin: Origin::Env("CUDAWHEEL_CUDA".into())
            }
        );
        let c = load(
            "cuda = 11",
            &[("cudawheel.cuda", "13")],
            &[("CUDAWHEEL_CUDA", "12")],
        )
        .unwrap();
        assert_eq!(c.tool.cuda.value, CudaChoice::Major(13));
        let c = load("", &[("cuda", "auto")], &[]).unwrap();
        assert_eq!(c.tool.cuda.value, CudaChoice::Auto);
    }

    #[test]
    fn lists_from_settings_split_on_semicolons_and_cudaarchs_is_below_cudawheel_archs() {
        let c = load("", &[("archs", "80;90a-real")], &[]).unwrap();
        assert_eq!(c.tool.archs.unwrap().value, ["80", "90a-real"]);
        let c = load("", &[], &[("CUDAARCHS", "75;86")]).unwrap();
        assert_eq!(
            c.tool.archs.unwrap().origin,
            Origin::Env("CUDAARCHS".into())
        );
        let c = load("", &[], &[("CUDAARCHS", "75"), ("CUDAWHEEL_ARCHS", "90")]).unwrap();
        assert_eq!(c.tool.archs.unwrap().value, ["90"]);
        let c = load("", &[("jobs", "3"), ("system-rpath", "true")], &[]).unwrap();
        assert_eq!((c.tool.jobs, c.tool.system_rpath), (Some(3), true));
    }

    #[test]
    fn archs_precedence_setting_cudawheel_archs_cudaarchs_torch_pyproject() {
        let origin = |settings: &[(&str, &str)], env: &[(&str, &str)]| {
            let a = load("archs = [\"75\"]", settings, env)
                .unwrap()
                .tool
                .archs
                .unwrap();
            (a.origin.to_string(), a.value.join(";"))
        };
        let all = [
            ("CUDAWHEEL_ARCHS", "90"),
            ("CUDAARCHS", "86"),
            ("TORCH_CUDA_ARCH_LIST", "8.0 8.6+PTX"),
        ];
        assert_eq!(
            origin(&[("archs", "100")], &all),
            ("config setting `-C archs`".into(), "100".into())
        );
        assert_eq!(
            origin(&[], &all),
            ("environment variable `CUDAWHEEL_ARCHS`".into(), "90".into())
        );
        assert_eq!(
            origin(&[], &all[1..]),
            ("environment variable `CUDAARCHS`".into(), "86".into())
        );
        // PyTorch's list is not the top level's: pyproject.toml keeps it...
        assert_eq!(
            origin(&[], &all[2..]),
            ("pyproject.toml".into(), "75".into())
        );
        assert_eq!(origin(&[], &[]), ("pyproject.toml".into(), "75".into()));
        // ...it is `torch_archs` (for torch targets), beating pyproject.toml, unless a place
        // above it set `archs`.
        let torch = |settings: &[(&str, &str)], env: &[(&str, &str)]| {
            load("archs = [\"75\"]", settings, env)
                .unwrap()
                .tool
                .torch_archs
                .map(|a| (a.origin.to_string(), a.value.join(";")))
        };
        assert_eq!(
            torch(&[], &all[2..]),
            Some((
                "environment variable `TORCH_CUDA_ARCH_LIST`".into(),
                "8.0;8.6+PTX".into()
            ))
        );
        assert_eq!(torch(&[], &all[1..]), None);
        assert_eq!(torch(&[("archs", "100")], &all[2..]), None);
        // An empty variable counts as unset.
        assert_eq!(torch(&[], &[("TORCH_CUDA_ARCH_LIST", " ")]), None);
    }

    #[test]
    fn the_mode_is_decided_from_one_read() {
        let dir = tempfile::tempdir().unwrap();
        let mode = |tool: &str, settings: &[(&str, &str)]| {
            project(dir.path(), tool);
            Mode::load(dir.path(), &overrides(settings, &[]))
        };
        assert!(matches!(mode("", &[]), Ok(Mode::Native(_))));
        let wrapped = mode("build-backend = \"scikit_build_core.build\"", &[]);
        assert!(
            matches!(&wrapped, Ok(Mode::Wrapped(w)) if w.backend == "scikit_build_core.build"),
            "{wrapped:?}"
        );
        // A setting makes it wrap mode as well; the backend's own settings pass through.
        let by_setting = mode(
            "",
            &[
                ("build-backend", "setuptools.build_meta"),
                ("build-dir", "b"),
            ],
        );
        assert!(
            matches!(&by_setting, Ok(Mode::Wrapped(w)) if w.passed.is_empty() && w.tool.build_dir == "b"),
            "{by_setting:?}"
        );
        // An error in either mode's settings is the configuration's error.
        let e = mode("build-backend = \"\"", &[]).unwrap_err();
        assert!(
            e.to_string().contains("tool.cudawheel.build-backend"),
            "{e}"
        );
        let e = mode("archz = 1", &[]).unwrap_err();
        assert!(e.to_string().contains("archz"), "{e}");
    }

    #[test]
    fn check_gpu_defaults_on() {
        assert!(load("", &[], &[]).unwrap().tool.check_gpu);
        assert!(!load("check-gpu = false", &[], &[]).unwrap().tool.check_gpu);
        assert!(
            !load("", &[("check-gpu", "false")], &[])
                .unwrap()
                .tool
                .check_gpu
        );
    }

    #[test]
    fn target_archs_are_read_per_target() {
        let c = load(
            "[[tool.cudawheel.extension]]\nname = \"a._h\"\nsources = []\narchs = \"90a\"\n[[tool.cudawheel.shared-library]]\nname = \"b\"\nsources = []\ndestination = \"a\"\narchs = [\"8.0\", \"9.0a\"]",
            &[],
            &[],
        )
        .unwrap();
        assert_eq!(
            c.tool.extensions[0].archs.as_deref(),
            Some(&["90a".to_string()][..])
        );
        assert_eq!(
            c.tool.shared_libraries[0].archs.as_deref(),
            Some(&["8.0".to_string(), "9.0a".to_string()][..])
        );
        let e = load(
            "[[tool.cudawheel.extension]]\nname = \"a._h\"\nsources = []\narchs = []",
            &[],
            &[],
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("tool.cudawheel.extension[0].archs"),
            "{e}"
        );
    }

    #[test]
    fn host_compiler_falls_back_to_cudahostcxx_then_cxx() {
        let c = load("", &[], &[("CXX", "g++"), ("CUDAHOSTCXX", "g++-11")]).unwrap();
        assert_eq!(c.tool.host_compiler.unwrap().value, "g++-11");
        let c = load("host-compiler = \"clang++\"", &[], &[("CXX", "g++")]).unwrap();
        assert_eq!(c.tool.host_compiler.unwrap().value, "clang++");
    }

    #[test]
    fn unknown_keys_suggest_the_nearest() {
        let e = load("archz = [\"80\"]", &[], &[]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "Unknown key `tool.cudawheel.archz` in pyproject.toml"
        );
        assert_eq!(e.hints(), ["did you mean `tool.cudawheel.archs`?"]);
        let e = load("", &[("cuda-dep", "none")], &[]).unwrap_err();
        assert_eq!(e.hints(), ["did you mean `cuda-deps`?"]);
    }

    #[test]
    fn bad_values_name_key_and_origin() {
        let e = load("", &[("jobs", "0")], &[]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "`tool.cudawheel.jobs` (from config setting `-C jobs`) has an invalid value integer 0: expected a positive number of jobs"
        );
        let e = load("system-rpath = \"yes\"", &[], &[]).unwrap_err();
        assert!(
            e.to_string()
                .contains("must be a boolean (true or false), found string \"yes\""),
            "{e}"
        );
        let e = load("py-limited-api = \"py39\"", &[], &[]).unwrap_err();
        assert!(
            e.to_string()
                .contains("expected a CPython tag such as \"cp39\""),
            "{e}"
        );
    }
}
