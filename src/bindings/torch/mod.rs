//! `bindings = "torch"`: PyTorch C++/CUDA extensions, built the way
//! `torch.utils.cpp_extension` builds them, from the facts the torch in use reports about
//! itself (`toolchain::torch::TorchInfo`):
//!
//! - flags: torch's include folders, `TORCH_EXTENSION_NAME` (the module's last component),
//!   `TORCH_API_INCLUDE_EXTENSION_H`, `_GLIBCXX_USE_CXX11_ABI` from
//!   `torch._C._GLIBCXX_USE_CXX11_ABI`, the `PYBIND11_*` ABI defines where torch has them, the
//!   C++ standard torch was built with, and for nvcc torch's `__CUDA_NO_HALF_OPERATORS__`
//!   family plus `--expt-relaxed-constexpr`;
//! - libraries: `c10`, `torch`, `torch_cpu`, `torch_python` (not with `py-limited-api`), and
//!   with CUDA sources `c10_cuda`, `torch_cuda`, linked by SONAME from `torch/lib` with an
//!   `$ORIGIN` RPATH there, provided at run time by `torch>=X.Y,<X.(Y+1)` (torch's C++ ABI
//!   changes between minors);
//! - checks: nvcc's CUDA major equals `torch.version.cuda`'s (a minor mismatch warns); CUDA
//!   sources need a torch built with CUDA; the NVIDIA wheels the extension requires never ask
//!   for more than torch's `==` pins installed (`fit_floors`).

pub(crate) mod probe;
pub(crate) mod stable;

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::bindings::torch::probe::TorchInfo;
use crate::bindings::BindingsError;
use crate::config::{Bindings, ToolConfig};
use crate::libraries::{FoundLibrary, Provider, SharedLib, Span};
use crate::plan::{BuildPlan, Lang, TargetPlan};
use crate::toolchain::Nvcc;

/// The distribution providing torch's libraries.
pub(crate) const DIST: &str = "torch";
/// Where they are, relative to site-packages.
pub(crate) const SITE_LIB_DIR: &str = "torch/lib";

/// Whether a library comes from torch (its requirement is torch's, not a CUDA one).
pub(crate) fn is_torch_library(lib: &FoundLibrary) -> bool {
    lib.provider.as_ref().is_some_and(|p| p.dist == DIST)
}

/// Torch's libraries, in groups linked together: every torch extension links `torch`; the
/// others as `groups_for` says.
pub(crate) const GROUPS: &[(&str, &[&str])] = &[
    ("torch", &["c10", "torch", "torch_cpu"]),
    ("torch_python", &["torch_python"]),
    ("torch_cuda", &["c10_cuda", "torch_cuda"]),
    // A stable-ABI target's: the C shims only (`stable::groups_for`).
    ("torch_cpu", &["torch_cpu"]),
    ("torch_cuda_shims", &["torch_cuda"]),
];

/// The build requirement: `torch` with `torch-version`, or the default for the CUDA major:
/// PyPI's torch is built for CUDA 13 from 2.11 on (cuda-toolkit `==` pins) and for CUDA 12
/// from 2.6 to 2.10. A floor also keeps resolvers from backtracking to a torch of another
/// CUDA major when they pick the newest `cuda-toolkit` first. `resolved_first` adds the
/// `==<major>.*` clause that makes every pip choose torch before the toolkit.
pub(crate) fn requirement(tool: &ToolConfig, major: u32) -> String {
    if let Some(s) = &tool.torch_version {
        return format!("{DIST}{}", resolved_first(s));
    }
    // A stable-ABI floor raises the oldest torch that can build it.
    let floor = tool
        .extensions
        .iter()
        .filter_map(|e| e.torch_stable_abi)
        .chain(tool.torch_stable_abi)
        .min();
    let spec = match (major, floor) {
        (13, Some(f)) if f > stable::FIRST_CUDA13 => format!(">={}.{},<3", f.0, f.1),
        (13, _) => ">=2.11,<3".to_string(),
        (12, Some(f)) if f > (2, 6) => format!(">={}.{},<2.11", f.0, f.1),
        (12, _) => ">=2.6,<2.11".to_string(),
        _ => String::new(),
    };
    format!("{DIST}{}", resolved_first(&spec))
}

