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
//! `commands.rs` (the CLI's operations), `cli/` (the CLI's commands, decided and rendered),
//! `doctor.rs` (the report); `error.rs` gathers the
//! stages' errors; `bridge.rs` is the only file that knows Python.

// Every module is private to the crate: the Python layer (`bridge`, feature `python`) is the
// one way in, and `fuzz_entry` the fuzz targets' door. Without that feature nothing calls the
// hooks, so the compiler would call the whole pipeline dead: dead code is checked with the
// feature on (`cargo clippy --features python` in scripts/test.sh).
#![cfg_attr(not(feature = "python"), allow(dead_code))]

mod audit;
mod bindings;
#[cfg(feature = "python")]
mod bridge;
mod cli;
mod commands;
mod compile;
mod config;
mod doctor;
mod error;
#[cfg(test)]
mod error_snapshots;
#[doc(hidden)]
pub mod fuzz_entry;
mod hint;
mod inspect;
mod libraries;
mod package;
mod pep517;
mod pipeline;
mod plan;
mod resolve;
mod toolchain;
mod ui;
mod wrap;

pub(crate) use error::{render, Error};
