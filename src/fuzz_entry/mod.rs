//! What the fuzz targets (`fuzz/`) run, here so that the regression tests
//! (`tests/fuzz_regressions.rs`) replay crash inputs through exactly the same code. One door per
//! reader of input that a user or another tool wrote: `config` (pyproject.toml, `-C` settings,
//! the environment), `elf` (an ELF file: dynamic section, symbol versions, symbol tables,
//! fatbin) and `wheel` (a wheel as `python -m cudawheel audit` reads it). `config_keys` gives
//! the key table the config target's dictionary and seeds are made from.
//! No function here may panic, whatever the bytes.

mod keys;
mod wheel;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::audit::elf_rules as elf;
use crate::config::{self, Overrides};

pub use keys::{config_keys, ConfigKey};
pub use wheel::{wheel, wheel_text};

/// pyproject.toml text, optionally followed by a NUL byte and `key=value` lines: config
/// settings (`-C key=value`), or with an `env:` prefix environment variables. Returns whether
/// the configuration was accepted (errors are rendered, as a user would see them). An accepted
/// configuration goes on to the readers of later stages that take its raw values: the arch
/// lists (`archs`, a target's `archs`, `TORCH_CUDA_ARCH_LIST`) and the variant keys.
pub fn config(data: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(data) else {
        return false;
    };
    let (pyproject, extra) = text.split_once('\0').unwrap_or((text, ""));
    let mut overrides = Overrides {
        settings: BTreeMap::new(),
        env: BTreeMap::new(),
    };
    for line in extra.lines() {
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        match key.strip_prefix("env:") {
            Some(var) => overrides.env.insert(var.into(), value.into()),
            None => overrides.settings.insert(key.into(), value.into()),
        };
    }
    // A folder that holds nothing: readme / license-files references fail cleanly.
    let root = Path::new("/nonexistent/cudawheel-fuzz-project");
    match config::parse_str(root, pyproject, &overrides) {
        Ok(cfg) => {
            let _ = cfg.tool.suffix_for(13);
            let _ = format!("{cfg:?}");
            let sources = crate::plan::arch_sources::sources(&cfg.tool);
            let _ = format!("{sources:?}");
            let _ = format!("{:?}", cfg.variant);
            true
        }
        Err(e) => {
            let _ = crate::render(&crate::Error::from(e));
            false
        }
    }
}

/// Bytes as a built `.so`: `elf::parse`, then the platform tag and the audit a wheel build
/// runs on it; the symbol tables (the exports, the symbols of each required version, every
/// `.dynsym` and `.symtab` name), the zig-mode C++ runtime check, the CPU check and the GPU
/// code of its fatbin. Returns whether the bytes parsed as ELF.
pub fn elf(data: &[u8]) -> bool {
    let path = Path::new("pkg/_core.so");
    let _ = crate::inspect::fatbin::gpu_code(data);
    match elf::parse(path, data) {
        Ok(report) => {
            let provided: BTreeSet<String> = ["libcudart.so.13".to_string()].into();
            let _ = elf::platform_tag(&[&report], "x86_64", &provided);
            let _ = elf::platform_tag(&[&report], "aarch64", &provided);
            let expected = vec!["$ORIGIN/../nvidia/cu13/lib".to_string()];
            if let Err(e) = elf::audit(&report, "pkg/_core.so", &expected, &provided, false) {
                let _ = crate::render(&crate::Error::from(e));
            }
            if let Err(e) = elf::check_libcxx_only(&report, "pkg/_core.so") {
                let _ = crate::render(&crate::Error::from(e));
            }
            let _ = crate::audit::tag::check_machine(&[("pkg/_core.so", &report)], "x86_64");
            for version in report.version_needs.values().flatten() {
                let _ = elf::symbols_of_version_in(data, version);
            }
            let _ = crate::inspect::elf::exported_in(path, data);
            symbol_names(data);
            true
        }
        Err(e) => {
            let _ = crate::render(&crate::Error::from(e));
            false
        }
    }
}

/// Every named symbol of both symbol tables, as a reader of `.dynsym` or `.symtab` (the FILE
/// symbols, the exports of a stable-ABI module) looks them up.
fn symbol_names(data: &[u8]) -> usize {
    let Ok(parsed) = goblin::elf::Elf::parse(data) else {
        return 0;
    };
    let dynamic = parsed
        .dynsyms
        .iter()
        .filter_map(|s| parsed.dynstrtab.get_at(s.st_name));
    let local = parsed
        .syms
        .iter()
        .filter_map(|s| parsed.strtab.get_at(s.st_name));
    dynamic.chain(local).map(str::len).sum()
}
