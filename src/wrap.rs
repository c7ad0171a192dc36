//! Wrap mode (`build-backend` set), composed once: the toolkit folder and cudawheel's choices
//! as the wrapped build's environment (`compile::wrapped_env`), the wrapped backend's hooks run
//! on the project's own build files (`compile::wrapped`), its wheel repaired
//! (`package::repair`). The hooks (`pep517.rs`) and `python -m cudawheel wheel` (`commands.rs`)
//! call it; a wrapped build never enters `pipeline.rs`'s own build.

use std::path::{Path, PathBuf};

use crate::audit::built_archs;
use crate::compile::wrapped::{build_tools, Inner, WrapError};
use crate::compile::wrapped_env::{self, BuildEnv};
use crate::config;
use crate::config::wrapped::Wrapped;
use crate::error::Error;
use crate::package::repair::{self, RepairSettings};
use crate::resolve::Request;
use crate::toolchain;
use crate::ui;

/// Where `prepare_metadata_for_build_wheel` keeps a wrapped build's wheel for `build_wheel`.
const WRAPPED_STASH: &str = ".cudawheel-wrapped";

/// Wrap mode (`build-backend`): the wrapped backend builds the project from its own build files
/// with cudawheel's toolkit folder and choices (`compile::wrapped_env`), then its wheel is
/// repaired into `wheel_dir` (`package::repair`). Returns the repaired wheel.
pub(crate) fn wrapped(w: &Wrapped, req: &Request<'_>, wheel_dir: &Path) -> Result<PathBuf, Error> {
    let p = wrapped_env::prepare(w, &req.overrides.env, req.python)?;
    ui::status(&format!(
        "wrapping {}: CUDA {} toolkit folder {}",
        w.backend,
        p.nvcc_version,
        p.toolkit.root.display()
    ));
    let dir = p.build_dir.join("wrapped");
    let _ = std::fs::remove_dir_all(&dir);
    let inner = Inner {
        backend: &w.backend,
        python: req.python,
        root: &w.root,
        scratch: &dir.join("hooks"),
        env: &p.env,
    };
    let counted = p
        .launcher
        .as_ref()
        .map(|l| (l, l.before_build(&p.build_dir)));
    let started = std::time::Instant::now();
    let (wheel, nvcc_lines) = inner.build_logged("build_wheel", &dir.join("wheel"), &w.passed)?;
    let built_in = started.elapsed();
    // What the `compiler-launcher` served (sccache's cache and build cluster, ccache's cache).
    if let Some(line) = counted.and_then(|(l, before)| l.summary(&p.build_dir, before)) {
        ui::status(&line);
    }
    if let Some(g) = &p.gate {
        let limit = g.limit.as_ref().map(|l| (l.bytes, l.source.as_str()));
        if let Some(line) = crate::compile::gate::summary(&g.dir, limit) {
            ui::status(&line);
        }
    }
    // `native` on a builder with no GPU: nvcc only warns and builds its default arch.
    built_archs::check_native(&w.backend, &nvcc_lines, &p.gencodes)?;
    // The build's CUDA major, for GPU code with the static runtime (no libcudart by SONAME).
    let settings = RepairSettings::from_tool(&w.tool, w.variant.clone())
        .with_python(req.python.clone())
        .with_cuda_major(Some(p.cuda_major))
        .with_toolkit_release(Some((p.cuda_major, p.cuda_minor)))
        .with_epoch(w.source_date_epoch)
        .with_previous(p.build_dir.join("repair/last.whl"));
    let started = std::time::Instant::now();
    let repaired = repair::repair_wheel(&wheel, wheel_dir, &settings).map_err(|source| {
        Error::WrappedRepair {
            wheel: wheel.clone(),
            source,
        }
    })?;
    ui::status(&format!(
        "{} built its wheel in {:.1} s, the repair took {:.1} s",
        w.backend,
        built_in.as_secs_f64(),
        started.elapsed().as_secs_f64()
    ));
    // What was built against what `archs` asked for (the project's own choice wins).
    let built = crate::audit::wheel_audit::gpu_code_of_wheel(&repaired)?;
    if let Some(line) = built_archs::compare(&p.gencodes, &built, &w.backend, &nvcc_lines) {
        ui::status(&line);
    }
    Ok(repaired)
}

