//! What the wheel's ELFs need, classified: NVIDIA libraries (by SONAME, from the catalogue: the
//! wheel and folder that provide each, and the `Requires-Dist` for it), torch's, the system's
//! (the manylinux allow-list), the wheel's own, and the rest, which must be grafted. Also the
//! CUDA major, the RPATH entries that go (absolute, build environment, outside the wheel) and
//! the ones each ELF gets.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::wheel_in::WheelIn;
use super::{RepairError, RepairSettings};
use crate::audit::elf_rules::{ElfReport, SYSTEM_LIBRARIES};
use crate::audit::wheel_audit::nvidia_entry;
use crate::bindings::{jax, torch};
use crate::inspect::site::owning_distribution;
use crate::libraries::Provider;
use pep440_rs::Version;

/// An NVIDIA library one of the ELFs needs.
#[derive(Debug, Clone)]
pub(super) struct Nvidia {
    /// Folder inside site-packages (`nvidia/cu13/lib`).
    pub(super) site_dir: String,
    pub(super) provider: Provider,
}

#[derive(Debug, Clone)]
pub(super) struct Needs {
    /// The CUDA major; `None` for a wheel that links no CUDA (no NVIDIA library, no GPU code):
    /// it keeps its name and gets no GPU check and no NVIDIA requirement.
    pub(super) major: Option<u32>,
    /// The wheel's own shared libraries: each name something may load them by (SONAME, file
    /// name) -> the folders (inside the wheel) that hold one.
    pub(super) own: BTreeMap<String, Vec<String>>,
    /// By SONAME.
    pub(super) nvidia: BTreeMap<String, Nvidia>,
    /// Requirements the binding library's version sets: torch's `torch>=X.Y,<X.(Y+1)` when
    /// torch's libraries are linked, jax's `jax>=` the jaxlib when an XLA FFI handler is inside
    /// (each only when that library is installed where the repair runs: wrap mode, the build).
    pub(super) pins: Vec<Pin>,
    /// Neither NVIDIA's, torch's, the system's nor the wheel's: grafted.
    pub(super) foreign: BTreeSet<String>,
    /// Folders where the foreign libraries were found (for auditwheel's search).
    pub(super) foreign_dirs: Vec<PathBuf>,
    /// Status lines: each RPATH entry removed, and why; each requirement floor not read from
    /// an installed wheel.
    pub(super) status: Vec<String>,
}

/// A requirement on a binding library, joined with the project's own one on that distribution.
#[derive(Debug, Clone)]
pub(super) struct Pin {
    /// Normalized distribution name (`torch`, `jax`).
    pub(super) dist: String,
    pub(super) requirement: String,
}

/// The name the repaired wheel carries.
pub(super) struct Stem {
    /// `Name:` (`fftdemo-cu13`)
    pub(super) display: String,
    /// `fftdemo_cu13`
    pub(super) file_stem: String,
    /// `fftdemo_cu13-0.1.0.dist-info`
    pub(super) dist_info: String,
}

fn is_system(lib: &str) -> bool {
    SYSTEM_LIBRARIES.contains(&lib) || lib.starts_with("ld-linux")
}

/// An RPATH entry that points into a build environment: an installed package's folder
/// (site-packages) or pip's temporary build folders, gone once the build ends.
fn is_build_env(entry: &str) -> bool {
    [
        "site-packages",
        "dist-packages",
        "pip-build-env",
        "pip-req-build",
        "build-env",
    ]
    .iter()
    .any(|m| entry.contains(m))
}

/// The CUDA major a libcudart SONAME belongs to (`libcudart.so.13`, `libcudart.so.11.0`).
fn cudart_major(soname: &str) -> Option<u32> {
    soname
        .strip_prefix("libcudart.so.")?
        .split('.')
        .next()?
        .parse()
        .ok()
}

/// The first number after `.so.` (`libcufft.so.12` -> 12).
fn soname_major(soname: &str) -> u64 {
    soname
        .split_once(".so.")
        .and_then(|(_, v)| v.split('.').next()?.parse().ok())
        .unwrap_or(0)
}

