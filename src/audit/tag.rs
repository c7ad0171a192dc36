//! The wheel's platform tag: in zig mode the requested `manylinux_2_N` once every ELF is
//! checked against it; with system RPATHs the honest `linux_<arch>`; otherwise the oldest
//! manylinux policy the ELF files satisfy.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::elf_rules::{self as elf, ElfError, ElfReport};
use crate::libraries::FoundLibrary;
use crate::plan::TargetPlan;

/// A wheel's tag kept in its three parts: `cp39`-`abi3`-`manylinux_2_17_x86_64`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WheelTag {
    /// `cp311`, `cp39`, `py3`
    pub(crate) python: String,
    /// `cp311`, `abi3`, `none`
    pub(crate) abi: String,
    /// `manylinux_2_17_x86_64`, `linux_x86_64`
    pub(crate) platform: String,
}

impl WheelTag {
    /// The same platform for any Python 3 (`py3-none-<platform>`): a wheel without Python
    /// extensions (a `split = "library"` library wheel).
    pub(crate) fn any_python(&self) -> WheelTag {
        WheelTag {
            python: "py3".into(),
            abi: "none".into(),
            platform: self.platform.clone(),
        }
    }
}

impl WheelTag {
    /// Of two builds' tags, the one whose platform allows fewer machines (a wheel holding both
    /// builds runs where both do): `linux_<arch>` over any manylinux, else the newer glibc.
    pub(crate) fn stricter(&self, other: &WheelTag) -> WheelTag {
        let rank = |t: &WheelTag| -> u32 {
            if t.platform.starts_with("linux_") {
                return u32::MAX;
            }
            t.platform
                .split('.')
                .filter_map(|p| p.strip_prefix("manylinux_2_"))
                .filter_map(|rest| rest.split('_').next()?.parse().ok())
                .max()
                .unwrap_or(0)
        };
        if rank(other) > rank(self) {
            other.clone()
        } else {
            self.clone()
        }
    }
}

impl std::fmt::Display for WheelTag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}-{}", self.python, self.abi, self.platform)
    }
}

/// How the build was made, as far as the tag is concerned.
pub(crate) enum Mode {
    /// zig mode, for glibc `2.<minor>`.
    Zig {
        glibc_minor: u32,
    },
    /// Absolute RPATHs into system folders (`system-rpath`).
    SystemLibraries,
    Default,
}

impl Mode {
    /// How a build was made: zig mode for glibc `2.<zig_glibc_minor>`; else with `system-rpath`
    /// and a linked shared library found outside NVIDIA's wheels, system libraries; else the
    /// default.
    pub(crate) fn of_build<'a>(
        zig_glibc_minor: Option<u32>,
        system_rpath: bool,
        libs: impl IntoIterator<Item = &'a FoundLibrary>,
    ) -> Mode {
        match zig_glibc_minor {
            Some(glibc_minor) => Mode::Zig { glibc_minor },
            None if system_rpath
                && libs
                    .into_iter()
                    .any(|l| l.outside_dir.is_some() && !l.shared.is_empty()) =>
            {
                Mode::SystemLibraries
            }
            None => Mode::Default,
        }
    }
}

/// ELF `e_machine` of a platform's CPU.
pub(crate) fn elf_machine(machine: &str) -> Option<u16> {
    match machine {
        "x86_64" => Some(62),
        "aarch64" => Some(183),
        _ => None,
    }
}

/// `e_machine` in words, for messages.
fn machine_name(e_machine: u16) -> String {
    match e_machine {
        62 => "x86_64".into(),
        183 => "AArch64".into(),
        n => format!("e_machine {n}"),
    }
}

/// Every file (wheel path, report) is code for `machine`.
pub(crate) fn check_machine(files: &[(&str, &ElfReport)], machine: &str) -> Result<(), ElfError> {
    let Some(want) = elf_machine(machine) else {
        return Ok(());
    };
    for (wheel_path, report) in files {
        if report.machine != want {
            return Err(ElfError::Audit {
                wheel_path: wheel_path.to_string(),
                problem: format!(
                    "is {} code, but the wheel is for {machine}",
                    machine_name(report.machine)
                ),
                fix: "drop objects or libraries built for another CPU from `link-flags`".into(),
            });
        }
    }
    Ok(())
}

pub(crate) fn choose(
    mode: &Mode,
    targets: &[TargetPlan],
    out_dir: &Path,
    reports: &[ElfReport],
    machine: &str,
    provided: &BTreeSet<String>,
) -> Result<String, ElfError> {
    // Every ELF file is code for the wheel's CPU (a cross-build links the target's only).
    let files: Vec<(&str, &ElfReport)> = targets
        .iter()
        .map(|t| t.wheel_path.as_str())
        .zip(reports)
        .collect();
    check_machine(&files, machine)?;
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

#[cfg(test)]
mod tests {
    #[test]
    fn the_stricter_tag_is_the_newer_glibc_or_linux() {
        let tag = |p: &str| WheelTag {
            python: "cp39".into(),
            abi: "abi3".into(),
            platform: p.into(),
        };
        let old = tag("manylinux_2_17_x86_64.manylinux2014_x86_64");
        let new = tag("manylinux_2_28_x86_64");
        assert_eq!(old.stricter(&new), new);
        assert_eq!(new.stricter(&old), new);
        assert_eq!(new.stricter(&tag("linux_x86_64")).platform, "linux_x86_64");
        assert_eq!(old.stricter(&old), old);
    }

    use super::*;

    #[test]
    fn a_tag_keeps_its_parts_and_any_python_keeps_the_platform() {
        let tag = WheelTag {
            python: "cp39".into(),
            abi: "abi3".into(),
            platform: "manylinux_2_17_x86_64".into(),
        };
        assert_eq!(tag.to_string(), "cp39-abi3-manylinux_2_17_x86_64");
        assert_eq!(
            tag.any_python().to_string(),
            "py3-none-manylinux_2_17_x86_64"
        );
    }

    #[test]
    fn elf_machine_must_be_the_wheels() {
        let mut report = ElfReport {
            soname: None,
            needed: Vec::new(),
            rpath: Vec::new(),
            runpath: Vec::new(),
            version_needs: Default::default(),
            machine: 183,
            undefined: Default::default(),
        };
        assert!(check_machine(&[("p/_core.so", &report)], "aarch64").is_ok());
        let e = check_machine(&[("p/_core.so", &report)], "x86_64").unwrap_err();
        assert_eq!(
            e.to_string(),
            "p/_core.so: is AArch64 code, but the wheel is for x86_64"
        );
        report.machine = 62;
        assert!(check_machine(&[("p/_core.so", &report)], "aarch64")
            .unwrap_err()
            .to_string()
            .contains("is x86_64 code"));
    }
}
