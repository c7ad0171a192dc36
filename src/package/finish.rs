//! The one way every wheel ends, whoever made its files: a native build (`pipeline`), a wrapped
//! build's repair and `python -m cudawheel repair` (`package::repair`). From the wheel's files
//! (its package, METADATA and helpers already in): the WHEEL file, the variant label and
//! `variant.json`, the archive, the built-in audit (the checks of `python -m cudawheel audit`)
//! and the size budget, all or nothing: a wheel that fails a check is removed (`Written`).

use std::path::{Path, PathBuf};

use crate::audit::size::{self, Budget, SizeError};
use crate::audit::wheel_audit::{self, AuditError, Violation};
use crate::hint::Hint;
use crate::package::archive::{self, ArchiveError, Files};
use crate::package::metadata;
use crate::package::variants::DIST_INFO_FILE;

/// What makes the files a wheel: its name, tag, variant, timestamps and size budget.
#[derive(Debug)]
pub(crate) struct Finish<'a> {
    /// `<name>-<version>` as the file name starts (`demo_cu13-1.0`; a build tag follows the
    /// version: `demo-1.0-1`).
    pub(crate) name_version: String,
    /// `demo_cu13-1.0.dist-info`
    pub(crate) dist_info: String,
    /// `cp311-cp311-manylinux_2_17_x86_64`, for the file name and WHEEL's `Tag`.
    pub(crate) tag: String,
    /// A variant wheel's label and `variant.json`.
    pub(crate) variant: Option<(String, String)>,
    /// `SOURCE_DATE_EPOCH`, as `config` read it.
    pub(crate) epoch: Option<u64>,
    pub(crate) budget: Budget,
    /// An earlier wheel of the project: its unchanged members are copied as they are, and the
    /// finished wheel is kept there for the next build.
    pub(crate) previous: Option<&'a Path>,
}

/// A finished wheel: its path and size.
#[derive(Debug)]
pub(crate) struct Finished {
    pub(crate) path: PathBuf,
    pub(crate) size: u64,
}