impl Needs {
    pub(super) fn of(input: &WheelIn, settings: &RepairSettings) -> Result<Needs, RepairError> {
        let reports = reports(input)?;
        let own_dirs = own_libraries(&reports);
        let own: BTreeSet<String> = own_dirs.keys().cloned().collect();
        let sys_path: Vec<PathBuf> = settings
            .python
            .as_ref()
            .map(|p| p.sys_path.clone())
            .unwrap_or_default();
        let mut nvidia_sonames = BTreeSet::new();
        let mut torch_needed = false;
        let mut foreign: BTreeMap<String, (String, &ElfReport)> = BTreeMap::new();
        for (path, r) in &reports {
            for lib in &r.needed {
                if is_system(lib) || own.contains(lib) {
                    continue;
                }
                if torch::provides(lib) {
                    torch_needed = true;
                } else if nvidia_entry(lib).is_some() {
                    nvidia_sonames.insert(lib.clone());
                } else {
                    foreign
                        .entry(lib.clone())
                        .or_insert_with(|| (path.clone(), r));
                }
            }
        }
        let gpu_code = input
            .members
            .iter()
            .any(|m| m.is_elf() && !crate::inspect::fatbin::gpu_code(&m.bytes).is_empty());
        let major = if nvidia_sonames.is_empty() && !gpu_code {
            None
        } else {
            Some(
                cuda_major(&nvidia_sonames, &sys_path, settings).ok_or_else(|| {
                    RepairError::NoCudaMajor {
                        wheel: input.name_parts.join("-"),
                    }
                })?,
            )
        };
        let mut status = check_rpaths(&reports, &own, &nvidia_sonames)?;
        let mut nvidia = BTreeMap::new();
        for soname in &nvidia_sonames {
            let Some(major) = major else { break };
            let (n, installed) = nvidia_for(soname, major, &sys_path, settings.toolkit_release)?;
            if !installed {
                let from = if n.provider.floor.1 > 0 {
                    "the release of the nvcc that built it"
                } else {
                    "the SONAME's major"
                };
                status.push(format!(
                    "{soname}: no {} installed here, so its requirement's floor is {from} ({})",
                    n.provider.dist,
                    n.provider.requirement()
                ));
            }
            nvidia.insert(soname.clone(), n);
        }
        if torch_needed {
            super::floors::cap(
                nvidia.iter_mut().map(|(s, n)| (s, &mut n.provider)),
                &super::floors::torch_caps(&sys_path),
                &mut status,
            );
        }
        let mut foreign_dirs = Vec::new();
        for (lib, (member, report)) in &foreign {
            match locate(lib, report) {
                Some(dir) if !foreign_dirs.contains(&dir) => foreign_dirs.push(dir),
                Some(_) => {}
                None => {
                    return Err(RepairError::Unprovided {
                        member: member.clone(),
                        lib: lib.clone(),
                    })
                }
            }
        }
        let mut pins: Vec<Pin> = torch_needed
            .then(|| torch_provider(&sys_path))
            .flatten()
            .map(|p| Pin {
                requirement: p.requirement(),
                dist: p.dist,
            })
            .into_iter()
            .collect();
        pins.extend(jax_pin(input, &sys_path, &mut status));
        Ok(Needs {
            major,
            own: own_dirs,
            nvidia,
            pins,
            foreign: foreign.into_keys().collect(),
            foreign_dirs,
            status,
        })
    }

    /// The `Requires-Dist` lines for the NVIDIA wheels linked: one per distribution, the
    /// highest floor of its libraries.
    pub(super) fn requirements(&self) -> Vec<String> {
        let mut by_dist: BTreeMap<String, Provider> = BTreeMap::new();
        for n in self.nvidia.values() {
            let slot = by_dist
                .entry(n.provider.dist.clone())
                .or_insert_with(|| n.provider.clone());
            slot.floor = slot.floor.max(n.provider.floor);
        }
        by_dist.values().map(Provider::requirement).collect()
    }

    /// The RPATH an ELF at `member` gets: its `$ORIGIN` entries that stay inside the wheel,
    /// then one per NVIDIA wheel folder (and torch's) it needs.
    pub(super) fn rpath_for(&self, member: &str, r: &ElfReport) -> Vec<String> {
        let depth = member.matches('/').count();
        let up = "/..".repeat(depth);
        let mut out: Vec<String> = Vec::new();
        for e in r.rpath.iter().chain(&r.runpath) {
            if inside_wheel(member, e) && !out.contains(e) {
                out.push(e.clone());
            }
        }
        let reached: Vec<String> = out.iter().filter_map(|e| folder_of(member, e)).collect();
        for lib in &r.needed {
            let Some(dirs) = self.own.get(lib) else {
                continue;
            };
            if dirs.iter().any(|d| reached.contains(d)) {
                continue;
            }
            if let Some(dir) = dirs.first() {
                let entry = origin_entry(member, dir);
                if !out.contains(&entry) {
                    out.push(entry);
                }
            }
        }
        let mut add = |dir: &str| {
            let entry = format!("$ORIGIN{up}/{dir}");
            if !out.contains(&entry) {
                out.push(entry);
            }
        };
        for lib in &r.needed {
            if let Some(n) = self.nvidia.get(lib) {
                add(&n.site_dir);
            } else if torch::provides(lib) {
                add(torch::SITE_LIB_DIR);
            }
        }
        out
    }

