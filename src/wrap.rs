//! Wrap mode (`build-backend` set), composed once: the toolkit folder and cudawheel's choices
//! as the wrapped build's environment (`compile::wrapped_env`), the wrapped backend's hooks run
//! on the project's own build files (`compile::wrapped`), its wheel repaired
//! (`package::repair`). The hooks (`pep517.rs`) and `python -m cudawheel wheel` (`commands.rs`)
//! call it; a wrapped build never enters `pipeline.rs`'s own build.

use std::path::{Path, PathBuf};

use crate::compile::wrapped::{Inner, WrapError};
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
    let wheel = inner.build("build_wheel", &dir.join("wheel"), &w.passed)?;
    let settings = RepairSettings::from_tool(&w.tool).with_python(req.python.clone());
    repair::repair_wheel(&wheel, wheel_dir, &settings).map_err(|e| {
        Error::from(WrapError::Repair {
            wheel: wheel.clone(),
            why: e.to_string(),
        })
    })
}

/// Wrap mode's `build_wheel`: the wheel `wrapped_metadata` kept, else a build. Its file name.
pub(crate) fn wrapped_wheel(
    w: &Wrapped,
    req: &Request<'_>,
    wheel_dir: &Path,
    metadata_dir: Option<&Path>,
) -> Result<String, Error> {
    let stash = metadata_dir.map(|m| m.join(WRAPPED_STASH));
    let kept = stash
        .as_ref()
        .and_then(|s| std::fs::read_dir(s).ok())
        .and_then(|mut entries| entries.find_map(|e| e.ok().map(|e| e.path())));
    let wheel = match kept {
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
    let env = BuildEnv::default();
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
    }
    Ok(reqs)
}

/// Wrap mode's sdist: the wrapped backend's.
pub(crate) fn wrapped_sdist(
    w: &Wrapped,
    req: &Request<'_>,
    sdist_dir: &Path,
) -> Result<String, Error> {
    let env = BuildEnv::default();
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

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}
