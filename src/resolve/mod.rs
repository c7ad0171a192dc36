//! The shared resolve step, everything known before compiling, in a build's order: config ->
//! plan -> bindings (torch and jax probed and applied first, so a missing framework is said
//! before a missing nvcc) -> toolchain -> libraries (each target's, then the wheel's name,
//! requirements and floors). Every hook that builds or describes a wheel (and `doctor`) starts
//! here; `pep517` goes on from its result.
//!
//! The result is data: a `Resolution` holds each stage's outcome (its value, or its typed
//! error) and where each choice came from. A build stops at the first error
//! (`Resolution::for_build`, `resolve`); a report (`Resolution::describe`) goes on wherever the
//! stages do not depend on each other and also surveys the environment (every nvcc candidate,
//! the catalogue libraries, memory, what an isolated build installs).
//!
//! - `pipeline.rs`: the stages in a build's order, with what is probed handed in;
//! - `survey.rs`: the environment's part (`Environment`), from the settings alone;
//! - `resolution.rs`: `Resolution`, `Outcome`, the first error for a build;
//! - `preview.rs`: the wheel a resolution makes (`WheelPreview`) and what an isolated build
//!   supplies.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::bindings::{self, torch};
use crate::config::{Config, Overrides, PythonInfo, ToolConfig};
use crate::error::Error;
use crate::libraries::{self, targets, FoundLibrary};
use crate::package::metadata::DistName;
use crate::package::variants;
use crate::package::wheel::DistInfo;
use crate::plan::driver_floors::Floor;
use crate::plan::{BuildPlan, TargetKind, TargetPlan};
use crate::toolchain::{self, Toolchain};

mod pipeline;
mod preview;
mod resolution;
mod survey;

pub(crate) use resolution::{Outcome, Project, Resolution, WrapView};
pub(crate) use survey::{ArchReport, Catalogue, Environment, Target, Whose};

/// What every hook gets: the project, the overrides (config settings + environment), and the
/// Python that runs the build.
#[derive(Debug, Clone)]
pub(crate) struct Request<'a> {
    pub(crate) source_tree: &'a Path,
    pub(crate) overrides: &'a Overrides,
    pub(crate) python: &'a PythonInfo,
}

/// Stages 1-4 done: everything known before compiling.
#[derive(Debug)]
pub(crate) struct Resolved {
    pub(crate) config: Config,
    /// Optional targets whose libraries are missing are already dropped.
    pub(crate) plan: BuildPlan,
    pub(crate) toolchain: Toolchain,
    pub(crate) name: DistName,
    /// Every library found, by name (`cudart` included).
    pub(crate) libs: BTreeMap<String, FoundLibrary>,
    /// Per target (same order as `plan.targets`): the libraries it links, cudart first.
    pub(crate) target_libs: Vec<Vec<String>>,
    /// `Requires-Dist` of the NVIDIA wheels, from every shared library the targets link.
    pub(crate) cuda_requires: Vec<String>,
    /// The wheel variant this build makes, if any (PEP 825).
    pub(crate) variant: Option<variants::Spec>,
    /// `Requires-Dist: torch>=X.Y,<X.(Y+1)` of torch extensions (never moved by `cuda-deps`).
    pub(crate) torch_requires: Vec<String>,
    /// `Requires-Dist: jax>=X.Y.Z` of JAX extensions (never moved by `cuda-deps`).
    pub(crate) jax_requires: Vec<String>,
    /// Why the wheel needs a driver this new (`plan::driver_floors`).
    pub(crate) floors: Vec<Floor>,
    /// The interpreter as the wheel's platform sees it: the build's, or for a cross-build
    /// (`target`) its CPU and `EXT_SUFFIX` (`toolchain::cross::target_python`).
    pub(crate) python: PythonInfo,
}

impl Resolved {
    pub(crate) fn libs_of(&self, index: usize) -> Vec<&FoundLibrary> {
        self.target_libs[index]
            .iter()
            .map(|n| &self.libs[n])
            .collect()
    }

    pub(crate) fn linked_of(&self, target: &TargetPlan) -> Vec<&TargetPlan> {
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
    pub(crate) fn provided(&self) -> BTreeSet<String> {
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
    pub(crate) fn requirements(&self, sonames: &BTreeSet<String>) -> (Vec<String>, Vec<String>) {
        let (torch, cuda): (Vec<&FoundLibrary>, Vec<&FoundLibrary>) =
            self.libs.values().partition(|l| torch::is_torch_library(l));
        (
            targets::requirements_for(cuda, sonames),
            targets::requirements_for(torch, sonames),
        )
    }

    pub(crate) fn dist_info(&self) -> DistInfo<'_> {
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
            cuda_by_major: Vec::new(),
        }
    }
}

/// config -> plan -> toolchain -> libraries -> bindings: what `doctor`, the metadata hook and
/// every build share.
pub(crate) fn resolve(req: &Request<'_>, config: Config) -> Result<Resolved, Error> {
    resolve_with(req, config, false)
}

