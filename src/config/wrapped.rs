//! Wrap mode's configuration (`build-backend` set): only `[tool.cudawheel]` is cudawheel's
//! (`[project]`, when there is one, belongs to the wrapped backend, and setuptools projects
//! may keep theirs in setup.py), and the `-C` settings are split: a setting naming a top-level
//! key (or spelled `cudawheel.<key>`) is cudawheel's, every other one is passed on to the
//! wrapped backend unchanged (`cmake.define.X=ON`, `build-dir=...` is cudawheel's).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::error::ConfigError;
use super::keys::{ToolConfig, TOP_KEYS};
use super::layered::Overrides;
use super::origin::Origin;
use super::variant::Spec;

/// A wrapped build's settings.
#[derive(Debug, Clone)]
pub(crate) struct Wrapped {
    /// The project folder, absolute.
    pub(crate) root: PathBuf,
    /// The wrapped backend's object reference (`scikit_build_core.build`).
    pub(crate) backend: String,
    pub(crate) tool: ToolConfig,
    /// The `-C` settings that are not cudawheel's, for the wrapped backend.
    pub(crate) passed: BTreeMap<String, String>,
    /// The variant the repaired wheel becomes (`[tool.cudawheel]` and `[variant]`), if any.
    pub(crate) variant: Option<Spec>,
    /// `SOURCE_DATE_EPOCH`, for the repaired wheel's timestamps.
    pub(crate) source_date_epoch: Option<u64>,
}

/// Whether a `-C` setting is cudawheel's.
fn is_ours(name: &str) -> bool {
    name.starts_with("cudawheel.") || TOP_KEYS.iter().any(|k| k.name == name)
}

/// The wrapped build's settings, or `None` when `build-backend` is not set (an ordinary
/// cudawheel build). Reads pyproject.toml; `Mode::load` decides from one read.
#[cfg(test)]
pub(crate) fn load(
    source_tree: &Path,
    overrides: &Overrides,
) -> Result<Option<Wrapped>, ConfigError> {
    let root = super::project_root(source_tree)?;
    let text = super::read_pyproject(&root)?;
    let doc = super::RawDocument::parse(&root.join("pyproject.toml"), &text)?;
    from_doc(&root, &doc, overrides)
}

/// `load` of a pyproject.toml already read and parsed (`root` is its folder).
pub(super) fn from_doc(
    root: &Path,
    doc: &super::RawDocument,
    overrides: &Overrides,
) -> Result<Option<Wrapped>, ConfigError> {
    let empty = toml::Table::new();
    if !wrapping(doc.cudawheel_table(&empty)?, overrides) {
        return Ok(None);
    }
    let wrapped = settings(root, doc, overrides)?;
    if wrapped.backend.is_empty() {
        return Err(ConfigError::InvalidValue {
            key: "tool.cudawheel.build-backend".into(),
            origin: Origin::Pyproject,
            value: "\"\"".into(),
            why: "expected a PEP 517 backend such as \"scikit_build_core.build\"".into(),
        });
    }
    Ok(Some(wrapped))
}

/// `python -m cudawheel env`: the settings of a build cudawheel does not run, from the
/// project's `[tool.cudawheel]` when there is a pyproject.toml (`build-backend` or not), else
/// the defaults (`backend` is empty when not set).
pub(crate) fn load_for_env(
    source_tree: &Path,
    overrides: &Overrides,
) -> Result<Wrapped, ConfigError> {
    let root = super::project_root(source_tree)?;
    let path = root.join("pyproject.toml");
    let text = match path.exists() {
        true => super::read_pyproject(&root)?,
        false => String::new(),
    };
    let doc = super::RawDocument::parse(&path, &text)?;
    settings(&root, &doc, overrides)
}

/// Whether `build-backend` is set: in `[tool.cudawheel]`, a `-C` setting or the environment.
fn wrapping(table: &toml::Table, overrides: &Overrides) -> bool {
    let set = |name: &str| {
        overrides.settings.contains_key(name)
            || overrides
                .settings
                .contains_key(&format!("cudawheel.{name}"))
    };
    table.contains_key("build-backend")
        || set("build-backend")
        || overrides
            .env
            .get("CUDAWHEEL_BUILD_BACKEND")
            .is_some_and(|v| !v.is_empty())
}

