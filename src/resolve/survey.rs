//! The environment's part of a resolution, from the settings alone (no project needed): the
//! CPU the wheel is for, the toolchain surveyed part by part, the archs and their `-gencode`
//! pairs, the runtime a build links, what an isolated build installs, the memory parallel
//! steps may use, the binding libraries and jax, and every catalogue library.

use std::path::PathBuf;

use crate::bindings::jax::{self, JaxError, JaxInfo};
use crate::bindings::{self, BindingsError, Found};
use crate::compile::memory::MemoryLimit;
use crate::config::{Bindings, PythonInfo, ToolConfig};
use crate::libraries::catalog::CATALOG;
use crate::libraries::{self, targets, FoundLibrary, LibraryError, LibrarySpec};
use crate::plan::arch::{self, ArchError, ArchList, Gencode};
use crate::plan::arch_sources::{self, ArchSources};
use crate::toolchain::cross::{self, Cross, CrossError};
use crate::toolchain::survey::Survey;
use crate::toolchain::{self, PIP_MAJOR};

use super::Request;

/// What this environment has, for the settings in effect.
#[derive(Debug)]
pub(crate) struct Environment {
    pub(crate) target: Target,
    pub(crate) toolchain: Survey,
    pub(crate) archs: ArchReport,
    /// libcudart as a build links it (`None`: no nvcc or no header set to fit its floor to).
    pub(crate) cudart: Option<Result<FoundLibrary, LibraryError>>,
    /// What `get_requires_for_build_wheel` returns (`None`: no nvcc fits the settings).
    pub(crate) requirements: Option<Vec<String>>,
    /// The memory parallel steps may use (`None`: nothing readable).
    pub(crate) memory: Option<MemoryLimit>,
    /// The binding packages the project's extensions need, each found or not.
    pub(crate) bindings: Vec<(Bindings, Result<Found, BindingsError>)>,
    /// `bindings = "jax"`: the jax in use, asked about itself.
    pub(crate) jax: Option<Result<JaxInfo, JaxError>>,
    pub(crate) catalogue: Catalogue,
}

/// The CPU the wheel is for.
#[derive(Debug)]
pub(crate) struct Target {
    /// A cross-build (`target`), or `None` for this machine.
    pub(crate) cross: Result<Option<Cross>, CrossError>,
    /// The interpreter as the target sees it (the build's own without a cross-build).
    pub(crate) python: PythonInfo,
    /// A cross-build: the folder its NVIDIA wheels are unpacked into, and those already there.
    pub(crate) site: Option<(PathBuf, Vec<String>)>,
}

/// The archs a build would use, where each list came from, and their `-gencode` pairs.
#[derive(Debug)]
pub(crate) struct ArchReport {
    pub(crate) sources: ArchSources,
    /// The CUDA major whose default applies.
    pub(crate) major: u32,
    /// The wheel is for aarch64 (SBSA) systems.
    pub(crate) sbsa: bool,
    /// Each list a build compiles for (after a readable top-level list).
    pub(crate) uses: Vec<ArchUse>,
}

/// One arch list and its `-gencode` pairs with the nvcc found.
#[derive(Debug)]
pub(crate) struct ArchUse {
    pub(crate) whose: Whose,
    /// `None`: no nvcc whose archs are known.
    pub(crate) gencodes: Option<Result<Vec<Gencode>, ArchError>>,
}

/// Which list of `ArchSources`.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Whose {
    Top,
    /// `overrides[i]`.
    Target(usize),
    /// `torch.takers[i]`.
    Torch(usize),
}

/// Every catalogue library for the CUDA major a build would use.
#[derive(Debug)]
pub(crate) struct Catalogue {
    pub(crate) major: u32,
    /// The CUDA toolkit's folders were searched (there is an nvcc).
    pub(crate) toolkit_searched: bool,
    pub(crate) entries: Vec<(LibrarySpec, Result<FoundLibrary, LibraryError>)>,
}

