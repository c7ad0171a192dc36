//! What goes into a wheel besides the built files: the `.dist-info` (METADATA, entry points,
//! licenses, WHEEL, `variant.json`), the project's Python packages, and one generated
//! `_cuda_libs.py` per package holding built targets; and the wheel file itself.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::archive::{ArchiveError, Files};
use super::import_helper::{self, Preload};
use super::metadata::{self, CudaRequires, DistName};
use crate::audit::elf_rules::ElfReport;
use crate::config::{Bindings, CudaDeps, Project};
use crate::inspect::fatbin::GpuCode;
use crate::inspect::site::portable;
use crate::libraries::FoundLibrary;
use crate::plan::{TargetKind, TargetPlan};

/// The distribution a build makes: what its `.dist-info` says.
pub(crate) struct DistInfo<'a> {
    pub(crate) project: &'a Project,
    /// The project root (license files are relative to it).
    pub(crate) root: &'a Path,
    pub(crate) name: &'a DistName,
    /// `torch>=X.Y,<X.(Y+1)` of torch extensions, `jax>=X.Y.Z` of JAX extensions (never moved
    /// by `cuda-deps`).
    pub(crate) framework_requires: Vec<String>,
    /// The NVIDIA wheels of every shared library the targets link.
    pub(crate) cuda_requires: &'a [String],
    pub(crate) cuda_deps: CudaDeps,
    /// `cuda-extra`: the extra `cuda-deps = "extra"` uses.
    pub(crate) cuda_extra: &'a str,
    /// A wheel holding several CUDA majors: each major's NVIDIA wheels, under the extra
    /// `cu<major>` (`cuda_requires` is then empty); empty otherwise.
    pub(crate) cuda_by_major: Vec<(u32, Vec<String>)>,
}

impl DistInfo<'_> {
    /// `saxpy_cu13-0.1.0.dist-info`
    pub(crate) fn dir(&self) -> String {
        format!(
            "{}-{}.dist-info",
            self.name.file_stem(),
            self.project.version
        )
    }

    pub(crate) fn metadata(&self) -> String {
        metadata::core_metadata_with(
            self.project,
            self.name,
            &self.framework_requires,
            &self.cuda_side(),
            (self.cuda_deps, self.cuda_extra),
        )
    }

    /// What the CUDA side adds to `Requires-Dist`: the NVIDIA wheels, or per major under its extra.
    fn cuda_side(&self) -> CudaRequires {
        if self.cuda_by_major.is_empty() {
            return CudaRequires::Known(self.cuda_requires.to_vec());
        }
        CudaRequires::Extras(
            self.cuda_by_major
                .iter()
                .map(|(m, reqs)| (metadata::major_extra(*m), reqs.clone()))
                .collect(),
        )
    }

    /// METADATA, entry points and license files (everything in .dist-info but WHEEL and
    /// RECORD).
    pub(crate) fn add_files(&self, files: &mut Files) -> Result<(), ArchiveError> {
        let di = self.dir();
        files.add_bytes(&format!("{di}/METADATA"), self.metadata(), false);
        if let Some(ep) = metadata::entry_points(self.project) {
            files.add_bytes(&format!("{di}/entry_points.txt"), ep, false);
        }
        for lic in &self.project.license_files {
            files.add_file(
                &format!("{di}/licenses/{}", portable(lic)),
                &self.root.join(lic),
            )?;
        }
        Ok(())
    }
}

/// Writes `files` as a folder tree into `dir` (PEP 517's metadata directory), replacing each
/// top-level entry whole.
pub(crate) fn write_tree(dir: &Path, files: Files) -> Result<(), ArchiveError> {
    let tmp = tempfile::tempdir_in(dir).map_err(|source| ArchiveError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut top = BTreeSet::new();
    for (path, bytes, _) in &files.into_entries() {
        let target = tmp.path().join(path);
        let io = |source| ArchiveError::Io {
            path: target.clone(),
            source,
        };
        std::fs::create_dir_all(target.parent().expect("entries have a folder")).map_err(io)?;
        std::fs::write(&target, bytes).map_err(io)?;
        top.insert(
            path.split('/')
                .next()
                .expect("split yields one item")
                .to_string(),
        );
    }
    for name in top {
        let dest = dir.join(&name);
        let _ = std::fs::remove_dir_all(&dest);
        std::fs::rename(tmp.path().join(&name), &dest).map_err(|source| ArchiveError::Io {
            path: dest.clone(),
            source,
        })?;
    }
    Ok(())
}

/// The `.dist-info` folder of the finished wheel `wheel`, written into `dir` as `write_tree`
/// writes one (a wrapped build's `prepare_metadata_for_build_wheel`). Returns its name, or why
/// it could not.
pub(crate) fn extract_dist_info(wheel: &Path, dir: &Path) -> Result<String, String> {
    let file = std::fs::File::open(wheel).map_err(|e| e.to_string())?;
    let mut zip = zip::ZipArchive::new(file).map_err(|e| e.to_string())?;
    let mut files = Files::default();
    let mut dist_info = None;
    for i in 0..zip.len() {
        let mut member = zip.by_index(i).map_err(|e| e.to_string())?;
        let name = member.name().to_string();
        let Some((top, _)) = name.split_once('/') else {
            continue;
        };
        if !top.ends_with(".dist-info") || name.ends_with('/') || name.contains("..") {
            continue;
        }
        dist_info = Some(top.to_string());
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut member, &mut bytes).map_err(|e| e.to_string())?;
        files.add_bytes(&name, bytes, false);
    }
    let dist_info = dist_info.ok_or("it holds no .dist-info folder")?;
    write_tree(dir, files).map_err(|e| e.to_string())?;
    Ok(dist_info)
}

