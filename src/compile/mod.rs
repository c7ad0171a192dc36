//! Stage 6, compile: the plan, toolchain and libraries become object files and linked shared
//! objects. Compile jobs are exact commands (`job`) with their CUDA include arguments
//! (`includes`), arranged in one graph (`graph`), named through stable paths (`stable_paths`),
//! run in one pool of slots (`schedule`), reused when nothing they read changed
//! (`incremental`), and linked with `$ORIGIN` RPATHs (`link`); the compiles are listed in
//! `build-dir/compile_commands.json` for editors (`compile_db`).
//!
//! Wrap mode's build is another backend's: `wrapped` runs its hooks in a child process,
//! `wrapped_env` works out the environment that hands it cudawheel's toolkit and choices, and
//! `gate` admits its compiles by memory (the compiler launcher; `proc_tree` reads what a running
//! compile holds) and records their peaks, and `phases` how each compile's memory went phase by
//! phase, so that a running compile gives back what its finished phases held.

mod compile_db;
pub(crate) mod gate;
pub(crate) mod graph;
mod includes;
pub(crate) mod incremental;
pub(crate) mod job;
mod link;
mod log;
pub(crate) mod memory;
mod phases;
mod proc_tree;
pub(crate) mod schedule;
mod stable_paths;
pub(crate) mod wrapped;
pub(crate) mod wrapped_env;

use std::path::Path;

use crate::config::PythonInfo;
use crate::libraries::FoundLibrary;
use crate::plan::arch::Gencode;
use crate::plan::BuildPlan;
use crate::toolchain::{NvccOrigin, Toolchain};
use crate::ui;
use incremental::{BuildLock, Cache};
use job::CompileError;
use schedule::Step;
use stable_paths::StablePaths;

/// How the steps run: slots, verbosity, memory limit (from `[tool.cudawheel]`).
pub(crate) struct RunOptions {
    pub(crate) verbose: bool,
    pub(crate) max_memory: Option<u64>,
}

/// What running the graph did: the scheduler's counts, and the compiler launcher's summary
/// line (what it served) when any step ran.
pub(crate) struct Ran {
    pub(crate) stats: schedule::Stats,
    pub(crate) launcher: Option<String>,
}

/// Holds `build-dir/.lock` for one build (waits, saying so, while another build holds it).
pub(crate) fn lock(build_dir: &Path) -> Result<BuildLock, CompileError> {
    BuildLock::acquire(build_dir, || {
        ui::status(&format!(
            "waiting for another build using {}",
            build_dir.display()
        ))
    })
    .map_err(|source| CompileError::BuildDir {
        path: build_dir.to_path_buf(),
        source,
    })
}

/// Runs the graph: commands name the build environment's folders through links in build-dir
/// and the project's files relatively (the same commands in every isolated build and
/// checkout); steps whose record says nothing changed are reused.
pub(crate) fn run(
    plan: &BuildPlan,
    tc: &Toolchain,
    python: &PythonInfo,
    mut steps: Vec<Step>,
    opts: &RunOptions,
) -> Result<Ran, CompileError> {
    let build_dir = &plan.build_dir;
    let stable = StablePaths::new(&plan.root, build_dir, tc, python);
    let launcher_env = tc.launcher.as_ref().map_or_else(Vec::new, |l| {
        l.environment(
            &plan.root,
            build_dir,
            &crate::toolchain::identity::compilers(tc),
        )
    });
    for step in &mut steps {
        stable.apply(&mut step.job);
        if step.job.launcher.is_some() {
            step.job.env = launcher_env.clone();
        }
    }
    let _links = stable.create().map_err(|source| CompileError::BuildDir {
        path: build_dir.join("env"),
        source,
    })?;
    let cache = Cache::open(build_dir, crate::toolchain::identity::full(tc, python))
        .with_python_free_identity(crate::toolchain::identity::compilers(tc));
    let jobserver = schedule::jobserver_from_env();
    // The launcher's counters before and after, for the summary (sccache: other builds
    // sharing its server at the same time would be counted too).
    let counts_before = tc.launcher.as_ref().and_then(|l| l.before_build(build_dir));
    let db = compile_db::CompileDb::new(build_dir, &stable);
    // Before the steps run too: a build that fails still leaves the editor its commands.
    write_db(&db, &steps, &[]);
    let remote = remote_steps(tc, &steps, plan.jobs);
    let stats = schedule::run(
        &steps,
        &schedule::Options {
            workers: remote
                .as_ref()
                .and_then(|_| tc.launcher.as_ref()?.dist.slots())
                .map_or(plan.jobs, |slots| slots.max(plan.jobs)),
            verbose: opts.verbose,
            cache: &cache,
            jobserver: jobserver.as_ref(),
            memory: memory::MemoryLimit::new(opts.max_memory),
            remote,
        },
    )?;
    write_db(&db, &steps, &stats.commands);
    let launcher = match &tc.launcher {
        Some(l) if stats.ran > 0 => l.summary(build_dir, counts_before),
        _ => None,
    };
    Ok(Ran { stats, launcher })
}

/// Writes the compilation database; one that cannot be written is a warning, not a failure.
fn write_db(db: &compile_db::CompileDb, steps: &[Step], ran: &[(usize, Vec<String>)]) {
    if let Err(e) = db.write(steps, ran) {
        ui::warn(&format!(
            "cannot write {} in the build folder: {e}",
            compile_db::FILE
        ));
    }
}

