//! The wheels one build writes, as data: which files each holds, its `.dist-info` and its tag.
//! An ordinary build makes one wheel (every target, the packages, the import helpers); an
//! editable one a wheel holding only a `.pth`; `split = "library"` a library wheel (the
//! targets in the library folder, `py3-none-<platform>`, its own metadata) and the binding
//! wheel pinning it `==`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::archive::{ArchiveError, Files};
use super::metadata::DistName;
use super::wheel::{self as wheel_files, DistInfo};
use crate::audit::elf_rules::ElfReport;
use crate::audit::tag::WheelTag;
use crate::config::{CudaDeps, Project};
use crate::plan::TargetPlan;

/// What a finished build hands the package stage.
pub(crate) struct Build<'a> {
    /// The `.dist-info` of the build's own distribution.
    pub(crate) dist: DistInfo<'a>,
    pub(crate) tag: WheelTag,
    pub(crate) targets: &'a [TargetPlan],
    /// Per target (same order): its ELF report.
    pub(crate) reports: &'a [ElfReport],
    /// Staging folder holding every target at its wheel path.
    pub(crate) out_dir: &'a Path,
    pub(crate) python_source: &'a Path,
    pub(crate) packages: &'a [PathBuf],
    /// `(wheel path, text)` of the import helpers (`<package>/_cuda_libs.py`).
    pub(crate) helpers: Vec<(String, String)>,
    /// Where the last wheel of each kind is kept (`last.whl`, `last-lib.whl`).
    pub(crate) build_dir: &'a Path,
}

/// Which wheels a build writes.
pub(crate) enum Layout<'a> {
    /// One wheel with everything.
    Whole,
    /// PEP 660: a `.pth` adding `source` (where the build placed the files) to `sys.path`;
    /// with `check_gpu`, the start-up module that runs the GPU check before an extension loads
    /// (`editable`).
    Editable { source: &'a Path, check_gpu: bool },
    /// `split = "library"`.
    Split(SplitLibrary<'a>),
}

/// The library wheel of a `split = "library"` build.
pub(crate) struct SplitLibrary<'a> {
    /// Its folder in site-packages (`<name>_lib_cu13`): the targets below it go to this wheel.
    pub(crate) folder: String,
    pub(crate) name: DistName,
    /// The binding wheel's requirement on it (`<name>-lib-cu13==<version>`).
    pub(crate) pin: String,
    /// Write the library wheel (false: only the binding wheel, e.g. for a second Python).
    pub(crate) write_library: bool,
    /// The NVIDIA requirements of the libraries providing these SONAMEs.
    pub(crate) requires: &'a dyn Fn(&BTreeSet<String>) -> Vec<String>,
}

/// A `.dist-info` owning its parts (a split library's differs from the build's).
#[derive(Debug, Clone)]
pub(crate) struct Dist {
    pub(crate) project: Project,
    pub(crate) root: PathBuf,
    pub(crate) name: DistName,
    pub(crate) framework_requires: Vec<String>,
    pub(crate) cuda_requires: Vec<String>,
    pub(crate) cuda_deps: CudaDeps,
    pub(crate) cuda_extra: String,
    /// Several CUDA majors in one wheel: each major's NVIDIA wheels (`DistInfo`).
    pub(crate) cuda_by_major: Vec<(u32, Vec<String>)>,
}

impl Dist {
    pub(crate) fn of(d: &DistInfo<'_>) -> Dist {
        Dist {
            project: d.project.clone(),
            root: d.root.to_path_buf(),
            name: d.name.clone(),
            framework_requires: d.framework_requires.clone(),
            cuda_requires: d.cuda_requires.to_vec(),
            cuda_deps: d.cuda_deps,
            cuda_extra: d.cuda_extra.to_string(),
            cuda_by_major: d.cuda_by_major.clone(),
        }
    }

    pub(crate) fn info(&self) -> DistInfo<'_> {
        DistInfo {
            project: &self.project,
            root: &self.root,
            name: &self.name,
            framework_requires: self.framework_requires.clone(),
            cuda_requires: &self.cuda_requires,
            cuda_deps: self.cuda_deps,
            cuda_extra: &self.cuda_extra,
            cuda_by_major: self.cuda_by_major.clone(),
        }
    }
}

/// One wheel to write.
pub(crate) struct WheelSpec {
    pub(crate) files: Files,
    pub(crate) dist: Dist,
    pub(crate) tag: WheelTag,
    /// The built ELF files it carries (in the staging folder), for the summary.
    pub(crate) elfs: Vec<PathBuf>,
    /// Where the last wheel of this kind is kept: its unchanged members are copied
    /// compressed, and this one is kept there once it passed the audit (none: editable).
    pub(crate) previous: Option<PathBuf>,
}

/// The wheels `build` makes in `layout`, in the order they are written (a split build's
/// library wheel first).
pub(crate) fn describe(
    build: &Build<'_>,
    layout: &Layout<'_>,
) -> Result<Vec<WheelSpec>, ArchiveError> {
    let all_elfs = || elfs(build, |_| true);
    let last = build.build_dir.join("last.whl");
    Ok(match layout {
        Layout::Whole => {
            let (_, files) = contents(build, |_| false)?;
            vec![WheelSpec {
                files,
                dist: Dist::of(&build.dist),
                tag: build.tag.clone(),
                elfs: all_elfs(),
                previous: Some(last),
            }]
        }
        Layout::Editable { source, check_gpu } => {
            let mut files = Files::default();
            let stem = build.dist.name.file_stem();
            super::editable::add_files(&mut files, &stem, source, build.targets, *check_gpu);
            vec![WheelSpec {
                files,
                dist: Dist::of(&build.dist),
                tag: build.tag.clone(),
                elfs: all_elfs(),
                previous: None,
            }]
        }
        Layout::Split(split) => split_wheels(build, split)?,
    })
}

