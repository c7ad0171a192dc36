//! A cross-build's libraries (`target`, `toolchain::cross`): discovery runs first in the build
//! environment, whose x86_64 NVIDIA wheels say which distributions (and versions) the targets
//! link; those are fetched for the target platform, and discovery runs again in their folder
//! only. Every library linked must then come from there: one found elsewhere (a toolkit, a
//! `<PREFIX>_LIBRARY_PATH`) has no copy for the target and is refused.

use std::path::Path;

use super::targets::{for_targets, Linked, Search};
use super::LibraryError;
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
/// the target's copies, and what had to be downloaded for them.
pub fn for_target(
    host: Linked,
    s: &Search<'_>,
    python: &PythonInfo,
    target: &Cross,
    build_dir: &Path,
) -> Result<(Linked, Vec<String>), LibraryError> {
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
    let (site, downloaded) = cross::fetch(python, target, build_dir, &wanted)?;
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
    Ok((linked, downloaded))
}
