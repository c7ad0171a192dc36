//! `python -m cudawheel audit WHEEL`: checks a finished wheel against the ELF and metadata rules, with no
//! knowledge of how it was built. Every ELF's NEEDED must resolve (system allow-list, the
//! wheel itself, a declared NVIDIA wheel reachable through its RPATH, or a `split = "library"`
//! library wheel required at `==` whose folder its RPATH reaches); RPATH entries must be
//! `$ORIGIN`-relative, non-empty, never into a build environment (absolute only in `linux_*`
//! wheels made with `system-rpath`); no RUNPATH; the platform tag no older than the ELFs allow.
//! The build runs it on every wheel it writes.

use std::collections::BTreeSet;
use std::io::{Cursor, Read, Seek};
use std::path::Path;
use std::str::FromStr;

use crate::audit::elf_rules::{self as elf, ElfReport, SYSTEM_LIBRARIES};
use crate::libraries::catalog;

/// One problem: where, what, and what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Violation {
    pub(crate) file: String,
    pub(crate) problem: String,
    pub(crate) fix: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}\n    fix: {}", self.file, self.problem, self.fix)
    }
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum AuditError {
    #[error("Cannot read the wheel {}: {message}", path.display())]
    Unreadable {
        path: std::path::PathBuf,
        message: String,
    },
}

impl crate::hint::Hint for AuditError {
    fn hints(&self) -> Vec<String> {
        vec!["pass the path of a wheel (.whl) file that a build finished writing".into()]
    }
}

/// `..`-aware join of a wheel-relative folder and a relative path.
fn normalize(parts: &str) -> Option<String> {
    let mut out: Vec<&str> = Vec::new();
    for c in parts.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                out.pop()?;
            }
            c => out.push(c),
        }
    }
    Some(out.join("/"))
}

/// The folders (relative to site-packages) an ELF at `member` reaches through `$ORIGIN` entries.
fn origin_dirs(member: &str, rpath: &[String]) -> Vec<String> {
    let dir = member.rsplit_once('/').map_or("", |(d, _)| d);
    rpath
        .iter()
        .filter_map(|e| {
            e.strip_prefix("$ORIGIN")
                .or_else(|| e.strip_prefix("${ORIGIN}"))
        })
        .filter_map(|rest| normalize(&format!("{dir}/{rest}")))
        .collect()
}

/// The catalogue entry whose shared libraries include `soname`'s stem.
pub(crate) fn nvidia_entry(soname: &str) -> Option<&'static catalog::CatalogEntry> {
    catalog::CATALOG.iter().find(|e| {
        e.shared.iter().any(|s| {
            let stem = format!("lib{s}.so");
            soname == stem
                || soname
                    .strip_prefix(&stem)
                    .is_some_and(|r| r.starts_with('.'))
        })
    })
}

/// The members of the wheel at `path` whose names `wanted` accepts, with their bytes.
fn read_members(
    path: &Path,
    wanted: impl Fn(&str) -> bool,
) -> Result<Vec<(String, Vec<u8>)>, AuditError> {
    let file = std::fs::File::open(path).map_err(|e| unreadable(path, e.to_string()))?;
    members_of(path, file, wanted)
}

fn unreadable(path: &Path, message: String) -> AuditError {
    AuditError::Unreadable {
        path: path.to_path_buf(),
        message,
    }
}

/// `read_members` of a wheel read from `archive` (`path`: its name, for messages).
fn members_of<R: Read + Seek>(
    path: &Path,
    archive: R,
    wanted: impl Fn(&str) -> bool,
) -> Result<Vec<(String, Vec<u8>)>, AuditError> {
    let bad = |message: String| unreadable(path, message);
    let mut zip = zip::ZipArchive::new(archive).map_err(|e| bad(e.to_string()))?;
    let mut members: Vec<(String, Vec<u8>)> = Vec::new();
    for i in 0..zip.len() {
        let mut entry = zip.by_index(i).map_err(|e| bad(e.to_string()))?;
        let name = entry.name().to_string();
        if wanted(&name) {
            let mut bytes = Vec::new();
            entry
                .read_to_end(&mut bytes)
                .map_err(|e| bad(e.to_string()))?;
            members.push((name, bytes));
        }
    }
    Ok(members)
}

