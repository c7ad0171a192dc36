//! Installed distributions and paths as wheels spell them: which distribution's RECORD lists a
//! file (`owning_distribution`), and a path as a `/`-separated string (`portable`).

use std::path::Path;

use pep440_rs::Version;

/// `a/b/c` for a relative path, whatever the platform's separator: how wheels, RECORD and
/// sdists spell paths.
pub(crate) fn portable(p: &Path) -> String {
    p.components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

/// The distribution whose RECORD lists `file`, looking for `.dist-info` folders in the file's
/// ancestors (a `sys.path` entry, or a `pip install --target` prefix).
pub(crate) fn owning_distribution(file: &Path) -> Option<(String, Version)> {
    // Through symlinked folders (a toolkit's `lib64 -> py/nvidia/cuda_runtime/lib`) to the
    // folder the wheel was installed into; the file name itself stays as RECORD lists it.
    let real_dir = file.parent().and_then(|d| std::fs::canonicalize(d).ok());
    let file = &real_dir.map_or_else(
        || file.to_path_buf(),
        |d| d.join(file.file_name().unwrap_or_default()),
    );
    let mut dir = file.parent();
    for _ in 0..5 {
        let d = dir?;
        if let Ok(rel) = file.strip_prefix(d) {
            if let Some(found) = owner_in(d, &crate::inspect::site::portable(rel)) {
                return Some(found);
            }
        }
        dir = d.parent();
    }
    None
}

fn owner_in(site: &Path, rel: &str) -> Option<(String, Version)> {
    for entry in std::fs::read_dir(site).ok()?.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.ends_with(".dist-info") {
            continue;
        }
        let Ok(record) = std::fs::read_to_string(entry.path().join("RECORD")) else {
            continue;
        };
        if !record_lists(&record, rel) {
            continue;
        }
        let metadata = std::fs::read_to_string(entry.path().join("METADATA")).ok()?;
        return name_and_version(&metadata);
    }
    None
}

/// Whether a `.dist-info/RECORD` text lists the file `rel` (as RECORD spells paths).
pub(crate) fn record_lists(record: &str, rel: &str) -> bool {
    record.lines().any(|l| l.split(',').next() == Some(rel))
}

/// The normalized distribution name and the version a `.dist-info/METADATA` text declares.
pub(crate) fn name_and_version(metadata: &str) -> Option<(String, Version)> {
    let field = |key: &str| {
        metadata
            .lines()
            .take_while(|l| !l.is_empty())
            .find_map(|l| l.strip_prefix(key).map(|v| v.trim().to_string()))
    };
    let version: Version = field("Version:")?.parse().ok()?;
    let dist = field("Name:")?
        .to_ascii_lowercase()
        .replace(['_', '.'], "-");
    Some((dist, version))
}

/// The METADATA text of the distribution `dist` (normalized name) installed in the first
/// `sys.path` entry that holds one: its `.dist-info` folder is found by name, so a meta
/// package with no files of its own (`cuda-toolkit`) is found too.
pub(crate) fn installed_metadata(sys_path: &[std::path::PathBuf], dist: &str) -> Option<String> {
    let prefix = format!("{}_", dist.replace('-', "_"));
    sys_path.iter().find_map(|site| {
        std::fs::read_dir(site).ok()?.flatten().find_map(|e| {
            let name = e.file_name().to_string_lossy().to_ascii_lowercase();
            if !(name.ends_with(".dist-info") && name.replace(['-', '.'], "_").starts_with(&prefix))
            {
                return None;
            }
            let text = std::fs::read_to_string(e.path().join("METADATA")).ok()?;
            let (found, _) = name_and_version(&text)?;
            (found == dist).then_some(text)
        })
    })
}

/// Whether two paths name the same folder (through links).
pub(crate) fn same_dir(a: &Path, b: &Path) -> bool {
    a == b
        || std::fs::canonicalize(a)
            .ok()
            .zip(std::fs::canonicalize(b).ok())
            .is_some_and(|(x, y)| x == y)
}
