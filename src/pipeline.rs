//! The build, composed once for the hooks and the CLI:
//!
//! ```text
//! resolve (config ─► plan ─► toolchain ─► libraries ─► bindings)
//!   ─► compile (graph, schedule, link) ─► audit (ELF, tag) ─► package (the wheels described)
//!   ─► wheel audit ─► size check ─► summary
//! ```

use std::path::{Path, PathBuf};

use crate::audit::{self, tag::WheelTag};
use crate::bindings::torch;
use crate::compile::{self, graph, incremental::BuildLock, schedule};
use crate::config::{Config, CudaDeps};
use crate::error::Error;
use crate::package::finish::{finish, Finish, Written};
use crate::package::metadata;
use crate::package::variants;
use crate::package::wheel as wheel_files;
use crate::package::wheels::{self, Layout, SplitLibrary, WheelSpec};
use crate::package::{self, archive, sdist};
use crate::plan::{driver_floors, BuildPlan};
use crate::resolve::{resolve_with, Request, Resolved};
use crate::toolchain::{self, ToolchainError};
use crate::ui;

mod several;

pub(crate) use several::write_metadata as write_several_metadata;

/// Which wheels a build writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wheels {
    /// One ordinary wheel.
    Whole,
    /// PEP 660: the extensions placed next to the sources, a wheel holding a `.pth`.
    Editable,
    /// `split = "library"`: the binding wheel and, when `library`, the library wheel.
    Split { library: bool },
}

/// What compiling and linking produced, audited.
struct Built {
    /// Staging folder holding every target at its wheel path.
    out_dir: PathBuf,
    checked: audit::built::Checked,
    tag: WheelTag,
    timing: Timing,
    /// Held until the wheels are written from `out_dir`.
    _lock: BuildLock,
}

/// Where a build's time went, for the summary.
#[derive(Debug, Default)]
struct Timing {
    /// Reading the configuration, finding the toolchain and libraries.
    configure: f64,
    steps: schedule::Stats,
    /// What the compiler launcher served during the compile stage (its summary line).
    launcher: Option<String>,
    /// ELF checks and the platform tag.
    audit: f64,
}

/// Builds the project and writes `wheels` into `wheel_dir`, after checking the METADATA
/// prepared earlier (`metadata_dir`); returns the files written (all or nothing).
pub(crate) fn build(
    req: &Request<'_>,
    config: Config,
    wheels: Wheels,
    wheel_dir: &Path,
    metadata_dir: Option<&Path>,
) -> Result<Vec<PathBuf>, Error> {
    if let Some(parts) = config.parts() {
        return several::build(req, parts, wheels, wheel_dir, metadata_dir);
    }
    let start = std::time::Instant::now();
    let r = resolve_with(req, config, matches!(wheels, Wheels::Split { .. }))?;
    check_prepared(&r, metadata_dir)?;
    let configure = start.elapsed().as_secs_f64();
    // `built` holds the build-dir lock until the wheels are written.
    let mut built = compile_and_link(&r)?;
    built.timing.configure = configure;
    if wheels == Wheels::Whole && r.config.tool.split.is_some() {
        // Only the `build_wheel` hook asks for one wheel of a split project.
        ui::status("split = \"library\": a PEP 517 frontend takes one wheel, so this is one ordinary wheel (GPU code inside); `python -m cudawheel wheel . -o dist --python PY ...` writes the library wheel and the binding wheels");
    }
    if let (Some(minor), None) = (r.config.tool.py_limited_api, r.plan.limited_api) {
        let tag = &built.tag;
        ui::status(&format!("py-limited-api = \"cp3{minor}\": Python {}.{}t is free-threaded, where the limited API does not exist (before 3.15's abi3t), so this is a version-specific {}-{} wheel", r.python.version.0, r.python.version.1, tag.python, tag.abi));
    }
    let helpers = import_helpers(&r, &built);
    if wheels == Wheels::Editable {
        place_editable(&r, &built, &helpers)?;
    }
    let requires = |sonames: &_| r.requirements(sonames).0;
    let layout = match wheels {
        Wheels::Whole => Layout::Whole,
        Wheels::Editable => Layout::Editable {
            source: &r.plan.python_source,
            check_gpu: r.config.tool.check_gpu,
        },
        Wheels::Split { library } => {
            let major = r.toolchain.nvcc.major;
            Layout::Split(SplitLibrary {
                folder: crate::plan::split::library_folder(&r.config, major),
                name: metadata::DistName::new(
                    &r.config.project,
                    &crate::plan::split::library_suffix(&r.config, major),
                ),
                pin: crate::plan::split::library_requirement(&r.config, major),
                write_library: library,
                requires: &requires,
            })
        }
    };
    let package = wheels::Build {
        dist: r.dist_info(),
        tag: built.tag.clone(),
        targets: &r.plan.targets,
        reports: &built.checked.reports,
        out_dir: &built.out_dir,
        python_source: &r.plan.python_source,
        packages: &r.plan.packages,
        helpers,
        build_dir: &r.plan.build_dir,
    };
    let specs = wheels::describe(&package, &layout)?;
    write_all(&r, &built, wheel_dir, specs)
}