fn is_elf_name(name: &str) -> bool {
    name.ends_with(".so") || name.contains(".so.")
}

/// The GPU code every ELF file of the wheel at `path` carries (ELFs without any are left out),
/// read from the fatbins: what `python -m cudawheel audit` prints, for any wheel.
pub(crate) fn gpu_code_of_wheel(path: &Path) -> Result<GpuCodes, AuditError> {
    Ok(gpu_codes(read_members(path, is_elf_name)?))
}

/// What `python -m cudawheel audit` says of each torch extension in the wheel at `path`:
/// within the stable ABI, or which symbols tie it to one torch minor.
pub(crate) fn torch_abi_of_wheel(
    path: &Path,
) -> Result<std::collections::BTreeMap<String, String>, AuditError> {
    let members = read_members(path, is_elf_name)?;
    Ok(crate::audit::torch_abi::verdicts(&members)
        .into_iter()
        .map(|(name, v)| (name, v.line()))
        .collect())
}

/// `gpu_code_of_wheel` of a wheel held in memory (`path`: its file name, for messages).
pub(crate) fn gpu_code_of_wheel_bytes(path: &Path, wheel: &[u8]) -> Result<GpuCodes, AuditError> {
    Ok(gpu_codes(members_of(
        path,
        Cursor::new(wheel),
        is_elf_name,
    )?))
}

/// The GPU code of each ELF member, by member name.
type GpuCodes = std::collections::BTreeMap<String, crate::inspect::fatbin::GpuCode>;

fn gpu_codes(members: Vec<(String, Vec<u8>)>) -> GpuCodes {
    members
        .into_iter()
        .map(|(name, bytes)| (name, crate::inspect::fatbin::gpu_code(&bytes)))
        .filter(|(_, code)| !code.is_empty())
        .collect()
}

/// What the audit knows of the wheel as a whole.
struct WheelFacts {
    filename: String,
    /// The platform tag (before a variant label).
    platform: String,
    /// `linux_*`: absolute RPATHs into system folders are allowed.
    system_rpath_wheel: bool,
    /// Distribution names its METADATA requires.
    declared: BTreeSet<String>,
    /// Those required at one exact version (`==`), in their folder form (`pkg_lib_cu13`): a
    /// `split = "library"` library wheel installs its libraries in that folder.
    pinned_folders: BTreeSet<String>,
}

/// The members the audit reads.
fn audited_member(name: &str) -> bool {
    is_elf_name(name)
        || name.ends_with(".dist-info/METADATA")
        || name.ends_with(".dist-info/RECORD")
        || name.ends_with(".dist-info/variant.json")
}

/// Audits the wheel file at `path`.
pub(crate) fn audit_wheel(path: &Path) -> Result<Vec<Violation>, AuditError> {
    audit_members(path, read_members(path, audited_member)?)
}

/// `audit_wheel` of a wheel held in memory; `path` gives its file name (the tags the audit
/// checks) and names it in messages.
pub(crate) fn audit_wheel_bytes(path: &Path, wheel: &[u8]) -> Result<Vec<Violation>, AuditError> {
    audit_members(path, members_of(path, Cursor::new(wheel), audited_member)?)
}

