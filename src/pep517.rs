//! The PEP 517 hooks as stateless Rust functions, and the one place that composes the stages:
//!
//! ```text
//! config ─► plan ─► toolchain ─► libraries ─► bindings      (resolve: everything known before compiling)
//!        ─► build (graph, schedule, link) ─► audit (ELF, tag) ─► package (wheel / sdist) ─► audit (wheel)
//! ```
//! Every hook re-reads pyproject.toml, as PEP 517 allows each hook to run in a fresh process.

use std::path::{Path, PathBuf};

use crate::audit;
use crate::bindings::torch;
use crate::compile::{self, graph, incremental::BuildLock, schedule};
use crate::config::{Config, CudaDeps};
use crate::error::Error;
use crate::package::archive::{self, Files};
use crate::package::wheel::{self as wheel_files, WheelFile};
use crate::package::{self, metadata, sdist, variants};
use crate::plan::{driver_floors, BuildPlan};
use crate::toolchain::{self, ToolchainError};
use crate::ui;

pub use crate::resolve::{build_requirements, resolve, Request, Resolved};

pub fn get_requires_for_build_wheel(req: &Request<'_>) -> Result<Vec<String>, Error> {
    let config = Config::load(req.source_tree, req.overrides)?;
    variants::Spec::from_config(&config.tool, config.variant_table.as_ref())?;
    build_requirements(&config.tool, &req.overrides.env, req.python)
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

/// What compiling and linking produced, audited.
struct Built {
    /// Staging folder holding every target at its wheel path.
    out_dir: PathBuf,
    checked: audit::built::Checked,
    /// `cp39-abi3-manylinux_2_17_x86_64`
    tag: String,
    timing: Timing,
    /// Held until the wheel is written from `out_dir`.
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

/// Checks the METADATA prepared earlier (PEP 517 passes the `.dist-info` folder itself).
fn check_prepared(r: &Resolved, metadata_dir: Option<&Path>) -> Result<(), Error> {
    let Some(md) = metadata_dir else {
        return Ok(());
    };
    let file = if md.extension().is_some_and(|e| e == "dist-info") {
        md.join("METADATA")
    } else {
        md.join(r.dist_info().dir()).join("METADATA")
    };
    let prepared = std::fs::read_to_string(&file).unwrap_or_default();
    if prepared != r.dist_info().metadata() {
        return Err(Error::InconsistentMetadata(file.display().to_string()));
    }
    Ok(())
}

/// Stages 5-6: compile, device-link, link (one graph), then audit and tag.
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
        toolchain::zig::write_files(zig).map_err(ToolchainError::from)?;
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
    };
    let checked = audit::built::check(&r.plan.targets, &out_dir, &want)?;
    // Requires-Dist derived from what was linked must be what discovery expected.
    let linked = r.requirements(&checked.needed);
    if linked != (r.cuda_requires.clone(), r.torch_requires.clone()) {
        return Err(Error::InconsistentMetadata(format!(
            "the linked libraries need {linked:?}, discovery expected {:?} {:?}",
            r.cuda_requires, r.torch_requires
        )));
    }
    let uses_system_libs = tool.system_rpath
        && r.libs
            .values()
            .any(|l| l.outside_dir.is_some() && !l.shared.is_empty());
    let mode = match &tc.zig {
        Some(zig) => audit::tag::Mode::Zig {
            glibc_minor: zig.glibc.minor,
        },
        None if uses_system_libs => audit::tag::Mode::SystemLibraries,
        None => audit::tag::Mode::Default,
    };
    let platform = audit::tag::choose(
        &mode,
        &r.plan.targets,
        &out_dir,
        &checked.reports,
        &r.python.machine,
        &provided,
    )?;
    let (py, abi) = r.python.tag(r.plan.limited_api);
    Ok(Built {
        out_dir,
        checked,
        tag: format!("{py}-{abi}-{platform}"),
        timing: Timing {
            configure: 0.0,
            steps: ran.stats,
            launcher: ran.launcher,
            audit: audit_start.elapsed().as_secs_f64(),
        },
        _lock: lock,
    })
}

/// Stages 1-6 for `build_wheel` and `build_editable`, after checking prepared metadata.
fn build_checked(
    req: &Request<'_>,
    metadata_dir: Option<&Path>,
) -> Result<(Resolved, Built), Error> {
    let start = std::time::Instant::now();
    let r = resolve(req)?;
    check_prepared(&r, metadata_dir)?;
    let configure = start.elapsed().as_secs_f64();
    let mut built = compile_and_link(&r)?;
    built.timing.configure = configure;
    Ok((r, built))
}

