//! The PEP 517 hooks as stateless Rust functions, and the one place that composes the stages:
//!
//! ```text
//! Config::load ─► BuildPlan::new ─► toolchain::discover ─► compile::run_all ─► link
//!             ─► elf::read / audit / platform_tag ─► archive::write_wheel
//! ```
//! Every hook re-reads pyproject.toml, as PEP 517 allows each hook to run in a fresh process.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::audit::elf;
use crate::bindings::torch;
use crate::build::compile;
use crate::build::incremental::{BuildLock, Cache};
use crate::build::link;
use crate::build::schedule::{self, Step};
use crate::build::stable_paths::StablePaths;
use crate::config::{Bindings, Config, Cudart, Overrides, PythonInfo, ToolConfig};
use crate::error::Error;
use crate::libraries::{self, FoundLibrary, Provider};
use crate::package::archive::{self, Files};
use crate::package::import_helper;
use crate::package::metadata::{self, CudaRequires, DistName};
use crate::package::variants;
use crate::plan::arch;
use crate::plan::{self, BuildPlan, PlanError, TargetKind, TargetPlan};
use crate::toolchain::{self, Toolchain, ToolchainError};
use crate::ui;

/// What every hook gets: the project, the overrides (config settings + environment), and the
/// Python that runs the build.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    pub source_tree: &'a Path,
    pub overrides: &'a Overrides,
    pub python: &'a PythonInfo,
}

/// Stages 1-3 done: everything known before compiling.
struct Resolved {
    config: Config,
    /// Optional targets whose libraries are missing are already dropped.
    plan: BuildPlan,
    toolchain: Toolchain,
    name: DistName,
    /// Every library found, by name (`cudart` included).
    libs: BTreeMap<String, FoundLibrary>,
    /// Per target (same order as `plan.targets`): the libraries it links, cudart first.
    target_libs: Vec<Vec<String>>,
    /// `Requires-Dist` of the NVIDIA wheels, from every shared library the targets link.
    cuda_requires: Vec<String>,
    /// The wheel variant this build makes, if any (PEP 825).
    variant: Option<variants::Spec>,
    /// `Requires-Dist: torch>=X.Y,<X.(Y+1)` of torch extensions (never moved by `cuda-deps`).
    torch_requires: Vec<String>,
}

impl Resolved {
    fn libs_of(&self, index: usize) -> Vec<&FoundLibrary> {
        self.target_libs[index]
            .iter()
            .map(|n| &self.libs[n])
            .collect()
    }

    fn linked_of(&self, target: &TargetPlan) -> Vec<&TargetPlan> {
        target
            .link_with
            .iter()
            .filter_map(|n| {
                self.plan
                    .targets
                    .iter()
                    .find(|t| t.kind != TargetKind::Extension && t.module == *n)
            })
            .collect()
    }

    /// SONAMEs the wheel's dependencies (or the wheel itself) provide.
    fn provided(&self) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        for lib in self.libs.values() {
            let counts = lib.provider.is_some()
                || (self.config.tool.system_rpath && lib.outside_dir.is_some());
            if counts {
                out.extend(lib.shared.iter().map(|s| s.soname.clone()));
            }
        }
        for t in &self.plan.targets {
            if let TargetKind::SharedLibrary { soname } = &t.kind {
                out.insert(soname.clone());
            }
        }
        out
    }
}

/// `Requires-Dist` entries for the libraries providing `sonames`: one per distribution, with
/// the highest floor when two libraries of one distribution disagree.
fn requirements_for<'a>(
    libs: impl IntoIterator<Item = &'a FoundLibrary>,
    sonames: &BTreeSet<String>,
) -> Vec<String> {
    let mut by_dist: BTreeMap<String, Provider> = BTreeMap::new();
    for lib in libs {
        let Some(p) = &lib.provider else { continue };
        if !lib.shared.iter().any(|s| sonames.contains(&s.soname)) {
            continue;
        }
        let slot = by_dist.entry(p.dist.clone()).or_insert_with(|| p.clone());
        if p.floor > slot.floor {
            slot.floor = p.floor;
        }
    }
    by_dist.values().map(Provider::requirement).collect()
}

/// Whether a library comes from torch (its requirement is not a CUDA one).
fn is_torch(lib: &FoundLibrary) -> bool {
    lib.provider.as_ref().is_some_and(|p| p.dist == torch::DIST)
}