/// `resolve`; with `split`, and `split = "library"` set, the plan's GPU code moved into
/// generated shared libraries (`plan::split`) before the libraries each target links are found.
/// Stops at the first error (`Resolution::for_build`).
pub(crate) fn resolve_with(
    req: &Request<'_>,
    config: Config,
    split: bool,
) -> Result<Resolved, Error> {
    Resolution::for_build(req, config, split).into_resolved()
}

/// What `get_requires_for_build_wheel` returns: the binding libraries, the toolkit and CUDA
/// libraries from PyPI, then the build tools (launcher, zig).
///
/// A framework (torch) pins the CUDA it was built with (`cuda-toolkit[...]==13.2.2`), and the
/// toolkit asked for beside it (`cuda-toolkit[cccl,cudart,nvcc]`) then comes at that release,
/// nvcc included. The pip CPython 3.11 ships (23.2.1) resolves that only when it takes torch
/// first, and it orders the build requirements by string hash: torch's requirement carries an
/// `==<major>.*` clause so that pip always takes it first (`bindings::torch::requirement`).
/// With torch already installed where this is asked (`[build-system] requires`), the toolkit is
/// asked for at the release that torch pins (`bindings::toolkit_pin`), and, as that installed
/// `cuda-toolkit` satisfies the line whatever its extras, the extras' distributions by name at
/// that release (`libraries::toolkit_components`).
pub(crate) fn build_requirements(
    tool: &ToolConfig,
    env: &toolchain::Env,
    python: &PythonInfo,
) -> Result<Vec<String>, Error> {
    // A `cuda` list: every major's requirements, each once, in the order the majors ask; torch
    // once, the highest major's (one torch builds every major of a stable-ABI extension).
    if let crate::config::CudaChoice::Several(majors) = tool.cuda.value {
        let per_major = majors
            .iter()
            .map(|major| build_requirements(&tool.for_major(major), env, python))
            .collect::<Result<Vec<_>, _>>()?;
        return Ok(merge_majors(per_major));
    }
    let mut toolkit = toolchain::toolkit_request(tool, env, python)?;
    if let Some(pin) = bindings::toolkit_pin(tool, &python.sys_path, &toolkit) {
        toolkit.pin = pin;
    }
    let mut reqs = requirements_for(tool, &toolkit);
    // An installed `cuda-toolkit` (a framework's pin) satisfies `cuda-toolkit[nvcc,...]` in a
    // frontend's eyes whatever its extras: the extras' distributions are named as well.
    for r in libraries::toolkit_components::by_name(&reqs, &python.sys_path) {
        if !reqs.contains(&r) {
            reqs.push(r);
        }
    }
    Ok(reqs)
}

/// Each major's build requirements (lowest major first) as one list: each once, and torch's
/// only from the highest major that asks for it.
fn merge_majors(per_major: Vec<Vec<String>>) -> Vec<String> {
    let is_torch = |r: &String| crate::config::requirement_name(r) == bindings::torch::DIST;
    let last_torch = per_major.iter().rposition(|reqs| reqs.iter().any(is_torch));
    let mut out: Vec<String> = Vec::new();
    for (i, reqs) in per_major.into_iter().enumerate() {
        for r in reqs {
            if (!is_torch(&r) || Some(i) == last_torch) && !out.contains(&r) {
                out.push(r);
            }
        }
    }
    out
}

/// `build_requirements` for the toolkit already chosen.
pub(crate) fn requirements_for(
    tool: &ToolConfig,
    toolkit: &toolchain::ToolkitRequest,
) -> Vec<String> {
    let mut reqs = bindings::requirements(tool, toolkit.major);
    reqs.extend(libraries::build_requirements(tool, toolkit));
    reqs.extend(toolchain::tool_requirements(tool));
    reqs
}

#[cfg(test)]
mod tests {
    use super::merge_majors;

    #[test]
    fn several_majors_ask_for_one_torch_the_highest_majors() {
        let v = |items: &[&str]| items.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let merged = merge_majors(vec![
            v(&["torch>=2.10,<2.11,==2.*", "setuptools", "ninja"]),
            v(&[
                "torch>=2.11,<3,==2.*",
                "cuda-toolkit[nvcc]>=13,<14",
                "ninja",
            ]),
        ]);
        assert_eq!(
            merged,
            v(&[
                "setuptools",
                "ninja",
                "torch>=2.11,<3,==2.*",
                "cuda-toolkit[nvcc]>=13,<14"
            ])
        );
        // Control: a distribution whose name starts with torch's is not torch.
        let merged = merge_majors(vec![v(&["torchvision", "torch==2.10.*"]), v(&["numpy"])]);
        assert_eq!(merged, v(&["torchvision", "torch==2.10.*", "numpy"]));
    }
}
