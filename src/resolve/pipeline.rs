//! The stages in a build's order: config (given) -> variant, target CPU, plan -> torch and jax
//! probes -> bindings -> toolchain -> libraries -> requirements. What is probed (jax, the
//! toolchain) comes either from probing now (a build) or from a survey made before (a
//! report), so nothing is probed twice and the first error is the one a build meets.

use std::collections::{BTreeMap, BTreeSet};

use crate::bindings::jax::{self, JaxInfo};
use crate::bindings::torch::probe::TorchInfo;
use crate::bindings::{self, torch};
use crate::config::{Bindings, Config, PythonInfo};
use crate::error::Error;
use crate::libraries::{self, targets};
use crate::package::{self, sdist, variants};
use crate::plan::driver_floors::{self, Floor};
use crate::plan::{BuildPlan, Lang, PlanError, TargetKind, TargetPlan};
use crate::toolchain::{self, Toolchain, ToolchainError};
use crate::ui;

use super::survey::Environment;
use super::{Request, Resolved};

/// Where the probed parts come from.
pub(super) enum Probes<'a> {
    /// Probe each when the build reaches it.
    Now,
    /// Take them from the environment's survey.
    Surveyed(&'a Environment),
}

/// Why the pipeline stopped.
pub(super) enum Stop {
    Error(Error),
    /// At the toolchain, whose failure the survey holds.
    Toolchain,
    /// At jax, whose failure the survey holds.
    Jax,
}

impl From<Error> for Stop {
    fn from(e: Error) -> Self {
        Stop::Error(e)
    }
}

/// The stages before the toolchain: what the project asks for, the torch it builds against.
struct Prepared {
    config: Config,
    variant: Option<variants::Spec>,
    cross: Option<toolchain::cross::Cross>,
    /// The interpreter as the wheel's platform sees it.
    python: PythonInfo,
    plan: BuildPlan,
    torch: Option<TorchInfo>,
}

/// config -> ... -> bindings, stopping at the first error.
pub(super) fn run(
    req: &Request<'_>,
    config: Config,
    split: bool,
    probes: Probes<'_>,
) -> Result<Resolved, Stop> {
    let mut p = prepare(req, config, split)?;
    // `bindings = "jax"`: jax too, so a missing jax is said before a missing nvcc.
    let jax_info = match (jax::wanted(&p.config.tool), &probes) {
        (false, _) => None,
        (true, Probes::Now) => Some(jax::probe(req.python).map_err(Error::from)?),
        (true, Probes::Surveyed(env)) => match &env.jax {
            Some(Ok(info)) => Some(info.clone()),
            _ => return Err(Stop::Jax),
        },
    };
    bindings::apply(&mut p.plan, &req.python.sys_path, p.torch.as_ref()).map_err(Error::from)?;
    if let Some(info) = &jax_info {
        jax::apply(&mut p.plan, info);
    }
    if p.config.tool.check_gpu {
        bindings::import_check::apply(&mut p.plan);
    }
    let toolchain = match probes {
        Probes::Now => toolchain::discover(&p.config.tool, &req.overrides.env, &p.python)
            .map_err(Error::from)?,
        Probes::Surveyed(env) => env.toolchain.toolchain().map_err(|_| Stop::Toolchain)?,
    };
    Ok(link(req, p, toolchain, jax_info, split)?)
}

/// Variant, target CPU, plan, the zig-mode and split checks, torch's probe.
fn prepare(req: &Request<'_>, config: Config, split: bool) -> Result<Prepared, Error> {
    let variant = config.variant.clone();
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
    if split {
        crate::plan::split::check(&plan, &config)?;
    }
    // What zig mode cannot build (torch among it) is refused before torch is probed.
    toolchain::zig::check(&config.tool, &python.machine).map_err(ToolchainError::from)?;
    // `bindings = "torch"`: torch is asked about itself once, before discovery (a missing
    // torch is said before a missing nvcc) and before flags are added.
    let torch = if plan.targets.iter().any(|t| t.bindings == Bindings::Torch) {
        Some(torch::probe::probe(req.python)?)
    } else {
        None
    };
    Ok(Prepared {
        config,
        variant,
        cross,
        python,
        plan,
        torch,
    })
}

/// Toolchain known: the libraries each target links, the wheel's name, requirements, floors.
fn link(
    req: &Request<'_>,
    p: Prepared,
    mut toolchain: Toolchain,
    jax_info: Option<JaxInfo>,
    split: bool,
) -> Result<Resolved, Error> {
    let Prepared {
        config,
        variant,
        cross,
        python,
        mut plan,
        torch: torch_info,
    } = p;
    toolchain.cross = cross;
    if let Some(zig) = &mut toolchain.zig {
        toolchain.host = toolchain::zig::place(zig, &plan.build_dir);
    }
    if split {
        crate::plan::split::apply(&mut plan, &config, toolchain.nvcc.major)?;
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
    let major = toolchain.nvcc.major;
    let framework = |t: &TargetPlan| torch::libraries_of(t, limited, major, &torch_libs);
    let mut linked = targets::for_targets(std::mem::take(&mut plan.targets), &search, &framework)?;
    if let Some(c) = &toolchain.cross {
        linked = libraries::cross::for_target(linked, &search, req.python, c, &plan.build_dir)?;
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
        torch::stable::fit_floors(&mut linked.libs, &plan, toolchain.nvcc.major);
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
        floors,
        python,
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
