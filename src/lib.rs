//! cudawheel: a PEP 517 build backend that turns projects with CUDA sources into small,
//! correct wheels that find NVIDIA's runtime wheels through `$ORIGIN`-relative RPATHs.
//!
//! Data flows one way through the stages, one folder each (see ARCHITECTURE.md); a stage
//! imports only earlier stages and the shared readers (`scripts/dev/check-layers.py` checks it):
//!
//! | stage | folder | input -> output |
//! | --- | --- | --- |
//! | 1 configuration | `config/` | pyproject.toml + `Overrides` + environment -> `Config`, `PythonInfo` |
//! | 2 build plan | `plan/` | `Config` + `PythonInfo` -> `BuildPlan` (targets, sources, archs: `plan::arch`) |
//! | 3 toolchain | `toolchain/` | `ToolConfig` + env -> `Toolchain` (nvcc, header set, host compiler or zig, launcher, identity) |
//! | 4 libraries | `libraries/` | library names -> `FoundLibrary` per target (catalogue, discovery, libcudart's rules) |
//! | 5 bindings | `bindings/` | pybind11 / nanobind / torch (with its probe) -> flags, sources, libraries per target |
//! | 6 compile | `compile/` | plan + toolchain + libraries -> step graph -> run (incremental, stable paths) -> linked `.so` |
//! | 7 audit | `audit/` | built ELFs -> checks, GPU code, platform tag; finished wheel -> violations, size |
//! | 8 package | `package/` | files -> wheel / sdist (metadata, `_cuda_libs.py`, variants, archives) |
//!
//! Shared by every stage: `inspect/` (ELF, fatbin, manylinux policy and dist-info readers),
//! `hint.rs`, `ui.rs` (the only place that prints). Composers: `resolve/` (stages 1-5 as one
//! `Resolution`, shared by the hooks and `doctor`), `pipeline.rs` (the build: resolve, compile,
//! audit, package, the finished wheels' audit and size, the summary), `pep517.rs` (the hooks),
//! `commands.rs` (the CLI's operations), `doctor.rs` (the report); `error.rs` gathers the
//! stages' errors; `bridge.rs` is the only file that knows Python.

pub mod audit;
pub mod bindings;
#[cfg(feature = "python")]
mod bridge;
pub mod commands;
pub mod compile;
pub mod config;
pub mod doctor;
pub mod error;
#[doc(hidden)]
pub mod fuzz_entry;
pub mod hint;
pub mod inspect;
pub mod libraries;
pub mod package;
pub mod pep517;
pub mod pipeline;
pub mod plan;
pub mod resolve;
pub mod toolchain;
pub mod ui;

pub use error::{render, Error};
