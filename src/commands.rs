//! The operations of `python -m cudawheel` beyond the hooks, one function each: the wheels of
//! a project (per CUDA major, split library + bindings), and the readers of finished wheels
//! (audit, GPU code, release size, the variants index), and the repair of wheels built by
//! anything. `bridge.rs` exposes each as one typed
//! Python function.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::audit::{size, wheel_audit};
use crate::config::{Mode, Overrides};
use crate::error::Error;
use crate::inspect::fatbin::GpuCode;
use crate::package::finish::Written;
use crate::package::variants;
use crate::pipeline::{self, Wheels};
use crate::resolve::Request;
use crate::ui;

/// `python -m cudawheel wheel`: the one wheel `build_wheel` makes; with `split = "library"`
/// the binding wheel for this Python and, when `library`, the library wheel
/// `<name>-lib-cu<major>` (`py3-none`) holding the GPU code. A variant build makes both variant
/// wheels of one label (`<name>-lib` and `<name>`, the same properties: the binding's import
/// check reads the library's GPU code). Returns the files written (all or nothing).
pub(crate) fn wheels(
    req: &Request<'_>,
    wheel_dir: &Path,
    library: bool,
) -> Result<Vec<PathBuf>, Error> {
    let config = match Mode::load(req.source_tree, req.overrides)? {
        Mode::Wrapped(w) => return Ok(vec![crate::wrap::wrapped(&w, req, wheel_dir)?]),
        Mode::Native(config) => *config,
    };
    let wheels = match config.tool.split {
        Some(_) => Wheels::Split { library },
        None => Wheels::Whole,
    };
    pipeline::build(req, config, wheels, wheel_dir, None)
}

/// `python -m cudawheel wheel PROJECT -o OUT --cuda 12 --cuda 13`: one build per CUDA major,
/// each with the toolkit discovery finds for that major and its own build-dir
/// (`<build-dir>/cu<major>`); for a variant build, then `OUT/<name>-<version>-variants.json`.
/// No major: the configured one. Returns the files written. Stops at the first failing major
/// and removes the wheels this command wrote before it (all or nothing, as for one wheel).
pub(crate) fn matrix(
    req: &Request<'_>,
    wheel_dir: &Path,
    majors: &[u32],
    library: bool,
) -> Result<Vec<PathBuf>, Error> {
    if majors.is_empty() {
        return wheels(req, wheel_dir, library);
    }
    // Either mode: each major builds in its own build-dir.
    let (tool, variant) = match Mode::load(req.source_tree, req.overrides)? {
        Mode::Native(c) => (c.tool, c.variant),
        Mode::Wrapped(w) => (w.tool, w.variant),
    };
    let mut written = Written::default();
    for &major in majors {
        let overrides = for_major(req.overrides, major, &tool.build_dir);
        let one = Request {
            overrides: &overrides,
            ..req.clone()
        };
        written.extend(wheels(&one, wheel_dir, library)?);
    }
    let mut written = written.commit();
    if variant.is_some() {
        for index in variants::index_for_dir(wheel_dir)? {
            ui::status(&format!("wrote {}", index.display()));
            written.push(index);
        }
    }
    Ok(written)
}

/// `overrides` building CUDA `major` in its own build-dir, `<build_dir>/cu<major>`: the
/// `cuda` and `build-dir` settings replaced (with or without the `cudawheel.` prefix).
fn for_major(overrides: &Overrides, major: u32, build_dir: &str) -> Overrides {
    let mut out = overrides.clone();
    out.settings.retain(|k, _| {
        let bare = k.strip_prefix("cudawheel.").unwrap_or(k);
        bare != "cuda" && bare != "build-dir"
    });
    out.settings.insert("cuda".into(), major.to_string());
    out.settings.insert(
        "build-dir".into(),
        format!("{}/cu{major}", build_dir.trim_end_matches('/')),
    );
    out
}

/// `python -m cudawheel audit WHEEL`: the violations of a finished wheel and the GPU code each
/// of its ELF files carries (ELFs without any left out).
#[derive(Debug, serde::Serialize)]
pub(crate) struct AuditReport {
    /// Each as the build's own audit prints it: where, what, the fix.
    pub(crate) violations: Vec<String>,
    pub(crate) gpu_code: BTreeMap<String, GpuCode>,
    /// Each torch extension's ABI: stable, or the symbols that pin it to one torch minor.
    pub(crate) torch_abi: BTreeMap<String, String>,
}

pub(crate) fn audit(wheel: &Path) -> Result<AuditReport, Error> {
    Ok(AuditReport {
        violations: wheel_audit::audit_wheel(wheel)?
            .iter()
            .map(ToString::to_string)
            .collect(),
        gpu_code: wheel_audit::gpu_code_of_wheel(wheel)?,
        torch_abi: wheel_audit::torch_abi_of_wheel(wheel)?,
    })
}

/// `python -m cudawheel size DIR`: the release report of a folder of wheels.
pub(crate) fn size_report(dir: &Path) -> Result<size::Release, Error> {
    Ok(size::release(dir)?)
}

/// `python -m cudawheel variants-json DIR`: (re)writes `<name>-<version>-variants.json` from
/// the variant wheels in `dir`; returns the files written.
pub(crate) fn variants_json(dir: &Path) -> Result<Vec<PathBuf>, Error> {
    Ok(variants::index_for_dir(dir)?)
}

/// `python -m cudawheel repair WHEEL... -w OUT`: each wheel repaired into `out_dir`
/// (`package::repair` with the standalone settings, for the interpreter `python`; `env`: the
/// caller's environment, for `SOURCE_DATE_EPOCH`; `cuda`: the CUDA major when the wheel links
/// no libcudart). All or nothing: on an error the wheels this command wrote before are
/// removed. Returns the files written.
pub(crate) fn repair(
    wheels: &[PathBuf],
    out_dir: &Path,
    python: &crate::config::PythonInfo,
    env: &BTreeMap<String, String>,
    cuda: Option<u32>,
    name_suffix: Option<String>,
) -> Result<Vec<PathBuf>, Error> {
    use crate::package::repair::{repair_wheel, RepairSettings};
    let mut settings = RepairSettings::standalone()
        .with_python(python.clone())
        .with_cuda_major(cuda)
        .with_epoch(crate::config::source_date_epoch(env)?);
    if let Some(suffix) = name_suffix {
        // `--name-suffix ''` keeps the project's own name (docs/how-to/naming.md).
        settings.name_suffix = suffix;
    }
    let mut written = Written::default();
    for wheel in wheels {
        ui::status(&format!("repairing {}", wheel.display()));
        written.add(repair_wheel(wheel, out_dir, &settings)?);
    }
    Ok(written.commit())
}

/// `python -m cudawheel env`: the environment a build cudawheel does not run needs to find
/// cudawheel's CUDA toolkit and choices (the toolkit folder, made in `build-dir/toolkit`;
/// `CUDACXX`, `CUDA_HOME`, `CUDAToolkit_ROOT`, the archs, host compiler, launcher,
/// parallelism), as `(name, value)` pairs in order.
pub(crate) fn env(req: &Request<'_>) -> Result<Vec<(String, String)>, Error> {
    let w = crate::config::wrapped::load_for_env(req.source_tree, req.overrides)?;
    let prepared = crate::compile::wrapped_env::prepare(&w, &req.overrides.env, req.python)?;
    Ok(prepared.env.vars)
}
