//! A cross-build's libraries (`target`, `toolchain::cross`): discovery runs first in the build
//! environment, whose x86_64 NVIDIA wheels say which distributions (and versions) the targets
//! link; those are fetched for the target platform, and discovery runs again in their folder
//! only. Every library linked must then come from there: one found elsewhere (a toolkit, a
//! `<PREFIX>_LIBRARY_PATH`) has no copy for the target and is refused.

use std::path::Path;

use super::targets::{for_targets, Linked, Search};
use super::{FoundLibrary, LibraryError};
use crate::config::PythonInfo;
use crate::inspect::site::same_dir;
use crate::toolchain::cross::{self, Cross, CrossError};

/// The version of `dist` installed in `site`, from its `.dist-info` folder's name.
fn installed_version(site: &Path, dist: &str) -> Option<String> {
    let stem = format!("{}-", dist.replace('-', "_").to_ascii_lowercase());
    std::fs::read_dir(site)
        .ok()?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find_map(|n| {
            let rest = n.to_ascii_lowercase().strip_prefix(&stem)?.to_string();
            rest.strip_suffix(".dist-info").map(str::to_string)
        })
}

/// `host`: what discovery found in the build environment. Returns the same targets linking
/// the target's copies.
pub(crate) fn for_target(
    host: Linked,
    s: &Search<'_>,
    python: &PythonInfo,
    target: &Cross,
    build_dir: &Path,
) -> Result<Linked, LibraryError> {
    let host_cudart = host.libs.get("cudart").cloned();
    let mut wanted: Vec<(String, String)> = Vec::new();
    for lib in host.libs.values() {
        let not_in_wheel = || CrossError::NotInWheel {
            library: lib.name.clone(),
            found_in: lib.found_in.clone(),
        };
        let (site, dist) = lib.wheel_dist.as_ref().ok_or_else(not_in_wheel)?;
        let version = installed_version(site, dist).ok_or_else(not_in_wheel)?;
        let item = (dist.clone(), version);
        if !wanted.contains(&item) {
            wanted.push(item);
        }
    }
    let site = cross::fetch(python, target, build_dir, &wanted)?;
    let sys_path = [site.clone()];
    let search = Search {
        sys_path: &sys_path,
        ..*s
    };
    let linked = for_targets(host.targets, &search, &|_| Vec::new())?;
    for lib in linked.libs.values() {
        let inside = lib
            .wheel_dist
            .as_ref()
            .is_some_and(|(d, _)| same_dir(d, &site));
        if !inside {
            return Err(CrossError::NotInWheel {
                library: lib.name.clone(),
                found_in: lib.found_in.clone(),
            }
            .into());
        }
    }
    let sites = |l: Option<&FoundLibrary>| l.and_then(|l| l.wheel_dist.clone());
    if let (Some((host_site, _)), Some((site, dist))) = (
        sites(host_cudart.as_ref()),
        sites(linked.libs.get("cudart")),
    ) {
        same_runtime_headers(&host_site, &site, &dist)?;
    }
    Ok(linked)
}

/// libcudart's headers are nvcc's own (the toolkit's header set, x86_64 wheels): every header
/// the target's runtime wheel lists in its RECORD must be the same file there, byte for byte.
fn same_runtime_headers(host_site: &Path, site: &Path, dist: &str) -> Result<(), CrossError> {
    let Some(record) = std::fs::read_dir(site)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("RECORD"))
        .find(|r| {
            r.parent().and_then(|d| d.file_name()).is_some_and(|n| {
                let n = n.to_string_lossy().to_ascii_lowercase();
                n.starts_with(&format!("{}-", dist.replace('-', "_"))) && n.ends_with(".dist-info")
            })
        })
        .and_then(|r| std::fs::read_to_string(r).ok())
    else {
        return Ok(());
    };
    let headers = record
        .lines()
        .filter_map(|l| l.split(',').next())
        .filter(|p| p.contains("/include/") && (p.ends_with(".h") || p.ends_with(".hpp")));
    for rel in headers {
        let (h, t) = (host_site.join(rel), site.join(rel));
        let (Ok(a), Ok(b)) = (std::fs::read(&h), std::fs::read(&t)) else {
            continue;
        };
        if a != b {
            return Err(CrossError::HeadersDiffer {
                dist: dist.to_string(),
                header: rel.to_string(),
                host: h,
                target: t,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtime_headers_must_match() {
        let tmp = tempfile::tempdir().unwrap();
        let (host, target) = (tmp.path().join("host"), tmp.path().join("target"));
        for (site, text) in [(&host, "int a;"), (&target, "int a;")] {
            std::fs::create_dir_all(site.join("nvidia/cu13/include")).unwrap();
            std::fs::write(site.join("nvidia/cu13/include/cuda_runtime.h"), text).unwrap();
        }
        let info = target.join("nvidia_cuda_runtime-13.5.37.dist-info");
        std::fs::create_dir_all(&info).unwrap();
        std::fs::write(
            info.join("RECORD"),
            "nvidia/cu13/include/cuda_runtime.h,sha256=x,6\nnvidia/cu13/lib/libcudart.so.13,,\n",
        )
        .unwrap();
        assert!(same_runtime_headers(&host, &target, "nvidia-cuda-runtime").is_ok());
        std::fs::write(target.join("nvidia/cu13/include/cuda_runtime.h"), "int b;").unwrap();
        let e = same_runtime_headers(&host, &target, "nvidia-cuda-runtime").unwrap_err();
        assert!(
            e.to_string().contains(
                "nvidia/cu13/include/cuda_runtime.h differs between nvidia-cuda-runtime for x86_64"
            ),
            "{e}"
        );
        assert_eq!(
            installed_version(&target, "nvidia-cuda-runtime").as_deref(),
            Some("13.5.37")
        );
    }
}
