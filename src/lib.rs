//! cudawheel: a PEP 517 build backend that turns projects with CUDA sources into small,
//! correct wheels that find NVIDIA's runtime wheels through `$ORIGIN`-relative RPATHs.
//!
//! Data flows one way through the stages, each in its own file (see ARCHITECTURE.md):
//!
//! | stage | file | input -> output |
//! | --- | --- | --- |
//! | 1 configuration | `config/` | pyproject.toml + `Overrides` -> `Config` |
//! | 2 build plan | `plan.rs` | `Config` + `PythonInfo` -> `BuildPlan` |
//! | 2a archs | `arch.rs` | `archs` spellings -> `ArchList`; + nvcc's list -> `-gencode` pairs |
//! | 3 toolchain | `toolchain/` | `ToolConfig` + env -> `Toolchain` (nvcc, header set, host compiler or zig, launcher, torch facts) |
//! | 3b libraries | `libraries.rs` + `catalog.rs` | library names -> `FoundLibrary` (dirs, SONAMEs, provider) |
//! | 4 compile | `compile.rs` | plan + toolchain -> `Job`s (exact commands) |
//! | 4a incremental | `incremental.rs` | `Job` + build-dir records -> reuse or run |
//! | 4c stable paths | `stable_paths.rs` | `Job` -> the same `Job` naming build-env folders through links, run in the project root |
//! | 4b schedule | `schedule.rs` | graph of `Job`s -> run in one pool, longest first |
//! | 5 link | `link.rs` | objects -> one shared object per extension |
//! | 6 ELF audit and tag | `elf.rs` + `inspect/` | `.so` -> `ElfReport`, GPU code, audit, platform tag |
//! | 7 archives | `archive.rs` + `metadata.rs` | files -> wheel / sdist |
//! | 7a variants | `variants.rs` | config + GPU code in the ELFs -> variant.json, label; wheels -> `*-variants.json` |
//! | 7b size | `wheel_size.rs` | wheel -> warning above 100 MiB (biggest members, archs) |
//!
//! `pep517.rs` is the only module that calls more than one stage; `py.rs` the only one that
//! knows Python; `ui.rs` the only one that prints.

pub mod audit;
pub mod bindings;
#[cfg(feature = "python")]
mod bridge;
pub mod build;
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
pub mod plan;
pub mod resolve;
pub mod toolchain;
pub mod ui;

pub use error::{render, Error};
