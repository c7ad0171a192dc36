//! ELF audit: check what the linker produced (read by `inspect::elf`) against the
//! ELF rules (docs/reference/errors.md), and derive the manylinux platform tag. Knows ELF, not wheels or CUDA catalogues:
//! callers pass the NVIDIA SONAMEs that the wheel's dependencies provide.

use std::collections::BTreeSet;
use std::path::Path;

use crate::hint::Hint;
pub(crate) use crate::inspect::elf::{parse, read, ElfReport, ReadError};
pub(crate) use crate::inspect::manylinux::SYSTEM_LIBRARIES;
use crate::inspect::manylinux::{policies, Policy};

#[derive(Debug, thiserror::Error)]
pub(crate) enum ElfError {
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error("{wheel_path}: {problem}")]
    Audit {
        wheel_path: String,
        problem: String,
        fix: String,
    },
}

impl Hint for ElfError {
    fn hints(&self) -> Vec<String> {
        match self {
            ElfError::Audit { fix, .. } => vec![fix.clone()],
            ElfError::Read(e) => e.hints(),
        }
    }
}

/// Why ELF files do not satisfy one policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PolicyViolation {
    /// A NEEDED library outside the policy's allow-list.
    Library(String),
    /// A symbol the policy forbids importing from `library`.
    Blacklisted { library: String, symbol: String },
    /// A symbol version newer than the policy's (`GLIBC_2.29`).
    Version(String),
}

fn violation(
    p: &Policy,
    reports: &[&ElfReport],
    arch: &str,
    provided: &BTreeSet<String>,
) -> Option<PolicyViolation> {
    let loader = |lib: &str| lib.starts_with("ld-linux");
    let allowed = p.symbol_versions.get(arch)?;
    for r in reports {
        for lib in &r.needed {
            let external = !provided.contains(lib) && lib != "libcuda.so.1" && !loader(lib);
            if external && !p.lib_whitelist.contains(lib) {
                return Some(PolicyViolation::Library(lib.clone()));
            }
            if let Some(banned) = p.blacklist.get(lib) {
                if let Some(s) = banned.iter().find(|s| r.undefined.contains(*s)) {
                    return Some(PolicyViolation::Blacklisted {
                        library: lib.clone(),
                        symbol: s.clone(),
                    });
                }
            }
        }
    }
    for r in reports {
        for (lib, versions) in &r.version_needs {
            if loader(lib) {
                continue;
            }
            for v in versions {
                let family = v.split('_').next().unwrap_or(v);
                let Some(ok) = allowed.get(family) else {
                    continue;
                };
                let fits = v
                    .strip_prefix(family)
                    .and_then(|x| x.strip_prefix('_'))
                    .is_some_and(|x| ok.iter().any(|o| o == x));
                if !fits {
                    return Some(PolicyViolation::Version(v.clone()));
                }
            }
        }
    }
    None
}

/// The oldest manylinux policy all `reports` satisfy, as a platform tag; `linux_<arch>` when
/// none does. auditwheel's rules: every NEEDED library is in the policy's allow-list (those in
/// `provided`, which the wheel's declared dependencies or the wheel itself supply, and the
/// driver's libcuda do not count); every required symbol version of a family the policy lists
/// (`GLIBC_2.14`, `GLIBCXX_3.4.21`, ...) is one of the policy's; no blacklisted symbol is
/// imported.
pub(crate) fn platform_tag(
    reports: &[&ElfReport],
    arch: &str,
    provided: &BTreeSet<String>,
) -> String {
    for p in policies() {
        if p.symbol_versions.contains_key(arch) && violation(p, reports, arch, provided).is_none() {
            return format!("{}_{arch}", p.name);
        }
    }
    format!("linux_{arch}")
}

/// Legacy names of manylinux policies (PEP 513, 571, 599).
const LEGACY_ALIASES: &[(&str, &str)] = &[
    ("manylinux_2_5", "manylinux1"),
    ("manylinux_2_12", "manylinux2010"),
    ("manylinux_2_17", "manylinux2014"),
];

