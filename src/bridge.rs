//! The only file that knows Python: one entry point the `cudawheel` package's hooks call.
//! Inputs arrive as JSON strings (config settings, facts about the interpreter); the result
//! goes back as JSON. Errors become `cudawheel._core.BuildError` with the rendered message.

use std::collections::BTreeMap;
use std::path::Path;

use pyo3::create_exception;
use pyo3::prelude::*;

use crate::config::Overrides;
use crate::config::PythonInfo;
use crate::error::Error;
use crate::pep517::{self, Request};

create_exception!(_core, BuildError, pyo3::exceptions::PyException);

/// The config settings and interpreter facts every entry point receives as JSON.
fn parse_inputs(settings_json: &str, python_json: &str) -> Result<(Overrides, PythonInfo), String> {
    let settings: BTreeMap<String, String> = serde_json::from_str(settings_json)
        .map_err(|e| format!("cudawheel: internal error: bad settings: {e}"))?;
    let python: PythonInfo = serde_json::from_str(python_json)
        .map_err(|e| format!("cudawheel: internal error: bad interpreter facts: {e}"))?;
    Ok((Overrides::from_process_env(settings), python))
}

fn run(
    hook: &str,
    source_tree: &str,
    output_dir: Option<&str>,
    metadata_dir: Option<&str>,
    settings_json: &str,
    python_json: &str,
) -> Result<String, String> {
    let (overrides, python) = parse_inputs(settings_json, python_json)?;
    let req = Request {
        source_tree: Path::new(source_tree),
        overrides: &overrides,
        python: &python,
    };
    let out = || Path::new(output_dir.unwrap_or("."));
    let result = match hook {
        "get_requires_for_build_wheel" | "get_requires_for_build_editable" => {
            pep517::get_requires_for_build_wheel(&req).map(|v| serde_json::json!(v))
        }
        "get_requires_for_build_sdist" => {
            pep517::get_requires_for_build_sdist(&req).map(|v| serde_json::json!(v))
        }
        "prepare_metadata_for_build_wheel" | "prepare_metadata_for_build_editable" => {
            pep517::prepare_metadata_for_build_wheel(&req, out()).map(|v| serde_json::json!(v))
        }
        "build_wheel" => pep517::build_wheel(&req, out(), metadata_dir.map(Path::new))
            .map(|v| serde_json::json!(v)),
        "build_editable" => pep517::build_editable(&req, out(), metadata_dir.map(Path::new))
            .map(|v| serde_json::json!(v)),
        "build_sdist" => pep517::build_sdist(&req, out()).map(|v| serde_json::json!(v)),
        "doctor" => Ok(serde_json::json!(crate::doctor::report(
            req.source_tree,
            req.overrides,
            req.python
        ))),
        "audit" => crate::audit::wheel_audit::audit_wheel(Path::new(source_tree))
            .map(|v| serde_json::json!(v.iter().map(ToString::to_string).collect::<Vec<_>>()))
            .map_err(Error::from),
        "gpu_code" => crate::audit::wheel_audit::gpu_code_of_wheel(Path::new(source_tree))
            .map(|v| serde_json::json!(v))
            .map_err(Error::from),
        other => return Err(format!("cudawheel: internal error: unknown hook {other}")),
    };
    result.map(|v| v.to_string()).map_err(|e| crate::render(&e))
}

/// `hook(name, source_tree, output_dir, metadata_dir, settings_json, python_json) -> json`
#[pyfunction]
#[pyo3(signature = (name, source_tree, output_dir, metadata_dir, settings_json, python_json))]
fn hook(
    py: Python<'_>,
    name: &str,
    source_tree: &str,
    output_dir: Option<&str>,
    metadata_dir: Option<&str>,
    settings_json: &str,
    python_json: &str,
) -> PyResult<String> {
    py.detach(|| {
        run(
            name,
            source_tree,
            output_dir,
            metadata_dir,
            settings_json,
            python_json,
        )
    })
    .map_err(BuildError::new_err)
}

/// `build_matrix(source_tree, output_dir, majors, settings_json, python_json, library=True)
/// -> [paths]`: one wheel per CUDA major (and the variants index for a variant build); an
/// empty `majors`: the wheels of the configured major (`pep517::build_wheels`). `library`:
/// with `split = "library"`, also write the library wheel.
#[pyfunction]
#[pyo3(signature = (source_tree, output_dir, majors, settings_json, python_json, library=true))]
fn build_matrix(
    py: Python<'_>,
    source_tree: &str,
    output_dir: &str,
    majors: Vec<u32>,
    settings_json: &str,
    python_json: &str,
    library: bool,
) -> PyResult<Vec<String>> {
    py.detach(|| -> Result<Vec<String>, String> {
        let (overrides, python) = parse_inputs(settings_json, python_json)?;
        let req = Request {
            source_tree: Path::new(source_tree),
            overrides: &overrides,
            python: &python,
        };
        let out = Path::new(output_dir);
        let written = if majors.is_empty() {
            pep517::build_wheels(&req, out, library)
        } else {
            pep517::build_matrix(&req, out, &majors, library)
        };
        written
            .map(|v| v.iter().map(|p| p.display().to_string()).collect())
            .map_err(|e| crate::render(&e))
    })
    .map_err(BuildError::new_err)
}

/// `variants_json(dir) -> [paths]`: (re)writes `<name>-<version>-variants.json` from the
/// variant wheels in `dir`.
#[pyfunction]
fn variants_json(py: Python<'_>, dir: &str) -> PyResult<Vec<String>> {
    py.detach(|| {
        crate::package::variants::index_for_dir(Path::new(dir))
            .map(|v| v.iter().map(|p| p.display().to_string()).collect())
            .map_err(|e| crate::render(&Error::from(e)))
    })
    .map_err(BuildError::new_err)
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(hook, m)?)?;
    m.add_function(wrap_pyfunction!(build_matrix, m)?)?;
    m.add_function(wrap_pyfunction!(variants_json, m)?)?;
    m.add("BuildError", m.py().get_type::<BuildError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