/// `<package>/_cuda_libs.py` per package holding built targets.
fn import_helpers(r: &Resolved, built: &Built) -> Vec<(String, String)> {
    // The extra as METADATA has it (`cuda-pip`): every pip matches that spelling.
    let extra = metadata::normalize_extra(&r.config.tool.cuda_extra);
    wheel_files::import_helpers(
        &r.plan.targets,
        &built.checked.reports,
        &built.checked.gpu_code,
        // torch's own libraries come with `import torch`, not from this table.
        r.libs.values().filter(|l| !torch::is_torch_library(l)),
        (r.toolchain.nvcc.major, r.toolchain.nvcc.minor),
        (r.config.tool.cuda_deps == CudaDeps::Extra)
            .then_some((r.name.display.as_str(), extra.as_str())),
        &r.floors,
    )
}

/// Builds the wheel into `wheel_dir`; returns its file name. A frontend asks for one wheel:
/// `split = "library"` is left to `python -m cudawheel wheel` (`build_wheels`), and said so.
pub fn build_wheel(
    req: &Request<'_>,
    wheel_dir: &Path,
    metadata_dir: Option<&Path>,
) -> Result<String, Error> {
    // `built` holds the build-dir lock until the wheel is written.
    let (r, built) = build_checked(req, metadata_dir)?;
    if r.config.tool.split.is_some() {
        ui::status("split = \"library\": a PEP 517 frontend takes one wheel, so this is one ordinary wheel (GPU code inside); `python -m cudawheel wheel . -o dist --python PY ...` writes the library wheel and the binding wheels");
    }
    write_whole(&r, &built, wheel_dir)
}

/// The one wheel of a build: every built target, the packages, the import helpers.
fn write_whole(r: &Resolved, built: &Built, wheel_dir: &Path) -> Result<String, Error> {
    let (_, files) = wheel_contents(r, built, |_| false)?;
    let previous = r.plan.build_dir.join("last.whl");
    finish_wheel(r, wheel_dir, built, files, Some(&previous))
}

/// A build's wheel contents, split by `in_lib` (a wheel path): the targets under it go to the
/// first `Files` (a split build's library wheel), everything else (the other targets, the
/// packages, the import helpers: a library wheel needs none, its binding wheel checks and loads
/// it) to the second.
fn wheel_contents(
    r: &Resolved,
    built: &Built,
    in_lib: impl Fn(&str) -> bool,
) -> Result<(Files, Files), Error> {
    let (mut lib_files, mut files) = (Files::default(), Files::default());
    for (path, text) in import_helpers(r, built) {
        if !in_lib(&path) {
            files.add_bytes(&path, text, false);
        }
    }
    let stale = target_paths(r);
    for pkg in &r.plan.packages {
        wheel_files::add_package(&mut files, &r.plan.python_source, pkg, &stale)?;
    }
    for t in &r.plan.targets {
        let to = if in_lib(&t.wheel_path) {
            &mut lib_files
        } else {
            &mut files
        };
        to.add_file(&t.wheel_path, &built.out_dir.join(&t.wheel_path))?;
    }
    Ok((lib_files, files))
}

/// Every built target's path in the wheel.
fn target_paths(r: &Resolved) -> Vec<String> {
    r.plan
        .targets
        .iter()
        .map(|t| t.wheel_path.clone())
        .collect()
}

/// Writes and audits the wheel, reports its size and the build's summary.
/// `previous`: where the last wheel built in this build-dir is kept, to copy its unchanged
/// members compressed (and where this one is kept once it passed the audit).
fn finish_wheel(
    r: &Resolved,
    wheel_dir: &Path,
    built: &Built,
    files: Files,
    previous: Option<&Path>,
) -> Result<String, Error> {
    let elfs = target_paths(r);
    let one = OneWheel {
        dist: r.dist_info(),
        tag: built.tag.clone(),
        elfs,
    };
    finish_one(r, wheel_dir, built, files, previous, &one)
}

/// What one wheel of a build is: its `.dist-info`, its tag, its ELF files (wheel paths).
struct OneWheel<'a> {
    dist: wheel_files::DistInfo<'a>,
    tag: String,
    elfs: Vec<String>,
}

