//! The PEP 517 hooks (and PEP 660's), each a stateless function: the build itself is
//! `pipeline::build`, the same one `python -m cudawheel wheel` runs. Every hook reads
//! pyproject.toml once (`Mode::load`: cudawheel's own build or wrap mode), as PEP 517 allows
//! each hook to run in a fresh process.

use std::path::Path;

use crate::compile::wrapped::WrapError;
use crate::config::{Config, Mode};
use crate::error::Error;
use crate::package::archive::Files;
use crate::package::wheel as wheel_files;
use crate::pipeline::{self, Wheels};

pub(crate) use crate::resolve::{build_requirements, resolve, Request};

/// The mode (cudawheel's own build or wrap mode), decided once per hook.
fn mode(req: &Request<'_>) -> Result<Mode, Error> {
    Ok(Mode::load(req.source_tree, req.overrides)?)
}

/// Wrap mode makes no editable wheel: the configuration of cudawheel's own build.
fn native_for_editable(req: &Request<'_>) -> Result<Config, Error> {
    match mode(req)? {
        Mode::Wrapped(w) => Err(WrapError::Editable { backend: w.backend }.into()),
        Mode::Native(config) => Ok(*config),
    }
}

pub(crate) fn get_requires_for_build_wheel(req: &Request<'_>) -> Result<Vec<String>, Error> {
    match mode(req)? {
        Mode::Wrapped(w) => crate::wrap::wrapped_requires(&w, req, "get_requires_for_build_wheel"),
        Mode::Native(config) => build_requirements(&config.tool, &req.overrides.env, req.python),
    }
}

/// PEP 660's: the same as for a wheel.
pub(crate) fn get_requires_for_build_editable(req: &Request<'_>) -> Result<Vec<String>, Error> {
    let config = native_for_editable(req)?;
    build_requirements(&config.tool, &req.overrides.env, req.python)
}

pub(crate) fn get_requires_for_build_sdist(req: &Request<'_>) -> Result<Vec<String>, Error> {
    match mode(req)? {
        Mode::Wrapped(w) => crate::wrap::wrapped_requires(&w, req, "get_requires_for_build_sdist"),
        Mode::Native(_) => Ok(Vec::new()),
    }
}

/// Writes `<name>-<version>.dist-info/` into `metadata_dir`; returns its name.
pub(crate) fn prepare_metadata_for_build_wheel(
    req: &Request<'_>,
    metadata_dir: &Path,
) -> Result<String, Error> {
    match mode(req)? {
        Mode::Wrapped(w) => crate::wrap::wrapped_metadata(&w, req, metadata_dir),
        Mode::Native(config) => write_metadata(req, *config, metadata_dir),
    }
}

fn write_metadata(req: &Request<'_>, config: Config, metadata_dir: &Path) -> Result<String, Error> {
    if let Some(parts) = config.parts() {
        return pipeline::write_several_metadata(req, parts, metadata_dir);
    }
    let r = resolve(req, config)?;
    let mut files = Files::default();
    r.dist_info().add_files(&mut files)?;
    wheel_files::write_tree(metadata_dir, files)?;
    Ok(r.dist_info().dir())
}

/// PEP 660's: the same `.dist-info` as for a wheel.
pub(crate) fn prepare_metadata_for_build_editable(
    req: &Request<'_>,
    metadata_dir: &Path,
) -> Result<String, Error> {
    write_metadata(req, native_for_editable(req)?, metadata_dir)
}

/// Builds the wheel into `wheel_dir`; returns its file name. A frontend asks for one wheel:
/// `split = "library"` is left to `python -m cudawheel wheel`, and said so.
pub(crate) fn build_wheel(
    req: &Request<'_>,
    wheel_dir: &Path,
    metadata_dir: Option<&Path>,
) -> Result<String, Error> {
    match mode(req)? {
        Mode::Wrapped(w) => crate::wrap::wrapped_wheel(&w, req, wheel_dir, metadata_dir),
        Mode::Native(config) => {
            pipeline::build_one(req, *config, Wheels::Whole, wheel_dir, metadata_dir)
        }
    }
}

/// PEP 660: builds the extensions, puts them (and `_cuda_libs.py`) next to the sources in
/// `python-source`, and returns a wheel whose `.pth` adds that folder to `sys.path`. Python
/// edits show at once; after a `.cu`/`.c` edit, run `pip install -e .` again.
pub(crate) fn build_editable(
    req: &Request<'_>,
    wheel_dir: &Path,
    metadata_dir: Option<&Path>,
) -> Result<String, Error> {
    let config = native_for_editable(req)?;
    pipeline::build_one(req, config, Wheels::Editable, wheel_dir, metadata_dir)
}

/// Builds the sdist into `sdist_dir`; returns its file name.
pub(crate) fn build_sdist(req: &Request<'_>, sdist_dir: &Path) -> Result<String, Error> {
    match mode(req)? {
        Mode::Wrapped(w) => crate::wrap::wrapped_sdist(&w, req, sdist_dir),
        Mode::Native(config) => pipeline::sdist(req, *config, sdist_dir),
    }
}