/// `spec` with `,==M.*` appended where that admits exactly the same versions (the spec already
/// stays within major M and has no `==` clause).
///
/// Why: torch requires `cuda-toolkit[<its extras>]==X.Y.Z`, and the build asks for
/// `cuda-toolkit[cccl,cudart,nvcc]` beside it, so nvcc comes from the release torch pins. pip
/// 23.1 and 23.2 (23.2.1 is the pip CPython 3.11 and 3.12.0 ship) cannot backtrack between two
/// sets of extras of one package: when their resolver takes the toolkit before torch, it ends in
/// `ResolutionImpossible`, and which comes first follows the requirements' order, which the
/// build environment's set makes a matter of string hashes. Those resolvers take a requirement
/// with an `==` clause before every other one, so with it torch always comes first and its pin
/// chooses the toolkit; every other frontend resolves either order already.
fn resolved_first(spec: &str) -> String {
    use pep440_rs::{Operator, VersionSpecifiers};
    let Ok(specs) = spec.parse::<VersionSpecifiers>() else {
        return spec.to_string();
    };
    let pinned = specs.iter().any(|s| {
        matches!(
            s.operator(),
            Operator::Equal | Operator::EqualStar | Operator::ExactEqual
        )
    });
    let part = |s: &pep440_rs::VersionSpecifier, i: usize| {
        s.version().release().get(i).copied().unwrap_or(0)
    };
    let floor = specs.iter().find_map(|s| match s.operator() {
        Operator::GreaterThanEqual | Operator::GreaterThan | Operator::TildeEqual => {
            Some(part(s, 0))
        }
        _ => None,
    });
    let Some(m) = floor.filter(|_| !pinned) else {
        return spec.to_string();
    };
    // Every version admitted is below (m+1).0: an upper bound of the same major, `<m+1` or
    // `<m+1.0...`, or `~=m.n`.
    let within = specs.iter().any(|s| match s.operator() {
        Operator::LessThan => {
            part(s, 0) == m
                || (part(s, 0) == m + 1 && s.version().release()[1..].iter().all(|x| *x == 0))
        }
        Operator::LessThanEqual => part(s, 0) == m,
        Operator::TildeEqual => s.version().release().len() >= 2,
        _ => false,
    });
    if within {
        format!("{spec},=={m}.*")
    } else {
        spec.to_string()
    }
}

/// The `cuda-toolkit` release the torch on `sys_path` pins (`==13.2.2`), from its METADATA's
/// `Requires-Dist: cuda-toolkit[<its extras>]==13.2.2`; `None` without such a torch. When torch
/// is already installed where the build requirements are asked for (`[build-system] requires`
/// lists it), pip installs them with a separate resolver run that does not see torch, which
/// would otherwise take the newest toolkit of the major.
pub(crate) fn toolkit_pin(sys_path: &[PathBuf]) -> Option<String> {
    let site = probe::locate(sys_path).ok()?.parent()?.to_path_buf();
    let metadata = std::fs::read_dir(&site).ok()?.flatten().find_map(|e| {
        let name = e.file_name().to_string_lossy().into_owned();
        let stem = name.strip_suffix(".dist-info")?;
        (stem.split_once('-')?.0 == DIST)
            .then(|| std::fs::read_to_string(e.path().join("METADATA")).ok())?
    })?;
    metadata.lines().find_map(|line| {
        let req = line.strip_prefix("Requires-Dist:")?.split(';').next()?;
        let req: String = req.chars().filter(|c| !c.is_whitespace()).collect();
        let rest = req.strip_prefix("cuda-toolkit")?;
        let spec = rest.split_once(']').map_or(rest, |(_, s)| s);
        (spec.starts_with("==") && !spec.contains(',')).then(|| spec.to_string())
    })
}

