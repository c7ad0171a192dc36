//! Replays every input the fuzzers once crashed on (tests/fuzz-regressions/<target>/) and the
//! fuzz seeds through the fuzz targets' code (`cudawheel::fuzz_entry`): none may panic.
//! scripts/dev/fuzz.sh says how the inputs were found.

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

/// Every input of a packed corpus (fuzz/corpus/<target>.tar.gz) through the target's code.
fn replay_corpus(target: &str, run: fn(&[u8]) -> bool) -> usize {
    use std::io::Read;
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(format!("{target}.tar.gz"));
    let file = std::fs::File::open(&path).unwrap();
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(file));
    let mut n = 0;
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        let name = entry.path().unwrap().display().to_string();
        let mut data = Vec::new();
        entry.read_to_end(&mut data).unwrap();
        std::panic::catch_unwind(|| run(&data))
            .unwrap_or_else(|_| panic!("{target} corpus input {name} panics"));
        n += 1;
    }
    n
}

#[test]
fn config_corpus_never_panics() {
    assert!(replay_corpus("config", cudawheel::fuzz_entry::config) > 100);
}

#[test]
fn elf_corpus_never_panics() {
    assert!(replay_corpus("elf", cudawheel::fuzz_entry::elf) > 100);
}