impl Environment {
    /// Surveys what this environment has for `tool`; `project`: a pyproject.toml was read
    /// (binding libraries and jax are reported for a project only).
    pub(crate) fn survey(req: &Request<'_>, tool: &ToolConfig, project: bool) -> Environment {
        let env = &req.overrides.env;
        let target = target(req, tool);
        let toolchain = toolchain::survey::survey(tool, env, &target.python);
        let archs = arch_report(tool, &toolchain, &target);
        let cudart = toolchain.nvcc.as_ref().ok().and_then(|c| {
            let headers = c.headers.as_ref().ok()?;
            Some(targets::find_cudart(&targets::Search {
                tool,
                major: c.nvcc.major,
                nvcc: &c.nvcc,
                headers,
                env,
                sys_path: &req.python.sys_path,
            }))
        });
        let requirements = toolchain
            .toolkit_request()
            .map(|t| super::requirements_for(tool, t));
        let sys_path = &req.python.sys_path;
        let bindings = match project {
            true => bindings::packages(tool)
                .into_iter()
                .map(|b| (b, bindings::locate(b, sys_path)))
                .collect(),
            false => Vec::new(),
        };
        let jax = (project && jax::wanted(tool)).then(|| jax::probe(req.python));
        let catalogue = catalogue(tool, &toolchain, env, sys_path);
        Environment {
            target,
            toolchain,
            archs,
            cudart,
            requirements,
            memory: MemoryLimit::new(tool.max_memory),
            bindings,
            jax,
            catalogue,
        }
    }
}

fn target(req: &Request<'_>, tool: &ToolConfig) -> Target {
    let cross = cross::cross(tool, req.python);
    let (python, site) = match &cross {
        Ok(Some(c)) => {
            let dir = cross::build_dir(&req.source_tree.join(&tool.build_dir), c.machine);
            let site = cross::site(&dir);
            let unpacked = cross::unpacked(&site);
            (cross::target_python(req.python, c), Some((site, unpacked)))
        }
        _ => (req.python.clone(), None),
    };
    Target {
        cross,
        python,
        site,
    }
}

fn arch_report(tool: &ToolConfig, tc: &Survey, target: &Target) -> ArchReport {
    let sources = arch_sources::sources(tool);
    let sbsa = matches!(&target.cross, Ok(Some(c)) if c.machine == "aarch64");
    let major = tc.chosen().map_or(PIP_MAJOR, |n| n.major);
    let mut lists: Vec<(Whose, Option<&ArchList>)> = Vec::new();
    if let Ok(top) = &sources.top {
        lists.push((Whose::Top, top.as_ref()));
        for (i, o) in sources.overrides.iter().enumerate() {
            if let Ok(l) = &o.list {
                lists.push((Whose::Target(i), Some(l)));
            }
        }
        for (i, (_, l)) in sources.torch.iter().flat_map(|t| &t.takers).enumerate() {
            lists.push((Whose::Torch(i), Some(l)));
        }
    }
    let uses = lists
        .into_iter()
        .map(|(whose, list)| ArchUse {
            whose,
            gencodes: tc.with_archs().map(|n| {
                let info = arch::NvccArchs {
                    sbsa,
                    ..n.arch_info()
                };
                arch::gencodes(list, tool.ptx, &info)
            }),
        })
        .collect();
    ArchReport {
        sources,
        major,
        sbsa,
        uses,
    }
}

fn catalogue(
    tool: &ToolConfig,
    tc: &Survey,
    env: &toolchain::Env,
    sys_path: &[PathBuf],
) -> Catalogue {
    let nvcc = tc.chosen();
    let major = nvcc.map_or(PIP_MAJOR, |n| n.major);
    let entries = CATALOG
        .iter()
        .filter_map(|e| libraries::spec_for(e.name, major, tool, "doctor").ok())
        .map(|spec| {
            let found = libraries::find_in(&spec, major, nvcc, env, sys_path, false);
            (spec, found)
        })
        .collect();
    Catalogue {
        major,
        toolkit_searched: nvcc.is_some(),
        entries,
    }
}