/// The audit of the wheel at `path`, whose audited members are `members`.
fn audit_members(
    path: &Path,
    members: Vec<(String, Vec<u8>)>,
) -> Result<Vec<Violation>, AuditError> {
    let bad = |message: String| unreadable(path, message);
    let metadata = members
        .iter()
        .find(|(n, _)| n.ends_with(".dist-info/METADATA"))
        .map(|(_, b)| String::from_utf8_lossy(b).into_owned())
        .ok_or_else(|| bad("it has no .dist-info/METADATA".into()))?;
    let requirements: Vec<pep508_rs::Requirement<pep508_rs::VerbatimUrl>> = metadata
        .lines()
        .take_while(|l| !l.is_empty())
        .filter_map(|l| l.strip_prefix("Requires-Dist: "))
        // pep508_rs panics on some invalid requirements (`foo.*`): those are none either.
        .filter(|r| crate::config::requirement_problem(r).is_none())
        .filter_map(|r| pep508_rs::Requirement::<pep508_rs::VerbatimUrl>::from_str(r).ok())
        .collect();
    let declared: BTreeSet<String> = requirements.iter().map(|r| r.name.to_string()).collect();
    let pinned_folders = requirements
        .iter()
        .filter(|r| r.marker.is_true() && is_exact_pin(r))
        .map(|r| r.name.as_dist_info_name().into_owned())
        .collect();
    let filename = path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut violations = variant_violations(&filename, &members);
    for (file, problem, fix) in crate::audit::torch_abi::wheel_problems(&members, &requirements) {
        violations.push(Violation { file, problem, fix });
    }
    let platform = match crate::audit::variant_audit::split_wheel_name(&filename) {
        Some((_, _, Some(label))) => platform_before_label(&filename, label),
        _ => filename
            .trim_end_matches(".whl")
            .rsplit('-')
            .next()
            .unwrap_or("")
            .to_string(),
    };
    let facts = WheelFacts {
        system_rpath_wheel: platform.starts_with("linux_"),
        filename,
        platform,
        declared,
        pinned_folders,
    };
    let mut reports: Vec<(String, ElfReport)> = Vec::new();
    for (name, bytes) in &members {
        if bytes.starts_with(b"\x7fELF") {
            if let Ok(r) = elf::parse(Path::new(name), bytes) {
                reports.push((name.clone(), r));
            }
        }
    }
    let own: BTreeSet<String> = reports
        .iter()
        .flat_map(|(n, r)| [r.soname.clone(), n.rsplit('/').next().map(str::to_string)])
        .flatten()
        .collect();
    let mut provided: BTreeSet<String> = own.clone();
    for (member, r) in &reports {
        violations.extend(rpath_violations(member, r, &facts));
        violations.extend(needed_violations(member, r, &facts, &own, &mut provided));
    }
    if !facts.system_rpath_wheel {
        violations.extend(tag_violation(&facts, &reports, &provided));
    }
    // The tag's CPU is the ELF files' (an x86_64 module in an aarch64 wheel, or the reverse).
    let arch = ["x86_64", "aarch64"]
        .into_iter()
        .find(|a| facts.platform.ends_with(&format!("_{a}")));
    if let Some(arch) = arch {
        let files: Vec<(&str, &ElfReport)> = reports.iter().map(|(n, r)| (n.as_str(), r)).collect();
        if let Err(crate::audit::elf_rules::ElfError::Audit {
            problem,
            fix,
            wheel_path,
        }) = crate::audit::tag::check_machine(&files, arch)
        {
            violations.push(Violation {
                file: wheel_path,
                problem,
                fix,
            });
        }
    }
    Ok(violations)
}

/// A variant wheel (PEP 825): its label, `variant.json` and RECORD agree.
fn variant_violations(filename: &str, members: &[(String, Vec<u8>)]) -> Vec<Violation> {
    let member = |suffix: &str| members.iter().find(|(n, _)| n.ends_with(suffix));
    let dist_info = member(".dist-info/METADATA")
        .and_then(|(n, _)| n.split_once('/'))
        .map_or("", |(d, _)| d);
    let record = member(".dist-info/RECORD")
        .map(|(_, b)| String::from_utf8_lossy(b).into_owned())
        .unwrap_or_default();
    let variant_json = member(".dist-info/variant.json").map(|(_, b)| b.as_slice());
    crate::audit::variant_audit::audit(filename, variant_json, &record, dist_info)
        .into_iter()
        .map(|(problem, fix)| Violation {
            file: filename.to_string(),
            problem,
            fix,
        })
        .collect()
}

fn violation(member: &str, problem: String, fix: &str) -> Violation {
    Violation {
        file: member.to_string(),
        problem,
        fix: fix.to_string(),
    }
}

