//! Stage 7, audit: the built ELF files and finished wheels are read back and checked.
//! `built` checks every built ELF before packaging (rules in `elf_rules`, CUDA runtime symbols in
//! `runtime_symbols`, GPU code read back) and `tag` picks the platform tag; `wheel_audit` audits
//! a finished wheel (also `python -m cudawheel audit`), `variant_audit` its variant files, and
//! `size` reports what makes a wheel big; `built_archs` compares what a wrapped build compiled
//! for with `archs`.

pub(crate) mod built;
pub(crate) mod built_archs;
pub(crate) mod elf_rules;
pub(crate) mod runtime_symbols;
pub(crate) mod size;
pub(crate) mod tag;
pub(crate) mod torch_abi;
pub(crate) mod variant_audit;
pub(crate) mod wheel_audit;
