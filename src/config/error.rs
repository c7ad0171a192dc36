//! What reading the configuration can fail at, with where the user fixes it.

use std::path::PathBuf;

use super::origin::Origin;
use crate::hint::Hint;

#[derive(Debug, thiserror::Error)]
pub(crate) enum ConfigError {
    #[error("Cannot read {}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is not valid TOML: {message}", path.display())]
    Toml { path: PathBuf, message: String },
    #[error("{} has no `[project]` table", path.display())]
    NoProject { path: PathBuf },
    #[error("Invalid `[project]` in {}: {message}", path.display())]
    ProjectSyntax { path: PathBuf, message: String },
    #[error("Unknown key `{key}` in {origin}")]
    UnknownKey {
        key: String,
        origin: Origin,
        suggestion: Option<String>,
    },
    #[error("Missing required key `{key}` in pyproject.toml")]
    MissingKey { key: String },
    #[error("`{key}` (from {origin}) must be {expected}, found {found}")]
    WrongType {
        key: String,
        origin: Origin,
        expected: String,
        found: String,
    },
    #[error("`{key}` (from {origin}) has an invalid value {value}: {why}")]
    InvalidValue {
        key: String,
        origin: Origin,
        value: String,
        why: String,
    },
    #[error("`{key}` names {}, which cannot be read", path.display())]
    ReadFile {
        key: String,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("`{key}` names the path {path:?}, which is outside the project folder")]
    OutsideProject { key: String, path: String },
    #[error("`{key}`: the pattern {pattern:?} matches no file")]
    GlobMatchedNothing { key: String, pattern: String },
    #[error("`{key}`: {pattern:?} is not a valid glob pattern: {why}")]
    BadGlob {
        key: String,
        pattern: String,
        why: String,
    },
    #[error("`{key}`: {what} is not supported by this version of cudawheel")]
    Unsupported {
        key: String,
        what: String,
        instead: String,
    },
    #[error("`project.dynamic` lists `version`, but {why}")]
    DynamicVersion { why: String },
    #[error(transparent)]
    Variant(#[from] SpecError),
    #[error("`tool.cudawheel.version-file` = {file:?} {why}")]
    VersionFile {
        file: String,
        why: String,
        hint: String,
    },
}

impl Hint for ConfigError {
    fn hints(&self) -> Vec<String> {
        match self {
            ConfigError::Variant(e) => e.hints(),
            ConfigError::UnknownKey {
                suggestion: Some(s),
                ..
            } => vec![format!("did you mean `{s}`?")],
            ConfigError::UnknownKey { origin, .. } => vec![match origin {
                Origin::Pyproject => {
                    "every `[tool.cudawheel]` key is listed in the configuration reference (docs/reference/configuration.md)".to_string()
                }
                _ => "config settings take the `[tool.cudawheel]` key names, e.g. `-C cuda=13`"
                    .to_string(),
            }],
            ConfigError::NoProject { .. } => {
                vec!["add a `[project]` table with at least `name` and `version`".into()]
            }
            ConfigError::MissingKey { key } if key.starts_with("project.") => {
                vec![format!(
                    "add `{}` to `[project]`",
                    key.trim_start_matches("project.")
                )]
            }
            ConfigError::OutsideProject { .. } => {
                vec![
                    "use a path relative to the folder holding pyproject.toml, without `..`".into(),
                ]
            }
            ConfigError::GlobMatchedNothing { .. } => {
                vec!["patterns are relative to the folder holding pyproject.toml; check the spelling".into()]
            }
            ConfigError::Unsupported { instead, .. } => vec![instead.clone()],
            ConfigError::DynamicVersion { .. } => vec![
                "keep `version` out of `[project]` and set `version-file = \"pkg/__init__.py\"` in `[tool.cudawheel]` (a file with `__version__ = \"1.2.3\"`), or write `version` in `[project]` and drop `dynamic`".into(),
            ],
            ConfigError::VersionFile { hint, .. } => vec![hint.clone()],
            ConfigError::Io { path, .. } if path.ends_with("pyproject.toml") => vec![
                "run the build in (or pass) the folder that holds the project's pyproject.toml"
                    .into(),
            ],
            ConfigError::Io { .. } => {
                vec!["check that the path exists and that you may read it".into()]
            }
            ConfigError::Toml { .. } => vec![
                "fix the TOML syntax at the line and column shown (https://toml.io)".into(),
            ],
            ConfigError::ProjectSyntax { .. } => vec![
                "`[project]` takes the keys of the pyproject.toml specification (https://packaging.python.org/en/latest/specifications/pyproject-toml/)".into(),
            ],
            ConfigError::MissingKey { key } => vec![format!("add `{key}` to pyproject.toml")],
            ConfigError::WrongType { key, origin, expected, .. } => {
                vec![fix_at(origin, key, &format!("write it as {expected}"))]
            }
            ConfigError::InvalidValue { key, origin, .. } => {
                vec![fix_at(origin, key, "give an allowed value")]
            }
            ConfigError::ReadFile { .. } => vec![
                "check that the file exists inside the project folder and that you may read it"
                    .into(),
            ],
            ConfigError::BadGlob { .. } => vec![
                "globs take `*`, `**`, `?` and `[...]`; escape a literal `[` as `[[]`".into(),
            ],
        }
    }
}

/// "Change it in pyproject.toml / -C / the environment": where the user fixes `key`.
fn fix_at(origin: &Origin, key: &str, what: &str) -> String {
    match origin {
        Origin::Pyproject => format!("{what}: change `{key}` in pyproject.toml"),
        Origin::Setting(name) => format!("{what}: change the config setting `-C {name}=...`"),
        Origin::Env(var) => format!("{what}: change or unset the environment variable `{var}`"),
    }
}

/// A variant setting that cannot make a wheel.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SpecError {
    #[error("`{key}` (from {origin}): {text:?} is not a variant property `namespace :: feature :: value`")]
    BadProperty {
        key: String,
        origin: Origin,
        text: String,
    },
    #[error("`{key}` (from {origin}): the variant label {label:?} {why}")]
    BadLabel {
        key: String,
        origin: Origin,
        label: String,
        why: String,
    },
    #[error("`tool.cudawheel.{key}` (from {origin}) is set, but this is not a variant build")]
    NotAVariant { key: String, origin: Origin },
    #[error("`tool.cudawheel.null-variant` and `tool.cudawheel.variant` are both set: the null variant has no properties")]
    NullWithProperties,
    #[error("`tool.cudawheel.name-suffix` (from {origin}) is set, but a variant build keeps the project's own name")]
    SuffixWithVariant { origin: Origin },
    #[error("pyproject.toml's `[variant]` table {why}")]
    BadTable { why: String },
    #[error("the variant properties use the namespace `{namespace}`, which pyproject.toml's `[variant]` table does not declare")]
    UndeclaredNamespace { namespace: String },
}