fn resolve(req: &Request<'_>) -> Result<Resolved, Error> {
    let config = Config::load(req.source_tree, req.overrides)?;
    let variant = variants::Spec::from_config(&config.tool, config.variant_table.as_ref())?;
    let mut plan = BuildPlan::new(&config, req.python)?;
    // What zig mode cannot build (torch among it) is refused before torch is probed.
    toolchain::zig::check(&config.tool, &req.python.machine).map_err(ToolchainError::from)?;
    // `bindings = "torch"`: torch is asked about itself once, before flags are added.
    let torch_info = if plan.targets.iter().any(|t| t.bindings == Bindings::Torch) {
        Some(crate::bindings::torch::probe::probe(req.python)?)
    } else {
        None
    };
    crate::bindings::apply(&mut plan, &req.python.sys_path, torch_info.as_ref())?;
    let mut toolchain = toolchain::discover(&config.tool, &req.overrides.env, req.python)?;
    if let Some(zig) = &mut toolchain.zig {
        toolchain.host = toolchain::zig::place(zig, &plan.build_dir);
    }
    let torch_libs = match &torch_info {
        Some(info) => {
            let cuda_target = plan
                .targets
                .iter()
                .find(|t| {
                    t.bindings == Bindings::Torch
                        && t.sources.iter().any(|s| s.lang == plan::Lang::Cuda)
                })
                .map(|t| t.key.as_str());
            if let Some(warning) = torch::check_cuda(info, &toolchain.nvcc, cuda_target)? {
                ui::warn(&warning);
            }
            torch::libraries(info)?
        }
        None => BTreeMap::new(),
    };
    let tool = &config.tool;
    let env = &req.overrides.env;
    let major = toolchain.nvcc.major;
    let sys_path = &req.python.sys_path;

    let cudart_spec = match tool.cudart {
        Cudart::Shared => libraries::spec_for("cudart", major, tool, "tool.cudawheel.cudart")?,
        Cudart::Static => libraries::static_cudart_spec(),
    };
    let mut cudart = libraries::find(&cudart_spec, major, &toolchain.nvcc, env, sys_path, false)?;
    if let Some(p) = cudart.provider.as_mut() {
        p.floor = crate::libraries::cudart::runtime_floor(&toolchain.headers, p.floor);
    }
    let mut libs = BTreeMap::new();
    libs.insert("cudart".to_string(), cudart);
    let mut target_libs = Vec::new();
    let mut skipped: Vec<String> = Vec::new();
    let mut kept = Vec::new();
    for target in std::mem::take(&mut plan.targets) {
        let key = format!("{}.cuda-libraries", target.key);
        let mut names = vec!["cudart".to_string()];
        let mut missing = None;
        if let Some(lib) = target.link_with.iter().find(|l| skipped.contains(l)) {
            missing = Some(format!("it links the skipped shared library {lib:?}"));
        }
        if target.bindings == Bindings::Torch {
            for group in torch::groups_for(&target, plan.limited_api.is_some()) {
                if let Some(found) = torch_libs.get(group) {
                    libs.entry(group.to_string())
                        .or_insert_with(|| found.clone());
                    names.push(group.to_string());
                }
            }
        }
        for name in &target.cuda_libraries {
            if missing.is_some() {
                break;
            }
            let spec = libraries::spec_for(name, major, tool, &key)?;
            match libraries::find(&spec, major, &toolchain.nvcc, env, sys_path, target.rdc) {
                Ok(found) => {
                    libs.entry(name.clone()).or_insert(found);
                    names.push(name.clone());
                }
                Err(e @ libraries::LibraryError::NotFound { .. }) if target.optional => {
                    missing = Some(e.to_string());
                }
                Err(e) => return Err(e.into()),
            }
        }
        match missing {
            Some(why) => {
                ui::warn(&format!(
                    "skipping the optional target `{}` ({}): {why}",
                    target.module, target.key
                ));
                skipped.push(target.module.clone());
            }
            None => {
                target_libs.push(names);
                kept.push(target);
            }
        }
    }
    plan.targets = kept;
    if plan.targets.iter().all(|t| t.kind != TargetKind::Extension)
        && !config.tool.extensions.is_empty()
    {
        return Err(PlanError::NoTargets.into());
    }
    if let Some(info) = &torch_info {
        for warning in torch::fit_floors(&mut libs, info) {
            ui::warn(&warning);
        }
    }
    let name = dist_name(&config, variant.as_ref(), major);
    check_sdist_name(&config.root, &name)?;
    let mut r = Resolved {
        config,
        plan,
        toolchain,
        name,
        libs,
        target_libs,
        cuda_requires: Vec::new(),
        variant,
        torch_requires: Vec::new(),
    };
    // Without `--as-needed` every listed shared library ends up in DT_NEEDED, so the requirements
    // known now are the ones the link produces; `build_wheel` derives them again from the ELFs.
    let listed: BTreeSet<String> = (0..r.plan.targets.len())
        .flat_map(|i| {
            r.libs_of(i)
                .into_iter()
                .flat_map(|l| l.shared.iter().map(|s| s.soname.clone()))
                .collect::<Vec<_>>()
        })
        .collect();
    r.cuda_requires = requirements_for(r.libs.values().filter(|l| !is_torch(l)), &listed);
    r.torch_requires = requirements_for(r.libs.values().filter(|l| is_torch(l)), &listed);
    Ok(r)
}