    /// Whether the wheel links CUDA at all.
    pub(super) fn links_cuda(&self) -> bool {
        self.major.is_some()
    }

    /// The minor of the linked libcudart's requirement floor (0 without one).
    pub(super) fn cudart_minor(&self) -> u32 {
        self.nvidia
            .iter()
            .find(|(s, _)| s.starts_with("libcudart."))
            .map_or(0, |(_, n)| u32::try_from(n.provider.floor.1).unwrap_or(0))
    }

    /// The repaired wheel's name: METADATA's `Name` plus the suffix for the CUDA major (none
    /// for a variant wheel, whose label says the major).
    pub(super) fn dist_stem(
        &self,
        input: &WheelIn,
        settings: &RepairSettings,
        variant: bool,
    ) -> Stem {
        let name = input
            .metadata
            .lines()
            .find_map(|l| l.strip_prefix("Name: "))
            .unwrap_or(&input.name_parts[0])
            .trim();
        let suffix = match (variant, self.major) {
            (false, Some(major)) => settings.name_suffix.replace("{major}", &major.to_string()),
            _ => String::new(),
        };
        let display = if name.ends_with(&suffix) {
            name.to_string()
        } else {
            format!("{name}{suffix}")
        };
        let file_stem = display
            .parse::<pep508_rs::PackageName>()
            .map(|n| n.as_dist_info_name().into_owned())
            .unwrap_or_else(|_| display.replace('-', "_"));
        let dist_info = format!("{file_stem}-{}.dist-info", input.version());
        Stem {
            display,
            file_stem,
            dist_info,
        }
    }
}

fn reports(input: &WheelIn) -> Result<Vec<(String, ElfReport)>, RepairError> {
    let mut out = Vec::new();
    for m in input.members.iter().filter(|m| m.is_elf()) {
        let r = crate::inspect::elf::parse(Path::new(&m.path), &m.bytes).map_err(|e| {
            RepairError::Read {
                wheel: m.path.clone(),
                message: e.to_string(),
            }
        })?;
        out.push((m.path.clone(), r));
    }
    Ok(out)
}

/// Every ELF's names (SONAME, file name) -> the folders that hold it.
fn own_libraries(reports: &[(String, ElfReport)]) -> BTreeMap<String, Vec<String>> {
    let mut own: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (path, r) in reports {
        let (dir, file) = path.rsplit_once('/').unwrap_or(("", path));
        for name in [r.soname.as_deref(), Some(file)].into_iter().flatten() {
            let dirs = own.entry(name.to_string()).or_default();
            if !dirs.iter().any(|d| d == dir) {
                dirs.push(dir.to_string());
            }
        }
    }
    own
}

/// The folder inside the wheel (`pkg/lib`, `` for the top) that the RPATH entry `entry` of the
/// ELF at `member` names, when it is `$ORIGIN`-relative and stays inside.
pub(super) fn folder_of(member: &str, entry: &str) -> Option<String> {
    let rest = entry
        .strip_prefix("$ORIGIN")
        .or_else(|| entry.strip_prefix("${ORIGIN}"))?;
    let mut parts: Vec<&str> = member.split('/').collect();
    parts.pop();
    for c in rest.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            c => parts.push(c),
        }
    }
    Some(parts.join("/"))
}

/// The `$ORIGIN`-relative entry from the ELF at `member` to the wheel folder `dir`: up to the
/// folders they share, then down (`bin/x` to `pkg/lib`: `$ORIGIN/../pkg/lib`).
pub(super) fn origin_entry(member: &str, dir: &str) -> String {
    let from: Vec<&str> = member.split('/').collect();
    let from = &from[..from.len() - 1];
    let to: Vec<&str> = dir.split('/').filter(|c| !c.is_empty()).collect();
    let shared = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut entry = String::from("$ORIGIN");
    for _ in shared..from.len() {
        entry.push_str("/..");
    }
    for c in &to[shared..] {
        entry.push('/');
        entry.push_str(c);
    }
    entry
}

