//! The CUDA include arguments of each compile: library headers first, the toolkit's one header
//! set next, runtime-header folders no RECORD describes last (with links under build-dir for
//! libraries whose wheel folder is shared with the runtime's).

use std::path::{Path, PathBuf};

use crate::inspect::site::same_dir;
use crate::libraries::FoundLibrary;
use crate::toolchain::headers::HeaderSet;

/// The CUDA include arguments of one target, in this order:
/// 1. each library's own headers: its folder where that holds no runtime headers
///    (`nvidia/cublas/include`, a `<PREFIX>_INCLUDE_PATH`); where it does (CUDA 13's wheels
///    share `nvidia/cu13/include` with `nvidia-cuda-runtime`), a folder under `own_root` holding
///    links to the headers its distribution's RECORD lists, and nothing else: a library's
///    headers come from where it was found;
/// 2. the toolkit's header set (`-I`, then its `-isystem` folders);
/// 3. library folders holding runtime headers that no RECORD describes (`/usr/include` with a
///    distribution's CUDA): after the set, so `cuda_runtime.h` always comes from the toolkit.
///
/// libcudart's own folder is never added: its headers are the toolkit's.
pub(crate) fn include_args(
    set: &HeaderSet,
    libs: &[&FoundLibrary],
    own_root: &Path,
) -> std::io::Result<Vec<String>> {
    let mut before: Vec<PathBuf> = Vec::new();
    let mut after: Vec<PathBuf> = Vec::new();
    for lib in libs.iter().filter(|l| l.name != "cudart") {
        for (k, dir) in lib.include_dirs.iter().enumerate() {
            let known = set
                .dirs()
                .chain(&before)
                .chain(&after)
                .any(|d| same_dir(d, dir));
            if known {
                continue;
            }
            if !dir.join("cuda_runtime_api.h").exists() {
                before.push(dir.clone());
                continue;
            }
            let own = lib
                .wheel_dist
                .as_ref()
                .and_then(|(site, dist)| record_headers(site, dist, dir));
            match own {
                Some(files) => {
                    let link_dir = match k {
                        0 => own_root.join(&lib.name),
                        _ => own_root.join(format!("{}.{k}", lib.name)),
                    };
                    sync_links(&link_dir, dir, &files)?;
                    before.push(link_dir);
                }
                None => after.push(dir.clone()),
            }
        }
    }
    let mut out: Vec<String> = before
        .iter()
        .map(|d| format!("-I{}", d.display()))
        .collect();
    out.extend(set.args());
    out.extend(after.iter().map(|d| format!("-I{}", d.display())));
    Ok(out)
}

/// The files `dist` installed below `include` (relative to it), from its `.dist-info/RECORD`
/// in `site`; `None` when no RECORD says.
fn record_headers(site: &Path, dist: &str, include: &Path) -> Option<Vec<String>> {
    let rel = include.strip_prefix(site).ok()?;
    let prefix = format!("{}/", crate::inspect::site::portable(rel));
    for entry in std::fs::read_dir(site).ok()?.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(stem) = name.strip_suffix(".dist-info") else {
            continue;
        };
        let normalized = stem
            .rsplit_once('-')
            .map_or(stem, |(n, _)| n)
            .to_ascii_lowercase()
            .replace(['_', '.'], "-");
        if normalized != dist {
            continue;
        }
        let record = std::fs::read_to_string(entry.path().join("RECORD")).ok()?;
        let files: Vec<String> = record
            .lines()
            .filter_map(|l| l.split(',').next())
            .filter_map(|p| p.strip_prefix(&prefix))
            .filter(|p| !p.ends_with("__init__.py") && !p.contains("__pycache__"))
            .map(str::to_string)
            .collect();
        return (!files.is_empty()).then_some(files);
    }
    None
}

