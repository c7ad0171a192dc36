//! The only file that knows Python: one typed function per PEP 517 hook and per
//! `python -m cudawheel` operation. Config settings arrive as a `dict[str, str]`, the facts
//! about the interpreter as JSON (`cudawheel._python_info()`); reports go back as JSON text.
//! Errors become `cudawheel._core.BuildError` with the rendered message. The GIL is released
//! while Rust works.

use std::collections::BTreeMap;
use std::path::Path;

use pyo3::create_exception;
use pyo3::prelude::*;

use crate::commands;
use crate::config::{Overrides, PythonInfo};
use crate::error::Error;
use crate::pep517::{self, Request};

create_exception!(_core, BuildError, pyo3::exceptions::PyException);

type Settings = BTreeMap<String, String>;

/// The overrides (settings + this process's environment) and interpreter facts of a call.
fn inputs(settings: Settings, python_json: &str) -> Result<(Overrides, PythonInfo), String> {
    let python: PythonInfo = serde_json::from_str(python_json)
        .map_err(|e| format!("cudawheel: internal error: bad interpreter facts: {e}"))?;
    Ok((Overrides::from_process_env(settings), python))
}

/// Runs `f` on the request for `source_tree` without the GIL; an error becomes `BuildError`.
fn with_request<T: Send>(
    py: Python<'_>,
    source_tree: &str,
    settings: Settings,
    python_json: &str,
    f: impl FnOnce(&Request<'_>) -> Result<T, Error> + Send,
) -> PyResult<T> {
    py.detach(|| {
        let (overrides, python) = inputs(settings, python_json)?;
        let req = Request {
            source_tree: Path::new(source_tree),
            overrides: &overrides,
            python: &python,
        };
        f(&req).map_err(|e| crate::render(&e))
    })
    .map_err(BuildError::new_err)
}

/// Runs `f` without the GIL; an error becomes `BuildError`.
fn detached<T: Send>(py: Python<'_>, f: impl FnOnce() -> Result<T, Error> + Send) -> PyResult<T> {
    py.detach(|| f().map_err(|e| crate::render(&e)))
        .map_err(BuildError::new_err)
}

fn to_json(value: &impl serde::Serialize) -> Result<String, Error> {
    // Plain data (strings, numbers, maps): serializing cannot fail.
    Ok(serde_json::to_string(value).unwrap_or_default())
}

fn paths(written: Vec<std::path::PathBuf>) -> Vec<String> {
    written.iter().map(|p| p.display().to_string()).collect()
}

#[pyfunction]
fn get_requires_for_build_wheel(
    py: Python<'_>,
    source_tree: &str,
    settings: Settings,
    python_json: &str,
) -> PyResult<Vec<String>> {
    with_request(py, source_tree, settings, python_json, |req| {
        pep517::get_requires_for_build_wheel(req)
    })
}

#[pyfunction]
fn get_requires_for_build_editable(
    py: Python<'_>,
    source_tree: &str,
    settings: Settings,
    python_json: &str,
) -> PyResult<Vec<String>> {
    with_request(py, source_tree, settings, python_json, |req| {
        pep517::get_requires_for_build_editable(req)
    })
}

#[pyfunction]
fn get_requires_for_build_sdist(
    py: Python<'_>,
    source_tree: &str,
    settings: Settings,
    python_json: &str,
) -> PyResult<Vec<String>> {
    with_request(py, source_tree, settings, python_json, |req| {
        pep517::get_requires_for_build_sdist(req)
    })
}

#[pyfunction]
fn prepare_metadata_for_build_wheel(
    py: Python<'_>,
    source_tree: &str,
    metadata_directory: &str,
    settings: Settings,
    python_json: &str,
) -> PyResult<String> {
    with_request(py, source_tree, settings, python_json, |req| {
        pep517::prepare_metadata_for_build_wheel(req, Path::new(metadata_directory))
    })
}

#[pyfunction]
fn prepare_metadata_for_build_editable(
    py: Python<'_>,
    source_tree: &str,
    metadata_directory: &str,
    settings: Settings,
    python_json: &str,
) -> PyResult<String> {
    with_request(py, source_tree, settings, python_json, |req| {
        pep517::prepare_metadata_for_build_editable(req, Path::new(metadata_directory))
    })
}

#[pyfunction]
#[pyo3(signature = (source_tree, wheel_directory, metadata_directory, settings, python_json))]
fn build_wheel(
    py: Python<'_>,
    source_tree: &str,
    wheel_directory: &str,
    metadata_directory: Option<&str>,
    settings: Settings,
    python_json: &str,
) -> PyResult<String> {
    with_request(py, source_tree, settings, python_json, |req| {
        pep517::build_wheel(
            req,
            Path::new(wheel_directory),
            metadata_directory.map(Path::new),
        )
    })
}

#[pyfunction]
#[pyo3(signature = (source_tree, wheel_directory, metadata_directory, settings, python_json))]
fn build_editable(
    py: Python<'_>,
    source_tree: &str,
    wheel_directory: &str,
    metadata_directory: Option<&str>,
    settings: Settings,
    python_json: &str,
) -> PyResult<String> {
    with_request(py, source_tree, settings, python_json, |req| {
        pep517::build_editable(
            req,
            Path::new(wheel_directory),
            metadata_directory.map(Path::new),
        )
    })
}

#[pyfunction]
fn build_sdist(
    py: Python<'_>,
    source_tree: &str,
    sdist_directory: &str,
    settings: Settings,
    python_json: &str,
) -> PyResult<String> {
    with_request(py, source_tree, settings, python_json, |req| {
        pep517::build_sdist(req, Path::new(sdist_directory))
    })
}

/// `doctor(project, settings, python_json) -> str`: the report (never fails on the project).
#[pyfunction]
fn doctor(
    py: Python<'_>,
    project: &str,
    settings: Settings,
    python_json: &str,
) -> PyResult<String> {
    with_request(py, project, settings, python_json, |req| {
        Ok(crate::doctor::report(
            req.source_tree,
            req.overrides,
            req.python,
        ))
    })
}

/// `env(project, settings, python_json) -> [(name, value)]`: the environment of a build
/// cudawheel does not run (the toolkit folder, `CUDACXX`, `CUDA_HOME`, the archs, ...).
#[pyfunction]
fn env(
    py: Python<'_>,
    project: &str,
    settings: Settings,
    python_json: &str,
) -> PyResult<Vec<(String, String)>> {
    with_request(py, project, settings, python_json, commands::env)
}

/// `wheels(project, output_dir, majors, settings, python_json, library=True) -> [paths]`: one
/// build per CUDA major (none: the configured one), with `split = "library"` the binding wheel
/// and, when `library`, the library wheel; for a variant build then the variants index.
#[pyfunction]
#[pyo3(signature = (project, output_dir, majors, settings, python_json, library=true))]
fn wheels(
    py: Python<'_>,
    project: &str,
    output_dir: &str,
    majors: Vec<u32>,
    settings: Settings,
    python_json: &str,
    library: bool,
) -> PyResult<Vec<String>> {
    with_request(py, project, settings, python_json, |req| {
        commands::matrix(req, Path::new(output_dir), &majors, library).map(paths)
    })
}

/// `audit(wheel) -> json`: `{"violations": [str], "gpu_code": {elf: {...}}}`.
#[pyfunction]
fn audit(py: Python<'_>, wheel: &str) -> PyResult<String> {
    detached(py, || to_json(&commands::audit(Path::new(wheel))?))
}

/// `size_report(dir) -> json`: the release report of the wheels in `dir`.
#[pyfunction]
fn size_report(py: Python<'_>, dir: &str) -> PyResult<String> {
    detached(py, || to_json(&commands::size_report(Path::new(dir))?))
}

/// `variants_json(dir) -> [paths]`: (re)writes `<name>-<version>-variants.json` from the
/// variant wheels in `dir`.
#[pyfunction]
fn variants_json(py: Python<'_>, dir: &str) -> PyResult<Vec<String>> {
    detached(py, || commands::variants_json(Path::new(dir)).map(paths))
}

/// `repair(wheels, out_dir, python_json, cuda, name_suffix) -> [paths]`: each wheel repaired
/// into `out_dir` for the interpreter `python_json` describes.
#[pyfunction]
#[pyo3(signature = (wheels, out_dir, python_json, cuda=None, name_suffix=None))]
fn repair(
    py: Python<'_>,
    wheels: Vec<String>,
    out_dir: &str,
    python_json: &str,
    cuda: Option<u32>,
    name_suffix: Option<String>,
) -> PyResult<Vec<String>> {
    let python: PythonInfo = serde_json::from_str(python_json).map_err(|e| {
        BuildError::new_err(format!(
            "cudawheel: internal error: bad interpreter facts: {e}"
        ))
    })?;
    let wheels: Vec<std::path::PathBuf> = wheels.iter().map(std::path::PathBuf::from).collect();
    detached(py, || {
        commands::repair(&wheels, Path::new(out_dir), &python, cuda, name_suffix).map(paths)
    })
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(get_requires_for_build_wheel, m)?)?;
    m.add_function(wrap_pyfunction!(get_requires_for_build_editable, m)?)?;
    m.add_function(wrap_pyfunction!(get_requires_for_build_sdist, m)?)?;
    m.add_function(wrap_pyfunction!(prepare_metadata_for_build_wheel, m)?)?;
    m.add_function(wrap_pyfunction!(prepare_metadata_for_build_editable, m)?)?;
    m.add_function(wrap_pyfunction!(build_wheel, m)?)?;
    m.add_function(wrap_pyfunction!(build_editable, m)?)?;
    m.add_function(wrap_pyfunction!(build_sdist, m)?)?;
    m.add_function(wrap_pyfunction!(doctor, m)?)?;
    m.add_function(wrap_pyfunction!(wheels, m)?)?;
    m.add_function(wrap_pyfunction!(audit, m)?)?;
    m.add_function(wrap_pyfunction!(size_report, m)?)?;
    m.add_function(wrap_pyfunction!(variants_json, m)?)?;
    m.add_function(wrap_pyfunction!(repair, m)?)?;
    m.add_function(wrap_pyfunction!(env, m)?)?;
    m.add("BuildError", m.py().get_type::<BuildError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
