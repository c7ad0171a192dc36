//! The shared resolve step: config -> plan -> toolchain -> libraries -> bindings, everything
//! known before compiling. Every hook that builds or describes a wheel (and `doctor`) starts
//! here; `pep517` goes on from its result.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::bindings::jax::{self, JaxInfo};
use crate::bindings::{self, torch};
use crate::config::{Bindings, Config, Overrides, PythonInfo, ToolConfig};
use crate::error::Error;
use crate::libraries::{self, targets, FoundLibrary};
use crate::package::metadata::DistName;
use crate::package::wheel::DistInfo;
use crate::package::{self, sdist, variants};
use crate::plan::driver_floors::{self, Floor};
use crate::plan::{BuildPlan, Lang, PlanError, TargetKind, TargetPlan};
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

/// Stages 1-4 done: everything known before compiling.
pub struct Resolved {
    pub config: Config,
    /// Optional targets whose libraries are missing are already dropped.
    pub plan: BuildPlan,
    pub toolchain: Toolchain,
    pub name: DistName,
    /// Every library found, by name (`cudart` included).
    pub libs: BTreeMap<String, FoundLibrary>,
    /// Per target (same order as `plan.targets`): the libraries it links, cudart first.
    pub target_libs: Vec<Vec<String>>,
    /// `Requires-Dist` of the NVIDIA wheels, from every shared library the targets link.
    pub cuda_requires: Vec<String>,
    /// The wheel variant this build makes, if any (PEP 825).
    pub variant: Option<variants::Spec>,
    /// `Requires-Dist: torch>=X.Y,<X.(Y+1)` of torch extensions (never moved by `cuda-deps`).
    pub torch_requires: Vec<String>,
    /// `bindings = "jax"`: what the jax in use reported.
    pub jax: Option<JaxInfo>,
    /// `Requires-Dist: jax>=X.Y.Z` of JAX extensions (never moved by `cuda-deps`).
    pub jax_requires: Vec<String>,
    /// Why the wheel needs a driver this new (`plan::driver_floors`).
    pub floors: Vec<Floor>,
    /// The interpreter as the wheel's platform sees it: the build's, or for a cross-build
    /// (`target`) its CPU and `EXT_SUFFIX` (`toolchain::cross::target_python`).
    pub python: PythonInfo,
    /// A cross-build: the target's NVIDIA wheels downloaded by this resolve (none when cached).
    pub downloaded: Vec<String>,
}

impl Resolved {
    pub fn libs_of(&self, index: usize) -> Vec<&FoundLibrary> {
        self.target_libs[index]
            .iter()
            .map(|n| &self.libs[n])
            .collect()
    }