/// `split = "library"`: the library wheel (when written) and the binding wheel.
fn split_wheels(
    build: &Build<'_>,
    split: &SplitLibrary<'_>,
) -> Result<Vec<WheelSpec>, ArchiveError> {
    let prefix = format!("{}/", split.folder);
    let in_lib = |path: &str| path.starts_with(&prefix);
    let needed_of = |lib: bool| -> BTreeSet<String> {
        build
            .targets
            .iter()
            .zip(build.reports)
            .filter(|(t, _)| in_lib(&t.wheel_path) == lib)
            .flat_map(|(_, rep)| rep.needed.iter().cloned())
            .collect()
    };
    let (lib_files, bind_files) = contents(build, in_lib)?;
    let mut bindings = Dist::of(&build.dist);
    bindings.cuda_requires = (split.requires)(&needed_of(false));
    bindings.framework_requires.push(split.pin.clone());
    let bind = WheelSpec {
        files: bind_files,
        dist: bindings,
        tag: build.tag.clone(),
        elfs: elfs(build, |p| !in_lib(p)),
        previous: Some(build.build_dir.join("last.whl")),
    };
    if !split.write_library {
        return Ok(vec![bind]);
    }
    let lib = WheelSpec {
        files: lib_files,
        dist: library_dist(&build.dist, split, (split.requires)(&needed_of(true))),
        tag: build.tag.any_python(),
        elfs: elfs(build, in_lib),
        previous: Some(build.build_dir.join("last-lib.whl")),
    };
    Ok(vec![lib, bind])
}

/// The library wheel's `.dist-info`: the project without its dependencies, entry points and
/// readme (the binding wheel has them), a description of its own, its NVIDIA requirements.
fn library_dist(
    build: &DistInfo<'_>,
    split: &SplitLibrary<'_>,
    cuda_requires: Vec<String>,
) -> Dist {
    let mut project = build.project.clone();
    project.dependencies.clear();
    project.optional_dependencies.clear();
    project.entry_points.clear();
    project.readme = None;
    project.description = Some(format!(
        "The GPU code of {}, shared by its per-Python wheels",
        build.name.display
    ));
    Dist {
        project,
        name: split.name.clone(),
        framework_requires: Vec::new(),
        cuda_requires,
        ..Dist::of(build)
    }
}

/// The built ELF files whose wheel path `keep` accepts, in the staging folder.
fn elfs(build: &Build<'_>, keep: impl Fn(&str) -> bool) -> Vec<PathBuf> {
    build
        .targets
        .iter()
        .filter(|t| keep(&t.wheel_path))
        .map(|t| build.out_dir.join(&t.wheel_path))
        .collect()
}

/// A build's wheel contents, split by `in_lib` (a wheel path): the targets under it go to the
/// first `Files` (a split build's library wheel), everything else (the other targets, the
/// packages, the import helpers: a library wheel needs none, its binding wheel checks and loads
/// it) to the second.
fn contents(
    build: &Build<'_>,
    in_lib: impl Fn(&str) -> bool,
) -> Result<(Files, Files), ArchiveError> {
    let (mut lib_files, mut files) = (Files::default(), Files::default());
    for (path, text) in &build.helpers {
        if !in_lib(path) {
            files.add_bytes(path, text.clone(), false);
        }
    }
    let stale: Vec<String> = build.targets.iter().map(|t| t.wheel_path.clone()).collect();
    for pkg in build.packages {
        wheel_files::add_package(&mut files, build.python_source, pkg, &stale)?;
    }
    for t in build.targets {
        let to = if in_lib(&t.wheel_path) {
            &mut lib_files
        } else {
            &mut files
        };
        to.add_file(&t.wheel_path, &build.out_dir.join(&t.wheel_path))?;
    }
    Ok((lib_files, files))
}

/// The Requires-Dist derived from what was linked differs from what discovery expected.
#[derive(Debug, thiserror::Error)]
#[error("the linked libraries need {linked:?}, discovery expected {expected_cuda:?} {expected_framework:?}")]
pub(crate) struct RequiresMismatch {
    /// (NVIDIA, framework) requirements of the linked libraries.
    pub(crate) linked: (Vec<String>, Vec<String>),
    pub(crate) expected_cuda: Vec<String>,
    pub(crate) expected_framework: Vec<String>,
}

/// The requirements of what was linked (NVIDIA, framework) must be those the metadata was
/// made from.
pub(crate) fn check_requires(
    linked: (Vec<String>, Vec<String>),
    expected_cuda: &[String],
    expected_framework: &[String],
) -> Result<(), RequiresMismatch> {
    if linked.0 == expected_cuda && linked.1 == expected_framework {
        return Ok(());
    }
    Err(RequiresMismatch {
        linked,
        expected_cuda: expected_cuda.to_vec(),
        expected_framework: expected_framework.to_vec(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requires_mismatch_says_both_sides() {
        let cuda = vec!["nvidia-cuda-runtime>=13.0,<14".to_string()];
        assert!(check_requires((cuda.clone(), Vec::new()), &cuda, &[]).is_ok());
        let e = check_requires((Vec::new(), Vec::new()), &cuda, &[]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "the linked libraries need ([], []), discovery expected [\"nvidia-cuda-runtime>=13.0,<14\"] []"
        );
    }
}