/// `finish_wheel` for one of the wheels a build makes.
fn finish_one(
    r: &Resolved,
    wheel_dir: &Path,
    built: &Built,
    files: Files,
    previous: Option<&Path>,
    one: &OneWheel<'_>,
) -> Result<String, Error> {
    let start = std::time::Instant::now();
    let nvcc = &r.toolchain.nvcc;
    let w = WheelFile {
        dist: &one.dist,
        tag: &one.tag,
        variant: r.variant.as_ref().map(|spec| {
            variants::label_and_json(
                spec,
                (nvcc.major, nvcc.minor),
                &built.checked.gpu_code,
                driver_floors::highest(&r.floors),
            )
        }),
        epoch: r.config.source_date_epoch,
    };
    let path = wheel_files::write(&w, wheel_dir, files, previous)?;
    let filename = path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    // The built-in audit: the same checks as `python -m cudawheel audit`, on the finished file.
    let violations = audit::wheel_audit::audit_wheel(&path)?;
    if !violations.is_empty() {
        let _ = std::fs::remove_file(&path);
        return Err(Error::AuditFailed {
            wheel: filename,
            violations,
        });
    }
    let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    let budget = audit::size::Budget {
        max_bytes: r.config.tool.max_wheel_size,
        compress: r.toolchain.compress,
        cuda_major: nvcc.major,
        ptx_all: r.plan.ptx == crate::config::Ptx::All,
    };
    if let Err(e) = audit::size::check(&path, size, &budget) {
        let _ = std::fs::remove_file(&path);
        return Err(e.into());
    }
    if let Some(keep) = previous {
        archive::keep_copy(&path, keep);
    }
    let elfs: Vec<PathBuf> = one.elfs.iter().map(|p| built.out_dir.join(p)).collect();
    let gpu = audit::size::gpu_line(&elfs, r.toolchain.compress, nvcc.major);
    summary(
        &filename,
        size,
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

/// PEP 660: builds the extensions, puts them (and `_cuda_libs.py`) next to the sources in
/// `python-source`, and returns a wheel whose `.pth` adds that folder to `sys.path`. Python
/// edits show at once; after a `.cu`/`.c` edit, run `pip install -e .` again.
pub fn build_editable(
    req: &Request<'_>,
    wheel_dir: &Path,
    metadata_dir: Option<&Path>,
) -> Result<String, Error> {
    // `built` holds the build-dir lock until the wheel is written.
    let (r, built) = build_checked(req, metadata_dir)?;
    let src = &r.plan.python_source;
    let mut placed: Vec<(String, Vec<u8>)> = Vec::new();
    for target in &r.plan.targets {
        let file = built.out_dir.join(&target.wheel_path);
        let bytes = std::fs::read(&file).map_err(|source| archive::ArchiveError::Io {
            path: file.clone(),
            source,
        })?;
        placed.push((target.wheel_path.clone(), bytes));
    }
    for (path, text) in import_helpers(&r, &built) {
        placed.push((path, text.into_bytes()));
    }
    wheel_files::place_in_tree(src, &placed)?;
    let mut files = Files::default();
    let pth = format!("__editable__.{}.pth", r.name.file_stem());
    files.add_bytes(&pth, format!("{}\n", src.display()), false);
    finish_wheel(&r, wheel_dir, &built, files, None)
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

/// `python -m cudawheel wheel PROJECT -o OUT --cuda 12 --cuda 13`: one wheel per CUDA major,
/// each with the toolkit discovery finds for that major and its own build-dir
/// (`<build-dir>/cu<major>`); for a variant build, then `OUT/<name>-<version>-variants.json`.
/// Returns the files written. Stops at the first failing major and removes the wheels this
/// command wrote before it (output is all or nothing, as for one wheel).
pub fn build_matrix(
    req: &Request<'_>,
    wheel_dir: &Path,
    majors: &[u32],
    library: bool,
) -> Result<Vec<PathBuf>, Error> {
    let config = Config::load(req.source_tree, req.overrides)?;
    let variant = variants::Spec::from_config(&config.tool, config.variant_table.as_ref())?;
    let mut written = Vec::new();
    for &major in majors {
        let mut overrides = req.overrides.clone();
        overrides.settings.retain(|k, _| {
            let bare = k.strip_prefix("cudawheel.").unwrap_or(k);
            bare != "cuda" && bare != "build-dir"
        });
        overrides.settings.insert("cuda".into(), major.to_string());
        overrides.settings.insert(
            "build-dir".into(),
            format!("{}/cu{major}", config.tool.build_dir.trim_end_matches('/')),
        );
        let one = Request {
            overrides: &overrides,
            ..req.clone()
        };
        match build_wheels(&one, wheel_dir, library) {
            Ok(paths) => written.extend(paths),
            Err(e) => {
                for path in &written {
                    let _ = std::fs::remove_file(path);
                }
                return Err(e);
            }
        }
    }
    if variant.is_some() {
        for index in variants::index_for_dir(wheel_dir)? {
            ui::status(&format!("wrote {}", index.display()));
            written.push(index);
        }
    }
    Ok(written)
}

/// `python -m cudawheel wheel`: the one wheel `build_wheel` makes; with `split = "library"`
/// the binding wheel for this Python and, when `library`, the library wheel
/// `<name>-lib-cu<major>` (`py3-none`) holding the GPU code. A variant build makes both variant
/// wheels of one label (`<name>-lib` and `<name>`, the same properties: the binding's import
/// check reads the library's GPU code). Returns the files written (all or nothing).
pub fn build_wheels(
    req: &Request<'_>,
    wheel_dir: &Path,
    library: bool,
) -> Result<Vec<PathBuf>, Error> {
    let config = Config::load(req.source_tree, req.overrides)?;
    if config.tool.split.is_none() {
        let start = std::time::Instant::now();
        let r = resolve(req)?;
        let configure = start.elapsed().as_secs_f64();
        let mut built = compile_and_link(&r)?;
        built.timing.configure = configure;
        let name = write_whole(&r, &built, wheel_dir)?;
        return Ok(vec![wheel_dir.join(name)]);
    }
    split_wheels(req, wheel_dir, library)
}

/// `split = "library"`: one build, then the library wheel (when `library`: the GPU code,
/// `py3-none`) and the binding wheel pinning it `==`.
fn split_wheels(req: &Request<'_>, wheel_dir: &Path, library: bool) -> Result<Vec<PathBuf>, Error> {
    let start = std::time::Instant::now();
    let r = crate::resolve::resolve_with(req, true)?;
    let configure = start.elapsed().as_secs_f64();
    let mut built = compile_and_link(&r)?;
    built.timing.configure = configure;
    let folder = crate::plan::split::library_folder(&r.config, r.toolchain.nvcc.major);
    let in_lib = |path: &str| path.starts_with(&format!("{folder}/"));
    let lib_name = metadata::DistName::new(
        &r.config.project,
        &crate::plan::split::library_suffix(&r.config, r.toolchain.nvcc.major),
    );
    let needed_of = |lib: bool| -> std::collections::BTreeSet<String> {
        r.plan
            .targets
            .iter()
            .zip(&built.checked.reports)
            .filter(|(t, _)| in_lib(&t.wheel_path) == lib)
            .flat_map(|(_, rep)| rep.needed.iter().cloned())
            .collect()
    };
    let (lib_requires, _) = r.requirements(&needed_of(true));
    let (bind_requires, _) = r.requirements(&needed_of(false));
    let mut lib_project = r.config.project.clone();
    lib_project.dependencies.clear();
    lib_project.optional_dependencies.clear();
    lib_project.entry_points.clear();
    lib_project.readme = None;
    lib_project.description = Some(format!(
        "The GPU code of {}, shared by its per-Python wheels",
        r.name.display
    ));
    let (lib_files, bind_files) = wheel_contents(&r, &built, in_lib)?;
    let stale = target_paths(&r);
    let platform = built.tag.splitn(3, '-').nth(2).unwrap_or("").to_string();
    let (lib_elfs, bind_elfs): (Vec<String>, Vec<String>) =
        stale.iter().cloned().partition(|p| in_lib(p));
    let mut bind_dist = r.dist_info();
    bind_dist.cuda_requires = &bind_requires;
    let pin = crate::plan::split::library_requirement(&r.config, r.toolchain.nvcc.major);
    bind_dist.framework_requires.push(pin);
    let lib = OneWheel {
        dist: wheel_files::DistInfo {
            project: &lib_project,
            name: &lib_name,
            framework_requires: Vec::new(),
            cuda_requires: &lib_requires,
            ..r.dist_info()
        },
        tag: format!("py3-none-{platform}"),
        elfs: lib_elfs,
    };
    let bindings = OneWheel {
        dist: bind_dist,
        tag: built.tag.clone(),
        elfs: bind_elfs,
    };
    write_split(
        &r,
        &built,
        wheel_dir,
        (lib_files, &lib),
        (bind_files, &bindings),
        library,
    )
}

/// Writes the library wheel (when `library`), then the binding wheel; all or nothing.
fn write_split(
    r: &Resolved,
    built: &Built,
    wheel_dir: &Path,
    (lib_files, lib): (Files, &OneWheel<'_>),
    (bind_files, bindings): (Files, &OneWheel<'_>),
    library: bool,
) -> Result<Vec<PathBuf>, Error> {
    let mut written = Vec::new();
    if library {
        let previous = r.plan.build_dir.join("last-lib.whl");
        let name = finish_one(r, wheel_dir, built, lib_files, Some(&previous), lib)?;
        written.push(wheel_dir.join(name));
    }
    let previous = r.plan.build_dir.join("last.whl");
    match finish_one(r, wheel_dir, built, bind_files, Some(&previous), bindings) {
        Ok(name) => written.push(wheel_dir.join(name)),
        Err(e) => {
            for path in &written {
                let _ = std::fs::remove_file(path);
            }
            return Err(e);
        }
    }
    Ok(written)
}