/// The settings of `doc`'s `[tool.cudawheel]`, the `-C` settings split between cudawheel and
/// the wrapped backend.
fn settings(
    root: &Path,
    doc: &super::RawDocument,
    overrides: &Overrides,
) -> Result<Wrapped, ConfigError> {
    let empty = toml::Table::new();
    let table = doc.cudawheel_table(&empty)?;
    let (ours, passed): (BTreeMap<_, _>, BTreeMap<_, _>) = overrides
        .settings
        .clone()
        .into_iter()
        .partition(|(name, _)| is_ours(name));
    let own = Overrides {
        settings: ours,
        env: overrides.env.clone(),
    };
    let tool = ToolConfig::parse(table, &own)?;
    if let super::CudaChoice::Several(majors) = tool.cuda.value {
        return Err(ConfigError::Unsupported {
            key: "tool.cudawheel.build-backend".into(),
            what: format!(
                "wrap mode with several CUDA majors (`cuda` = [{}])",
                majors.list()
            ),
            instead: "set `cuda` to one major and build a wheel per major (`python -m cudawheel wheel . --cuda 12 --cuda 13`)".into(),
        });
    }
    let variant = Spec::parse(&tool, doc.variant_section()?)?;
    Ok(Wrapped {
        root: root.to_path_buf(),
        backend: tool.build_backend.clone().unwrap_or_default(),
        tool,
        passed,
        variant,
        source_date_epoch: super::source_date_epoch(&overrides.env)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project(text: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("pyproject.toml"), text).unwrap();
        dir
    }

    fn overrides(settings: &[(&str, &str)]) -> Overrides {
        Overrides {
            settings: settings
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            env: BTreeMap::new(),
        }
    }

    #[test]
    fn no_build_backend_is_an_ordinary_build() {
        let dir = project("[project]\nname = \"x\"\nversion = \"1\"\n");
        assert!(load(dir.path(), &overrides(&[])).unwrap().is_none());
    }

    #[test]
    fn settings_are_split_between_cudawheel_and_the_wrapped_backend() {
        // No [project]: a setuptools project may keep its metadata in setup.py.
        let dir = project(
            "[build-system]\nrequires = [\"cudawheel\", \"scikit-build-core\"]\nbuild-backend = \"cudawheel\"\n\
             [tool.cudawheel]\nbuild-backend = \"scikit_build_core.build\"\nlibraries = [\"cufft\"]\n",
        );
        let w = load(
            dir.path(),
            &overrides(&[
                ("archs", "90"),
                ("cudawheel.jobs", "2"),
                ("cmake.define.JAX_FFI_EXAMPLE_ENABLE_CUDA", "ON"),
            ]),
        )
        .unwrap()
        .unwrap();
        assert_eq!(w.backend, "scikit_build_core.build");
        assert_eq!(w.tool.wrap_libraries, Some(vec!["cufft".to_string()]));
        assert_eq!(w.tool.jobs, Some(2));
        assert_eq!(w.tool.archs.unwrap().value, vec!["90".to_string()]);
        assert_eq!(
            w.passed.keys().collect::<Vec<_>>(),
            vec!["cmake.define.JAX_FFI_EXAMPLE_ENABLE_CUDA"]
        );
    }

    #[test]
    fn the_variant_is_read_with_the_variant_section() {
        let tool =
            "[tool.cudawheel]\nbuild-backend = \"scikit_build_core.build\"\nvariant = \"cuda\"\n";
        let table = "[variant.default-priorities]\nnamespace = [\"nvidia\"]\n\
                     [variant.providers.nvidia]\nrequires = [\"own-provider>=2\"]\n";
        let dir = project(&format!("{tool}{table}"));
        let w = load(dir.path(), &overrides(&[])).unwrap().unwrap();
        let spec = w.variant.expect("a variant build");
        assert_eq!(spec.providers["nvidia"]["requires"][0], "own-provider>=2");
        // Control: no `variant` setting, no variant (the table alone makes none).
        let dir = project(&format!("[tool.cudawheel]\nbuild-backend = \"x\"\n{table}"));
        assert!(load(dir.path(), &overrides(&[]))
            .unwrap()
            .unwrap()
            .variant
            .is_none());
        // A table that does not declare the namespace used is the build's error, not a repair's.
        let bad = "[variant.default-priorities]\nnamespace = [\"other\"]\n[variant.providers.other]\nrequires = []\n";
        let dir = project(&format!("{tool}{bad}"));
        let err = load(dir.path(), &overrides(&[])).unwrap_err();
        assert!(err.to_string().contains("namespace `nvidia`"), "{err}");
    }

    #[test]
    fn a_misspelled_cudawheel_setting_is_still_an_error() {
        let dir = project("[tool.cudawheel]\nbuild-backend = \"setuptools.build_meta\"\n");
        let err = load(dir.path(), &overrides(&[("cudawheel.arch", "90")])).unwrap_err();
        assert!(err.to_string().contains("cudawheel.arch"), "{err}");
    }
}
