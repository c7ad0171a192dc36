//! The only file that knows Python: one typed function per PEP 517 hook and per
//! `python -m cudawheel` command. Config settings arrive as a `dict[str, str]`, the facts
//! about the interpreter as JSON (`cudawheel._python_info()`). A hook's error becomes
//! `cudawheel._core.BuildError` with the rendered message; a command (`cli_*`, from `cli/`)
//! returns what to print and its exit status. The GIL is released while Rust works.

use std::collections::BTreeMap;
use std::path::Path;

use pyo3::create_exception;
use pyo3::prelude::*;

use crate::cli;
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

/// What a `python -m cudawheel` command prints: (stdout, stderr, exit status).
type Printed = (String, String, i32);

fn printed(out: cli::Output) -> Printed {
    (out.stdout, out.stderr, out.code)
}

/// A command's project, settings and interpreter facts (bad facts: `BuildError`).
fn project<'a>(path: &'a str, settings: Settings, python_json: &str) -> PyResult<cli::Project<'a>> {
    let (overrides, python) = inputs(settings, python_json).map_err(BuildError::new_err)?;
    Ok(cli::Project {
        path,
        overrides,
        python,
    })
}

/// `cli_wheel(project, out_dir, majors, pythons, settings, python_json)`: `wheel`, per CUDA
/// major and per interpreter.
#[pyfunction]
fn cli_wheel(
    py: Python<'_>,
    project_dir: &str,
    out_dir: &str,
    majors: Vec<u32>,
    pythons: Vec<String>,
    settings: Settings,
    python_json: &str,
) -> PyResult<Printed> {
    let p = project(project_dir, settings, python_json)?;
    Ok(py.detach(|| printed(cli::wheel(&p, out_dir, &majors, &pythons))))
}

#[pyfunction]
fn cli_sdist(
    py: Python<'_>,
    project_dir: &str,
    out_dir: &str,
    settings: Settings,
    python_json: &str,
) -> PyResult<Printed> {
    let p = project(project_dir, settings, python_json)?;
    Ok(py.detach(|| printed(cli::sdist(&p, out_dir))))
}

#[pyfunction]
fn cli_requires(
    py: Python<'_>,
    project_dir: &str,
    settings: Settings,
    python_json: &str,
) -> PyResult<Printed> {
    let p = project(project_dir, settings, python_json)?;
    Ok(py.detach(|| printed(cli::requires(&p))))
}

#[pyfunction]
fn cli_doctor(
    py: Python<'_>,
    project_dir: &str,
    settings: Settings,
    python_json: &str,
) -> PyResult<Printed> {
    let p = project(project_dir, settings, python_json)?;
    Ok(py.detach(|| printed(cli::doctor(&p))))
}

#[pyfunction]
fn cli_env(
    py: Python<'_>,
    project_dir: &str,
    json: bool,
    settings: Settings,
    python_json: &str,
) -> PyResult<Printed> {
    let p = project(project_dir, settings, python_json)?;
    Ok(py.detach(|| printed(cli::env(&p, json))))
}

#[pyfunction]
fn cli_audit(py: Python<'_>, wheels: Vec<String>, json: bool) -> Printed {
    py.detach(|| printed(cli::audit(&wheels, json)))
}

#[pyfunction]
fn cli_size(py: Python<'_>, folder: &str, json: bool) -> Printed {
    py.detach(|| printed(cli::size(folder, json)))
}

/// `cli_check(what, facts_json)`: the verdicts from what `cudawheel._check.facts` reported.
#[pyfunction]
fn cli_check(what: &str, facts_json: &str) -> Printed {
    printed(cli::check(what, facts_json))
}

/// `check_helpers(wheel) -> [(module name, text, origin)]`: the wheel's `_cuda_libs.py` files
/// for `check` to run; `OSError` when the wheel cannot be read.
#[pyfunction]
fn check_helpers(py: Python<'_>, wheel: &str) -> PyResult<Vec<(String, String, String)>> {
    py.detach(|| cli::helper_sources(wheel).map_err(|e| e.to_string()))
        .map_err(pyo3::exceptions::PyOSError::new_err)
}

#[pyfunction]
fn cli_variants_json(py: Python<'_>, folder: &str) -> Printed {
    py.detach(|| printed(cli::variants_json(folder)))
}

/// `cli_repair(wheels, wheel_dir, python_json, cuda, name_suffix)`: each wheel repaired for
/// the interpreter `python_json` describes.
#[pyfunction]
#[pyo3(signature = (wheels, wheel_dir, python_json, cuda=None, name_suffix=None))]
fn cli_repair(
    py: Python<'_>,
    wheels: Vec<String>,
    wheel_dir: &str,
    python_json: &str,
    cuda: Option<u32>,
    name_suffix: Option<String>,
) -> PyResult<Printed> {
    let p = project(".", Settings::new(), python_json)?;
    Ok(py.detach(|| printed(cli::repair(&wheels, wheel_dir, &p, cuda, name_suffix))))
}

/// `gate_launch(argv) -> exit status`: the compiler launcher of a wrapped build
/// (`compile::gate`): waits for memory, runs `argv`, records its peak. The GIL is released
/// while it waits and the compile runs.
#[pyfunction]
fn gate_launch(py: Python<'_>, argv: Vec<String>) -> i32 {
    py.detach(|| crate::compile::gate::launch(&argv))
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(get_requires_for_build_wheel, m)?)?;
    m.add_function(wrap_pyfunction!(get_requires_for_build_editable, m)?)?;
    m.add_function(wrap_pyfunction!(get_requires_for_build_sdist, m)?)?;
    m.add_function(wrap_pyfunction!(prepare_metadata_for_build_wheel, m)?)?;
    m.add_function(wrap_pyfunction!(prepare_metadata_for_build_editable, m)?)?;
    m.add_function(wrap_pyfunction!(build_wheel, m)?)?;
    m.add_function(wrap_pyfunction!(gate_launch, m)?)?;
    m.add_function(wrap_pyfunction!(build_editable, m)?)?;
    m.add_function(wrap_pyfunction!(build_sdist, m)?)?;
    m.add_function(wrap_pyfunction!(cli_wheel, m)?)?;
    m.add_function(wrap_pyfunction!(cli_sdist, m)?)?;
    m.add_function(wrap_pyfunction!(cli_requires, m)?)?;
    m.add_function(wrap_pyfunction!(cli_doctor, m)?)?;
    m.add_function(wrap_pyfunction!(cli_env, m)?)?;
    m.add_function(wrap_pyfunction!(cli_audit, m)?)?;
    m.add_function(wrap_pyfunction!(cli_size, m)?)?;
    m.add_function(wrap_pyfunction!(cli_check, m)?)?;
    m.add_function(wrap_pyfunction!(check_helpers, m)?)?;
    m.add_function(wrap_pyfunction!(cli_variants_json, m)?)?;
    m.add_function(wrap_pyfunction!(cli_repair, m)?)?;
    m.add("BuildError", m.py().get_type::<BuildError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
