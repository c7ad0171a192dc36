//! The PEP 517 hooks (and PEP 660's), each a stateless function: the build itself is
//! `pipeline::build`, the same one `python -m cudawheel wheel` runs. Every hook re-reads
//! pyproject.toml, as PEP 517 allows each hook to run in a fresh process.

use std::path::{Path, PathBuf};

use crate::config::Config;
use crate::error::Error;
use crate::package::archive::{self, Files};
use crate::package::wheel as wheel_files;
use crate::package::{self, sdist, variants};
use crate::pipeline::{self, Wheels};
use crate::plan::{driver_floors, BuildPlan};
use crate::toolchain;
use crate::ui;

pub use crate::resolve::{build_requirements, resolve, Request, Resolved};

pub fn get_requires_for_build_wheel(req: &Request<'_>) -> Result<Vec<String>, Error> {
    let config = Config::load(req.source_tree, req.overrides)?;
    variants::Spec::from_config(&config.tool, config.variant_table.as_ref())?;
    build_requirements(&config.tool, &req.overrides.env, req.python)
}

/// PEP 660's: the same as for a wheel.
pub fn get_requires_for_build_editable(req: &Request<'_>) -> Result<Vec<String>, Error> {
    get_requires_for_build_wheel(req)
}

pub fn get_requires_for_build_sdist(req: &Request<'_>) -> Result<Vec<String>, Error> {
    Config::load(req.source_tree, req.overrides)?;
    Ok(Vec::new())
}

/// Writes `<name>-<version>.dist-info/` into `metadata_dir`; returns its name.
pub fn prepare_metadata_for_build_wheel(
    req: &Request<'_>,
    metadata_dir: &Path,
) -> Result<String, Error> {
    let r = resolve(req)?;
    let mut files = Files::default();
    r.dist_info().add_files(&mut files)?;
    wheel_files::write_tree(metadata_dir, files)?;
    Ok(r.dist_info().dir())
}

/// PEP 660's: the same `.dist-info` as for a wheel.
pub fn prepare_metadata_for_build_editable(
    req: &Request<'_>,
    metadata_dir: &Path,
) -> Result<String, Error> {
    prepare_metadata_for_build_wheel(req, metadata_dir)
}

/// Builds the wheel into `wheel_dir`; returns its file name. A frontend asks for one wheel:
/// `split = "library"` is left to `python -m cudawheel wheel`, and said so.
pub fn build_wheel(
    req: &Request<'_>,
    wheel_dir: &Path,
    metadata_dir: Option<&Path>,
) -> Result<String, Error> {
    let written = pipeline::build(req, Wheels::Whole, wheel_dir, metadata_dir)?;
    Ok(file_name(&written))
}

/// PEP 660: builds the extensions, puts them (and `_cuda_libs.py`) next to the sources in
/// `python-source`, and returns a wheel whose `.pth` adds that folder to `sys.path`. Python
/// edits show at once; after a `.cu`/`.c` edit, run `pip install -e .` again.
pub fn build_editable(
    req: &Request<'_>,
    wheel_dir: &Path,
    metadata_dir: Option<&Path>,
) -> Result<String, Error> {
    let written = pipeline::build(req, Wheels::Editable, wheel_dir, metadata_dir)?;
    Ok(file_name(&written))
}

/// The file name of the one wheel a hook wrote.
fn file_name(written: &[PathBuf]) -> String {
    written
        .first()
        .and_then(|p| p.file_name())
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Builds the sdist into `sdist_dir`; returns its file name.
pub fn build_sdist(req: &Request<'_>, sdist_dir: &Path) -> Result<String, Error> {
    let config = Config::load(req.source_tree, req.overrides)?;
    let plan = BuildPlan::new(&config, req.python)?;
    let variant = variants::Spec::from_config(&config.tool, config.variant_table.as_ref())?;
    // A variant sdist has the project's own name and builds every CUDA major: no major is
    // pinned, and discovery need not find a toolkit.
    let major = match variant {
        Some(_) => None,
        None => Some(toolchain::resolve_major(
            &config.tool,
            &req.overrides.env,
            req.python,
        )?),
    };
    let name = package::dist_name(&config, variant.as_ref(), major.unwrap_or(0));
    let top = format!("{}-{}", name.file_stem(), config.project.version);
    let files = sdist::contents(&config, &plan, &name, major)?;
    let filename = format!("{top}.tar.gz");
    archive::write_sdist(sdist_dir, &filename, &top, files, config.source_date_epoch)?;
    ui::status(&format!("built {filename}"));
    Ok(filename)
}

/// What a wheel built now would be, short of compiling: for `python -m cudawheel doctor`.
#[derive(Debug, Clone)]
pub struct WheelPreview {
    /// `saxpy_cu13-0.1.0-cp39-abi3` (the platform tag needs the linked ELF files).
    pub file_prefix: String,
    /// `Requires-Dist` of the METADATA the build would write.
    pub requires: Vec<String>,
    /// The driver floors the wheel would record (`plan::driver_floors`).
    pub floors: Vec<driver_floors::Floor>,
    /// The extensions that would run the GPU check at import (`check-gpu`).
    pub checked_at_import: Vec<String>,
}

pub fn preview_wheel(req: &Request<'_>) -> Result<WheelPreview, Error> {
    let r = resolve(req)?;
    let (py, abi) = r.python.tag(r.plan.limited_api);
    let requires = r
        .dist_info()
        .metadata()
        .lines()
        .take_while(|l| !l.is_empty())
        .filter_map(|l| l.strip_prefix("Requires-Dist: ").map(str::to_string))
        .collect();
    Ok(WheelPreview {
        file_prefix: format!(
            "{}-{}-{py}-{abi}",
            r.name.file_stem(),
            r.config.project.version
        ),
        requires,
        checked_at_import: r
            .plan
            .generated
            .iter()
            .filter_map(|(path, _)| path.file_stem())
            .map(|stem| stem.to_string_lossy().into_owned())
            .collect(),
        floors: r.floors,
    })
}