/// Checks the METADATA prepared earlier (PEP 517 passes the `.dist-info` folder itself).
fn check_prepared(r: &Resolved, metadata_dir: Option<&Path>) -> Result<(), Error> {
    check_prepared_dist(&r.dist_info(), metadata_dir)
}

/// `check_prepared` for the `.dist-info` `dist`.
fn check_prepared_dist(
    dist: &wheel_files::DistInfo<'_>,
    metadata_dir: Option<&Path>,
) -> Result<(), Error> {
    let Some(md) = metadata_dir else {
        return Ok(());
    };
    let file = if md.extension().is_some_and(|e| e == "dist-info") {
        md.join("METADATA")
    } else {
        md.join(dist.dir()).join("METADATA")
    };
    let prepared = std::fs::read_to_string(&file).unwrap_or_default();
    if prepared != dist.metadata() {
        return Err(Error::InconsistentMetadata(file.display().to_string()));
    }
    Ok(())
}

/// Compile, device-link, link (one graph), then audit and tag.
fn compile_and_link(r: &Resolved) -> Result<Built, Error> {
    let tool = &r.config.tool;
    let (tc, gencodes) = compile::prepare(
        &r.toolchain,
        &r.plan,
        r.libs.get("cudart"),
        tool.verbose,
        &format!("{} {}", r.name.display, r.config.project.version),
    )?;
    let lock = compile::lock(&r.plan.build_dir)?;
    compile::job::write_generated(&r.plan)?;
    if let Some(warning) = driver_floors::warning(r.toolchain.nvcc.major, &r.floors) {
        ui::warn(&warning);
    }
    if let Some(zig) = &tc.zig {
        toolchain::zig::write_files(zig, &r.python).map_err(ToolchainError::from)?;
    }
    let inputs: Vec<graph::TargetInputs> = r
        .plan
        .targets
        .iter()
        .zip(gencodes)
        .enumerate()
        .map(|(i, (t, gencodes))| graph::TargetInputs {
            libs: r.libs_of(i),
            linked: r.linked_of(t),
            gencodes,
        })
        .collect();
    let g = graph::build(&r.plan, &tc, &r.python, &inputs, tool.system_rpath)?;
    let opts = compile::RunOptions {
        verbose: tool.verbose,
        max_memory: tool.max_memory,
    };
    let ran = compile::run(&r.plan, &tc, &r.python, g.steps, &opts)?;

    let audit_start = std::time::Instant::now();
    let out_dir = r.plan.build_dir.join("out");
    let provided = r.provided();
    let want = audit::built::Expect {
        rpaths: &g.rpaths,
        provided: &provided,
        system_rpath: tool.system_rpath,
        headers: &tc.headers,
        cudart: r.libs.get("cudart"),
        objects: &g.objects,
        root: &r.config.root,
    };
    let checked = audit::built::check(&r.plan.targets, &out_dir, &want)?;
    // Requires-Dist derived from what was linked must be what discovery expected.
    wheels::check_requires(
        r.requirements(&checked.needed),
        &r.cuda_requires,
        &r.torch_requires,
    )
    .map_err(|e| Error::InconsistentMetadata(e.to_string()))?;
    let mode = audit::tag::Mode::of_build(
        tc.zig.as_ref().map(|z| z.glibc.minor),
        tool.system_rpath,
        r.libs.values(),
    );
    let platform = audit::tag::choose(
        &mode,
        &r.plan.targets,
        &out_dir,
        &checked.reports,
        &r.python.machine,
        &provided,
    )?;
    let (python, abi) = r.python.tag(r.plan.limited_api);
    Ok(Built {
        out_dir,
        checked,
        tag: WheelTag {
            python,
            abi,
            platform,
        },
        timing: Timing {
            configure: 0.0,
            steps: ran.stats,
            launcher: ran.launcher,
            audit: audit_start.elapsed().as_secs_f64(),
        },
        _lock: lock,
    })
}

/// `<package>/_cuda_libs.py` per package holding built targets.
fn import_helpers(r: &Resolved, built: &Built) -> Vec<(String, String)> {
    // The extra as METADATA has it (`cuda-pip`): every pip matches that spelling.
    let extra = metadata::normalize_extra(&r.config.tool.cuda_extra);
    let extra = (r.config.tool.cuda_deps == CudaDeps::Extra)
        .then_some((r.name.display.as_str(), extra.as_str()));
    import_helpers_with(r, built, extra)
}

/// `import_helpers`, a missing library's message naming `extra` (distribution, extra).
fn import_helpers_with(
    r: &Resolved,
    built: &Built,
    extra: Option<(&str, &str)>,
) -> Vec<(String, String)> {
    wheel_files::import_helpers(
        &r.plan.targets,
        &built.checked.reports,
        &built.checked.gpu_code,
        // torch's own libraries come with `import torch`, not from this table.
        r.libs.values().filter(|l| !torch::is_torch_library(l)),
        (r.toolchain.nvcc.major, r.toolchain.nvcc.minor),
        extra,
        &r.floors,
    )
}

