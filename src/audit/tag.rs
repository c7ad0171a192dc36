//! The wheel's platform tag: in zig mode the requested `manylinux_2_N` once every ELF is
//! checked against it; with system RPATHs the honest `linux_<arch>`; otherwise the oldest
//! manylinux policy the ELF files satisfy.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::elf_rules::{self as elf, ElfError, ElfReport};
use crate::plan::TargetPlan;

/// How the build was made, as far as the tag is concerned.
pub enum Mode {
    /// zig mode, for glibc `2.<minor>`.
    Zig {
        glibc_minor: u32,
    },
    /// Absolute RPATHs into system folders (`system-rpath`).
    SystemLibraries,
    Default,
}

pub fn choose(
    mode: &Mode,
    targets: &[TargetPlan],
    out_dir: &Path,
    reports: &[ElfReport],
    machine: &str,
    provided: &BTreeSet<String>,
) -> Result<String, ElfError> {
    Ok(match mode {
        Mode::Zig { glibc_minor } => {
            let paths: Vec<PathBuf> = targets
                .iter()
                .map(|t| out_dir.join(&t.wheel_path))
                .collect();
            let mut files = Vec::new();
            for ((t, path), report) in targets.iter().zip(&paths).zip(reports) {
                elf::check_libcxx_only(report, &t.wheel_path)?;
                files.push((t.wheel_path.as_str(), path.as_path(), report));
            }
            elf::manylinux_tag(&files, machine, provided, *glibc_minor)?
        }
        Mode::SystemLibraries => format!("linux_{machine}"),
        Mode::Default => elf::platform_tag(&reports.iter().collect::<Vec<_>>(), machine, provided),
    })
}
