//! Replays every input the fuzzers once crashed on (tests/fuzz-regressions/<target>/) and the
//! fuzz seeds through the fuzz targets' code (`cudawheel::fuzz_entry`): none may panic.
//! scripts/fuzz.sh says how the inputs were found.

use std::path::{Path, PathBuf};

fn inputs(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.retain(|p| p.is_file() && p.file_name().is_some_and(|n| n != "README.md"));
    files.sort();
    files
}

fn replay(target: &str, run: fn(&[u8]) -> bool) -> (usize, usize) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut accepted = 0;
    let mut total = 0;
    for dir in [
        root.join("tests/fuzz-regressions").join(target),
        root.join("fuzz/seeds").join(target),
    ] {
        for file in inputs(&dir) {
            let data = std::fs::read(&file).unwrap();
            let ok = std::panic::catch_unwind(|| run(&data))
                .unwrap_or_else(|_| panic!("{} panics", file.display()));
            accepted += usize::from(ok);
            total += 1;
        }
    }
    (accepted, total)
}

#[test]
fn config_inputs_never_panic() {
    let (accepted, total) = replay("config", cudawheel::fuzz_entry::config);
    // Some seeds are valid configurations, the regression inputs are not.
    assert!(accepted >= 1 && total > accepted, "{accepted} of {total}");
}

#[test]
fn elf_inputs_never_panic() {
    let (accepted, total) = replay("elf", cudawheel::fuzz_entry::elf);
    assert!(accepted >= 5, "{accepted} of {total}");
}