/// Wrap mode's `build_wheel`: the wheel `wrapped_metadata` kept, else a build. Its file name.
pub(crate) fn wrapped_wheel(
    w: &Wrapped,
    req: &Request<'_>,
    wheel_dir: &Path,
    metadata_dir: Option<&Path>,
) -> Result<String, Error> {
    let wheel = match metadata_dir.and_then(kept_wheel) {
        Some(path) => {
            let out = wheel_dir.join(path.file_name().unwrap_or_default());
            let err = |e: std::io::Error| WrapError::Stash {
                what: "Copying the wheel built for the metadata",
                path: path.clone(),
                why: e.to_string(),
            };
            std::fs::create_dir_all(wheel_dir).map_err(err)?;
            std::fs::copy(&path, &out).map_err(err)?;
            out
        }
        None => wrapped(w, req, wheel_dir)?,
    };
    Ok(file_name(&wheel))
}

/// The wheel `wrapped_metadata` kept for the `metadata_directory` `build_wheel` was given:
/// PEP 517 passes the `.dist-info` folder itself (pip), some frontends the folder it was
/// written into; the kept wheel must be the one whose `.dist-info` that is.
fn kept_wheel(metadata_dir: &Path) -> Option<PathBuf> {
    let dist_info = metadata_dir
        .file_name()
        .and_then(|n| n.to_str())
        .filter(|n| n.ends_with(".dist-info"));
    let written_into = match dist_info {
        Some(_) => metadata_dir.parent()?,
        None => metadata_dir,
    };
    let mut wheels: Vec<PathBuf> = std::fs::read_dir(written_into.join(WRAPPED_STASH))
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "whl"))
        .collect();
    wheels.sort();
    wheels.into_iter().find(|w| match dist_info {
        Some(name) => wheel_dist_info(w).is_some_and(|d| d == name),
        None => true,
    })
}

/// `name-1.0-cp312-cp312-linux_x86_64.whl` -> `name-1.0.dist-info`.
fn wheel_dist_info(wheel: &Path) -> Option<String> {
    let stem = wheel.file_name()?.to_str()?.strip_suffix(".whl")?;
    let mut parts = stem.split('-');
    Some(format!("{}-{}.dist-info", parts.next()?, parts.next()?))
}

/// Wrap mode's `prepare_metadata_for_build_wheel`: the wrapped wheel is built (kept for
/// `build_wheel`) and its `.dist-info` written into `metadata_dir`; returns that folder's name.
pub(crate) fn wrapped_metadata(
    w: &Wrapped,
    req: &Request<'_>,
    metadata_dir: &Path,
) -> Result<String, Error> {
    let wheel = wrapped(w, req, &metadata_dir.join(WRAPPED_STASH))?;
    let err = |e: String| WrapError::Stash {
        what: "Reading the .dist-info of",
        path: wheel.clone(),
        why: e,
    };
    Ok(crate::package::wheel::extract_dist_info(&wheel, metadata_dir).map_err(err)?)
}

/// Wrap mode's build requirements: the wrapped backend's own (`hook` is its
/// `get_requires_for_build_wheel` or `_sdist`), then for a wheel the toolkit, the declared
/// `libraries` and the build tools.
pub(crate) fn wrapped_requires(
    w: &Wrapped,
    req: &Request<'_>,
    hook: &str,
) -> Result<Vec<String>, Error> {
    let build_dir = config::inside_project(&w.root, &w.tool.build_dir, "tool.cudawheel.build-dir")?;
    let env = hook_env(w, req, &build_dir, hook);
    let inner = Inner {
        backend: &w.backend,
        python: req.python,
        root: &w.root,
        scratch: &build_dir.join("wrapped/hooks"),
        env: &env,
    };
    // A misspelled library would silently be missing from the build environment.
    for name in w.tool.wrap_libraries.iter().flatten() {
        crate::libraries::spec_for(
            name,
            toolchain::PIP_MAJOR,
            &w.tool,
            "tool.cudawheel.libraries",
        )?;
    }
    let mut reqs = inner.requires(hook, &w.passed)?;
    if hook == "get_requires_for_build_wheel" {
        reqs.extend(crate::resolve::build_requirements(
            &w.tool,
            &req.overrides.env,
            req.python,
        )?);
        reqs.extend(repair::TOOL_REQUIREMENTS.iter().map(|r| r.to_string()));
        for tool in build_tools(&w.backend) {
            if !reqs
                .iter()
                .any(|r| crate::config::requirement_name(r) == *tool)
            {
                reqs.push(tool.to_string());
            }
        }
    }
    Ok(reqs)
}