/// The distribution name: the project's, plus `name-suffix` unless this is a variant build
/// (variants of every CUDA major share one name).
fn dist_name(config: &Config, variant: Option<&variants::Spec>, major: u32) -> DistName {
    match variant {
        Some(_) => DistName::new(&config.project, ""),
        None => DistName::new(&config.project, &config.tool.suffix_for(major)),
    }
}

/// An unpacked sdist (it has PKG-INFO) builds only the distribution it is named for: its Name
/// records the CUDA major it was made for (PEP 643).
fn check_sdist_name(root: &Path, name: &DistName) -> Result<(), Error> {
    let Ok(pkg_info) = std::fs::read_to_string(root.join("PKG-INFO")) else {
        return Ok(());
    };
    let Some(sdist_name) = pkg_info
        .lines()
        .take_while(|l| !l.is_empty())
        .find_map(|l| l.strip_prefix("Name: "))
    else {
        return Ok(());
    };
    let normalized: Option<pep508_rs::PackageName> = sdist_name.trim().parse().ok();
    if normalized.as_ref() != Some(&name.normalized) {
        return Err(Error::SdistMismatch {
            sdist: sdist_name.trim().to_string(),
            wheel: name.display.clone(),
        });
    }
    Ok(())
}

fn dist_info_name(r: &Resolved) -> String {
    format!(
        "{}-{}.dist-info",
        r.name.file_stem(),
        r.config.project.version
    )
}

fn render_metadata(r: &Resolved) -> String {
    metadata::core_metadata_with(
        &r.config.project,
        &r.name,
        &r.torch_requires,
        &CudaRequires::Known(r.cuda_requires.clone()),
        r.config.tool.cuda_deps,
    )
}

/// METADATA, entry points and license files (everything in .dist-info but WHEEL and RECORD).
fn dist_info_files(r: &Resolved, files: &mut Files) -> Result<(), Error> {
    let di = dist_info_name(r);
    files.add_bytes(&format!("{di}/METADATA"), render_metadata(r), false);
    if let Some(ep) = metadata::entry_points(&r.config.project) {
        files.add_bytes(&format!("{di}/entry_points.txt"), ep, false);
    }
    for lic in &r.config.project.license_files {
        files.add_file(
            &format!("{di}/licenses/{}", crate::inspect::site::portable(lic)),
            &r.config.root.join(lic),
        )?;
    }
    Ok(())
}

pub fn get_requires_for_build_wheel(req: &Request<'_>) -> Result<Vec<String>, Error> {
    let config = Config::load(req.source_tree, req.overrides)?;
    variants::Spec::from_config(&config.tool, config.variant_table.as_ref())?;
    build_requirements(&config.tool, &req.overrides.env, req.python)
}

/// What `get_requires_for_build_wheel` returns: the toolkit and CUDA libraries from PyPI, the
/// binding libraries, then the build tools (launcher, zig).
pub fn build_requirements(
    tool: &ToolConfig,
    env: &toolchain::Env,
    python: &PythonInfo,
) -> Result<Vec<String>, Error> {
    let toolkit = toolchain::toolkit_request(tool, env, python)?;
    let mut reqs = libraries::build_requirements(tool, &toolkit);
    reqs.extend(crate::bindings::requirements(tool, toolkit.major));
    reqs.extend(toolchain::tool_requirements(tool));
    Ok(reqs)
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
    dist_info_files(&r, &mut files)?;
    write_tree(metadata_dir, files)?;
    Ok(dist_info_name(&r))
}

fn write_tree(dir: &Path, files: Files) -> Result<(), Error> {
    let tmp = tempfile::tempdir_in(dir).map_err(|source| archive::ArchiveError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut top = BTreeSet::new();
    for (path, bytes, _) in &files.into_entries() {
        let target = tmp.path().join(path);
        let io = |source| archive::ArchiveError::Io {
            path: target.clone(),
            source,
        };
        std::fs::create_dir_all(target.parent().expect("entries have a folder")).map_err(io)?;
        std::fs::write(&target, bytes).map_err(io)?;
        top.insert(
            path.split('/')
                .next()
                .expect("split yields one item")
                .to_string(),
        );
    }
    for name in top {
        let dest = dir.join(&name);
        let _ = std::fs::remove_dir_all(&dest);
        std::fs::rename(tmp.path().join(&name), &dest).map_err(|source| {
            archive::ArchiveError::Io {
                path: dest.clone(),
                source,
            }
        })?;
    }
    Ok(())
}

/// What compiling and linking produced, audited.
struct Built {
    /// Staging folder holding every target at its wheel path.
    out_dir: PathBuf,
    reports: Vec<elf::ElfReport>,
    /// The GPU code of each target's ELF, in plan order.
    gpu_code: Vec<crate::inspect::fatbin::GpuCode>,
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
        md.join(dist_info_name(r)).join("METADATA")
    };
    let prepared = std::fs::read_to_string(&file).unwrap_or_default();
    if prepared != render_metadata(r) {
        return Err(Error::InconsistentMetadata(file.display().to_string()));
    }
    Ok(())
}