/// Editable installs: puts each `(relative path, bytes)` into the source tree `src`, replacing
/// files, never writing through them (a loaded extension keeps its old inode).
pub(crate) fn place_in_tree(src: &Path, files: &[(String, Vec<u8>)]) -> Result<(), ArchiveError> {
    let io = |path: &Path, source| ArchiveError::Io {
        path: path.to_path_buf(),
        source,
    };
    for (rel, bytes) in files {
        let dest = src.join(rel);
        std::fs::create_dir_all(dest.parent().unwrap_or(src)).map_err(|e| io(&dest, e))?;
        let tmp = dest.with_extension("cudawheel-tmp");
        std::fs::write(&tmp, bytes).map_err(|e| io(&tmp, e))?;
        std::fs::rename(&tmp, &dest).map_err(|e| io(&dest, e))?;
    }
    Ok(())
}

/// The package folder's files, minus caches and stale copies of the extensions being built
/// (`stale`: the targets' wheel paths).
pub(crate) fn add_package(
    files: &mut Files,
    python_source: &Path,
    pkg: &Path,
    stale: &[String],
) -> Result<(), ArchiveError> {
    for entry in walkdir::WalkDir::new(python_source.join(pkg))
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| e.file_name() != "__pycache__")
    {
        let entry = entry.map_err(|e| ArchiveError::Read {
            path: e.path().map(Path::to_path_buf).unwrap_or_default(),
            source: e.into(),
        })?;
        if !entry.file_type().is_file() {
            continue;
        }
        let rel = entry
            .path()
            .strip_prefix(python_source)
            .expect("walk stays under python_source");
        let rel = portable(rel);
        let is_stale_build = stale.contains(&rel) || is_helper(&rel);
        if rel.ends_with(".pyc") || is_stale_build {
            continue;
        }
        files.add_file(&rel, entry.path())?;
    }
    Ok(())
}

/// `<package>/_cuda_libs.py` for every package holding built targets (`_<module>_cuda_libs.py`
/// for a top-level module, `helper_path`): the NVIDIA libraries its
/// ELFs need (from `libs`, the non-framework libraries found), with their wheel folders and
/// requirements, and the GPU code each ELF carries. `cuda`: the toolkit's (major, minor);
/// `extra`: (distribution, extra) when the NVIDIA wheels are an extra (`cuda-deps = "extra"`).
/// `floors`: why the wheel needs a driver this new.
pub(crate) fn import_helpers<'a>(
    targets: &[TargetPlan],
    reports: &[ElfReport],
    gpu_code: &[GpuCode],
    libs: impl Iterator<Item = &'a FoundLibrary> + Clone,
    cuda: (u32, u32),
    extra: Option<(&str, &str)>,
    floors: &[crate::plan::driver_floors::Floor],
) -> Vec<(String, String)> {
    type Gpu = Vec<(String, GpuCode)>;
    // Keyed by the helper's path in the wheel.
    let mut by_package: BTreeMap<String, (Vec<Preload>, Gpu)> = BTreeMap::new();
    let mut torch_packages: BTreeSet<String> = BTreeSet::new();
    for (i, target) in targets.iter().enumerate() {
        let helper = helper_path(&target.wheel_path);
        if target.bindings == Bindings::Torch {
            torch_packages.insert(helper.clone());
        }
        let (list, gpus) = by_package.entry(helper).or_default();
        // An extension's own ELF, then the `split = "library"` libraries it links (installed
        // from another wheel): its check reads their GPU code, its preload their libraries.
        let mut needed = BTreeSet::new();
        for j in std::iter::once(i).chain(split_libraries_of(targets, target)) {
            let (Some(report), Some(gpu)) = (reports.get(j), gpu_code.get(j)) else {
                continue;
            };
            needed.extend(report.needed.iter().cloned());
            if !gpu.is_empty() {
                gpus.push((targets[j].wheel_path.clone(), gpu.clone()));
            }
        }
        // After the NVIDIA libraries (it needs them): a split library, found on sys.path
        // where the extension's RPATH does not reach it.
        let split = split_libraries_of(targets, target).filter_map(|j| {
            let t = &targets[j];
            let (dir, soname) = t.wheel_path.rsplit_once('/')?;
            Some(Preload {
                soname: soname.to_string(),
                site_dir: dir.to_string(),
                requirement: t.split_library.clone()?,
            })
        });
        let split: Vec<Preload> = split.collect();
        for lib in libs.clone() {
            let (Some(p), Some(dir)) = (&lib.provider, &lib.site_lib_dir) else {
                continue;
            };
            for s in lib.shared.iter().filter(|s| needed.contains(&s.soname)) {
                let entry = Preload {
                    soname: s.soname.clone(),
                    site_dir: dir.clone(),
                    requirement: p.requirement(),
                };
                if !list.contains(&entry) {
                    list.push(entry);
                }
            }
        }
        for entry in split {
            if !list.contains(&entry) {
                list.push(entry);
            }
        }
    }
    by_package
        .into_iter()
        .map(|(helper, (mut libs, gpus))| {
            // The runtime first: the other libraries may need it.
            libs.sort_by_key(|l| !l.soname.starts_with("libcudart."));
            let text = import_helper::render(&import_helper::Helper {
                libs: &libs,
                cuda,
                torch: torch_packages.contains(&helper),
                gpus: &gpus,
                floors,
            });
            let package = helper.rsplit_once('/').map_or("", |(p, _)| p);
            let shared = shared_libraries_in(targets, package);
            let text = import_helper::with_loads(&text, &shared, extra);
            (helper, text)
        })
        .collect()
}

