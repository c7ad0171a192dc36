//! Toolchain discovery as a survey: every part found on its own and kept with its outcome (the
//! nvcc candidates, the nvcc chosen with the archs it accepts and its header set, zig or the
//! host compiler, the launcher, the fatbin compression), each probed once. `toolchain()`
//! assembles from it what a build uses, stopping at the first failure in the order `discover`
//! meets them, so a report and a build agree without probing twice.

use std::path::Path;

use crate::config::compress::Compress;
use crate::config::{PythonInfo, ToolConfig};

use super::headers::{self, HeaderSet};
use super::launcher::{self, Launcher};
use super::zig::{self, Zig};
use super::{
    choose_nvcc_with, compiler_version, compress_for, compress_mode, host_for, nvcc_candidates,
    pip_toolkit_missing, probe_archs, probe_nvcc, CompressChoice, Env, HostCompiler, Nvcc,
    NvccCandidate, NvccOrigin, Toolchain, ToolchainError, ToolkitRequest,
};

/// The nvcc a build would use and what was learnt from it.
#[derive(Debug)]
pub(crate) struct ChosenNvcc {
    /// With `archs` filled when `--list-gpu-arch` answered.
    pub(crate) nvcc: Nvcc,
    /// Reading the archs it accepts.
    pub(crate) archs: Result<(), ToolchainError>,
    pub(crate) headers: Result<HeaderSet, ToolchainError>,
    /// `compress` for this nvcc, as data.
    pub(crate) compress: CompressChoice,
    /// The mode and flags a build uses, or why this nvcc cannot make it.
    compress_flags: Result<(Compress, Vec<String>), ToolchainError>,
    /// zig mode: whether this nvcc's headers accept zig's libc++.
    zig_ok: Result<(), ToolchainError>,
}

/// Every part of the toolchain, each with its own outcome.
#[derive(Debug)]
pub(crate) struct Survey {
    /// Every place discovery looks for nvcc, in order, each probed once.
    pub(crate) candidates: Vec<NvccCandidate>,
    /// The nvcc chosen, or why none is.
    pub(crate) nvcc: Result<ChosenNvcc, ToolchainError>,
    /// `nvcc` failed only because the CUDA toolkit would come from PyPI and is not installed
    /// here (an isolated build installs it).
    pub(crate) pip_pending: bool,
    /// zig (`manylinux`); `None` without that key.
    pub(crate) zig: Result<Option<Zig>, ToolchainError>,
    /// `zig` holds a refusal of the settings (checked before nvcc), not a missing zig.
    zig_refused: bool,
    /// The host compiler (zig's wrapper in zig mode).
    pub(crate) host: Result<HostCompiler, ToolchainError>,
    /// The first line of its `--version` (outside zig mode).
    pub(crate) host_version: Option<String>,
    /// `compiler-launcher`, when set.
    pub(crate) launcher: Option<Result<Launcher, ToolchainError>>,
    /// The toolkit `get_requires_for_build_wheel` asks for, or why none can be chosen.
    toolkit: Result<ToolkitRequest, ()>,
}

/// Finds every part of the toolchain for `tool`, for a report or a build that wants them all.
pub(crate) fn survey(tool: &ToolConfig, env: &Env, python: &PythonInfo) -> Survey {
    let candidates = nvcc_candidates(env, python);
    let chosen = choose_nvcc_with(tool, env, python, &mut |path, origin| {
        known_probe(&candidates, path, origin)
    });
    let toolkit = match &chosen {
        Ok(n) => Ok(super::toolkit_request_for(n.as_ref())),
        Err(_) => Err(()),
    };
    let pip_pending = matches!(chosen, Ok(None));
    let zig_check = zig::check(tool, &python.machine);
    let zig_refused = zig_check.is_err();
    let zig = match zig_check {
        Ok(()) => zig::find(tool, env, python).map_err(ToolchainError::from),
        Err(e) => Err(e.into()),
    };
    let host = host_for(zig.as_ref().ok().and_then(Option::as_ref), tool, env);
    let host_version = match (&host, &tool.manylinux) {
        (Ok(h), None) => compiler_version(&h.path),
        _ => None,
    };
    let nvcc = match chosen {
        Ok(Some(n)) => Ok(learn(
            n,
            tool,
            python,
            zig.as_ref().ok().and_then(Option::as_ref),
        )),
        Ok(None) => Err(pip_toolkit_missing(env, python)),
        Err(e) => Err(e),
    };
    let launcher = tool
        .compiler_launcher
        .as_deref()
        .map(|name| launcher::find(name, env, python));
    Survey {
        candidates,
        nvcc,
        pip_pending,
        zig,
        zig_refused,
        host,
        host_version,
        launcher,
        toolkit,
    }
}