/// Stages 4-6: compile, device-link, link, audit, tag.
fn compile_and_link(r: &Resolved, req: &Request<'_>) -> Result<Built, Error> {
    let tool = &r.config.tool;
    let mut tc = r.toolchain.clone();
    ui::status(&format!(
        "building {} {} for CUDA {} (nvcc {} from {})",
        r.name.display,
        r.config.project.version,
        tc.nvcc.major,
        tc.nvcc.full_version,
        match &tc.nvcc.origin {
            toolchain::NvccOrigin::System(label) => format!("{label}: {}", tc.nvcc.path.display()),
            toolchain::NvccOrigin::Pip(site) => format!("NVIDIA wheels in {}", site.display()),
        }
    ));
    // Which headers and which libcudart, and why: when their releases differ (a system toolkit
    // next to a runtime wheel of another release), or with `verbose`.
    let cudart = r.libs.get("cudart");
    let differs =
        cudart.is_some_and(|rt| crate::libraries::cudart::runtime_differs(&tc.headers, rt));
    if differs || tool.verbose {
        for line in crate::libraries::cudart::explain(&tc.headers, cudart) {
            match line.strip_prefix("warning: ") {
                Some(w) => ui::warn(w),
                None => ui::status(&line),
            }
        }
    }
    // Each target's `-gencode` list: its own `archs`, else the top-level list.
    let nvcc_archs = tc.nvcc.arch_info();
    let gencodes: Vec<Vec<arch::Gencode>> = r
        .plan
        .targets
        .iter()
        .map(|t| arch::gencodes(t.archs(&r.plan), r.plan.ptx, &nvcc_archs))
        .collect::<Result<_, _>>()
        .map_err(plan::PlanError::from)?;
    // A launcher known to break these nvcc compiles is said so now, and nvcc runs directly.
    if let Some(why) = tc
        .launcher
        .as_ref()
        .and_then(|l| l.nvcc_problem(&tc.nvcc, &gencodes.concat()))
    {
        ui::warn(&format!(
            "{why}\nnvcc runs directly; host compiles still go through the launcher"
        ));
        tc.launcher_wraps_nvcc = false;
    }
    let tc = &tc;

    // One graph for the whole build: every target's compiles, the device links of rdc
    // targets, and the links (a project shared library before the extensions linking it).
    let build_dir = &r.plan.build_dir;
    let lock = BuildLock::acquire(build_dir, || {
        ui::status(&format!(
            "waiting for another build using {}",
            build_dir.display()
        ))
    })
    .map_err(|source| compile::CompileError::BuildDir {
        path: build_dir.clone(),
        source,
    })?;
    if let Some(zig) = &tc.zig {
        toolchain::zig::write_files(zig).map_err(toolchain::ToolchainError::from)?;
    }
    let obj_dir = build_dir.join("obj");
    let out_dir = build_dir.join("out");
    let mut steps: Vec<Step> = Vec::new();
    let mut objects: Vec<Vec<PathBuf>> = Vec::new();
    let mut object_steps: Vec<Vec<usize>> = Vec::new();
    for (i, target) in r.plan.targets.iter().enumerate() {
        let own_root = build_dir.join("cuda-headers");
        let includes = crate::build::includes::include_args(&tc.headers, &r.libs_of(i), &own_root)
            .map_err(|source| compile::CompileError::BuildDir {
                path: own_root.clone(),
                source,
            })?;
        let jobs = compile::compile_jobs(
            target,
            &r.plan,
            tc,
            req.python,
            &gencodes[i],
            &obj_dir,
            &includes,
        );
        objects.push(jobs.iter().map(|j| j.output.clone()).collect());
        object_steps.push((steps.len()..steps.len() + jobs.len()).collect());
        steps.extend(jobs.into_iter().map(|job| Step {
            job,
            after: Vec::new(),
        }));
    }
    for (i, target) in r.plan.targets.iter().enumerate().filter(|(_, t)| t.rdc) {
        let (cuda_objs, cuda_steps): (Vec<PathBuf>, Vec<usize>) = target
            .sources
            .iter()
            .zip(objects[i].iter().zip(&object_steps[i]))
            .filter(|(s, _)| s.lang == plan::Lang::Cuda)
            .map(|(_, (o, step))| (o.clone(), *step))
            .unzip();
        let statics: Vec<PathBuf> = r
            .libs_of(i)
            .iter()
            .filter(|l| !l.shared.is_empty())
            .flat_map(|l| l.statics.iter().cloned())
            .collect();
        let job = compile::dlink_job(target, &cuda_objs, tc, &gencodes[i], &statics, &obj_dir);
        objects[i].push(job.output.clone());
        object_steps[i].push(steps.len());
        steps.push(Step {
            job,
            after: cuda_steps,
        });
    }
    let mut rpaths: Vec<Vec<String>> = Vec::new();
    for (i, target) in r.plan.targets.iter().enumerate() {
        rpaths.push(link::rpath_for(
            target,
            &r.libs_of(i),
            &r.linked_of(target),
            tool.system_rpath,
        ));
    }
    let mut link_step: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, target) in r.plan.targets.iter().enumerate() {
        let linked = r.linked_of(target);
        let job = link::link_job(
            target,
            &objects[i],
            tc,
            &r.libs_of(i),
            &linked,
            &rpaths[i],
            &out_dir,
        );
        let mut after = object_steps[i].clone();
        // Shared libraries come first in the plan, so their link steps exist already.
        after.extend(linked.iter().filter_map(|t| link_step.get(t.key.as_str())));
        link_step.insert(&target.key, steps.len());
        steps.push(Step { job, after });
    }
    // Commands name the build environment's folders through links in build-dir, and the
    // project's files relatively: the same commands in every isolated build and checkout.
    let stable = StablePaths::new(&r.plan.root, build_dir, tc, req.python);
    let launcher_env = tc.launcher.as_ref().map_or_else(Vec::new, |l| {
        l.environment(&r.plan.root, build_dir, &toolchain::identity::compilers(tc))
    });
    for step in &mut steps {
        stable.apply(&mut step.job);
        if step.job.launcher.is_some() {
            step.job.env = launcher_env.clone();
        }
    }
    let _links = stable
        .create()
        .map_err(|source| compile::CompileError::BuildDir {
            path: build_dir.join("env"),
            source,
        })?;
    let cache = Cache::open(build_dir, toolchain::identity::full(tc, req.python));
    let jobserver = schedule::jobserver_from_env();
    // The launcher's counters before and after, for the summary (sccache: other builds
    // sharing its server at the same time would be counted too).
    let counts_before = tc.launcher.as_ref().and_then(|l| l.before_build(build_dir));
    let stats = schedule::run(
        &steps,
        &schedule::Options {
            workers: r.plan.jobs,
            verbose: tool.verbose,
            cache: &cache,
            jobserver: jobserver.as_ref(),
            memory: schedule::MemoryLimit::new(tool.max_memory),
        },
    )?;
    let launcher_line = match &tc.launcher {
        Some(l) if stats.ran > 0 => l.summary(build_dir, counts_before),
        _ => None,
    };

    let audit_start = std::time::Instant::now();
    // Audit every ELF, derive Requires-Dist from what was linked, and the platform tag.
    let provided = r.provided();
    let mut reports = Vec::new();
    let mut gpu_code = Vec::new();
    let mut needed = BTreeSet::new();
    for (i, target) in r.plan.targets.iter().enumerate() {
        let report = elf::read(&out_dir.join(&target.wheel_path))?;
        elf::audit(
            &report,
            &target.wheel_path,
            &rpaths[i],
            &provided,
            tool.system_rpath,
        )?;
        if let Some(rt) = r.libs.get("cudart") {
            crate::audit::runtime_symbols::check_runtime(
                &tc.headers,
                rt,
                &target.wheel_path,
                &report,
            )?;
        }
        needed.extend(report.needed.iter().cloned());
        reports.push(report);
        // What GPU code it carries, read back from its fatbin (for `_cuda_libs.py`).
        let bytes = std::fs::read(out_dir.join(&target.wheel_path)).unwrap_or_default();
        gpu_code.push(crate::inspect::fatbin::gpu_code(&bytes));
    }
    let linked_requires = requirements_for(r.libs.values().filter(|l| !is_torch(l)), &needed);
    let linked_torch = requirements_for(r.libs.values().filter(|l| is_torch(l)), &needed);
    if linked_requires != r.cuda_requires || linked_torch != r.torch_requires {
        return Err(Error::InconsistentMetadata(format!(
            "the linked libraries need {linked_requires:?} {linked_torch:?}, discovery expected {:?} {:?}",
            r.cuda_requires, r.torch_requires
        )));
    }
    let uses_system_libs = tool.system_rpath
        && r.libs
            .values()
            .any(|l| l.outside_dir.is_some() && !l.shared.is_empty());
    let platform = if let Some(zig) = &tc.zig {
        // zig mode: the requested tag, once every ELF is checked against it.
        let paths: Vec<PathBuf> = r
            .plan
            .targets
            .iter()
            .map(|t| out_dir.join(&t.wheel_path))
            .collect();
        let mut files = Vec::new();
        for ((t, path), report) in r.plan.targets.iter().zip(&paths).zip(&reports) {
            elf::check_libcxx_only(report, &t.wheel_path)?;
            files.push((t.wheel_path.as_str(), path.as_path(), report));
        }
        elf::manylinux_tag(&files, &req.python.machine, &provided, zig.glibc.minor)?
    } else if uses_system_libs {
        format!("linux_{}", req.python.machine)
    } else {
        elf::platform_tag(
            &reports.iter().collect::<Vec<_>>(),
            &req.python.machine,
            &provided,
        )
    };
    let (py, abi) = req.python.tag(r.plan.limited_api);
    let tag = format!("{py}-{abi}-{platform}");
    Ok(Built {
        out_dir,
        reports,
        gpu_code,
        tag,
        timing: Timing {
            configure: 0.0,
            steps: stats,
            launcher: launcher_line,
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
    let mut built = compile_and_link(&r, req)?;
    built.timing.configure = configure;
    Ok((r, built))
}

/// Builds the wheel into `wheel_dir`; returns its file name.
pub fn build_wheel(
    req: &Request<'_>,
    wheel_dir: &Path,
    metadata_dir: Option<&Path>,
) -> Result<String, Error> {
    // `built` holds the build-dir lock until the wheel is written.
    let (r, built) = build_checked(req, metadata_dir)?;
    let mut files = Files::default();
    for (path, text) in import_helpers(&r, &built) {
        files.add_bytes(&path, text, false);
    }
    for pkg in &r.plan.packages {
        add_package(&mut files, &r.plan.python_source, pkg, &r.plan)?;
    }
    for target in &r.plan.targets {
        files.add_file(&target.wheel_path, &built.out_dir.join(&target.wheel_path))?;
    }
    let previous = r.plan.build_dir.join("last.whl");
    finish_wheel(&r, wheel_dir, &built, files, Some(&previous))
}

/// A variant build's label and `variant.json`, its properties derived from the GPU code read
/// back from the built ELF files.
fn variant_of(r: &Resolved, built: &Built) -> Option<(String, String)> {
    let spec = r.variant.as_ref()?;
    let mut code = variants::GpuCode::default();
    for gpu in &built.gpu_code {
        code.add(gpu);
    }
    let nvcc = &r.toolchain.nvcc;
    let label = spec.label_for(nvcc.major);
    let properties = spec.properties_for(nvcc.major, nvcc.minor, &code);
    Some((label.clone(), spec.variant_json(&label, &properties)))
}

/// Adds `.dist-info` (METADATA, entry points, licenses, WHEEL), writes and audits the wheel.
/// `previous`: where the last wheel built in this build-dir is kept, to copy its unchanged
/// members compressed (and where this one is kept once it passed the audit).
fn finish_wheel(
    r: &Resolved,
    wheel_dir: &Path,
    built: &Built,
    mut files: Files,
    previous: Option<&Path>,
) -> Result<String, Error> {
    let (tag, timing) = (built.tag.as_str(), &built.timing);
    let variant = variant_of(r, built);
    let variant = variant.as_ref();
    let start = std::time::Instant::now();
    dist_info_files(r, &mut files)?;
    files.add_bytes(
        &format!("{}/WHEEL", dist_info_name(r)),
        metadata::wheel_file(tag),
        false,
    );
    let mut filename = format!("{}-{}-{tag}", r.name.file_stem(), r.config.project.version);
    if let Some((label, json)) = variant {
        let member = format!("{}/{}", dist_info_name(r), variants::DIST_INFO_FILE);
        files.add_bytes(&member, json.clone(), false);
        filename = format!("{filename}-{label}");
    }
    filename.push_str(".whl");
    let path = archive::write_wheel(
        wheel_dir,
        &filename,
        &dist_info_name(r),
        files,
        r.config.source_date_epoch,
        previous,
    )?;
    // The built-in audit: the same checks as `python -m cudawheel audit`, on the finished file.
    let violations = crate::audit::wheel::audit_wheel(&path)?;
    if !violations.is_empty() {
        let _ = std::fs::remove_file(&path);
        return Err(Error::AuditFailed {
            wheel: filename,
            violations,
        });
    }
    if let Some(keep) = previous {
        archive::keep_copy(&path, keep);
    }
    let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    if let Ok(Some(text)) = crate::audit::size::report(&path, size, crate::audit::size::WARN_BYTES)
    {
        ui::warn(&text);
    }
    let archive = start.elapsed().as_secs_f64();
    let steps = &timing.steps;
    let total = timing.configure + steps.secs + timing.audit + archive;
    let mut lines = vec![
        format!("built {filename} ({}) in {total:.1} s", human_size(size)),
        format!(
            "configure {:.1} s | compile and link {:.1} s ({} steps ran, {} up to date) | audit {:.1} s | archive {:.1} s",
            timing.configure, steps.secs, steps.ran, steps.reused, timing.audit, archive
        ),
    ];
    lines.extend(timing.launcher.iter().cloned());
    ui::summary(&lines);
    Ok(filename)
}

/// `19.8 kB`, `104.9 MB`.
fn human_size(bytes: u64) -> String {
    match bytes {
        b if b >= 1_000_000 => format!("{:.1} MB", b as f64 / 1e6),
        b => format!("{:.1} kB", b as f64 / 1e3),
    }
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
    let io = |path: &Path, source| archive::ArchiveError::Io {
        path: path.to_path_buf(),
        source,
    };
    let place = |rel: &str, bytes: &[u8]| -> Result<(), Error> {
        let dest = src.join(rel);
        std::fs::create_dir_all(dest.parent().unwrap_or(src)).map_err(|e| io(&dest, e))?;
        // Replace, never write through: a loaded extension keeps its old inode.
        let tmp = dest.with_extension("cudawheel-tmp");
        std::fs::write(&tmp, bytes).map_err(|e| io(&tmp, e))?;
        std::fs::rename(&tmp, &dest).map_err(|e| io(&dest, e))?;
        Ok(())
    };
    for target in &r.plan.targets {
        let file = built.out_dir.join(&target.wheel_path);
        let bytes = std::fs::read(&file).map_err(|e| io(&file, e))?;
        place(&target.wheel_path, &bytes)?;
    }
    for (path, text) in import_helpers(&r, &built) {
        place(&path, text.as_bytes())?;
    }
    let mut files = Files::default();
    let pth = format!("__editable__.{}.pth", r.name.file_stem());
    files.add_bytes(&pth, format!("{}\n", src.display()), false);
    finish_wheel(&r, wheel_dir, &built, files, None)
}

/// `<package>/_cuda_libs.py` for every package holding built targets: the NVIDIA libraries its
/// ELFs need, with their wheel folders and requirements.
fn import_helpers(r: &Resolved, built: &Built) -> Vec<(String, String)> {
    type Gpu = Vec<(String, crate::inspect::fatbin::GpuCode)>;
    let mut by_package: BTreeMap<String, (Vec<import_helper::Preload>, Gpu)> = BTreeMap::new();
    let mut torch_packages: BTreeSet<String> = BTreeSet::new();
    for ((target, report), gpu) in r
        .plan
        .targets
        .iter()
        .zip(&built.reports)
        .zip(&built.gpu_code)
    {
        let Some((package, _)) = target.wheel_path.split_once('/') else {
            continue;
        };
        if target.bindings == Bindings::Torch {
            torch_packages.insert(package.to_string());
        }
        let (list, gpus) = by_package.entry(package.to_string()).or_default();
        if !gpu.is_empty() {
            gpus.push((target.wheel_path.clone(), gpu.clone()));
        }
        // torch's own libraries come with `import torch`, not from this table.
        for lib in r.libs.values().filter(|l| !is_torch(l)) {
            let (Some(p), Some(dir)) = (&lib.provider, &lib.site_lib_dir) else {
                continue;
            };
            for s in lib
                .shared
                .iter()
                .filter(|s| report.needed.contains(&s.soname))
            {
                let entry = import_helper::Preload {
                    soname: s.soname.clone(),
                    site_dir: dir.clone(),
                    requirement: p.requirement(),
                };
                if !list.contains(&entry) {
                    list.push(entry);
                }
            }
        }
    }
    let cuda = (r.toolchain.nvcc.major, r.toolchain.nvcc.minor);
    by_package
        .into_iter()
        .map(|(package, (mut libs, gpus))| {
            // The runtime first: the other libraries may need it.
            libs.sort_by_key(|l| !l.soname.starts_with("libcudart."));
            (
                format!("{package}/_cuda_libs.py"),
                import_helper::render(&libs, cuda, torch_packages.contains(&package), &gpus),
            )
        })
        .collect()
}

/// The package folder's files, minus caches and stale copies of the extensions being built.
fn add_package(
    files: &mut Files,
    python_source: &Path,
    pkg: &Path,
    plan: &BuildPlan,
) -> Result<(), Error> {
    let stale: Vec<String> = plan.targets.iter().map(|t| t.wheel_path.clone()).collect();
    for entry in walkdir::WalkDir::new(python_source.join(pkg))
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| e.file_name() != "__pycache__")
    {
        let entry = entry.map_err(|e| archive::ArchiveError::Read {
            path: e.path().map(Path::to_path_buf).unwrap_or_default(),
            source: e.into(),
        })?;
        if !entry.file_type().is_file() {
            continue;
        }
        let rel = entry
            .path()
            .strip_prefix(python_source)
            .expect("walk stays under python_source");
        let rel = crate::inspect::site::portable(rel);
        let is_stale_build = stale.contains(&rel) || rel.ends_with("/_cuda_libs.py");
        if rel.ends_with(".pyc") || is_stale_build {
            continue;
        }
        files.add_file(&rel, entry.path())?;
    }
    Ok(())
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
    let name = dist_name(&config, variant.as_ref(), major.unwrap_or(0));
    let top = format!("{}-{}", name.file_stem(), config.project.version);
    let root = &config.root;
    let mut files = Files::default();

    // pyproject.toml with the resolved major pinned: the sdist's Name is per CUDA major
    // (a variant sdist's is not).
    let mut doc: toml_edit::DocumentMut = config
        .pyproject_text
        .parse()
        .expect("parsed once already by Config::load");
    let tool = major.and_then(|m| {
        doc.entry("tool")
            .or_insert(toml_edit::table())
            .as_table_mut()
            .map(|t| (t, m))
    });
    if let Some((tool, major)) = tool {
        tool.set_implicit(true);
        if let Some(cw) = tool
            .entry("cudawheel")
            .or_insert(toml_edit::table())
            .as_table_mut()
        {
            cw["cuda"] = toml_edit::value(i64::from(major));
        }
    }
    files.add_bytes("pyproject.toml", doc.to_string(), false);
    let meta = metadata::core_metadata(
        &config.project,
        &name,
        &CudaRequires::Dynamic,
        config.tool.cuda_deps,
    );
    files.add_bytes("PKG-INFO", meta, false);

    let mut extra: BTreeMap<String, PathBuf> = BTreeMap::new();
    for ext in &plan.targets {
        for src in &ext.sources {
            extra.insert(crate::inspect::site::portable(&src.rel), src.path.clone());
            // Headers next to the sources.
            if let Some(dir) = src.path.parent() {
                add_headers(&mut extra, root, dir, false);
            }
        }
        for dir in &ext.include_dirs {
            add_headers(&mut extra, root, dir, true);
        }
    }
    if let Some(readme) = config.project.readme.as_ref().and_then(|r| r.file.as_ref()) {
        extra.insert(crate::inspect::site::portable(readme), root.join(readme));
    }
    for lic in &config.project.license_files {
        extra.insert(crate::inspect::site::portable(lic), root.join(lic));
    }
    for (rel, path) in extra {
        files.add_file(&rel, &path)?;
    }
    let src_prefix = plan
        .python_source
        .strip_prefix(root)
        .unwrap_or(Path::new(""))
        .to_path_buf();
    for pkg in &plan.packages {
        let mut pkg_files = Files::default();
        add_package(&mut pkg_files, &plan.python_source, pkg, &plan)?;
        for (path, bytes, exec) in pkg_files.into_entries() {
            files.add_bytes(
                &crate::inspect::site::portable(&src_prefix.join(path)),
                bytes,
                exec,
            );
        }
    }
    let filename = format!("{top}.tar.gz");
    archive::write_sdist(sdist_dir, &filename, &top, files, config.source_date_epoch)?;
    ui::status(&format!("built {filename}"));
    Ok(filename)
}

fn add_headers(out: &mut BTreeMap<String, PathBuf>, root: &Path, dir: &Path, recursive: bool) {
    const HEADERS: &[&str] = &["h", "hh", "hpp", "hxx", "cuh", "inl", "inc", "tcc"];
    let walker = walkdir::WalkDir::new(dir).max_depth(if recursive { usize::MAX } else { 1 });
    for entry in walker.into_iter().flatten() {
        let p = entry.path();
        let is_header = p
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| HEADERS.contains(&e));
        if entry.file_type().is_file() && is_header {
            if let Ok(rel) = p.strip_prefix(root) {
                out.insert(crate::inspect::site::portable(rel), p.to_path_buf());
            }
        }
    }
}

/// What a wheel built now would be, short of compiling: for `python -m cudawheel doctor`.
#[derive(Debug, Clone)]
pub struct WheelPreview {
    /// `saxpy_cu13-0.1.0-cp39-abi3` (the platform tag needs the linked ELF files).
    pub file_prefix: String,
    /// `Requires-Dist` of the METADATA the build would write.
    pub requires: Vec<String>,
}

pub fn preview_wheel(req: &Request<'_>) -> Result<WheelPreview, Error> {
    let r = resolve(req)?;
    let (py, abi) = req.python.tag(r.plan.limited_api);
    let requires = render_metadata(&r)
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
        match build_wheel(&one, wheel_dir, None) {
            Ok(name) => written.push(wheel_dir.join(name)),
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