/// Whether `$ORIGIN/...` of the ELF at `member` names a folder inside the wheel.
fn inside_wheel(member: &str, entry: &str) -> bool {
    let Some(rest) = entry
        .strip_prefix("$ORIGIN")
        .or_else(|| entry.strip_prefix("${ORIGIN}"))
    else {
        return false;
    };
    let mut depth: i64 = member.matches('/').count() as i64;
    for c in rest.split('/') {
        match c {
            "" | "." => {}
            ".." => depth -= 1,
            _ => depth += 1,
        }
        if depth < 0 {
            return false;
        }
    }
    true
}

/// The CUDA major: the linked libcudart's, else the one given, else that of the NVIDIA wheel
/// installed here that holds one of the libraries.
fn cuda_major(sonames: &BTreeSet<String>, sys_path: &[PathBuf], s: &RepairSettings) -> Option<u32> {
    if let Some(m) = sonames.iter().find_map(|s| cudart_major(s)) {
        return Some(m);
    }
    if s.cuda_major.is_some() {
        return s.cuda_major;
    }
    for soname in sonames {
        let entry = nvidia_entry(soname)?;
        for major in [13, 12, 11] {
            let Some(w) = entry.wheel(major) else {
                continue;
            };
            for site in sys_path {
                let file = site.join(w.dir).join("lib").join(soname);
                if owning_distribution(&file).is_some_and(|(d, _)| d == w.dist) {
                    return Some(major);
                }
            }
        }
    }
    None
}

/// Where `soname` comes from for CUDA `major`, and its requirement's floor: the version of the
/// NVIDIA wheel installed here, else the SONAME's major (`libcufft.so.12` -> 12.0); and whether
/// it was installed.
fn nvidia_for(
    soname: &str,
    major: u32,
    sys_path: &[PathBuf],
    toolkit: Option<(u32, u32)>,
) -> Result<(Nvidia, bool), RepairError> {
    let layout = nvidia_entry(soname)
        .and_then(|e| e.wheel(major))
        .ok_or_else(|| RepairError::NoWheelForMajor {
            lib: soname.to_string(),
            major,
        })?;
    let site_dir = format!("{}/lib", layout.dir);
    let installed =
        installed(sys_path, &format!("{site_dir}/{soname}"), layout.dist).and_then(|v| {
            let r = v.release();
            Some((*r.first()?, r.get(1).copied().unwrap_or(0)))
        });
    // Not installed here: the SONAME's major, or for the runtime of the building nvcc's major,
    // that nvcc's release (the runtime API it compiled against).
    let floor = installed.unwrap_or_else(|| match toolkit {
        Some((m, minor))
            if soname.starts_with("libcudart.so.") && u64::from(m) == soname_major(soname) =>
        {
            (u64::from(m), u64::from(minor))
        }
        _ => (soname_major(soname), 0),
    });
    let n = Nvidia {
        site_dir,
        provider: Provider {
            dist: layout.dist.to_string(),
            floor,
            span: crate::libraries::Span::Major,
        },
    };
    Ok((n, installed.is_some()))
}

/// A library torch's wheel ships (`libtorch_cpu.so`, `libc10.so`, ...).
pub(super) fn is_torch(lib: &str) -> bool {
    torch::provides(lib)
}

/// The version of distribution `dist` installed on `sys_path`: the first entry where `dist`'s
/// RECORD lists the file `rel` (`torch/__init__.py`).
fn installed(sys_path: &[PathBuf], rel: &str, dist: &str) -> Option<Version> {
    sys_path.iter().find_map(|site| {
        let (owner, version) = owning_distribution(&site.join(rel))?;
        (owner == dist).then_some(version)
    })
}

/// torch as installed here (`torch>=X.Y,<X.(Y+1)`: its C++ ABI changes between minors).
fn torch_provider(sys_path: &[PathBuf]) -> Option<Provider> {
    let version = installed(sys_path, "torch/__init__.py", torch::DIST)?;
    let r = version.release();
    Some(Provider {
        dist: torch::DIST.to_string(),
        floor: (r[0], r.get(1).copied().unwrap_or(0)),
        span: crate::libraries::Span::Minor,
    })
}

