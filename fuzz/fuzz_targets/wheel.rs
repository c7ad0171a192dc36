//! A wheel (a zip file, or described as text and zipped here) -> the audit and GPU code report
//! of `python -m cudawheel audit`, `python -m cudawheel size`, and the `.dist-info` readers:
//! see `cudawheel::fuzz_entry::wheel`. Any outcome but a panic is fine.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = cudawheel::fuzz_entry::wheel(data);
});