/// The indices of the `split = "library"` libraries `target` links.
fn split_libraries_of<'a>(
    targets: &'a [TargetPlan],
    target: &'a TargetPlan,
) -> impl Iterator<Item = usize> + 'a {
    targets.iter().enumerate().filter_map(move |(j, t)| {
        (t.split_library.is_some() && target.link_with.contains(&t.module)).then_some(j)
    })
}

/// Where the import helper of the extension installed at `wheel_path` goes:
/// `<package>/_cuda_libs.py` for a module inside a package, `_<module>_cuda_libs.py` beside a
/// top-level module (`tiny_conv_cuda.cpython-311-x86_64-linux-gnu.so` ->
/// `_tiny_conv_cuda_cuda_libs.py`), imported as `_<module>_cuda_libs`.
pub(crate) fn helper_path(wheel_path: &str) -> String {
    match wheel_path.split_once('/') {
        Some((package, _)) => format!("{package}/_cuda_libs.py"),
        None => {
            let module = wheel_path.split('.').next().unwrap_or(wheel_path);
            format!("_{module}_cuda_libs.py")
        }
    }
}

/// Whether `rel` (a path in the wheel) is an import helper a build generates.
fn is_helper(rel: &str) -> bool {
    rel.ends_with("/_cuda_libs.py")
        || rel.ends_with("/_cuda_select.py")
        || rel.rsplit_once("/_cuda_libs_cu").is_some_and(|(_, m)| {
            m.strip_suffix(".py")
                .is_some_and(|m| m.parse::<u32>().is_ok())
        })
        || (!rel.contains('/') && rel.starts_with('_') && rel.ends_with("_cuda_libs.py"))
}

/// The shared-library targets shipped below `package/`: (name, path below the package folder),
/// for `_cuda_libs.load(name)`.
fn shared_libraries_in(targets: &[TargetPlan], package: &str) -> Vec<(String, String)> {
    targets
        .iter()
        .filter(|t| matches!(t.kind, TargetKind::SharedLibrary { .. }))
        .filter_map(|t| {
            let rel = t.wheel_path.strip_prefix(package)?.strip_prefix('/')?;
            Some((t.module.clone(), rel.to_string()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    #[test]
    fn extract_dist_info_writes_only_the_dist_info() {
        let dir = tempfile::tempdir().unwrap();
        let wheel = dir.path().join("w-1.0-py3-none-any.whl");
        let mut z = zip::ZipWriter::new(std::fs::File::create(&wheel).unwrap());
        for (name, text) in [
            ("w/__init__.py", "X = 1\n"),
            ("w-1.0.dist-info/METADATA", "Name: w\n"),
            ("w-1.0.dist-info/licenses/LICENSE", "MIT\n"),
        ] {
            z.start_file(name, zip::write::SimpleFileOptions::default())
                .unwrap();
            z.write_all(text.as_bytes()).unwrap();
        }
        z.finish().unwrap();
        let out = dir.path().join("md");
        std::fs::create_dir(&out).unwrap();
        assert_eq!(extract_dist_info(&wheel, &out).unwrap(), "w-1.0.dist-info");
        let meta = std::fs::read_to_string(out.join("w-1.0.dist-info/METADATA")).unwrap();
        assert_eq!(meta, "Name: w\n");
        assert!(out.join("w-1.0.dist-info/licenses/LICENSE").is_file());
        assert!(!out.join("w").exists());
    }
}