/// The library groups (names of `GROUPS`) one torch target links.
pub(crate) fn groups_for(target: &TargetPlan, limited_api: bool) -> Vec<&'static str> {
    let mut out = vec!["torch"];
    if !limited_api {
        // libtorch_python uses more than the limited API.
        out.push("torch_python");
    }
    if target.sources.iter().any(|s| s.lang == Lang::Cuda) {
        out.push("torch_cuda");
    }
    out
}

/// Torch's libraries as found libraries (by SONAME from `torch/lib`, provided by `torch`
/// within the minor built against), keyed by group name.
pub(crate) fn libraries(info: &TorchInfo) -> Result<BTreeMap<String, FoundLibrary>, BindingsError> {
    let lib_dir = info.dir.join("lib");
    let mut out = BTreeMap::new();
    for (group, names) in GROUPS {
        let mut shared = Vec::new();
        for name in *names {
            let path = lib_dir.join(format!("lib{name}.so"));
            let soname = crate::inspect::elf::read(&path)
                .ok()
                .and_then(|r| r.soname)
                .ok_or_else(|| BindingsError::TorchNotFound {
                    probes: vec![format!(
                        "{}: missing or not a shared library",
                        path.display()
                    )],
                })?;
            shared.push(SharedLib { soname, path });
        }
        out.insert(
            group.to_string(),
            FoundLibrary {
                name: group.to_string(),
                include_dirs: Vec::new(),
                shared,
                statics: Vec::new(),
                ldflags: Vec::new(),
                site_lib_dir: Some(SITE_LIB_DIR.to_string()),
                outside_dir: None,
                provider: Some(Provider {
                    dist: DIST.to_string(),
                    floor: info.minor(),
                    span: Span::Minor,
                }),
                found_in: format!("torch {} in {}", info.version, info.dir.display()),
                wheel_dist: None,
            },
        );
    }
    Ok(out)
}

/// `-std=c++20` from `__cplusplus` = 202002 (torch before 2.10 used C++17).
pub(crate) fn std_flag(info: &TorchInfo) -> String {
    let year = match info.cplusplus {
        Some(v) if v >= 202302 => "23",
        Some(v) if v >= 202002 => "20",
        Some(v) if v >= 201703 => "17",
        Some(_) => "14",
        None => "17",
    };
    format!("-std=c++{year}")
}

/// Adds torch's include folders, defines and flags to a torch target (the project's own
/// flags stay last, so they can override these).
pub(crate) fn apply(target: &mut TargetPlan, info: &TorchInfo) {
    if let Some(floor) = target.torch_stable_abi {
        stable::apply(target, info, floor);
        for dir in &info.include_dirs {
            if !target.include_dirs.contains(dir) {
                target.include_dirs.push(dir.clone());
            }
        }
        return;
    }
    let name = target.module.rsplit('.').next().unwrap_or(&target.module);
    let mut defines = vec![
        format!("TORCH_EXTENSION_NAME={name}"),
        "TORCH_API_INCLUDE_EXTENSION_H".to_string(),
        format!("_GLIBCXX_USE_CXX11_ABI={}", u8::from(info.cxx11_abi)),
    ];
    for (k, v) in &info.pybind11_abi {
        defines.push(format!("PYBIND11_{k}=\"{v}\""));
    }
    defines.append(&mut target.defines);
    target.defines = defines;
    let std = std_flag(info);
    // Paths of the build environment are mapped away, as for pybind11/nanobind.
    let prefix_map = format!("-ffile-prefix-map={}/=torch/", info.dir.display());
    let mut cxx = vec![std.clone(), prefix_map.clone()];
    cxx.append(&mut target.cxx_flags);
    target.cxx_flags = cxx;
    let mut nvcc: Vec<String> = [
        "-D__CUDA_NO_HALF_OPERATORS__",
        "-D__CUDA_NO_HALF_CONVERSIONS__",
        "-D__CUDA_NO_BFLOAT16_CONVERSIONS__",
        "-D__CUDA_NO_HALF2_OPERATORS__",
        "--expt-relaxed-constexpr",
    ]
    .map(String::from)
    .to_vec();
    nvcc.extend([std, "-Xcompiler".into(), prefix_map.replace(',', "\\,")]);
    nvcc.append(&mut target.nvcc_flags);
    target.nvcc_flags = nvcc;
    for dir in &info.include_dirs {
        if !target.include_dirs.contains(dir) {
            target.include_dirs.push(dir.clone());
        }
    }
}

