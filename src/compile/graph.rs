//! The build's one step graph: every target's compiles, the device links of `rdc` targets, and
//! the links (a project shared library's link before the extensions linking it). Pure: the
//! commands and what each step waits for; `schedule` runs them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::includes::include_args;
use super::job::{self, CompileError};
use super::link;
use super::schedule::Step;
use crate::config::PythonInfo;
use crate::libraries::FoundLibrary;
use crate::plan::arch::Gencode;
use crate::plan::{BuildPlan, Lang, TargetPlan};
use crate::toolchain::Toolchain;

/// What one target needs from the earlier stages, in plan order.
pub(crate) struct TargetInputs<'a> {
    /// The libraries it links, cudart first.
    pub(crate) libs: Vec<&'a FoundLibrary>,
    /// The project's shared libraries it links.
    pub(crate) linked: Vec<&'a TargetPlan>,
    /// Its `-gencode` list: its own `archs`, else the top level's.
    pub(crate) gencodes: Vec<Gencode>,
}

/// The steps, and each target's RPATH (which the audit checks the linked file against).
pub(crate) struct Graph {
    pub(crate) steps: Vec<Step>,
    pub(crate) rpaths: Vec<Vec<String>>,
    /// Each target's object files (the stable-ABI audit names the ones using a symbol).
    pub(crate) objects: Vec<Vec<PathBuf>>,
}

/// Object files of one target and the steps that make them.
#[derive(Default)]
struct Objects {
    files: Vec<PathBuf>,
    steps: Vec<usize>,
}

pub(crate) fn build(
    plan: &BuildPlan,
    tc: &Toolchain,
    python: &PythonInfo,
    inputs: &[TargetInputs<'_>],
    system_rpath: bool,
) -> Result<Graph, CompileError> {
    let build_dir = &plan.build_dir;
    let obj_dir = build_dir.join("obj");
    let mut steps: Vec<Step> = Vec::new();
    let mut objects = compile_steps(plan, tc, python, inputs, &obj_dir, &mut steps)?;
    for (i, target) in plan.targets.iter().enumerate().filter(|(_, t)| t.rdc) {
        dlink_step(
            target,
            &inputs[i],
            tc,
            &obj_dir,
            &mut objects[i],
            &mut steps,
        );
    }
    let rpaths: Vec<Vec<String>> = plan
        .targets
        .iter()
        .zip(inputs)
        .map(|(t, inp)| link::rpath_for(t, &inp.libs, &inp.linked, system_rpath))
        .collect();
    let out_dir = build_dir.join("out");
    let mut link_step: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, target) in plan.targets.iter().enumerate() {
        let inp = &inputs[i];
        let job = link::link_job(
            target,
            &objects[i].files,
            tc,
            &inp.libs,
            &inp.linked,
            &rpaths[i],
            &out_dir,
        );
        let mut after = objects[i].steps.clone();
        // Shared libraries come first in the plan, so their link steps exist already.
        after.extend(
            inp.linked
                .iter()
                .filter_map(|t| link_step.get(t.key.as_str())),
        );
        link_step.insert(&target.key, steps.len());
        steps.push(Step { job, after });
    }
    let objects = objects.into_iter().map(|o| o.files).collect();
    Ok(Graph {
        steps,
        rpaths,
        objects,
    })
}

/// Every target's compile steps (no dependencies); their objects per target.
fn compile_steps(
    plan: &BuildPlan,
    tc: &Toolchain,
    python: &PythonInfo,
    inputs: &[TargetInputs<'_>],
    obj_dir: &Path,
    steps: &mut Vec<Step>,
) -> Result<Vec<Objects>, CompileError> {
    let own_root = plan.build_dir.join("cuda-headers");
    let mut objects = Vec::new();
    for (target, inp) in plan.targets.iter().zip(inputs) {
        let includes = include_args(&tc.headers, &inp.libs, &own_root).map_err(|source| {
            CompileError::BuildDir {
                path: own_root.clone(),
                source,
            }
        })?;
        let jobs = job::compile_jobs(target, plan, tc, python, &inp.gencodes, obj_dir, &includes);
        objects.push(Objects {
            files: jobs.iter().map(|j| j.output.clone()).collect(),
            steps: (steps.len()..steps.len() + jobs.len()).collect(),
        });
        steps.extend(jobs.into_iter().map(|job| Step {
            job,
            after: Vec::new(),
        }));
    }
    Ok(objects)
}

/// The device link of an `rdc` target, after its CUDA compiles; its object joins the target's.
fn dlink_step(
    target: &TargetPlan,
    inp: &TargetInputs<'_>,
    tc: &Toolchain,
    obj_dir: &Path,
    objects: &mut Objects,
    steps: &mut Vec<Step>,
) {
    let (cuda_objs, cuda_steps): (Vec<PathBuf>, Vec<usize>) = target
        .sources
        .iter()
        .zip(objects.files.iter().zip(&objects.steps))
        .filter(|(s, _)| s.lang == Lang::Cuda)
        .map(|(_, (o, step))| (o.clone(), *step))
        .unzip();
    let statics: Vec<PathBuf> = inp
        .libs
        .iter()
        .filter(|l| !l.shared.is_empty())
        .flat_map(|l| l.statics.iter().cloned())
        .collect();
    let job = job::dlink_job(target, &cuda_objs, tc, &inp.gencodes, &statics, obj_dir);
    objects.files.push(job.output.clone());
    objects.steps.push(steps.len());
    steps.push(Step {
        job,
        after: cuda_steps,
    });
}