/// PEP 660: puts the built extensions and the import helpers next to the sources in
/// `python-source`. Python edits show at once; after a `.cu`/`.c` edit, install again.
fn place_editable(r: &Resolved, built: &Built, helpers: &[(String, String)]) -> Result<(), Error> {
    let mut placed: Vec<(String, Vec<u8>)> = Vec::new();
    for target in &r.plan.targets {
        let file = built.out_dir.join(&target.wheel_path);
        let bytes = std::fs::read(&file).map_err(|source| archive::ArchiveError::Io {
            path: file.clone(),
            source,
        })?;
        placed.push((target.wheel_path.clone(), bytes));
    }
    for (path, text) in helpers {
        placed.push((path.clone(), text.clone().into_bytes()));
    }
    wheel_files::place_in_tree(&r.plan.python_source, &placed)?;
    Ok(())
}

/// Writes each wheel in turn; on a failure removes those written before it.
fn write_all(
    r: &Resolved,
    built: &Built,
    wheel_dir: &Path,
    specs: Vec<WheelSpec>,
) -> Result<Vec<PathBuf>, Error> {
    let mut written = Written::default();
    for spec in specs {
        written.add(wheel_dir.join(write_one(r, built, wheel_dir, spec)?));
    }
    Ok(written.commit())
}

/// Finishes one wheel (`package::finish`: archive, audit, size), prints the build's summary;
/// returns its file name.
fn write_one(
    r: &Resolved,
    built: &Built,
    wheel_dir: &Path,
    spec: WheelSpec,
) -> Result<String, Error> {
    let start = std::time::Instant::now();
    let nvcc = &r.toolchain.nvcc;
    let dist = spec.dist.info();
    let mut files = spec.files;
    dist.add_files(&mut files)?;
    let f = Finish {
        name_version: format!("{}-{}", dist.name.file_stem(), dist.project.version),
        dist_info: dist.dir(),
        tag: spec.tag.to_string(),
        variant: r.variant.as_ref().map(|v| {
            variants::label_and_json(
                v,
                (nvcc.major, nvcc.minor),
                &built.checked.gpu_code,
                driver_floors::highest(&r.floors),
            )
        }),
        epoch: r.config.source_date_epoch,
        budget: audit::size::Budget {
            max_bytes: r.config.tool.max_wheel_size,
            compress: Some(r.toolchain.compress),
            cuda_major: nvcc.major,
            ptx_all: r.plan.ptx == crate::config::Ptx::All,
        },
        previous: spec.previous.as_deref(),
    };
    let done = finish(&f, files, wheel_dir)?;
    let gpu = audit::size::gpu_line(&spec.elfs, r.toolchain.compress, nvcc.major);
    let filename = done.filename();
    summary(
        &filename,
        done.size,
        &built.timing,
        start.elapsed().as_secs_f64(),
        gpu,
    );
    Ok(filename)
}

fn summary(filename: &str, size: u64, timing: &Timing, archive: f64, gpu: Option<String>) {
    let steps = &timing.steps;
    let total = timing.configure + steps.secs + timing.audit + archive;
    let mut lines = vec![
        format!("built {filename} ({}) in {total:.1} s", audit::size::human(size)),
        format!(
            "configure {:.1} s | compile and link {:.1} s ({} steps ran, {} up to date) | audit {:.1} s | archive {:.1} s",
            timing.configure, steps.secs, steps.ran, steps.reused, timing.audit, archive
        ),
    ];
    lines.extend(gpu);
    lines.extend(timing.launcher.iter().cloned());
    lines.extend(steps.slowest());
    ui::summary(&lines);
}

/// `build` for a hook, which asks for one wheel: its file name.
pub(crate) fn build_one(
    req: &Request<'_>,
    config: Config,
    wheels: Wheels,
    wheel_dir: &Path,
    metadata_dir: Option<&Path>,
) -> Result<String, Error> {
    let written = build(req, config, wheels, wheel_dir, metadata_dir)?;
    Ok(written
        .first()
        .and_then(|p| p.file_name())
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default())
}

/// The sdist into `sdist_dir`: the project's files with pyproject.toml pinned to the CUDA major
/// (none for a variant sdist); returns its file name.
pub(crate) fn sdist(req: &Request<'_>, config: Config, sdist_dir: &Path) -> Result<String, Error> {
    let plan = BuildPlan::new(&config, req.python)?;
    let variant = config.variant.clone();
    // A variant sdist has the project's own name and builds every CUDA major: no major is
    // pinned, and discovery need not find a toolkit.
    // Several majors (a `cuda` list): one name for all, the list kept as written.
    let major = match variant {
        Some(_) => None,
        None if config.several().is_some() => None,
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