/// The CUDA target `check_cuda` looks at: its key, and whether it is a stable-ABI one.
pub(crate) struct CudaTarget<'a> {
    pub(crate) key: &'a str,
    pub(crate) stable: bool,
}

/// nvcc against `torch.version.cuda`: another major is an error, another minor a warning
/// (returned); CUDA sources with a CPU-only torch are an error. A stable-ABI target shares no
/// C++ type and no CUDA runtime with the torch that builds it: its build for another major
/// (`cuda = ["12", "13"]` in one environment) is said, not refused; its requirement then asks
/// for the torch releases of that major (`stable::torch_range`).
pub(crate) fn check_cuda(
    info: &TorchInfo,
    nvcc: &Nvcc,
    cuda_target: Option<CudaTarget<'_>>,
) -> Result<Option<String>, BindingsError> {
    let Some(CudaTarget { key, stable }) = cuda_target else {
        return Ok(None);
    };
    let Some((major, minor)) = info.cuda_version() else {
        return Err(BindingsError::TorchWithoutCuda {
            key: key.to_string(),
            torch_version: info.version.clone(),
        });
    };
    if major != nvcc.major && stable {
        crate::ui::status(&format!(
            "torch {} here is built for CUDA {major}; the CUDA {} build of the stable-ABI extension uses its headers only and runs beside the torch releases built for CUDA {}",
            info.version, nvcc.major, nvcc.major
        ));
        return Ok(None);
    }
    if major != nvcc.major {
        return Err(BindingsError::TorchCudaMajor {
            nvcc: nvcc.full_version.clone(),
            nvcc_major: nvcc.major,
            torch_version: info.version.clone(),
            torch_cuda: info.cuda.clone().unwrap_or_default(),
        });
    }
    Ok((minor != nvcc.minor).then(|| {
        format!(
            "nvcc is CUDA {}.{}, torch {} was built with CUDA {major}.{minor}: the extension runs on torch's CUDA runtime (minor versions are compatible; match them to be safe)",
            nvcc.major, nvcc.minor, info.version
        )
    }))
}

/// For a build with torch targets: nvcc is checked against torch's CUDA (a minor mismatch
/// warns; the first torch target with CUDA sources names the problem), then torch's
/// libraries, found.
pub(crate) fn for_build(
    info: &TorchInfo,
    plan: &BuildPlan,
    nvcc: &Nvcc,
) -> Result<BTreeMap<String, FoundLibrary>, BindingsError> {
    // A pinned target (torch's C++ ABI) decides; a stable-ABI one only when there is none.
    let cuda_target = plan
        .targets
        .iter()
        .filter(|t| t.bindings == Bindings::Torch && t.sources.iter().any(|s| s.lang == Lang::Cuda))
        .min_by_key(|t| t.torch_stable_abi.is_some())
        .map(|t| CudaTarget {
            key: &t.key,
            stable: t.torch_stable_abi.is_some(),
        });
    if let Some(warning) = check_cuda(info, nvcc, cuda_target)? {
        crate::ui::warn(&warning);
    }
    stable::check_build_torch(info, plan)?;
    libraries(info)
}