/// `jax>=` the jaxlib installed here when one of the wheel's ELFs holds an XLA FFI handler (its
/// FFI headers came from that jaxlib; nothing links it, so the mark in the read-only data is
/// what tells). Without a jaxlib here, a status line says the floor is the project's to write.
fn jax_pin(input: &WheelIn, sys_path: &[PathBuf], status: &mut Vec<String>) -> Option<Pin> {
    let member = input
        .members
        .iter()
        .find(|m| m.is_elf() && memchr::memmem::find(&m.bytes, jax::FFI_HANDLER_MARK).is_some())?;
    let Some(jaxlib) = installed(sys_path, "jaxlib/__init__.py", "jaxlib") else {
        status.push(format!(
            "{}: holds an XLA FFI handler, but no jaxlib is installed here, so no jax floor is written: \
             require the jax whose FFI headers built it (`jax>=X.Y.Z`) in the project's dependencies",
            member.path
        ));
        return None;
    };
    let release: Vec<String> = jaxlib.release().iter().map(u64::to_string).collect();
    Some(Pin {
        dist: "jax".into(),
        requirement: jax::requirement_for(&release.join(".")),
    })
}

/// Every RPATH entry that is not `$ORIGIN` inside the wheel goes. One into a build environment
/// that serves a library no NVIDIA wheel provides is an error: that library belongs to a
/// package of the build environment, which the wheel cannot declare from here. Returns a
/// status line per entry removed.
fn check_rpaths(
    reports: &[(String, ElfReport)],
    own: &BTreeSet<String>,
    nvidia: &BTreeSet<String>,
) -> Result<Vec<String>, RepairError> {
    let mut lines = Vec::new();
    for (member, r) in reports {
        for e in r.rpath.iter().chain(&r.runpath) {
            if inside_wheel(member, e) {
                continue;
            }
            let served: Vec<&String> = r
                .needed
                .iter()
                .filter(|l| !is_system(l) && !own.contains(*l) && !nvidia.contains(*l))
                .filter(|l| !torch::provides(l))
                .filter(|l| e.starts_with('/') && Path::new(e).join(l).exists())
                .collect();
            if is_build_env(e) {
                if let Some(lib) = served.first() {
                    return Err(RepairError::BuildEnvRpath {
                        member: member.clone(),
                        entry: e.clone(),
                        lib: (*lib).clone(),
                    });
                }
            }
            let why = if e.starts_with('/') {
                "absolute"
            } else {
                "outside the wheel"
            };
            lines.push(format!("{member}: removed the {why} RPATH entry {e:?}"));
        }
    }
    Ok(lines)
}

/// The folder the dynamic loader would load `lib` from on this machine, for an ELF with `r`'s
/// RPATH: its absolute entries, `LD_LIBRARY_PATH`, the folders of `/etc/ld.so.conf`, the
/// default ones.
fn locate(lib: &str, r: &ElfReport) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = r
        .rpath
        .iter()
        .chain(&r.runpath)
        .filter(|e| e.starts_with('/'))
        .map(PathBuf::from)
        .collect();
    if let Ok(v) = std::env::var("LD_LIBRARY_PATH") {
        dirs.extend(v.split(':').filter(|d| !d.is_empty()).map(PathBuf::from));
    }
    dirs.extend(ld_so_conf(Path::new("/etc/ld.so.conf"), 0));
    for d in ["/lib64", "/usr/lib64", "/lib", "/usr/lib"] {
        dirs.push(PathBuf::from(d));
    }
    dirs.into_iter().find(|d| d.join(lib).is_file())
}