/// No RUNPATH; RPATH entries `$ORIGIN`-relative, non-empty, never into a build environment.
fn rpath_violations(member: &str, r: &ElfReport, facts: &WheelFacts) -> Vec<Violation> {
    let mut violations = Vec::new();
    let v = |problem: String, fix: &str| violation(member, problem, fix);
    let (platform, system_rpath_wheel) = (&facts.platform, facts.system_rpath_wheel);
    if !r.runpath.is_empty() {
        violations.push(v(
            format!("has DT_RUNPATH {:?}", r.runpath.join(":")),
            "link with -Wl,--disable-new-dtags (DT_RPATH)",
        ));
    }
    for e in &r.rpath {
        if e.is_empty() {
            violations.push(v(
                "has an empty RPATH entry (the loader would search the current folder)".into(),
                "remove the stray `:` from the RPATH",
            ));
        } else if e.contains("pip-build-env") || e.contains("/pip-req-build-") {
            violations.push(v(
                format!("has the RPATH entry {e:?}, which points into a build environment"),
                "remove `-Wl,-rpath` options from `link-flags`",
            ));
        } else if e.starts_with('/') && !system_rpath_wheel {
            violations.push(v(format!("has the absolute RPATH entry {e:?} in a {platform} wheel"), "use `$ORIGIN`-relative entries; absolute ones only with `system-rpath = true` (linux_* wheels)"));
        } else if !e.starts_with('/') && !e.starts_with("$ORIGIN") && !e.starts_with("${ORIGIN}") {
            violations.push(v(
                format!("has the relative RPATH entry {e:?} (relative to the current folder)"),
                "use `$ORIGIN/...`",
            ));
        }
    }
    violations
}

/// Every NEEDED resolves: the system allow-list, the wheel itself, torch (declared, reached),
/// or a declared NVIDIA wheel reachable through the RPATH. What resolves joins `provided`.
fn needed_violations(
    member: &str,
    r: &ElfReport,
    facts: &WheelFacts,
    own: &BTreeSet<String>,
    provided: &mut BTreeSet<String>,
) -> Vec<Violation> {
    let mut violations = Vec::new();
    let v = |problem: String, fix: &str| violation(member, problem, fix);
    let (declared, system_rpath_wheel) = (&facts.declared, facts.system_rpath_wheel);
    let reach = origin_dirs(member, &r.rpath);
    for lib in &r.needed {
        if SYSTEM_LIBRARIES.contains(&lib.as_str()) || own.contains(lib) {
            continue;
        }
        if crate::bindings::torch::provides(lib) {
            let dist = crate::bindings::torch::DIST;
            if !declared.contains(dist) {
                violations.push(v(
                    format!("needs {lib}, but Requires-Dist does not declare {dist}"),
                    "build it with `bindings = \"torch\"`, which declares the torch it was built against",
                ));
            } else if !system_rpath_wheel
                && !reach
                    .iter()
                    .any(|d| d == crate::bindings::torch::SITE_LIB_DIR)
            {
                violations.push(v(
                    format!(
                        "needs {lib}, but no RPATH entry reaches {}",
                        crate::bindings::torch::SITE_LIB_DIR
                    ),
                    "build with cudawheel, which adds `$ORIGIN/../torch/lib`",
                ));
            } else {
                provided.insert(lib.clone());
            }
            continue;
        }
        match nvidia_entry(lib) {
            Some(entry) => {
                let dists: Vec<&str> = entry.wheels.iter().flatten().map(|w| w.dist).collect();
                if !dists.iter().any(|d| declared.contains(*d)) && !torch_brings_it(member, r, declared) {
                    violations.push(v(
                        format!("needs {lib}, but Requires-Dist declares none of {}", dists.join(", ")),
                        "let cudawheel declare it: list the library in `cuda-libraries` (and keep `cuda-deps` at \"required\" or \"extra\")",
                    ));
                    continue;
                }
                let dirs: Vec<String> = entry.wheels.iter().flatten().map(|w| format!("{}/lib", w.dir)).collect();
                if !reach.iter().any(|d| dirs.contains(d)) && !system_rpath_wheel {
                    violations.push(v(
                        format!("needs {lib}, but no RPATH entry reaches its wheel folder ({})", dirs.join(" or ")),
                        "build with cudawheel, which adds `$ORIGIN/../<wheel folder>`",
                    ));
                    continue;
                }
                provided.insert(lib.clone());
            }
            None if system_rpath_wheel && r.rpath.iter().any(|e| e.starts_with('/')) => {
                provided.insert(lib.clone());
            }
            // A `split = "library"` library: the `==` dependency's folder, reached by RPATH.
            None if reach.iter().any(|d| facts.pinned_folders.contains(d)) => {
                provided.insert(lib.clone());
            }
            None => violations.push(v(
                format!("needs {lib}, which neither the system, the wheel nor a declared dependency provides"),
                "describe it in `[tool.cudawheel.library.<name>]` with `pip-package`, or use `system-rpath = true` for a machine-local wheel",
            )),
        }
    }
    violations
}