/// The torch libraries one target links (none for a target without torch bindings); a
/// stable-ABI target's are required from its floor on (`stable::open_up`, CUDA `major`).
pub(crate) fn libraries_of(
    target: &TargetPlan,
    limited_api: bool,
    major: u32,
    found: &BTreeMap<String, FoundLibrary>,
) -> Vec<(String, FoundLibrary)> {
    if target.bindings != Bindings::Torch {
        return Vec::new();
    }
    let groups = match target.torch_stable_abi {
        Some(_) => stable::groups_for(target),
        None => groups_for(target, limited_api),
    };
    groups
        .into_iter()
        .filter_map(|g| {
            let mut lib = found.get(g)?.clone();
            if let Some(floor) = target.torch_stable_abi {
                stable::open_up(&mut lib, target, floor, major);
            }
            Some((g.to_string(), lib))
        })
        .collect()
}

/// Caps the floors of the NVIDIA wheels the extension requires at the versions installed
/// beside torch (what its `==` pins resolved to), so the wheel installs next to that torch.
/// A floor above torch's comes from a library found outside torch's environment (a system
/// toolkit); at run time torch's copy is the one loaded anyway. Returns warnings.
pub(crate) fn fit_floors(
    libs: &mut BTreeMap<String, FoundLibrary>,
    info: &TorchInfo,
) -> Vec<String> {
    let mut warnings = Vec::new();
    for lib in libs.values_mut() {
        let Some(p) = lib.provider.as_mut() else {
            continue;
        };
        let Some(installed) = info.installed.get(&p.dist) else {
            continue;
        };
        let mut parts = installed.split('.').map(|x| x.parse::<u64>().ok());
        let (Some(Some(major)), Some(Some(minor))) = (parts.next(), parts.next()) else {
            continue;
        };
        if p.floor.0 == major && p.floor > (major, minor) {
            warnings.push(format!(
                "{} was found in {} ({}.{}), newer than the {} {installed} installed with torch: the wheel requires {}>={major}.{minor} so that it installs beside torch's pins",
                lib.name, lib.found_in, p.floor.0, p.floor.1, p.dist, p.dist
            ));
            p.floor = (major, minor);
        }
    }
    warnings
}