    pub fn linked_of(&self, target: &TargetPlan) -> Vec<&TargetPlan> {
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
    pub fn provided(&self) -> BTreeSet<String> {
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

    /// The NVIDIA and torch requirements of the libraries providing `sonames`.
    pub fn requirements(&self, sonames: &BTreeSet<String>) -> (Vec<String>, Vec<String>) {
        let (torch, cuda): (Vec<&FoundLibrary>, Vec<&FoundLibrary>) =
            self.libs.values().partition(|l| torch::is_torch_library(l));
        (
            targets::requirements_for(cuda, sonames),
            targets::requirements_for(torch, sonames),
        )
    }

    pub fn dist_info(&self) -> DistInfo<'_> {
        DistInfo {
            project: &self.config.project,
            root: &self.config.root,
            name: &self.name,
            framework_requires: self
                .torch_requires
                .iter()
                .chain(&self.jax_requires)
                .cloned()
                .collect(),
            cuda_requires: &self.cuda_requires,
            cuda_deps: self.config.tool.cuda_deps,
            cuda_extra: &self.config.tool.cuda_extra,
        }
    }
}

/// config -> plan -> toolchain -> libraries -> bindings: what `doctor`, the metadata hook and
/// every build share.
pub fn resolve(req: &Request<'_>) -> Result<Resolved, Error> {
    let config = Config::load(req.source_tree, req.overrides)?;
    let variant = variants::Spec::from_config(&config.tool, config.variant_table.as_ref())?;
    // A cross-build (`target`) sees the interpreter as the target's: CPU, `EXT_SUFFIX`.
    let cross = toolchain::cross::cross(&config.tool, req.python).map_err(ToolchainError::from)?;
    let python = match &cross {
        Some(c) => toolchain::cross::target_python(req.python, c),
        None => req.python.clone(),
    };
    let mut plan = BuildPlan::new(&config, &python)?;
    if let Some(c) = &cross {
        plan.build_dir = toolchain::cross::build_dir(&plan.build_dir, c.machine);
    }
    // What zig mode cannot build (torch among it) is refused before torch is probed.
    toolchain::zig::check(&config.tool, &python.machine).map_err(ToolchainError::from)?;
    // `bindings = "torch"`: torch is asked about itself once, before discovery (a missing
    // torch is said before a missing nvcc) and before flags are added.
    let torch_info = if plan.targets.iter().any(|t| t.bindings == Bindings::Torch) {
        Some(torch::probe::probe(req.python)?)
    } else {
        None
    };
    // `bindings = "jax"`: jax too, so a missing jax is said before a missing nvcc.
    let jax_info = if jax::wanted(&config.tool) {
        Some(jax::probe(req.python)?)
    } else {
        None
    };
    bindings::apply(&mut plan, &req.python.sys_path, torch_info.as_ref())?;
    if let Some(info) = &jax_info {
        jax::apply(&mut plan, info);
    }
    if config.tool.check_gpu {
        bindings::import_check::apply(&mut plan);
    }
    let mut toolchain = toolchain::discover(&config.tool, &req.overrides.env, &python)?;
    toolchain.cross = cross;
    if let Some(zig) = &mut toolchain.zig {
        toolchain.host = toolchain::zig::place(zig, &plan.build_dir);
    }
    let torch_libs = match &torch_info {
        Some(info) => torch::for_build(info, &plan, &toolchain.nvcc)?,
        None => BTreeMap::new(),
    };
    let limited = plan.limited_api.is_some();
    let search = targets::Search {
        tool: &config.tool,
        major: toolchain.nvcc.major,
        nvcc: &toolchain.nvcc,
        headers: &toolchain.headers,
        env: &req.overrides.env,
        sys_path: &req.python.sys_path,
    };
    let framework = |t: &TargetPlan| torch::libraries_of(t, limited, &torch_libs);
    let mut linked = targets::for_targets(std::mem::take(&mut plan.targets), &search, &framework)?;
    let mut downloaded = Vec::new();
    if let Some(c) = &toolchain.cross {
        (linked, downloaded) =
            libraries::cross::for_target(linked, &search, req.python, c, &plan.build_dir)?;
    }
    plan.targets = std::mem::take(&mut linked.targets);
    if plan.targets.iter().all(|t| t.kind != TargetKind::Extension)
        && !config.tool.extensions.is_empty()
    {
        return Err(PlanError::NoTargets.into());
    }
    if let Some(info) = &torch_info {
        for warning in torch::fit_floors(&mut linked.libs, info) {
            ui::warn(&warning);
        }
    }
    let floors = floors_of(&plan, &toolchain);
    let name = package::dist_name(&config, variant.as_ref(), toolchain.nvcc.major);
    sdist::check_name(&config.root, &name)?;
    let mut r = Resolved {
        config,
        plan,
        toolchain,
        name,
        libs: linked.libs,
        target_libs: linked.target_libs,
        cuda_requires: Vec::new(),
        variant,
        torch_requires: Vec::new(),
        jax_requires: jax_info.iter().map(JaxInfo::requirement).collect(),
        jax: jax_info,
        floors,
        python,
        downloaded,
    };
    // Without `--as-needed` every listed shared library ends up in DT_NEEDED, so the requirements
    // known now are the ones the link produces; `build_wheel` derives them again from the ELFs.
    let listed: BTreeSet<String> = (0..r.plan.targets.len())
        .flat_map(|i| r.libs_of(i))
        .flat_map(|l| l.shared.iter().map(|s| s.soname.clone()))
        .collect();
    (r.cuda_requires, r.torch_requires) = r.requirements(&listed);
    Ok(r)
}

/// The driver floors of the build: the CUDA major's, and those of the flags every CUDA compile
/// gets (the `compress` flags, then each CUDA target's `nvcc-flags`, as the commands order
/// them).
fn floors_of(plan: &BuildPlan, tc: &Toolchain) -> Vec<Floor> {
    let args: Vec<Vec<&str>> = plan
        .targets
        .iter()
        .filter(|t| t.sources.iter().any(|s| s.lang == Lang::Cuda))
        .map(|t| {
            tc.compress_flags
                .iter()
                .chain(&t.nvcc_flags)
                .map(String::as_str)
                .collect()
        })
        .collect();
    driver_floors::floors(tc.nvcc.major, tc.nvcc.minor, &args)
}

/// What `get_requires_for_build_wheel` returns: the binding libraries, the toolkit and CUDA
/// libraries from PyPI, then the build tools (launcher, zig).
///
/// The binding libraries come first: a framework (torch) pins the CUDA it was built with
/// (`cuda-toolkit[...]==13.2.2`), and the pip CPython 3.11 ships (23.2.1) resolves in the
/// order given — handed `cuda-toolkit[...]>=13,<14` first it takes the newest cuda-toolkit,
/// then finds no torch that pins it and gives up (`ResolutionImpossible`). Handed torch first,
/// torch's own pin chooses the cuda-toolkit, with every pip.
pub fn build_requirements(
    tool: &ToolConfig,
    env: &toolchain::Env,
    python: &PythonInfo,
) -> Result<Vec<String>, Error> {
    let toolkit = toolchain::toolkit_request(tool, env, python)?;
    let mut reqs = bindings::requirements(tool, toolkit.major);
    reqs.extend(libraries::build_requirements(tool, &toolkit));
    reqs.extend(toolchain::tool_requirements(tool));
    Ok(reqs)
}