/// Makes `link_dir` hold exactly one symbolic link per file, `link_dir/<rel>` -> `dir/<rel>`,
/// touching links that are already right not at all (their targets' times decide incremental
/// builds).
fn sync_links(link_dir: &Path, dir: &Path, files: &[String]) -> std::io::Result<()> {
    let wanted: std::collections::BTreeSet<PathBuf> =
        files.iter().map(|f| link_dir.join(f)).collect();
    if link_dir.exists() {
        for entry in walkdir::WalkDir::new(link_dir).contents_first(true) {
            let entry = entry.map_err(std::io::Error::other)?;
            let path = entry.path();
            if entry.path_is_symlink() && !wanted.contains(path) {
                std::fs::remove_file(path)?;
            } else if entry.file_type().is_dir() && path != link_dir {
                // Empty after the clean-up: gone; otherwise kept.
                let _ = std::fs::remove_dir(path);
            }
        }
    }
    for f in files {
        let link = link_dir.join(f);
        let target = dir.join(f);
        if std::fs::read_link(&link).is_ok_and(|t| t == target) {
            continue;
        }
        if let Some(parent) = link.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&target, &link)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lib(name: &str, dir: &Path, wheel: Option<(&Path, &str)>) -> FoundLibrary {
        FoundLibrary {
            name: name.into(),
            include_dirs: vec![dir.to_path_buf()],
            shared: vec![],
            statics: vec![],
            ldflags: vec![],
            site_lib_dir: None,
            outside_dir: None,
            provider: None,
            found_in: "test".into(),
            wheel_dist: wheel.map(|(s, d)| (s.to_path_buf(), d.to_string())),
        }
    }

    #[test]
    fn library_headers_first_toolkit_next_shared_runtime_folders_last() {
        let t = tempfile::tempdir().unwrap();
        let touch = |p: &Path| {
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "").unwrap();
        };
        // A site whose nvidia/cu13/include holds the runtime wheel's and nvtx's headers.
        let site = t.path().join("site");
        let shared = site.join("nvidia/cu13/include");
        touch(&shared.join("cuda_runtime_api.h"));
        touch(&shared.join("nvtx3/nvToolsExt.h"));
        let di = site.join("nvidia_nvtx-13.1.68.dist-info");
        std::fs::create_dir_all(&di).unwrap();
        std::fs::write(
            di.join("RECORD"),
            "nvidia/cu13/include/nvtx3/nvToolsExt.h,sha256=x,0\nnvidia_nvtx-13.1.68.dist-info/RECORD,,\n",
        )
        .unwrap();
        // A dedicated library folder, and a system folder with runtime headers and no RECORD.
        let dedicated = t.path().join("nccl/include");
        touch(&dedicated.join("nccl.h"));
        let system = t.path().join("usr/include");
        touch(&system.join("cuda_runtime_api.h"));
        let kit = t.path().join("kit/include");
        touch(&kit.join("cuda_runtime_api.h"));
        let set = HeaderSet {
            include: vec![kit.clone()],
            system: vec![kit.join("cccl")],
            implicit: vec![],
            runtime_header: kit.join("cuda_runtime_api.h"),
            version: Some((13, 5)),
            owner: None,
            from: String::new(),
            mixed: vec![],
        };
        let own = t.path().join("build/cuda-headers");
        let libs = [
            lib("cudart", &shared, Some((&site, "nvidia-cuda-runtime"))),
            lib("nvtx", &shared, Some((&site, "nvidia-nvtx"))),
            lib("nccl", &dedicated, None),
            lib("other", &system, None),
            lib("kitlib", &kit, None),
        ];
        let refs: Vec<&FoundLibrary> = libs.iter().collect();
        let args = include_args(&set, &refs, &own).unwrap();
        let d = |p: &Path| format!("-I{}", p.display());
        assert_eq!(
            args,
            vec![
                d(&own.join("nvtx")),
                d(&dedicated),
                d(&kit),
                "-isystem".into(),
                kit.join("cccl").display().to_string(),
                d(&system),
            ]
        );
        // Only nvtx's own file is linked, to where the wheel put it.
        let link = own.join("nvtx/nvtx3/nvToolsExt.h");
        assert_eq!(
            std::fs::read_link(&link).unwrap(),
            shared.join("nvtx3/nvToolsExt.h")
        );
        assert!(!own.join("nvtx/cuda_runtime_api.h").exists());
        // A link the RECORD no longer lists goes; the right ones are left alone.
        std::os::unix::fs::symlink(&kit, own.join("nvtx/stale.h")).unwrap();
        include_args(&set, &refs, &own).unwrap();
        assert!(std::fs::symlink_metadata(own.join("nvtx/stale.h")).is_err());
        assert!(link.exists());
    }
}