/// The platform tag of a wheel built for `manylinux_2_<minor>` (zig mode), after checking that
/// every ELF satisfies that policy: `manylinux_2_17_x86_64` plus its legacy alias
/// (`manylinux2014_x86_64.manylinux_2_17_x86_64`, sorted as auditwheel writes it). `files`:
/// the wheel path, the file and its report. A file that needs more is an error naming the
/// symbols, never a silently newer tag.
pub(crate) fn manylinux_tag(
    files: &[(&str, &Path, &ElfReport)],
    arch: &str,
    provided: &BTreeSet<String>,
    minor: u32,
) -> Result<String, ElfError> {
    let name = format!("manylinux_2_{minor}");
    let Some(policy) = policies().iter().find(|p| p.name == name) else {
        return Err(ElfError::Audit {
            wheel_path: String::new(),
            problem: format!("no manylinux policy is known as {name}"),
            fix: "choose a `manylinux` value auditwheel knows, e.g. \"2_17\" or \"2_28\"".into(),
        });
    };
    let setting = format!("`manylinux = \"2_{minor}\"`");
    for (wheel_path, file, report) in files {
        let problem = match violation(policy, &[report], arch, provided) {
            None => continue,
            Some(PolicyViolation::Version(v)) => {
                let mut symbols = symbols_of_version(file, &v);
                let more = symbols.len().saturating_sub(8);
                symbols.truncate(8);
                let mut list = symbols.join(", ");
                if more > 0 {
                    list.push_str(&format!(" and {more} more"));
                }
                format!("needs {v} (for {list}), newer than {setting} allows")
            }
            Some(PolicyViolation::Library(lib)) => {
                format!("needs {lib}, which {name} does not allow a wheel to load from the system")
            }
            Some(PolicyViolation::Blacklisted { library, symbol }) => {
                format!("imports {symbol} from {library}, which {name} forbids")
            }
        };
        return Err(ElfError::Audit {
            wheel_path: wheel_path.to_string(),
            problem,
            fix: format!(
                "the symbol comes from a library or object built outside zig (`link-flags`, a static archive): rebuild it with this project, or set `manylinux` to a newer glibc than {setting}"
            ),
        });
    }
    let mut tags = vec![format!("{name}_{arch}")];
    if let Some((_, legacy)) = LEGACY_ALIASES.iter().find(|(n, _)| *n == name) {
        tags.push(format!("{legacy}_{arch}"));
    }
    tags.sort();
    Ok(tags.join("."))
}

/// The dynamic symbols of `path` bound to the symbol version `version` (`GLIBC_2.29`).
pub(crate) fn symbols_of_version(path: &Path, version: &str) -> Vec<String> {
    std::fs::read(path).map_or_else(|_| Vec::new(), |b| symbols_of_version_in(&b, version))
}