/// With a reachable sccache-dist cluster: which steps it compiles (those run through sccache,
/// except in zig mode, whose host-compiler wrapper sccache cannot package), and this machine's
/// `jobs` slots for the rest (device links, links).
fn remote_steps(tc: &Toolchain, steps: &[Step], jobs: usize) -> Option<schedule::Remote> {
    let launcher = tc.launcher.as_ref()?;
    launcher.dist.cpus()?;
    let shipped = |s: &Step| s.job.launcher.is_some() && tc.zig.is_none();
    Some(schedule::Remote {
        steps: steps.iter().map(shipped).collect(),
        local_slots: jobs,
    })
}

/// A cluster that answers is tried with one tiny compile: where it refuses this client (a
/// wrong token: sccache then fails every compile it sends), the build compiles here without
/// sccache, with one warning, rather than fail.
fn check_cluster(tc: &mut Toolchain, build_dir: &Path) {
    use crate::toolchain::sccache_dist::{self, Dist};
    let Some(l) = tc.launcher.as_ref() else {
        return;
    };
    let Dist::Ready { scheduler, .. } = &l.dist else {
        return;
    };
    // zig mode compiles here anyway (`announce_cluster`).
    if tc.zig.is_some() {
        return;
    }
    if let Some(script) = sccache_dist::unshippable_host(&tc.host.path) {
        ui::warn(&format!(
            "the host compiler {} is a script, not a compiler binary: sccache-dist cannot package it for the build servers, so host compiles (nvcc's host step among them) run on this machine; set `host-compiler` (or CUDAHOSTCXX) to the compiler binary it runs (e.g. /usr/bin/g++-13) to ship them",
            script.display()
        ));
    }
    if let Err(why) = sccache_dist::probe(&l.path, &tc.host.path, &build_dir.join("dist-probe")) {
        ui::warn(&format!(
            "sccache-dist scheduler {scheduler} refused a test compile ({why}); compiling on this machine without sccache (check the `[dist.auth]` token in sccache's configuration)"
        ));
        tc.launcher = None;
        tc.launcher_wraps_nvcc = false;
    }
}

/// Says what the build cluster will do (once, before anything compiles): where compiles go,
/// or one warning that the configured scheduler cannot be reached and they run here.
fn announce_cluster(tc: &Toolchain) {
    use crate::toolchain::sccache_dist::Dist;
    let Some(l) = tc.launcher.as_ref() else {
        return;
    };
    match &l.dist {
        Dist::Off => {}
        Dist::Ready { .. } if tc.zig.is_some() => ui::warn(&format!(
            "{}; `manylinux` builds compile with zig, whose wrapper sccache cannot package for a build server: every compile runs on this machine",
            l.dist.describe()
        )),
        Dist::Ready { .. } if !tc.launcher_wraps_nvcc => ui::status(&format!(
            "{}: host compiles are distributed, CUDA compiles run on this machine",
            l.dist.describe()
        )),
        Dist::Ready { .. } => ui::status(&format!(
            "{}: compiles are distributed there, the queue sized by its cores",
            l.dist.describe()
        )),
        Dist::Unreachable { .. } => ui::warn(&format!(
            "{}; compiling on this machine instead (sccache's cache still serves)",
            l.dist.describe()
        )),
    }
}

/// The toolchain as this build uses it, and each target's `-gencode` list: says what it builds
/// (`what`: name and version) and with which headers and libcudart when their releases differ
/// (or `verbose`); runs nvcc directly when the launcher is known to break these compiles.
pub(crate) fn prepare(
    toolchain: &Toolchain,
    plan: &BuildPlan,
    cudart: Option<&FoundLibrary>,
    verbose: bool,
    what: &str,
) -> Result<(Toolchain, Vec<Vec<Gencode>>), crate::plan::PlanError> {
    let mut tc = toolchain.clone();
    ui::status(&format!(
        "building {what} for CUDA {} (nvcc {} from {})",
        tc.nvcc.major,
        tc.nvcc.full_version,
        match &tc.nvcc.origin {
            NvccOrigin::System(label) => format!("{label}: {}", tc.nvcc.path.display()),
            NvccOrigin::Pip(site) => format!("NVIDIA wheels in {}", site.display()),
        }
    ));
    // Which headers and which libcudart, and why: when their releases differ (a system toolkit
    // next to a runtime wheel of another release), or with `verbose`.
    let differs =
        cudart.is_some_and(|rt| crate::libraries::cudart::runtime_differs(&tc.headers, rt));
    if differs || verbose {
        for line in crate::libraries::cudart::explain(&tc.headers, cudart) {
            match line.strip_prefix("warning: ") {
                Some(w) => ui::warn(w),
                None => ui::status(&line),
            }
        }
    }
    let nvcc_archs = tc.arch_info();
    let gencodes: Vec<Vec<Gencode>> = plan
        .targets
        .iter()
        .map(|t| crate::plan::arch::gencodes(t.archs(plan), plan.ptx, &nvcc_archs))
        .collect::<Result<_, _>>()
        .map_err(crate::plan::PlanError::from)?;
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
    // sccache asks nvcc about its host compiler from sccache's own folder, where zig's wrapper
    // (named relatively, in build-dir) is not found: "Compiler not supported".
    if tc.zig.is_some()
        && tc.launcher_wraps_nvcc
        && tc
            .launcher
            .as_ref()
            .is_some_and(|l| l.kind == crate::toolchain::launcher::Kind::Sccache)
    {
        ui::warn("sccache cannot wrap nvcc in `manylinux` builds (it checks nvcc's host compiler, zig's wrapper in build-dir, from its own folder and does not find it): nvcc runs directly; host compiles still go through the launcher");
        tc.launcher_wraps_nvcc = false;
    }
    check_cluster(&mut tc, &plan.build_dir);
    announce_cluster(&tc);
    Ok((tc, gencodes))
}