/// Whether `soname` is one of torch's libraries (for the audit of finished wheels).
pub(crate) fn provides(soname: &str) -> bool {
    GROUPS
        .iter()
        .flat_map(|(_, names)| names.iter())
        .any(|n| soname == format!("lib{n}.so"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{Source, TargetKind};
    use std::path::PathBuf;

    fn info() -> TorchInfo {
        TorchInfo {
            version: "2.15.0+cu132".into(),
            dir: "/site/torch".into(),
            cuda: Some("13.2".into()),
            cxx11_abi: true,
            cplusplus: Some(202002),
            pybind11_abi: BTreeMap::new(),
            include_dirs: vec!["/site/torch/include".into()],
            arch_list: Vec::new(),
            installed: [("nvidia-cuda-runtime".to_string(), "13.2.86".to_string())].into(),
        }
    }

    fn target(lang: Lang) -> TargetPlan {
        TargetPlan {
            key: "tool.cudawheel.extension[0]".into(),
            module: "muladd._C".into(),
            kind: TargetKind::Extension,
            sources: vec![Source {
                path: "/p/k.cu".into(),
                rel: "k.cu".into(),
                lang,
            }],
            include_dirs: Vec::new(),
            defines: vec!["MINE=1".into()],
            nvcc_flags: vec!["-lineinfo".into()],
            cxx_flags: vec!["-O3".into()],
            link_flags: Vec::new(),
            cuda_libraries: Vec::new(),
            link_with: Vec::new(),
            rdc: false,
            optional: false,
            bindings: Bindings::Torch,
            wheel_path: "muladd/_C.abi3.so".into(),
            archs: None,
            split_library: None,
            free_threaded: false,
            torch_stable_abi: None,
        }
    }

    fn nvcc(major: u32, minor: u32) -> Nvcc {
        Nvcc {
            path: "/cuda/bin/nvcc".into(),
            root: "/cuda".into(),
            major,
            minor,
            full_version: format!("{major}.{minor}.1"),
            archs: Vec::new(),
            origin: crate::toolchain::NvccOrigin::System("CUDA_HOME".into()),
        }
    }

    #[test]
    fn flags_follow_torch_and_the_project_comes_last() {
        let mut t = target(Lang::Cuda);
        apply(&mut t, &info());
        assert_eq!(
            t.defines,
            [
                "TORCH_EXTENSION_NAME=_C",
                "TORCH_API_INCLUDE_EXTENSION_H",
                "_GLIBCXX_USE_CXX11_ABI=1",
                "MINE=1"
            ]
        );
        assert_eq!(t.cxx_flags[0], "-std=c++20");
        assert_eq!(t.cxx_flags.last().unwrap(), "-O3");
        assert!(t
            .nvcc_flags
            .contains(&"--expt-relaxed-constexpr".to_string()));
        assert!(t
            .nvcc_flags
            .contains(&"-D__CUDA_NO_HALF_OPERATORS__".to_string()));
        assert_eq!(t.nvcc_flags.last().unwrap(), "-lineinfo");
        assert_eq!(t.include_dirs, [PathBuf::from("/site/torch/include")]);
        let mut old = info();
        old.cplusplus = Some(201703);
        old.cxx11_abi = false;
        old.pybind11_abi = [("COMPILER_TYPE".to_string(), "_gcc".to_string())].into();
        let mut t = target(Lang::Cxx);
        apply(&mut t, &old);
        assert!(t.defines.contains(&"_GLIBCXX_USE_CXX11_ABI=0".to_string()));
        assert!(t
            .defines
            .contains(&"PYBIND11_COMPILER_TYPE=\"_gcc\"".to_string()));
        assert_eq!(t.cxx_flags[0], "-std=c++17");
    }

    #[test]
    fn library_groups_per_target() {
        assert_eq!(
            groups_for(&target(Lang::Cuda), false),
            ["torch", "torch_python", "torch_cuda"]
        );
        assert_eq!(
            groups_for(&target(Lang::Cuda), true),
            ["torch", "torch_cuda"]
        );
        assert_eq!(groups_for(&target(Lang::Cxx), true), ["torch"]);
        assert!(provides("libtorch_cuda.so") && provides("libc10.so"));
        assert!(!provides("libtorch_global_deps.so") && !provides("libc10.so.2"));
    }

    #[test]
    fn requirement_within_the_minor() {
        let p = Provider {
            dist: DIST.into(),
            floor: (2, 15),
            span: Span::Minor,
        };
        assert_eq!(p.requirement(), "torch>=2.15,<2.16");
        let tool = ToolConfig::parse(&toml::Table::new(), &Default::default()).unwrap();
        assert_eq!(requirement(&tool, 13), "torch>=2.11,<3,==2.*");
        assert_eq!(requirement(&tool, 12), "torch>=2.6,<2.11,==2.*");
        let doc: toml::Table = toml::from_str("torch-version = \"==2.15.*\"").unwrap();
        let tool = ToolConfig::parse(&doc, &Default::default()).unwrap();
        assert_eq!(requirement(&tool, 13), "torch==2.15.*");
        let doc: toml::Table = toml::from_str("torch-version = \"2.15\"").unwrap();
        let err = ToolConfig::parse(&doc, &Default::default()).unwrap_err();
        assert!(err.to_string().contains("torch-version"), "{err}");
    }

    #[test]
    fn toolkit_pin_of_an_installed_torch() {
        let site = tempfile::tempdir().unwrap();
        let path = vec![site.path().to_path_buf()];
        for f in ["torch/include/torch/library.h", "torch/lib/libc10.so"] {
            let f = site.path().join(f);
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(f, "").unwrap();
        }
        assert_eq!(toolkit_pin(&path), None, "no dist-info");
        let dist = site.path().join("torch-2.15.0.dist-info");
        std::fs::create_dir_all(&dist).unwrap();
        std::fs::write(
            dist.join("METADATA"),
            "Name: torch\nVersion: 2.15.0\nRequires-Dist: filelock\n\
             Requires-Dist: cuda-toolkit[cublas,cudart,nvrtc]==13.2.2; platform_system == \"Linux\"\n",
        )
        .unwrap();
        assert_eq!(toolkit_pin(&path).as_deref(), Some("==13.2.2"));
    }

    #[test]
    fn torch_resolved_first_only_where_nothing_changes() {
        for (spec, want) in [
            (">=2.11,<3", ">=2.11,<3,==2.*"),
            (">=2.11,<3.0.0", ">=2.11,<3.0.0,==2.*"),
            (">2.12,<=2.99", ">2.12,<=2.99,==2.*"),
            ("~=2.12", "~=2.12,==2.*"),
            (">=2.12,<2.14", ">=2.12,<2.14,==2.*"),
            // Already pinned, open above, or above a major: as written.
            ("==2.15.*", "==2.15.*"),
            (">=2.12,==2.*", ">=2.12,==2.*"),
            (">=2.12", ">=2.12"),
            (">=2.12,<3.1", ">=2.12,<3.1"),
            ("<2.14", "<2.14"),
            ("", ""),
        ] {
            assert_eq!(resolved_first(spec), want, "{spec}");
        }
    }

    #[test]
    fn stable_abi_targets_link_the_shims_and_require_an_open_range() {
        let doc: toml::Table = toml::from_str("torch-stable-abi = \"2.12\"").unwrap();
        let tool = ToolConfig::parse(&doc, &Default::default()).unwrap();
        // The build torch must be at or above the floor.
        assert_eq!(requirement(&tool, 13), "torch>=2.12,<3,==2.*");
        let doc: toml::Table = toml::from_str("torch-stable-abi = \"2.10\"").unwrap();
        let tool = ToolConfig::parse(&doc, &Default::default()).unwrap();
        assert_eq!(requirement(&tool, 13), "torch>=2.11,<3,==2.*");
        assert_eq!(requirement(&tool, 12), "torch>=2.10,<2.11,==2.*");
        // torch 2.10's cpp_extension imports setuptools: the CUDA 12 builds get it too.
        let doc: toml::Table = toml::from_str(
            "bindings = \"torch\"\n[[extension]]\nname = \"a._C\"\nsources = [\"a.cpp\"]",
        )
        .unwrap();
        let with_ext = ToolConfig::parse(&doc, &Default::default()).unwrap();
        assert!(crate::bindings::requirements(&with_ext, 12).contains(&"setuptools".to_string()));
        assert!(!crate::bindings::requirements(&with_ext, 13).contains(&"setuptools".to_string()));
        let found = |name: &str| FoundLibrary {
            name: name.into(),
            include_dirs: Vec::new(),
            shared: Vec::new(),
            statics: Vec::new(),
            ldflags: Vec::new(),
            site_lib_dir: None,
            outside_dir: None,
            provider: Some(Provider {
                dist: DIST.into(),
                floor: (2, 15),
                span: Span::Minor,
            }),
            found_in: String::new(),
            wheel_dist: None,
        };
        let all: BTreeMap<String, FoundLibrary> = GROUPS
            .iter()
            .map(|(g, _)| (g.to_string(), found(g)))
            .collect();
        let mut t = target(Lang::Cuda);
        t.torch_stable_abi = Some((2, 10));
        let libs = libraries_of(&t, true, 13, &all);
        let names: Vec<&str> = libs.iter().map(|(g, _)| g.as_str()).collect();
        assert_eq!(names, ["torch_cpu", "torch_cuda_shims"]);
        let p = libs[0].1.provider.as_ref().unwrap();
        assert_eq!(p.requirement(), "torch>=2.11");
        assert_eq!(
            libraries_of(&t, true, 12, &all)[0]
                .1
                .provider
                .as_ref()
                .unwrap()
                .requirement(),
            "torch>=2.10,<2.11"
        );
        let mut cpu = target(Lang::Cxx);
        cpu.torch_stable_abi = Some((2, 10));
        let libs = libraries_of(&cpu, true, 13, &all);
        assert_eq!(libs.len(), 1);
        assert_eq!(
            libs[0].1.provider.as_ref().unwrap().requirement(),
            "torch>=2.10"
        );
        // Flags: the target version for both compilers, USE_CUDA for nvcc, no C++ ABI defines.
        apply(&mut t, &info());
        assert_eq!(
            t.defines,
            [
                "TORCH_EXTENSION_NAME=_C",
                "TORCH_TARGET_VERSION=0x020a000000000000",
                "MINE=1"
            ]
        );
        assert_eq!(t.nvcc_flags[0], "-DUSE_CUDA");
        assert_eq!(t.nvcc_flags.last().unwrap(), "-lineinfo");
    }

    #[test]
    fn cuda_major_must_match_minor_warns() {
        let target = |stable| {
            Some(CudaTarget {
                key: "tool.cudawheel.extension[0]",
                stable,
            })
        };
        assert!(check_cuda(&info(), &nvcc(13, 2), target(false))
            .unwrap()
            .is_none());
        // A stable-ABI target of another major is said, not refused (control: the pinned one).
        assert!(check_cuda(&info(), &nvcc(12, 4), target(true))
            .unwrap()
            .is_none());
        let warning = check_cuda(&info(), &nvcc(13, 0), target(false))
            .unwrap()
            .unwrap();
        assert!(
            warning.contains("13.0") && warning.contains("13.2"),
            "{warning}"
        );
        let err = check_cuda(&info(), &nvcc(12, 4), target(false)).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("12.4.1") && text.contains("CUDA 13.2"),
            "{text}"
        );
        assert!(check_cuda(&info(), &nvcc(12, 4), None).unwrap().is_none());
        let mut cpu = info();
        cpu.cuda = None;
        assert!(matches!(
            check_cuda(&cpu, &nvcc(13, 2), target(false)),
            Err(BindingsError::TorchWithoutCuda { .. })
        ));
        assert!(matches!(
            check_cuda(&cpu, &nvcc(12, 4), target(true)),
            Err(BindingsError::TorchWithoutCuda { .. })
        ));
    }

    #[test]
    fn floors_never_exceed_torchs_pins() {
        let lib = |floor| FoundLibrary {
            name: "cudart".into(),
            include_dirs: Vec::new(),
            shared: Vec::new(),
            statics: Vec::new(),
            ldflags: Vec::new(),
            site_lib_dir: None,
            outside_dir: None,
            provider: Some(Provider {
                dist: "nvidia-cuda-runtime".into(),
                floor,
                span: Span::Major,
            }),
            found_in: "the CUDA toolkit at /cuda".into(),
            wheel_dist: None,
        };
        let mut libs: BTreeMap<String, FoundLibrary> =
            [("cudart".to_string(), lib((13, 5)))].into();
        let warnings = fit_floors(&mut libs, &info());
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert_eq!(libs["cudart"].provider.as_ref().unwrap().floor, (13, 2));
        let mut libs: BTreeMap<String, FoundLibrary> =
            [("cudart".to_string(), lib((13, 1)))].into();
        assert!(fit_floors(&mut libs, &info()).is_empty());
        assert_eq!(libs["cudart"].provider.as_ref().unwrap().floor, (13, 1));
    }
}