/// One major's build of a torch extension in a wheel holding several CUDA majors (its file
/// named for the major, `_C.cudawheel-cu12.abi3.so`), in a wheel that declares torch: its
/// loader imports torch first and loads the build of torch's CUDA, whose libraries torch's own
/// requirements install (PyPI's torch pins NVIDIA's wheels of its CUDA). The RPATH must still
/// reach their folder.
fn torch_brings_it(member: &str, r: &ElfReport, declared: &BTreeSet<String>) -> bool {
    crate::plan::part_major(member).is_some()
        && declared.contains(crate::bindings::torch::DIST)
        && r.needed.iter().any(|n| crate::bindings::torch::provides(n))
}

/// `name==1.2.3`: one exact version (what a binding wheel of `split = "library"` requires of
/// its library wheel).
fn is_exact_pin(r: &pep508_rs::Requirement<pep508_rs::VerbatimUrl>) -> bool {
    match &r.version_or_url {
        Some(pep508_rs::VersionOrUrl::VersionSpecifier(specs)) => {
            specs.len() == 1
                && specs.iter().all(|s| {
                    *s.operator() == pep508_rs::pep440_rs::Operator::Equal
                        && !s.to_string().ends_with('*')
                })
        }
        _ => false,
    }
}

/// The platform tag is no older than the ELF files allow.
fn tag_violation(
    facts: &WheelFacts,
    reports: &[(String, ElfReport)],
    provided: &BTreeSet<String>,
) -> Option<Violation> {
    let platform = &facts.platform;
    let machine = platform
        .rsplit_once("_x86_64")
        .map(|_| "x86_64")
        .or_else(|| platform.rsplit_once("_aarch64").map(|_| "aarch64"))
        .unwrap_or("x86_64");
    let computed = elf::platform_tag(
        &reports.iter().map(|(_, r)| r).collect::<Vec<_>>(),
        machine,
        provided,
    );
    let glibc_of = |tag: &str| -> Option<u32> {
        tag.strip_prefix("manylinux_2_")?
            .split('_')
            .next()?
            .parse()
            .ok()
    };
    // A compressed tag set (`manylinux2014_x86_64.manylinux_2_17_x86_64`): its oldest.
    let glibc = |tag: &str| tag.split('.').filter_map(glibc_of).min();
    let honest = match (glibc(platform), glibc(&computed)) {
        (Some(claimed), Some(needed)) => claimed >= needed,
        (Some(_), None) => false,
        _ => true,
    };
    (!honest && !reports.is_empty()).then(|| Violation {
        file: facts.filename.clone(),
        problem: format!("is tagged {platform}, but its ELF files need {computed}"),
        fix: "let cudawheel derive the tag (do not rename wheels)".into(),
    })
}

/// The platform tag of a variant wheel's file name (the part before `-<label>.whl`).
fn platform_before_label(filename: &str, label: &str) -> String {
    filename
        .trim_end_matches(".whl")
        .trim_end_matches(label)
        .trim_end_matches('-')
        .rsplit('-')
        .next()
        .unwrap_or("")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_one_exact_version_is_a_pin() {
        let pin = |r: &str| is_exact_pin(&r.parse().unwrap());
        assert!(pin("demo-lib-cu13==1.0"));
        for not in [
            "demo-lib-cu13>=1.0",
            "demo-lib-cu13==1.*",
            "demo-lib-cu13",
            "demo-lib-cu13==1.0,!=2",
        ] {
            assert!(!pin(not), "{not}");
        }
    }

    #[test]
    fn origin_dirs_resolve_relative_to_the_member() {
        let rp = vec![
            "$ORIGIN/../nvidia/cu13/lib".to_string(),
            "$ORIGIN/lib".into(),
        ];
        assert_eq!(
            origin_dirs("pkg/_ext.so", &rp),
            ["nvidia/cu13/lib", "pkg/lib"]
        );
        assert!(nvidia_entry("libcublasLt.so.13").is_some_and(|e| e.name == "cublas"));
        assert!(nvidia_entry("libcudart.so.11.0").is_some_and(|e| e.name == "cudart"));
        assert!(nvidia_entry("libfoo.so.1").is_none());
    }
}
