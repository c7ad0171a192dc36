//! Bytes -> `elf::parse` -> platform tag and audit, as a wheel build and
//! `python -m cudawheel audit` run them on every ELF file, plus the symbol tables (exports,
//! symbols of a version, `.dynsym`/`.symtab` names) and the fatbin: see
//! `cudawheel::fuzz_entry::elf`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = cudawheel::fuzz_entry::elf(data);
});