/// The folders `/etc/ld.so.conf` lists, following its `include` globs.
fn ld_so_conf(file: &Path, depth: u32) -> Vec<PathBuf> {
    let Ok(text) = std::fs::read_to_string(file) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for line in text
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
    {
        if let Some(pattern) = line.strip_prefix("include ") {
            let Ok(paths) = glob::glob(pattern.trim()) else {
                continue;
            };
            for p in paths.flatten() {
                if depth < 4 {
                    out.extend(ld_so_conf(&p, depth + 1));
                }
            }
        } else if line.starts_with('/') {
            out.push(PathBuf::from(line));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_runtime_not_installed_takes_the_building_nvccs_release() {
        let floor = |soname, toolkit| {
            nvidia_for(soname, 12, &[], toolkit)
                .unwrap()
                .0
                .provider
                .floor
        };
        assert_eq!(floor("libcudart.so.12", Some((12, 4))), (12, 4));
        // Controls: no nvcc known (a standalone repair), another library, another major.
        assert_eq!(floor("libcudart.so.12", None), (12, 0));
        assert_eq!(floor("libcublas.so.12", Some((12, 4))), (12, 0));
        assert_eq!(floor("libcudart.so.12", Some((13, 2))), (12, 0));
    }

    #[test]
    fn origin_entries_inside_the_wheel_only() {
        assert!(inside_wheel("pkg/mod.so", "$ORIGIN/../pkg.libs"));
        assert!(inside_wheel("pkg/mod.so", "$ORIGIN"));
        assert!(!inside_wheel("pkg/mod.so", "$ORIGIN/../../lib"));
        assert!(!inside_wheel("pkg/mod.so", "/usr/lib"));
    }

    #[test]
    fn origin_entries_to_own_folders() {
        assert_eq!(
            origin_entry("bin/llama-cli", "llama_cpp/lib"),
            "$ORIGIN/../llama_cpp/lib"
        );
        assert_eq!(
            origin_entry("llama_cpp/lib/libllama.so", "llama_cpp/lib"),
            "$ORIGIN"
        );
        assert_eq!(origin_entry("pkg/_x.so", "pkg/lib"), "$ORIGIN/lib");
        assert_eq!(origin_entry("top.so", "pkg"), "$ORIGIN/pkg");
        assert_eq!(
            folder_of("pkg/a/x.so", "$ORIGIN/../lib").as_deref(),
            Some("pkg/lib")
        );
        assert_eq!(folder_of("pkg/x.so", "$ORIGIN").as_deref(), Some("pkg"));
        assert_eq!(folder_of("x.so", "$ORIGIN/.."), None);
    }

    #[test]
    fn majors_from_sonames() {
        assert_eq!(cudart_major("libcudart.so.13"), Some(13));
        assert_eq!(cudart_major("libcudart.so.11.0"), Some(11));
        assert_eq!(soname_major("libcufft.so.12"), 12);
        assert!(is_build_env(
            "/tmp/pip-build-env-x/overlay/lib/python3.11/site-packages/nvidia/cu13/lib"
        ));
        assert!(!is_build_env("/opt/fftw/lib"));
    }

    fn wheel_with(so: &[u8]) -> WheelIn {
        WheelIn {
            members: vec![super::super::wheel_in::Member {
                path: "pkg/_ffi.so".into(),
                bytes: so.to_vec(),
                executable: false,
            }],
            dist_info: "pkg-1.0.dist-info".into(),
            metadata: String::new(),
            name_parts: vec![],
        }
    }

    /// A site-packages folder where pip installed jaxlib `version`.
    fn site_with_jaxlib(version: &str) -> tempfile::TempDir {
        let site = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(site.path().join("jaxlib")).unwrap();
        std::fs::write(site.path().join("jaxlib/__init__.py"), "").unwrap();
        let info = site.path().join(format!("jaxlib-{version}.dist-info"));
        std::fs::create_dir_all(&info).unwrap();
        std::fs::write(info.join("RECORD"), "jaxlib/__init__.py,,\n").unwrap();
        let metadata = format!("Metadata-Version: 2.1\nName: jaxlib\nVersion: {version}\n\n");
        std::fs::write(info.join("METADATA"), metadata).unwrap();
        site
    }

    #[test]
    fn an_ffi_handler_gets_the_jaxlib_it_was_built_with_as_its_jax_floor() {
        let site = site_with_jaxlib("0.10.2");
        let sys_path = vec![site.path().to_path_buf()];
        let handler = b"\x7fELF..XLA_FFI_CallFrame\0size";
        let mut status = Vec::new();
        let pin = jax_pin(&wheel_with(handler), &sys_path, &mut status).unwrap();
        assert_eq!(
            (pin.dist.as_str(), pin.requirement.as_str()),
            ("jax", "jax>=0.10.2")
        );
        assert!(status.is_empty(), "{status:?}");
        // Control: a plain extension beside the same jaxlib gets no jax floor.
        let plain = b"\x7fELF..saxpy\0";
        assert!(jax_pin(&wheel_with(plain), &sys_path, &mut status).is_none());
        assert!(status.is_empty(), "{status:?}");
        // A handler with no jaxlib here: no floor, and a line that says so.
        assert!(jax_pin(&wheel_with(handler), &[], &mut status).is_none());
        assert!(
            status[0].starts_with("pkg/_ffi.so: holds an XLA FFI handler, but no jaxlib"),
            "{status:?}"
        );
    }
}
