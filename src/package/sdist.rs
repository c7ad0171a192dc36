//! What an sdist holds: pyproject.toml with the resolved CUDA major pinned (its
//! Name is per major; a variant sdist's is not), PKG-INFO, the targets' sources and the headers
//! next to them and under their include folders, README and license files, and the Python
//! packages. And the check that an unpacked sdist builds only the distribution it is named for.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::archive::{ArchiveError, Files};
use super::metadata::{self, CudaRequires, DistName};
use super::wheel::add_package;
use crate::config::Config;
use crate::inspect::site::portable;
use crate::plan::BuildPlan;

/// The sdist's files. `major`: the CUDA major its Name records (`None` for a variant sdist).
pub(crate) fn contents(
    config: &Config,
    plan: &BuildPlan,
    name: &DistName,
    major: Option<u32>,
) -> Result<Files, ArchiveError> {
    let root = &config.root;
    let mut files = Files::default();
    files.add_bytes("pyproject.toml", pinned_pyproject(config, major), false);
    let meta = metadata::core_metadata(
        &config.project,
        name,
        &CudaRequires::Dynamic,
        (config.tool.cuda_deps, &config.tool.cuda_extra),
    );
    files.add_bytes("PKG-INFO", meta, false);

    let mut extra: BTreeMap<String, PathBuf> = BTreeMap::new();
    for ext in &plan.targets {
        for src in &ext.sources {
            extra.insert(portable(&src.rel), src.path.clone());
            // Headers next to the sources.
            if let Some(dir) = src.path.parent() {
                add_headers(&mut extra, root, dir, false);
            }
        }
        for dir in &ext.include_dirs {
            add_headers(&mut extra, root, dir, true);
        }
    }
    if let Some(readme) = config.project.readme.as_ref().and_then(|r| r.file.as_ref()) {
        extra.insert(portable(readme), root.join(readme));
    }
    for lic in &config.project.license_files {
        extra.insert(portable(lic), root.join(lic));
    }
    // `dynamic = ["version"]`: the sdist's own build reads the version from it again.
    if let Some(file) = &config.tool.version_file {
        extra.insert(portable(Path::new(file)), root.join(file));
    }
    for (rel, path) in extra {
        files.add_file(&rel, &path)?;
    }
    let src_prefix = plan
        .python_source
        .strip_prefix(root)
        .unwrap_or(Path::new(""))
        .to_path_buf();
    let stale: Vec<String> = plan.targets.iter().map(|t| t.wheel_path.clone()).collect();
    for pkg in &plan.packages {
        let mut pkg_files = Files::default();
        add_package(&mut pkg_files, &plan.python_source, pkg, &stale)?;
        for (path, bytes, exec) in pkg_files.into_entries() {
            files.add_bytes(&portable(&src_prefix.join(path)), bytes, exec);
        }
    }
    Ok(files)
}

/// pyproject.toml with `tool.cudawheel.cuda` set to `major`, when there is one.
fn pinned_pyproject(config: &Config, major: Option<u32>) -> String {
    let mut doc: toml_edit::DocumentMut = config
        .pyproject_text
        .parse()
        .expect("parsed once already by Config::load");
    let tool = major.and_then(|m| {
        doc.entry("tool")
            .or_insert(toml_edit::table())
            .as_table_mut()
            .map(|t| (t, m))
    });
    if let Some((tool, major)) = tool {
        tool.set_implicit(true);
        if let Some(cw) = tool
            .entry("cudawheel")
            .or_insert(toml_edit::table())
            .as_table_mut()
        {
            cw["cuda"] = toml_edit::value(i64::from(major));
        }
    }
    doc.to_string()
}

fn add_headers(out: &mut BTreeMap<String, PathBuf>, root: &Path, dir: &Path, recursive: bool) {
    const HEADERS: &[&str] = &["h", "hh", "hpp", "hxx", "cuh", "inl", "inc", "tcc"];
    let walker = walkdir::WalkDir::new(dir).max_depth(if recursive { usize::MAX } else { 1 });
    for entry in walker.into_iter().flatten() {
        let p = entry.path();
        let is_header = p
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| HEADERS.contains(&e));
        if entry.file_type().is_file() && is_header {
            if let Ok(rel) = p.strip_prefix(root) {
                out.insert(portable(rel), p.to_path_buf());
            }
        }
    }
}

/// An sdist asked to build a distribution other than the one it is named for.
#[derive(Debug)]
pub(crate) struct NameMismatch {
    pub(crate) sdist: String,
    pub(crate) wheel: String,
}

/// An unpacked sdist (it has PKG-INFO) builds only the distribution it is named for: its Name
/// records the CUDA major it was made for (PEP 643).
pub(crate) fn check_name(root: &Path, name: &DistName) -> Result<(), NameMismatch> {
    let Ok(pkg_info) = std::fs::read_to_string(root.join("PKG-INFO")) else {
        return Ok(());
    };
    let Some(sdist_name) = pkg_info
        .lines()
        .take_while(|l| !l.is_empty())
        .find_map(|l| l.strip_prefix("Name: "))
    else {
        return Ok(());
    };
    let normalized: Option<pep508_rs::PackageName> = sdist_name.trim().parse().ok();
    if normalized.as_ref() != Some(&name.normalized) {
        return Err(NameMismatch {
            sdist: sdist_name.trim().to_string(),
            wheel: name.display.clone(),
        });
    }
    Ok(())
}
