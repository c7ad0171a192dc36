//! What can go wrong in the bindings stage: a binding library missing from the build
//! environment, torch's probe and CUDA checks, and jax's errors (`jax::JaxError`, kept in
//! `jax.rs` beside the requirements its hints name).

use std::path::PathBuf;

use super::jax::JaxError;
use crate::hint::Hint;

#[derive(Debug, thiserror::Error)]
pub(crate) enum BindingsError {
    /// pybind11 or nanobind is not on `sys.path`.
    #[error("The binding library {name} was not found in the build environment; searched:\n{}", probes.iter().map(|p| format!("    {p}")).collect::<Vec<_>>().join("\n"))]
    NotFound {
        name: String,
        requirement: String,
        probes: Vec<String>,
    },
    #[error("`bindings = \"torch\"`: torch was not found in the build environment; searched:\n{}", probes.iter().map(|p| format!("    {p}")).collect::<Vec<_>>().join("\n"))]
    TorchNotFound { probes: Vec<String> },
    #[error("`bindings = \"torch\"`: asking the torch in {} about itself with {} failed: {message}", torch.display(), python.display())]
    TorchProbe {
        python: PathBuf,
        torch: PathBuf,
        message: String,
    },
    #[error("`bindings = \"torch\"`: nvcc {nvcc} (CUDA {nvcc_major}) does not match torch {torch_version}, which was built for CUDA {torch_cuda}: an extension must be compiled for the CUDA major of its torch")]
    TorchCudaMajor {
        nvcc: String,
        nvcc_major: u32,
        torch_version: String,
        torch_cuda: String,
    },
    #[error("`bindings = \"torch\"`: {key} has CUDA sources, but torch {torch_version} was built without CUDA (torch.version.cuda is None)")]
    TorchWithoutCuda { key: String, torch_version: String },
    #[error("`{key}` = \"{}.{}\" is newer than the torch that builds it, {torch_version} in {}: a stable-ABI extension can target only its build torch's release or an older one", target.0, target.1, dir.display())]
    StableAbiAboveTorch {
        key: String,
        target: (u64, u64),
        torch_version: String,
        dir: PathBuf,
    },
    /// `bindings = "jax"`.
    #[error(transparent)]
    Jax(#[from] JaxError),
}

impl Hint for BindingsError {
    fn hints(&self) -> Vec<String> {
        match self {
            BindingsError::NotFound { requirement, .. } => vec![
                format!("with build isolation (the default) the frontend installs it; with `--no-build-isolation`, `pip install \"{requirement}\"` first"),
            ],
            BindingsError::TorchNotFound { .. } => vec![
                "with build isolation (the default) the frontend installs torch (the `torch-version` key picks which); with `--no-build-isolation`, `pip install torch` into the environment that builds".into(),
            ],
            BindingsError::TorchProbe { .. } => vec![
                "check that `python -c \"import torch\"` works in the environment that builds (set CUDAWHEEL_DEBUG=1 for details)".into(),
            ],
            BindingsError::TorchCudaMajor { nvcc_major, torch_cuda, .. } => {
                let torch_major = torch_cuda.split('.').next().unwrap_or(torch_cuda);
                vec![
                    format!("use a CUDA {torch_major} toolkit (`CUDA_HOME`, or `cuda = {torch_major}`; CUDA 13's nvcc also comes from PyPI with `toolkit = \"pip\"`)"),
                    format!("or build against a torch made for CUDA {nvcc_major}: `torch-version` with build isolation, or install that torch (e.g. from https://download.pytorch.org/whl/cu{nvcc_major}X) with `--no-build-isolation`"),
                ]
            }
            BindingsError::TorchWithoutCuda { .. } => vec![
                "install a torch built with CUDA (PyPI's Linux x86_64 torch is), or build only C++ sources into this extension".into(),
            ],
            BindingsError::StableAbiAboveTorch { target, .. } => vec![
                format!("build with torch {}.{} or later (`torch-version = \">={}.{}\"` with build isolation, or install it into the build environment)", target.0, target.1, target.0, target.1),
                "or lower `torch-stable-abi` to the oldest torch the extension must run on (the wheel runs on every later release)".into(),
            ],
            BindingsError::Jax(e) => e.hints(),
        }
    }
}
