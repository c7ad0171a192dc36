//! `[project]` (PEP 621 / the pyproject.toml specification), validated into `Project`.
//!
//! Names, versions, specifiers and requirements go through uv's PEP 440 / PEP 508 parsers;
//! every failure names the `project.*` key.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use pep440_rs::{Version, VersionSpecifiers};
use pep508_rs::{ExtraName, PackageName, Requirement};
use serde::Deserialize;

use super::error::ConfigError;

/// `[project]` exactly as written (serde keeps toml's line/column in its errors).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub(crate) struct RawProject {
    name: String,
    version: Option<String>,
    description: Option<String>,
    readme: Option<RawReadme>,
    requires_python: Option<String>,
    license: Option<RawLicense>,
    license_files: Option<Vec<String>>,
    authors: Option<Vec<RawPerson>>,
    maintainers: Option<Vec<RawPerson>>,
    keywords: Option<Vec<String>>,
    classifiers: Option<Vec<String>>,
    urls: Option<BTreeMap<String, String>>,
    scripts: Option<BTreeMap<String, String>>,
    gui_scripts: Option<BTreeMap<String, String>>,
    entry_points: Option<BTreeMap<String, BTreeMap<String, String>>>,
    dependencies: Option<Vec<String>>,
    optional_dependencies: Option<BTreeMap<String, Vec<String>>>,
    dynamic: Option<Vec<String>>,
    import_names: Option<Vec<String>>,
    import_namespaces: Option<Vec<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum RawReadme {
    Path(String),
    Table(RawReadmeTable),
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
struct RawReadmeTable {
    file: Option<String>,
    text: Option<String>,
    content_type: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum RawLicense {
    Expression(String),
    Table(RawLicenseTable),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLicenseTable {
    file: Option<String>,
    text: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPerson {
    name: Option<String>,
    email: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Readme {
    pub(crate) text: String,
    pub(crate) content_type: String,
    /// The file it was read from, relative to the project root (shipped in sdists).
    pub(crate) file: Option<PathBuf>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum License {
    /// PEP 639 SPDX expression -> `License-Expression`.
    Expression(String),
    /// Legacy table form -> `License`.
    Text(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Person {
    pub(crate) name: Option<String>,
    pub(crate) email: Option<String>,
}

/// Validated `[project]`.
#[derive(Debug, Clone)]
pub(crate) struct Project {
    /// As written (the `Name` field keeps the user's spelling).
    pub(crate) name: String,
    pub(crate) normalized_name: PackageName,
    pub(crate) version: Version,
    pub(crate) description: Option<String>,
    pub(crate) readme: Option<Readme>,
    pub(crate) requires_python: Option<VersionSpecifiers>,
    pub(crate) license: Option<License>,
    /// Relative to the project root, sorted: `license-files`' matches, or without that key the
    /// files at the root that PEP 639's conventional patterns match.
    pub(crate) license_files: Vec<PathBuf>,
    pub(crate) authors: Vec<Person>,
    pub(crate) maintainers: Vec<Person>,
    pub(crate) keywords: Vec<String>,
    pub(crate) classifiers: Vec<String>,
    pub(crate) urls: Vec<(String, String)>,
    pub(crate) dependencies: Vec<Requirement>,
    pub(crate) optional_dependencies: Vec<(ExtraName, Vec<Requirement>)>,
    /// group -> [(name, object reference)], sorted.
    pub(crate) entry_points: BTreeMap<String, Vec<(String, String)>>,
}

fn invalid(key: &str, value: &str, why: impl Into<String>) -> ConfigError {
    ConfigError::InvalidValue {
        key: key.to_string(),
        origin: super::origin::Origin::Pyproject,
        value: format!("{value:?}"),
        why: why.into(),
    }
}

impl RawProject {
    /// Validate against the specifications; `root` is the project folder (for readme/licenses).
    /// `version_file`: `tool.cudawheel.version-file`, read for `dynamic = ["version"]`.
    pub(crate) fn validate(
        self,
        root: &Path,
        version_file: Option<&str>,
    ) -> Result<Project, ConfigError> {
        let _ = (&self.import_names, &self.import_namespaces);
        let normalized_name = PackageName::from_str(&self.name).map_err(|e| {
            invalid(
                "project.name",
                &self.name,
                format!("not a valid project name: {e}"),
            )
        })?;
        let (raw_version, source) = super::version_file::version_text(
            root,
            self.dynamic.as_deref().unwrap_or_default(),
            self.version.clone(),
            version_file,
        )?;
        let version = Version::from_str(&raw_version).map_err(|e| match source {
            super::version_file::Source::Project => invalid(
                "project.version",
                &raw_version,
                format!("not a PEP 440 version: {e}"),
            ),
            super::version_file::Source::File(file) => ConfigError::VersionFile {
                file,
                why: format!("gives `__version__ = {raw_version:?}`, which is not a PEP 440 version: {e}"),
                hint: "use a version such as \"1.2.3\", \"1.2.3rc1\" or \"1.2.3.post1\" (https://packaging.python.org/en/latest/specifications/version-specifiers/)".into(),
            },
        })?;
        if let Some(d) = &self.description {
            if d.contains('\n') {
                return Err(invalid("project.description", d, "must be a single line"));
            }
        }
        let readme = self.readme.map(|r| read_readme(root, r)).transpose()?;
        let requires_python = self
            .requires_python
            .map(|s| {
                VersionSpecifiers::from_str(&s).map_err(|e| {
                    invalid(
                        "project.requires-python",
                        &s,
                        format!("not a PEP 440 specifier set: {e}"),
                    )
                })
            })
            .transpose()?;
        let license = self.license.map(|l| license_of(l, root)).transpose()?;
        let license_files = match self.license_files {
            None => conventional_license_files(root),
            Some(globs) => expand_license_globs(root, &globs)?,
        };
        let dependencies = parse_requirements(
            "project.dependencies",
            self.dependencies.unwrap_or_default(),
        )?;
        let optional_dependencies =
            optional_dependencies(self.optional_dependencies.unwrap_or_default())?;
        let entry_points = entry_points(self.scripts, self.gui_scripts, self.entry_points)?;
        Ok(Project {
            name: self.name,
            normalized_name,
            version,
            description: self.description,
            readme,
            requires_python,
            license,
            license_files,
            authors: people(self.authors, "project.authors")?,
            maintainers: people(self.maintainers, "project.maintainers")?,
            keywords: self.keywords.unwrap_or_default(),
            classifiers: self.classifiers.unwrap_or_default(),
            urls: self.urls.unwrap_or_default().into_iter().collect(),
            dependencies,
            optional_dependencies,
            entry_points,
        })
    }
}

/// `project.license`: an SPDX expression, or a table with exactly one of `file` / `text`.
fn license_of(raw: RawLicense, root: &Path) -> Result<License, ConfigError> {
    Ok(match raw {
        RawLicense::Expression(expr) => {
            if expr.trim().is_empty() || expr.contains('\n') {
                return Err(invalid(
                    "project.license",
                    &expr,
                    "expected an SPDX license expression such as \"MIT\"",
                ));
            }
            License::Expression(expr)
        }
        RawLicense::Table(t) => License::Text(match (t.file, t.text) {
            (Some(file), None) => read_project_file(root, &file, "project.license.file")?,
            (None, Some(text)) => text,
            _ => return Err(ConfigError::InvalidValue {
                key: "project.license".into(),
                origin: super::origin::Origin::Pyproject,
                value: "a table".into(),
                why: "give exactly one of `file` or `text` (or, better, an SPDX expression string)"
                    .into(),
            }),
        }),
    })
}

fn optional_dependencies(
    raw: BTreeMap<String, Vec<String>>,
) -> Result<Vec<(ExtraName, Vec<Requirement>)>, ConfigError> {
    let mut optional_dependencies = Vec::new();
    for (extra, reqs) in raw {
        let name = ExtraName::from_str(&extra).map_err(|e| {
            invalid(
                &format!("project.optional-dependencies.{extra}"),
                &extra,
                format!("not a valid extra name: {e}"),
            )
        })?;
        optional_dependencies.push((
            name,
            parse_requirements(&format!("project.optional-dependencies.{extra}"), reqs)?,
        ));
    }
    Ok(optional_dependencies)
}

/// `[project.scripts]`, `[project.gui-scripts]` and `[project.entry-points.*]` by group.
fn entry_points(
    scripts: Option<BTreeMap<String, String>>,
    gui_scripts: Option<BTreeMap<String, String>>,
    groups: Option<BTreeMap<String, BTreeMap<String, String>>>,
) -> Result<BTreeMap<String, Vec<(String, String)>>, ConfigError> {
    let mut entry_points: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for (group, key, table) in [
        ("console_scripts", "project.scripts", scripts),
        ("gui_scripts", "project.gui-scripts", gui_scripts),
    ] {
        if let Some(table) = table {
            entry_points.insert(group.to_string(), validate_entry_points(key, table)?);
        }
    }
    for (group, table) in groups.unwrap_or_default() {
        if group == "console_scripts" || group == "gui_scripts" {
            return Err(invalid(
                &format!("project.entry-points.{group}"),
                &group,
                "use `[project.scripts]` / `[project.gui-scripts]` for this group",
            ));
        }
        let key = format!("project.entry-points.{group}");
        entry_points.insert(group, validate_entry_points(&key, table)?);
    }
    Ok(entry_points)
}

fn people(list: Option<Vec<RawPerson>>, key: &str) -> Result<Vec<Person>, ConfigError> {
    list.unwrap_or_default()
        .into_iter()
        .enumerate()
        .map(|(i, p)| {
            if p.name.is_none() && p.email.is_none() {
                return Err(ConfigError::MissingKey {
                    key: format!("{key}[{i}].name"),
                });
            }
            Ok(Person {
                name: p.name,
                email: p.email,
            })
        })
        .collect()
}

fn parse_requirements(key: &str, reqs: Vec<String>) -> Result<Vec<Requirement>, ConfigError> {
    reqs.iter()
        .map(|r| {
            if let Some(why) = name_problem(r) {
                return Err(invalid(key, r, format!("not a PEP 508 requirement: {why}")));
            }
            Requirement::from_str(r)
                .map_err(|e| invalid(key, r, format!("not a PEP 508 requirement: {}", e.message)))
        })
        .collect()
}

/// The distribution a requirement names, as written: `ninja>=1.11` -> `ninja`,
/// `cuda-toolkit[nvcc]>=13` -> `cuda-toolkit`.
pub(crate) fn requirement_name(req: &str) -> &str {
    let end = req
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.'))
        .unwrap_or(req.len());
    &req[..end]
}

/// pep508_rs 0.9 panics (`PackageName`/`ExtraName` "validation should match PEP 508 parsing")
/// on a package or extra name that ends in `.`, `-` or `_` and is followed by more text, e.g.
/// `"foo.*"`, `"foo- >=1"`, `"foo[bar.]"` (found by fuzzing, tests/fuzz-regressions/config/).
/// Such names are invalid anyway: refuse them before the parser sees them (the wheel audit
/// too, for the Requires-Dist of any wheel). It also slices its input inside a character when a
/// marker is followed by non-ASCII text (`extra == "cuda"` then `\u{fffd}`, also found by
/// fuzzing); PEP 508 is ASCII only, so any other character is refused first.
pub(crate) fn name_problem(req: &str) -> Option<String> {
    if let Some(c) = req.chars().find(|c| !c.is_ascii()) {
        return Some(format!(
            "{c:?} is not ASCII (PEP 508 requirements are ASCII only)"
        ));
    }
    let name_char = |c: char| c.is_ascii_alphanumeric() || ".-_".contains(c);
    let ends_badly = |word: &str| word.ends_with(['.', '-', '_']);
    let rest = req.trim_start();
    let name_len = rest.find(|c: char| !name_char(c)).unwrap_or(rest.len());
    let name = &rest[..name_len];
    if ends_badly(name) {
        return Some(format!(
            "the package name {name:?} must end with a letter or digit"
        ));
    }
    let after = rest[name_len..].trim_start();
    if let Some(extras) = after.strip_prefix('[') {
        let extras = extras.split(']').next().unwrap_or(extras);
        for extra in extras.split(',').map(str::trim) {
            let word_len = extra.find(|c: char| !name_char(c)).unwrap_or(extra.len());
            if ends_badly(&extra[..word_len]) {
                return Some(format!(
                    "the extra name {:?} must end with a letter or digit",
                    &extra[..word_len]
                ));
            }
        }
    }
    None
}

fn validate_entry_points(
    key: &str,
    table: BTreeMap<String, String>,
) -> Result<Vec<(String, String)>, ConfigError> {
    let ident = |s: &str| {
        !s.is_empty()
            && s.split('.').all(|part| {
                let mut chars = part.chars();
                chars.next().is_some_and(|c| c.is_alphabetic() || c == '_')
                    && chars.all(|c| c.is_alphanumeric() || c == '_')
            })
    };
    table
        .into_iter()
        .map(|(name, value)| {
            if name.is_empty()
                || name.contains('=')
                || name.contains(['[', ']'])
                || name.trim() != name
            {
                return Err(invalid(
                    &format!("{key}.{name}"),
                    &name,
                    "not a valid entry point name",
                ));
            }
            let (module, attr) = value
                .split_once(':')
                .map_or((value.as_str(), None), |(m, a)| (m, Some(a)));
            if !ident(module.trim()) || attr.is_some_and(|a| !ident(a.trim())) {
                return Err(invalid(
                    &format!("{key}.{name}"),
                    &value,
                    "expected an object reference `package.module:function`",
                ));
            }
            Ok((name, value))
        })
        .collect()
}

/// Reads a file named by `key`, refusing paths that leave the project.
fn read_project_file(root: &Path, rel: &str, key: &str) -> Result<String, ConfigError> {
    let path = super::paths::inside_project(root, rel, key)?;
    let text = std::fs::read_to_string(&path).map_err(|source| ConfigError::ReadFile {
        key: key.into(),
        path: path.clone(),
        source,
    })?;
    // A symlink inside the project may still point outside it (the sdist would not hold it).
    let real_root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    if !std::fs::canonicalize(&path).is_ok_and(|real| real.starts_with(&real_root)) {
        return Err(ConfigError::OutsideProject {
            key: key.into(),
            path: rel.into(),
        });
    }
    Ok(text)
}

fn read_readme(root: &Path, raw: RawReadme) -> Result<Readme, ConfigError> {
    let (file, text, content_type) = match raw {
        RawReadme::Path(p) => (Some(p), None, None),
        RawReadme::Table(t) => (t.file, t.text, t.content_type),
    };
    let (text, file) = match (file, text) {
        (Some(f), None) => (
            read_project_file(root, &f, "project.readme")?,
            Some(PathBuf::from(f)),
        ),
        (None, Some(t)) => (t, None),
        _ => {
            return Err(ConfigError::InvalidValue {
                key: "project.readme".into(),
                origin: super::origin::Origin::Pyproject,
                value: "a table".into(),
                why: "give exactly one of `file` or `text`".into(),
            })
        }
    };
    let content_type = match content_type {
        Some(ct) => ct,
        None => {
            let ext = file
                .as_ref()
                .and_then(|f| f.extension())
                .map(|e| e.to_string_lossy().to_ascii_lowercase())
                .unwrap_or_default();
            match ext.as_str() {
                "md" => "text/markdown".into(),
                "rst" => "text/x-rst".into(),
                "txt" => "text/plain".into(),
                _ => {
                    return Err(ConfigError::InvalidValue {
                        key: "project.readme".into(),
                        origin: super::origin::Origin::Pyproject,
                        value: format!("{:?}", file.map(|f| f.display().to_string()).unwrap_or_default()),
                        why: "cannot tell the content type; use a .md, .rst or .txt file or set `content-type`".into(),
                    })
                }
            }
        }
    };
    Ok(Readme {
        text,
        content_type,
        file,
    })
}

/// PEP 639's conventional license file names, used when `project.license-files` is absent.
const CONVENTIONAL_LICENSE_GLOBS: [&str; 4] = ["LICEN[CS]E*", "COPYING*", "NOTICE*", "AUTHORS*"];

/// Without `project.license-files`: the regular files directly in the project root whose names
/// match a conventional pattern, sorted. Never an error (nothing was asked for): a name that is
/// a folder, a link leading outside the project or to nothing, or an unreadable file is skipped.
fn conventional_license_files(root: &Path) -> Vec<PathBuf> {
    let patterns: Vec<glob::Pattern> = CONVENTIONAL_LICENSE_GLOBS
        .iter()
        .filter_map(|p| glob::Pattern::new(p).ok())
        .collect();
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let real_root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|name| patterns.iter().any(|p| p.matches(name)))
        .filter(|name| {
            let path = root.join(name);
            std::fs::metadata(&path).is_ok_and(|m| m.is_file())
                && std::fs::canonicalize(&path).is_ok_and(|real| real.starts_with(&real_root))
                && std::fs::File::open(&path).is_ok()
        })
        .map(PathBuf::from)
        .collect();
    files.sort();
    files
}

fn expand_license_globs(root: &Path, globs: &[String]) -> Result<Vec<PathBuf>, ConfigError> {
    let mut files = Vec::new();
    for pattern in globs {
        let key = "project.license-files";
        let found = super::paths::expand_glob(root, pattern, key)?;
        if found.is_empty() {
            return Err(ConfigError::GlobMatchedNothing {
                key: key.into(),
                pattern: pattern.clone(),
            });
        }
        files.extend(found);
    }
    files.sort();
    files.dedup();
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requirement_names_drop_their_versions_and_markers() {
        assert_eq!(requirement_name("ninja>=1.11"), "ninja");
        assert_eq!(requirement_name("ninja"), "ninja");
        assert_eq!(requirement_name("cuda-toolkit[nvcc]>=13"), "cuda-toolkit");
        assert_eq!(requirement_name("ninja; sys_platform != 'win32'"), "ninja");
        // A name that starts with another's is its own.
        assert_eq!(requirement_name("torchvision>=0.20"), "torchvision");
    }

    fn license_files_of(root: &Path, extra: &str) -> Vec<PathBuf> {
        let text = format!("name = \"demo\"\nversion = \"1\"\n{extra}");
        let raw: RawProject = toml::from_str(&text).unwrap();
        raw.validate(root, None).unwrap().license_files
    }

    #[test]
    fn conventional_license_files_without_the_key() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for name in [
            "LICENSE",
            "LICENCE.md",
            "COPYING",
            "NOTICE.txt",
            "AUTHORS.rst",
            "README.md",
        ] {
            std::fs::write(root.join(name), "text\n").unwrap();
        }
        // Not shipped: a folder that matches, a file below the root, a lower-case name, a link
        // leading outside the project.
        std::fs::create_dir_all(root.join("LICENSES")).unwrap();
        std::fs::write(root.join("LICENSES/MIT.txt"), "MIT\n").unwrap();
        std::fs::write(root.join("license-lower"), "x\n").unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("LICENSE"), "x\n").unwrap();
        std::os::unix::fs::symlink(outside.path().join("LICENSE"), root.join("COPYING.outside"))
            .unwrap();
        let names: Vec<String> = license_files_of(root, "")
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        assert_eq!(
            names,
            [
                "AUTHORS.rst",
                "COPYING",
                "LICENCE.md",
                "LICENSE",
                "NOTICE.txt"
            ]
        );
        // Control: the key set, even empty, is taken as written.
        assert!(license_files_of(root, "license-files = []\n").is_empty());
        assert_eq!(
            license_files_of(root, "license-files = [\"LICENSES/*\"]\n"),
            [PathBuf::from("LICENSES/MIT.txt")]
        );
        // No conventional file: nothing, and no error.
        let bare = tempfile::tempdir().unwrap();
        assert!(license_files_of(bare.path(), "").is_empty());
    }

    #[test]
    fn names_pep508_rs_would_panic_on_are_errors() {
        for bad in [
            "foo.*",
            "fooZbarlin1.*",
            "foo- >=1",
            "foo_ ; python_version > '3'",
            "foo.(>=1)",
            "foo[bar.]",
            "foo [ a, b- ] >= 1",
            "foo[bar_ ]",
        ] {
            let e = parse_requirements("project.dependencies", vec![bad.into()]).unwrap_err();
            assert!(
                e.to_string().contains("must end with a letter or digit"),
                "{bad}: {e}"
            );
        }
        for good in [
            "foo",
            "foo.bar>=1",
            "a-b_c.d[x-y,z] >=1; python_version>'3.8'",
            "x @ https://e/x.whl",
        ] {
            parse_requirements("project.dependencies", vec![good.into()]).unwrap();
        }
    }
}
