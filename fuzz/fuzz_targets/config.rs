//! pyproject.toml text (+ optional config settings and environment variables after a NUL byte)
//! -> `Config`, the arch lists and the variant, or a rendered error: see
//! `cudawheel::fuzz_entry::config`. Any outcome but a panic is fine.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = cudawheel::fuzz_entry::config(data);
});
