//! `project.dynamic = ["version"]`: the version read from the `__version__ = "..."` line of
//! `tool.cudawheel.version-file` (a package's `__init__.py`, as setup.py's `get_version()`
//! read it). Only `version` may be dynamic.

use std::path::Path;

use super::ConfigError;

/// The version text of a project: `project.version`, or with `dynamic = ["version"]` the
/// string of `version_file`'s `__version__` line (not yet checked against PEP 440: the
/// caller does, naming where the text came from). Returns (text, where it came from).
pub(crate) fn version_text(
    root: &Path,
    dynamic: &[String],
    static_version: Option<String>,
    version_file: Option<&str>,
) -> Result<(String, Source), ConfigError> {
    if let Some(other) = dynamic.iter().find(|f| f.as_str() != "version") {
        return Err(ConfigError::Unsupported {
            key: "project.dynamic".into(),
            what: format!("dynamic `{other}`"),
            instead: format!(
                "only `version` can be dynamic (read from `tool.cudawheel.version-file`); \
                 write `{other}` in `[project]` and remove it from `dynamic`"
            ),
        });
    }
    let dynamic_version = !dynamic.is_empty();
    match (dynamic_version, static_version, version_file) {
        (false, Some(v), None) => Ok((v, Source::Project)),
        (false, None, None) => Err(ConfigError::MissingKey {
            key: "project.version".into(),
        }),
        (false, _, Some(file)) => Err(ConfigError::VersionFile {
            file: file.into(),
            why: "is set, but `project.dynamic` does not list `version`".into(),
            hint: "write `dynamic = [\"version\"]` in `[project]` (without `version`), or remove `version-file`".into(),
        }),
        (true, Some(_), _) => Err(ConfigError::DynamicVersion {
            why: "`project.version` is set too".into(),
        }),
        (true, None, None) => Err(ConfigError::DynamicVersion {
            why: "`tool.cudawheel.version-file` is not set".into(),
        }),
        (true, None, Some(file)) => read(root, file).map(|v| (v, Source::File(file.into()))),
    }
}

/// Where a version came from, for the message when it is not PEP 440.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Source {
    Project,
    File(String),
}

fn read(root: &Path, file: &str) -> Result<String, ConfigError> {
    let path = super::inside_project(root, file, "tool.cudawheel.version-file")?;
    let text = std::fs::read_to_string(&path).map_err(|source| ConfigError::ReadFile {
        key: "tool.cudawheel.version-file".into(),
        path: path.clone(),
        source,
    })?;
    let bad = |why: String| {
        ConfigError::VersionFile {
        file: file.into(),
        why,
        hint: "write one line `__version__ = \"1.2.3\"` (a PEP 440 version in quotes) in that file, or point `version-file` at the file that has it".into(),
    }
    };
    for (i, line) in text.lines().enumerate() {
        let Some(rest) = line.strip_prefix("__version__") else {
            continue;
        };
        let rest = rest.trim_start();
        if !rest.starts_with(['=', ':']) {
            continue; // `__version___x = ...`, `__version__.x`
        }
        return literal(rest).ok_or_else(|| {
            bad(format!(
                "line {}: `{}` is not `__version__ = \"...\"` with a string literal",
                i + 1,
                line.trim()
            ))
        });
    }
    Err(bad("has no `__version__ = \"...\"` line".into()))
}

/// `= "1.2"`, `: str = '1.2'`, with an optional trailing comment -> `1.2`.
fn literal(rest: &str) -> Option<String> {
    let (_, value) = rest.split_once('=')?;
    let value = value.trim();
    let quote = value.chars().next().filter(|c| *c == '"' || *c == '\'')?;
    let body = &value[1..];
    let end = body.find(quote)?;
    let tail = body[end + 1..].trim();
    if !(tail.is_empty() || tail.starts_with('#')) || body[..end].contains('\\') {
        return None;
    }
    Some(body[..end].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str) -> (tempfile::TempDir, Result<String, ConfigError>) {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("pkg")).unwrap();
        std::fs::write(tmp.path().join("pkg/__init__.py"), text).unwrap();
        let r = version_text(
            tmp.path(),
            &["version".into()],
            None,
            Some("pkg/__init__.py"),
        )
        .map(|(v, _)| v);
        (tmp, r)
    }

    #[test]
    fn reads_the_version_line() {
        for (text, want) in [
            ("\"\"\"doc\"\"\"\n__version__ = \"0.3.0\"\n", "0.3.0"),
            (
                "__version__: str = '1.2.post1'  # bumped by CI\n",
                "1.2.post1",
            ),
            ("__version___x = 3\n__version__=\"2\"\n", "2"),
        ] {
            assert_eq!(file(text).1.unwrap(), want, "{text}");
        }
        for text in [
            "__version__ = get_version()\n",
            "__version__ = \"1.0\" + suffix\n",
            "version = \"1\"\n",
        ] {
            let err = file(text).1.unwrap_err().to_string();
            assert!(err.contains("version-file"), "{err}");
        }
    }

    #[test]
    fn only_version_may_be_dynamic() {
        let root = Path::new("/nonexistent");
        let err = version_text(root, &["description".into()], Some("1".into()), None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("dynamic `description`"), "{err}");
        let err = version_text(root, &["version".into()], None, None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("version-file` is not set"), "{err}");
        let err = version_text(root, &[], Some("1".into()), Some("x.py"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("does not list `version`"), "{err}");
        assert_eq!(
            version_text(root, &[], Some("1".into()), None).unwrap(),
            ("1".to_string(), Source::Project)
        );
    }
}