impl Finished {
    pub(crate) fn filename(&self) -> String {
        self.path
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default()
    }
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum FinishError {
    #[error(transparent)]
    Archive(#[from] ArchiveError),
    /// The built-in audit found problems (the wheel was removed).
    #[error("The wheel {wheel} fails the audit:\n{}", violations.iter().map(|v| format!("  {v}")).collect::<Vec<_>>().join("\n"))]
    Audit {
        wheel: String,
        violations: Vec<Violation>,
    },
    /// The audit could not read the written wheel.
    #[error(transparent)]
    AuditRead(#[from] AuditError),
    #[error(transparent)]
    Size(#[from] SizeError),
}

impl Hint for FinishError {
    fn hints(&self) -> Vec<String> {
        match self {
            FinishError::Archive(e) => e.hints(),
            FinishError::Audit { .. } => {
                vec!["each line above names the file, the problem and the fix".into()]
            }
            FinishError::AuditRead(e) => e.hints(),
            FinishError::Size(e) => e.hints(),
        }
    }
}

/// Writes `files` as the wheel `f` describes into `out_dir`, audits it and checks its size.
/// On any error nothing is left in `out_dir`.
pub(crate) fn finish(
    f: &Finish<'_>,
    mut files: Files,
    out_dir: &Path,
) -> Result<Finished, FinishError> {
    files.add_bytes(
        &format!("{}/WHEEL", f.dist_info),
        metadata::wheel_file(&f.tag),
        false,
    );
    let mut filename = format!("{}-{}", f.name_version, f.tag);
    if let Some((label, json)) = &f.variant {
        files.add_bytes(
            &format!("{}/{DIST_INFO_FILE}", f.dist_info),
            json.clone(),
            false,
        );
        filename = format!("{filename}-{label}");
    }
    filename.push_str(".whl");
    std::fs::create_dir_all(out_dir).map_err(|source| ArchiveError::Io {
        path: out_dir.to_path_buf(),
        source,
    })?;
    let path = archive::write_wheel(out_dir, &filename, &f.dist_info, files, f.epoch, f.previous)?;
    let mut written = Written::default();
    written.add(path.clone());
    let violations = wheel_audit::audit_wheel(&path)?;
    if !violations.is_empty() {
        return Err(FinishError::Audit {
            wheel: filename,
            violations,
        });
    }
    let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    size::check(&path, size, &f.budget)?;
    written.commit();
    if let Some(keep) = f.previous {
        archive::keep_copy(&path, keep);
    }
    Ok(Finished { path, size })
}

/// The files a command wrote: removed when this is dropped before `commit`, so that a command
/// that fails part-way leaves nothing behind (all or nothing).
#[derive(Debug, Default)]
pub(crate) struct Written {
    paths: Vec<PathBuf>,
}

impl Written {
    pub(crate) fn add(&mut self, path: PathBuf) {
        self.paths.push(path);
    }

    pub(crate) fn extend(&mut self, paths: impl IntoIterator<Item = PathBuf>) {
        self.paths.extend(paths);
    }

    /// Keeps the files; returns their paths.
    pub(crate) fn commit(mut self) -> Vec<PathBuf> {
        std::mem::take(&mut self.paths)
    }
}

impl Drop for Written {
    fn drop(&mut self) {
        for path in &self.paths {
            let _ = std::fs::remove_file(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::compress::Compress;

    fn budget(max_bytes: u64) -> Budget {
        Budget {
            max_bytes,
            compress: Some(Compress::None),
            cuda_major: 13,
            ptx_all: false,
        }
    }

    fn files(dist_info: &str) -> Files {
        let mut files = Files::default();
        files.add_bytes("demo/__init__.py", "x = 1\n", false);
        files.add_bytes(
            &format!("{dist_info}/METADATA"),
            "Metadata-Version: 2.4\nName: demo\nVersion: 1.0\n",
            false,
        );
        files
    }

    fn spec(max_bytes: u64) -> Finish<'static> {
        Finish {
            name_version: "demo-1.0".into(),
            dist_info: "demo-1.0.dist-info".into(),
            tag: "py3-none-any".into(),
            variant: None,
            epoch: Some(315_532_800),
            budget: budget(max_bytes),
            previous: None,
        }
    }

    #[test]
    fn a_wheel_is_written_with_its_wheel_file_and_label() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = spec(1 << 20);
        let json = r#"{"default-priorities": {"namespace": ["nvidia"]},
            "providers": {"nvidia": {"requires": ["nvidia-variant-provider"]}},
            "variants": {"cu13": {"nvidia": {"cuda_version_lower_bound": ["13.0"]}}}}"#;
        f.variant = Some(("cu13".into(), json.into()));
        let done = finish(&f, files(&f.dist_info), dir.path()).unwrap();
        assert_eq!(done.filename(), "demo-1.0-py3-none-any-cu13.whl");
        assert_eq!(done.size, std::fs::metadata(&done.path).unwrap().len());
        let mut zip = zip::ZipArchive::new(std::fs::File::open(&done.path).unwrap()).unwrap();
        let names: Vec<String> = zip.file_names().map(str::to_string).collect();
        for member in ["WHEEL", "variant.json", "RECORD"] {
            assert!(
                names.contains(&format!("demo-1.0.dist-info/{member}")),
                "{names:?}"
            );
        }
        let mut wheel = String::new();
        std::io::Read::read_to_string(
            &mut zip.by_name("demo-1.0.dist-info/WHEEL").unwrap(),
            &mut wheel,
        )
        .unwrap();
        assert!(wheel.contains("Tag: py3-none-any\n"), "{wheel}");
    }

    #[test]
    fn a_wheel_over_its_budget_is_removed_and_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let f = spec(10);
        let err = finish(&f, files(&f.dist_info), dir.path()).unwrap_err();
        assert!(matches!(err, FinishError::Size(_)), "{err}");
        assert!(!err.hints().is_empty());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        // Control: the same wheel within its budget stays.
        let f = spec(1 << 20);
        finish(&f, files(&f.dist_info), dir.path()).unwrap();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_wheel_that_fails_the_audit_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = spec(1 << 20);
        // A label that its variant.json does not describe: the audit's problem.
        f.variant = Some(("cu13".into(), "{}\n".into()));
        let err = finish(&f, files(&f.dist_info), dir.path()).unwrap_err();
        assert!(matches!(err, FinishError::Audit { .. }), "{err}");
        assert!(
            err.to_string()
                .contains("not exactly the file name's label"),
            "{err}"
        );
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn written_files_go_unless_committed() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::write(&a, "a").unwrap();
        std::fs::write(&b, "b").unwrap();
        {
            let mut w = Written::default();
            w.add(a.clone());
        }
        assert!(!a.exists());
        let mut w = Written::default();
        w.extend([b.clone()]);
        assert_eq!(w.commit(), vec![b.clone()]);
        assert!(b.exists());
    }
}