/// `symbols_of_version` of an ELF image held in memory.
pub(crate) fn symbols_of_version_in(bytes: &[u8], version: &str) -> Vec<String> {
    let Ok(elf) = goblin::elf::Elf::parse(bytes) else {
        return Vec::new();
    };
    let (Some(versym), Some(verneed)) = (&elf.versym, &elf.verneed) else {
        return Vec::new();
    };
    let mut index = None;
    for need in verneed.iter() {
        for aux in need.iter() {
            if elf.dynstrtab.get_at(aux.vna_name) == Some(version) {
                index = Some(aux.vna_other);
            }
        }
    }
    let Some(index) = index else {
        return Vec::new();
    };
    let mut out: Vec<String> = elf
        .dynsyms
        .iter()
        .enumerate()
        .filter(|(i, _)| versym.get_at(*i).is_some_and(|v| v.version() == index))
        .filter_map(|(_, s)| elf.dynstrtab.get_at(s.st_name).map(str::to_string))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// zig mode links libc++ statically: a built ELF that needs libstdc++ (or the C++ ABI of a
/// library built against it) was linked with something built outside zig, and would fail at
/// import or crash at run time. `undefined` symbols of the GNU C++ runtime or of libc++'s
/// `std::__1` (which only the static libc++ inside provides) are such signs.
pub(crate) fn check_libcxx_only(report: &ElfReport, wheel_path: &str) -> Result<(), ElfError> {
    let fail = |problem: String| {
        ElfError::Audit {
        wheel_path: wheel_path.to_string(),
        problem,
        fix: "with `manylinux` every C++ object and library must be compiled by this build (zig's libc++): drop the prebuilt C++ library from `link-flags` / the library's `shared`/`static` lists (a C API library is fine), or drop `manylinux`".into(),
    }
    };
    for lib in &report.needed {
        if lib == "libstdc++.so.6" || lib == "libgcc_s.so.1" {
            return Err(fail(format!(
                "needs {lib}: something it links was built against GCC's C++ runtime, which a `manylinux` (zig, libc++) build cannot use"
            )));
        }
    }
    let gnu = [
        "_ZNSt7__cxx11",
        "_ZNKSt7__cxx11",
        "__gxx_personality_v0",
        "__cxa_",
        "_ZSt",
        "_ZNSt",
        "_ZNKSt",
        "_ZTISt",
        "_ZTVSt",
        "_ZTSSt",
        "_ZTINSt",
        "_ZTVNSt",
    ];
    let glibc_cxa = ["__cxa_finalize", "__cxa_atexit", "__cxa_thread_atexit_impl"];
    if let Some(sym) = report.undefined.iter().find(|s| {
        (gnu.iter().any(|p| s.starts_with(p)) && !glibc_cxa.contains(&s.as_str()))
            || s.contains("St3__1")
    }) {
        return Err(fail(format!(
            "imports the C++ runtime symbol {sym}, which no library of a `manylinux` (zig, libc++) build provides: something it links was built against libstdc++"
        )));
    }
    Ok(())
}

/// Checks one built ELF: RPATH only `$ORIGIN`-relative and exactly `expected_rpath`, no
/// RUNPATH, every NEEDED from the system list, the wheel, or a declared dependency.
pub(crate) fn audit(
    report: &ElfReport,
    wheel_path: &str,
    expected_rpath: &[String],
    provided: &BTreeSet<String>,
    allow_absolute: bool,
) -> Result<(), ElfError> {
    let fail = |problem: String, fix: &str| ElfError::Audit {
        wheel_path: wheel_path.to_string(),
        problem,
        fix: fix.to_string(),
    };
    if !report.runpath.is_empty() {
        return Err(fail(
            format!(
                "has a DT_RUNPATH ({}); wheels must use DT_RPATH",
                report.runpath.join(":")
            ),
            "remove `-Wl,--enable-new-dtags` from `link-flags`",
        ));
    }
    for entry in &report.rpath {
        let origin_relative = entry == "$ORIGIN" || entry.starts_with("$ORIGIN/");
        let allowed_absolute =
            allow_absolute && entry.starts_with('/') && expected_rpath.contains(entry);
        if entry.is_empty() || !(origin_relative || allowed_absolute) {
            return Err(fail(
                format!("has the RPATH entry {entry:?}, which is not `$ORIGIN`-relative"),
                "remove `-Wl,-rpath` options from `link-flags`; cudawheel sets the RPATH itself",
            ));
        }
    }
    if report.rpath != expected_rpath {
        return Err(fail(
            format!(
                "has RPATH {:?}, expected {:?}",
                report.rpath.join(":"),
                expected_rpath.join(":")
            ),
            "remove `-Wl,-rpath` options from `link-flags`; cudawheel sets the RPATH itself",
        ));
    }
    for lib in &report.needed {
        if !SYSTEM_LIBRARIES.contains(&lib.as_str()) && !provided.contains(lib) {
            return Err(fail(
                format!("needs {lib}, which neither the system, the wheel nor a declared dependency provides"),
                "link it through `cuda-libraries` so that cudawheel declares the wheel that provides it",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inspect::manylinux::known_policy;

    fn report(needed: &[&str], versions: &[(&str, &[&str])]) -> ElfReport {
        ElfReport {
            soname: None,
            needed: needed.iter().map(|s| s.to_string()).collect(),
            rpath: vec!["$ORIGIN/../nvidia/cu13/lib".into()],
            runpath: vec![],
            version_needs: versions
                .iter()
                .map(|(l, v)| (l.to_string(), v.iter().map(|s| s.to_string()).collect()))
                .collect(),
            machine: 62,
            undefined: BTreeSet::new(),
        }
    }

    #[test]
    fn tag_follows_the_newest_symbol_version() {
        let provided: BTreeSet<String> = ["libcudart.so.13".to_string()].into();
        let r = report(
            &["libcudart.so.13", "libc.so.6"],
            &[("libc.so.6", &["GLIBC_2.2.5", "GLIBC_2.14"])],
        );
        assert_eq!(
            platform_tag(&[&r], "x86_64", &provided),
            "manylinux_2_17_x86_64"
        );
        let r = report(
            &["libstdc++.so.6"],
            &[
                ("libstdc++.so.6", &["GLIBCXX_3.4.29"]),
                ("libc.so.6", &["GLIBC_2.17"]),
            ],
        );
        assert_eq!(
            platform_tag(&[&r], "x86_64", &provided),
            "manylinux_2_34_x86_64"
        );
        let r = report(&["libfoo.so.1"], &[]);
        assert_eq!(platform_tag(&[&r], "x86_64", &provided), "linux_x86_64");
    }

    #[test]
    fn zig_mode_tags_the_requested_policy_or_names_the_version() {
        let provided: BTreeSet<String> = ["libcudart.so.13".to_string()].into();
        let ok = report(
            &["libcudart.so.13", "libc.so.6"],
            &[("libc.so.6", &["GLIBC_2.2.5", "GLIBC_2.16"])],
        );
        let files = [("a/b.so", Path::new("/nonexistent"), &ok)];
        assert_eq!(
            manylinux_tag(&files, "x86_64", &provided, 17).unwrap(),
            "manylinux2014_x86_64.manylinux_2_17_x86_64"
        );
        assert_eq!(
            manylinux_tag(&files, "x86_64", &provided, 28).unwrap(),
            "manylinux_2_28_x86_64"
        );
        let new = report(&["libm.so.6"], &[("libm.so.6", &["GLIBC_2.29"])]);
        let files = [("a/b.so", Path::new("/nonexistent"), &new)];
        let e = manylinux_tag(&files, "x86_64", &provided, 28).unwrap_err();
        assert!(e.to_string().contains("a/b.so: needs GLIBC_2.29"), "{e}");
        assert!(known_policy(28, "x86_64").is_ok());
        assert!(known_policy(30, "x86_64")
            .unwrap_err()
            .contains(&"manylinux_2_31".to_string()));
    }

    #[test]
    fn gnu_cxx_runtime_imports_are_refused_in_zig_mode() {
        let mut r = report(&["libc.so.6"], &[]);
        r.undefined = ["__cxa_finalize", "PyLong_FromLong"]
            .map(String::from)
            .into();
        check_libcxx_only(&r, "a/b.so").unwrap();
        for sym in [
            "_ZNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE9_M_appendEPKcm",
            "__gxx_personality_v0",
            "_Z3fooRKNSt3__112basic_stringIcNS_11char_traitsIcEENS_9allocatorIcEEEE",
        ] {
            let mut bad = r.clone();
            bad.undefined.insert(sym.to_string());
            let e = check_libcxx_only(&bad, "a/b.so").unwrap_err();
            assert!(e.to_string().contains(sym), "{e}");
        }
        let needs = report(&["libstdc++.so.6"], &[]);
        assert!(check_libcxx_only(&needs, "a/b.so").is_err());
    }

    #[test]
    fn audit_rejects_absolute_rpath_and_undeclared_libraries() {
        let provided: BTreeSet<String> = ["libcudart.so.13".to_string()].into();
        let mut r = report(&["libcudart.so.13"], &[]);
        let expected = vec!["$ORIGIN/../nvidia/cu13/lib".to_string()];
        audit(&r, "a/b.so", &expected, &provided, false).unwrap();
        r.rpath.push("/tmp/build-env/lib".into());
        let e = audit(&r, "a/b.so", &expected, &provided, false).unwrap_err();
        assert!(e.to_string().contains("not `$ORIGIN`-relative"), "{e}");
        let r = report(&["libcublas.so.13"], &[]);
        let e = audit(&r, "a/b.so", &expected, &provided, false).unwrap_err();
        assert!(e.to_string().contains("needs libcublas.so.13"), "{e}");
    }
}