impl Hint for SpecError {
    fn hints(&self) -> Vec<String> {
        match self {
            SpecError::BadProperty { .. } => vec![
                "write properties as `nvidia :: cuda_version_lower_bound :: 12.8`: namespace and feature of [a-z0-9_], value of [a-z0-9_.]; separate several with `;` in -C or the environment".into(),
                "or set `variant = \"cuda\"` to derive them from what was built".into(),
            ],
            SpecError::BadLabel { .. } => vec![
                "a label holds only lower-case letters, digits, `_` and `.`; `null` is kept for the zero-property variant (`null-variant = true`)".into(),
            ],
            SpecError::NotAVariant { .. } => vec![
                "add `-C variant=cuda` (or explicit properties, or `-C null-variant=true`), or drop the setting".into(),
            ],
            SpecError::NullWithProperties => {
                vec!["drop `variant` for the null variant, or `null-variant` for one with properties".into()]
            }
            SpecError::SuffixWithVariant { .. } => vec![
                "remove `name-suffix`: variant wheels of every CUDA major share one name and differ by their label (`variant-label`)".into(),
            ],
            SpecError::BadTable { .. } | SpecError::UndeclaredNamespace { .. } => vec![
                "declare each namespace in `[variant.default-priorities] namespace = [...]` and give it a `[variant.providers.<namespace>]` entry (`requires`, `plugin-api`)".into(),
            ],
        }
    }
}
