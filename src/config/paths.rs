//! Paths the configuration names: inside the project only, globs expanded to sorted files.

use std::path::{Component, Path, PathBuf};

use super::error::ConfigError;

/// `rel` joined to `root`, refusing absolute paths and `..` (the project must be self-contained).
pub(crate) fn inside_project(root: &Path, rel: &str, key: &str) -> Result<PathBuf, ConfigError> {
    let p = Path::new(rel);
    if p.is_absolute()
        || p.components()
            .any(|c| matches!(c, Component::ParentDir | Component::Prefix(_)))
    {
        return Err(ConfigError::OutsideProject {
            key: key.into(),
            path: rel.into(),
        });
    }
    Ok(root.join(p))
}

/// Files matching `pattern` under `root`, as sorted paths relative to `root`.
pub(crate) fn expand_glob(
    root: &Path,
    pattern: &str,
    key: &str,
) -> Result<Vec<PathBuf>, ConfigError> {
    inside_project(root, pattern, key)?;
    let full = root.join(pattern);
    let full = full.to_str().ok_or_else(|| ConfigError::BadGlob {
        key: key.into(),
        pattern: pattern.into(),
        why: "the path is not valid UTF-8".into(),
    })?;
    let escaped_root = glob::Pattern::escape(&root.to_string_lossy());
    let full = format!("{escaped_root}{}", &full[root.to_string_lossy().len()..]);
    let paths = glob::glob(&full).map_err(|e| ConfigError::BadGlob {
        key: key.into(),
        pattern: pattern.into(),
        why: e.msg.to_string(),
    })?;
    let mut out = Vec::new();
    let real_root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    for entry in paths {
        let path = entry.map_err(|e| ConfigError::Io {
            path: e.path().to_path_buf(),
            source: e.into(),
        })?;
        let unreadable = |source| ConfigError::ReadFile {
            key: key.into(),
            path: path.clone(),
            source,
        };
        match std::fs::metadata(&path) {
            Ok(meta) if meta.is_dir() => continue,
            Ok(_) => {}
            // A symbolic link whose target is gone: matched by the pattern, but unreadable.
            Err(e) if path.symlink_metadata().is_ok() => return Err(unreadable(e)),
            Err(_) => continue,
        }
        // A symlink inside the project may still point outside it.
        if !std::fs::canonicalize(&path).is_ok_and(|real| real.starts_with(&real_root)) {
            return Err(ConfigError::OutsideProject {
                key: key.into(),
                path: path.display().to_string(),
            });
        }
        // Found now rather than by the compiler (or the sdist) later.
        std::fs::File::open(&path).map_err(unreadable)?;
        let Ok(rel) = path.strip_prefix(root) else {
            return Err(ConfigError::OutsideProject {
                key: key.into(),
                path: path.display().to_string(),
            });
        };
        out.push(rel.to_path_buf());
    }
    out.sort();
    Ok(out)
}
