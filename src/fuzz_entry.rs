//! What the fuzz targets (`fuzz/`) run, here so that the regression tests
//! (`tests/fuzz_regressions.rs`) replay crash inputs through exactly the same code.
//! Neither function may panic, whatever the bytes.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::audit::elf_rules as elf;
use crate::config::{self, Overrides};

/// pyproject.toml text, optionally followed by a NUL byte and `key=value` lines: config
/// settings (`-C key=value`), or with an `env:` prefix environment variables. Returns whether
/// the configuration was accepted (errors are rendered, as a user would see them).
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
            true
        }
        Err(e) => {
            let _ = crate::render(&crate::Error::from(e));
            false
        }
    }
}

/// Bytes as a built `.so`: `elf::parse`, then the platform tag and the audit a wheel build
/// runs on it. Returns whether the bytes parsed as ELF.
pub fn elf(data: &[u8]) -> bool {
    let path = Path::new("pkg/_core.so");
    match elf::parse(path, data) {
        Ok(report) => {
            let provided: BTreeSet<String> = ["libcudart.so.13".to_string()].into();
            let _ = elf::platform_tag(&[&report], "x86_64", &provided);
            let _ = elf::platform_tag(&[&report], "aarch64", &provided);
            let expected = vec!["$ORIGIN/../nvidia/cu13/lib".to_string()];
            if let Err(e) = elf::audit(&report, "pkg/_core.so", &expected, &provided, false) {
                let _ = crate::render(&crate::Error::from(e));
            }
            true
        }
        Err(e) => {
            let _ = crate::render(&crate::Error::from(e));
            false
        }
    }
}
