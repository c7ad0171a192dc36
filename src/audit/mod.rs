//! Stage 7, audit: the built ELF files and finished wheels are read back and checked.
//! `built` checks every built ELF before packaging (rules in `elf_rules`, CUDA runtime symbols in
//! `runtime_symbols`, GPU code read back) and `tag` picks the platform tag; `wheel_audit` audits
//! a finished wheel (also `python -m cudawheel audit`), `variant_audit` its variant files, and
//! `size` reports what makes a wheel big.

pub mod built;
pub mod elf_rules;
pub mod runtime_symbols;
pub mod size;
pub mod tag;
pub mod variant_audit;
pub mod wheel_audit;