/// Wrap mode's sdist: the wrapped backend's.
pub(crate) fn wrapped_sdist(
    w: &Wrapped,
    req: &Request<'_>,
    sdist_dir: &Path,
) -> Result<String, Error> {
    let build_dir = config::inside_project(&w.root, &w.tool.build_dir, "tool.cudawheel.build-dir")?;
    let env = hook_env(w, req, &build_dir, "build_sdist");
    let scratch = tempfile::tempdir().map_err(|e| WrapError::Stash {
        what: "Making a scratch folder in",
        path: std::env::temp_dir(),
        why: e.to_string(),
    })?;
    let inner = Inner {
        backend: &w.backend,
        python: req.python,
        root: &w.root,
        scratch: scratch.path(),
        env: &env,
    };
    Ok(file_name(&inner.build(
        "build_sdist",
        sdist_dir,
        &w.passed,
    )?))
}

/// The environment of a hook that runs the wrapped backend without building a wheel (its
/// requirements, its sdist): a setup.py runs whole in each, and may read the toolkit's
/// variables at import. For `get_requires_for_build_wheel`, the build's own environment (and
/// its toolkit folder) when a toolkit is there; else, before the pip toolkit is installed, the
/// planned one naming the folder the build will make (`wrapped_env::planned`).
///
/// The sdist's hooks always get the planned one: an sdist is made where no CUDA may be, and a
/// toolkit folder made inside the project could end up in it.
fn hook_env(w: &Wrapped, req: &Request<'_>, build_dir: &Path, hook: &str) -> BuildEnv {
    let folder = build_dir.join("toolkit");
    if hook.ends_with("_sdist") {
        return wrapped_env::planned(&folder, &w.tool);
    }
    match wrapped_env::prepare(w, &req.overrides.env, req.python) {
        Ok(p) => p.env,
        Err(_) => {
            ui::status(&format!(
                "{hook} of {}: no CUDA toolkit installed yet; CUDA_HOME names the folder the build will make, {}",
                w.backend,
                folder.display()
            ));
            wrapped_env::planned(&folder, &w.tool)
        }
    }
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stash_with(dir: &Path, wheels: &[&str]) {
        let stash = dir.join(WRAPPED_STASH);
        std::fs::create_dir_all(&stash).unwrap();
        for w in wheels {
            std::fs::write(stash.join(w), "").unwrap();
        }
    }

    #[test]
    fn the_kept_wheel_is_found_from_the_dist_info_folder_or_its_parent() {
        let tmp = tempfile::tempdir().unwrap();
        let md = tmp.path();
        let whl = "demo_cu13-0.1.0-cp312-cp312-manylinux_2_28_x86_64.whl";
        stash_with(md, &[whl]);
        std::fs::create_dir_all(md.join("demo_cu13-0.1.0.dist-info")).unwrap();
        // pip (PEP 517): the .dist-info folder prepare_metadata_for_build_wheel made.
        let found = kept_wheel(&md.join("demo_cu13-0.1.0.dist-info"));
        assert_eq!(found, Some(md.join(WRAPPED_STASH).join(whl)));
        // uv: the folder it was written into.
        assert_eq!(kept_wheel(md), Some(md.join(WRAPPED_STASH).join(whl)));
        // Another project's .dist-info: built again, not this wheel.
        assert_eq!(kept_wheel(&md.join("other-0.1.0.dist-info")), None);
        // Nothing kept.
        let empty = tempfile::tempdir().unwrap();
        assert_eq!(kept_wheel(&empty.path().join("demo-0.1.0.dist-info")), None);
    }
}