/// A candidate's answer from the list already probed; a path not in it is probed now.
fn known_probe(
    candidates: &[NvccCandidate],
    path: &Path,
    origin: NvccOrigin,
) -> Result<Nvcc, ToolchainError> {
    let known = candidates
        .iter()
        .filter(|c| c.path == path)
        .find_map(|c| c.probe.as_ref());
    match known {
        Some(Ok(n)) => Ok(Nvcc {
            origin,
            ..n.clone()
        }),
        Some(Err(ToolchainError::NvccBroken { path, message })) => {
            Err(ToolchainError::NvccBroken {
                path: path.clone(),
                message: message.clone(),
            })
        }
        _ => probe_nvcc(path, origin),
    }
}

/// What the chosen nvcc accepts, its headers and the compression it makes.
fn learn(mut nvcc: Nvcc, tool: &ToolConfig, python: &PythonInfo, zig: Option<&Zig>) -> ChosenNvcc {
    let archs = probe_archs(&mut nvcc);
    let sites: Vec<_> = python.toolkit_sites().cloned().collect();
    let headers = headers::probe(&nvcc, &sites);
    let compress = compress_for(tool, &nvcc);
    let compress_flags = compress_mode(tool, &nvcc);
    let zig_ok = match zig {
        Some(_) => zig::check_nvcc(&nvcc).map_err(ToolchainError::from),
        None => Ok(()),
    };
    ChosenNvcc {
        nvcc,
        archs,
        headers,
        compress,
        compress_flags,
        zig_ok,
    }
}

impl Survey {
    /// The toolchain a build uses, or the first failure in the order `discover` meets them.
    pub(crate) fn toolchain(&self) -> Result<Toolchain, &ToolchainError> {
        if self.zig_refused {
            if let Err(e) = &self.zig {
                return Err(e);
            }
        }
        let chosen = self.nvcc.as_ref()?;
        chosen.archs.as_ref()?;
        let headers = chosen.headers.as_ref()?;
        let zig = self.zig.as_ref()?;
        chosen.zig_ok.as_ref()?;
        let host = self.host.as_ref()?;
        let launcher = self.launcher.as_ref().map(Result::as_ref).transpose()?;
        let (compress, compress_flags) = chosen.compress_flags.as_ref()?;
        Ok(Toolchain {
            nvcc: chosen.nvcc.clone(),
            host: host.clone(),
            launcher: launcher.cloned(),
            launcher_wraps_nvcc: true,
            headers: headers.clone(),
            zig: zig.clone(),
            compress: *compress,
            compress_flags: compress_flags.clone(),
            cross: None,
        })
    }

    /// `toolchain()`'s failure, taken out of the survey.
    pub(crate) fn into_error(self) -> Option<ToolchainError> {
        if self.toolchain().is_ok() {
            return None;
        }
        if self.zig_refused {
            return self.zig.err();
        }
        let chosen = match self.nvcc {
            Ok(c) => c,
            Err(e) => return Some(e),
        };
        let failed = [
            chosen.archs.err(),
            chosen.headers.err(),
            self.zig.err(),
            chosen.zig_ok.err(),
            self.host.err(),
            self.launcher.and_then(Result::err),
            chosen.compress_flags.err(),
        ];
        failed.into_iter().flatten().next()
    }

    /// The toolkit an isolated build asks PyPI for; `None` when no nvcc fits the settings.
    pub(crate) fn toolkit_request(&self) -> Option<&ToolkitRequest> {
        self.toolkit.as_ref().ok()
    }

    /// The nvcc chosen, when one is.
    pub(crate) fn chosen(&self) -> Option<&Nvcc> {
        self.nvcc.as_ref().ok().map(|c| &c.nvcc)
    }

    /// The chosen nvcc with the archs it accepts, when they could be read.
    pub(crate) fn with_archs(&self) -> Option<&Nvcc> {
        self.nvcc
            .as_ref()
            .ok()
            .filter(|c| c.archs.is_ok())
            .map(|c| &c.nvcc)
    }
}
