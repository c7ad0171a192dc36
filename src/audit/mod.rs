//! Stage 7, audit: the built ELF files and finished wheels are read back and checked. `elf`
//! checks NEEDED/RPATH/symbol versions and picks the manylinux platform tag; `wheel` audits a
//! finished wheel (also `python -m cudawheel audit`); `size` reports what makes a wheel big.

pub mod built;
pub mod elf;
pub mod runtime_symbols;
pub mod size;
pub mod tag;
pub mod variants;
pub mod wheel;
