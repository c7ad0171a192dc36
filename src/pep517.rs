//! The PEP 517 hooks (and PEP 660's), each a stateless function: the build itself is
//! `pipeline::build`, the same one `python -m cudawheel wheel` runs. Every hook re-reads
//! pyproject.toml, as PEP 517 allows each hook to run in a fresh process.

use std::path::Path;

use crate::compile::wrapped::WrapError;
use crate::config::{wrapped, Config};
use crate::error::Error;
use crate::package::archive::Files;
use crate::package::wheel as wheel_files;
use crate::pipeline::{self, Wheels};

pub(crate) use crate::resolve::{build_requirements, resolve, Request};

/// Wrap mode (`build-backend` set): its settings, else `None`.
fn wrapping(req: &Request<'_>) -> Result<Option<wrapped::Wrapped>, Error> {
    Ok(wrapped::load(req.source_tree, req.overrides)?)
}

/// Wrap mode makes no editable wheel.
fn no_editable_wrap(req: &Request<'_>) -> Result<(), Error> {
    match wrapping(req)? {
        Some(w) => Err(WrapError::Editable { backend: w.backend }.into()),
        None => Ok(()),
    }
}

pub(crate) fn get_requires_for_build_wheel(req: &Request<'_>) -> Result<Vec<String>, Error> {
    if let Some(w) = wrapping(req)? {
        return crate::wrap::wrapped_requires(&w, req, "get_requires_for_build_wheel");
    }
    let config = Config::load(req.source_tree, req.overrides)?;
    build_requirements(&config.tool, &req.overrides.env, req.python)
}

/// PEP 660's: the same as for a wheel.
pub(crate) fn get_requires_for_build_editable(req: &Request<'_>) -> Result<Vec<String>, Error> {
    no_editable_wrap(req)?;
    get_requires_for_build_wheel(req)
}

pub(crate) fn get_requires_for_build_sdist(req: &Request<'_>) -> Result<Vec<String>, Error> {
    if let Some(w) = wrapping(req)? {
        return crate::wrap::wrapped_requires(&w, req, "get_requires_for_build_sdist");
    }
    Config::load(req.source_tree, req.overrides)?;
    Ok(Vec::new())
}

/// Writes `<name>-<version>.dist-info/` into `metadata_dir`; returns its name.
pub(crate) fn prepare_metadata_for_build_wheel(
    req: &Request<'_>,
    metadata_dir: &Path,
) -> Result<String, Error> {
    if let Some(w) = wrapping(req)? {
        return crate::wrap::wrapped_metadata(&w, req, metadata_dir);
    }
    let r = resolve(req)?;
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
    no_editable_wrap(req)?;
    prepare_metadata_for_build_wheel(req, metadata_dir)
}

/// Builds the wheel into `wheel_dir`; returns its file name. A frontend asks for one wheel:
/// `split = "library"` is left to `python -m cudawheel wheel`, and said so.
pub(crate) fn build_wheel(
    req: &Request<'_>,
    wheel_dir: &Path,
    metadata_dir: Option<&Path>,
) -> Result<String, Error> {
    if let Some(w) = wrapping(req)? {
        return crate::wrap::wrapped_wheel(&w, req, wheel_dir, metadata_dir);
    }
    pipeline::build_one(req, Wheels::Whole, wheel_dir, metadata_dir)
}

/// PEP 660: builds the extensions, puts them (and `_cuda_libs.py`) next to the sources in
/// `python-source`, and returns a wheel whose `.pth` adds that folder to `sys.path`. Python
/// edits show at once; after a `.cu`/`.c` edit, run `pip install -e .` again.
pub(crate) fn build_editable(
    req: &Request<'_>,
    wheel_dir: &Path,
    metadata_dir: Option<&Path>,
) -> Result<String, Error> {
    no_editable_wrap(req)?;
    pipeline::build_one(req, Wheels::Editable, wheel_dir, metadata_dir)
}

/// Builds the sdist into `sdist_dir`; returns its file name.
pub(crate) fn build_sdist(req: &Request<'_>, sdist_dir: &Path) -> Result<String, Error> {
    if let Some(w) = wrapping(req)? {
        return crate::wrap::wrapped_sdist(&w, req, sdist_dir);
    }
    pipeline::sdist(req, sdist_dir)
}
