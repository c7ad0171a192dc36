//! The GPU architecture model: every spelling of `archs`, where a list came from, and the
//! `-gencode` pairs it expands to against what the nvcc in use accepts.
//!
//! Spellings (one list may mix them; items are separated by `;`, `,` or spaces):
//! - CMake: `"80"` (SASS, plus PTX as `ptx` says), `"86-real"` (SASS only), `"90-virtual"`
//!   (PTX only), `"all"`, `"all-major"`, `"native"`;
//! - PyTorch (`TORCH_CUDA_ARCH_LIST`): `"8.0"` (SASS only, as PyTorch builds it), `"8.6+PTX"`
//!   (SASS and PTX), `"9.0a"`, and its names `"Ampere"`, `"Hopper"`, ...;
//! - arch-specific `a` (`"90a"`: runs on exactly that arch) and family `f` (`"100f"`: runs on
//!   the arch's family) suffixes in both forms.
//!
//! Precedence (config::tool applies it): `-C archs` > `CUDAWHEEL_ARCHS` > `CUDAARCHS` >
//! `TORCH_CUDA_ARCH_LIST` > pyproject.toml > the default of the CUDA major; a target's own
//! `archs` replaces the top-level list for that target.
//!
//! Which archs nvcc accepts is read from nvcc (`--list-gpu-arch`, and the allowed values of
//! `--gpu-architecture` in `--help`, which also names the `a`/`f` forms), never from a table.
//! `"native"` asks the CUDA driver (`libcuda.so.1`) for the build machine's GPUs.

use std::collections::BTreeSet;
use std::fmt;

use crate::config::{Origin, Ptx};
use crate::hint::Hint;

#[derive(Debug, thiserror::Error)]
pub(crate) enum ArchError {
    #[error("`{key}` (from {origin}): {value:?} is not a CUDA architecture")]
    BadSpelling {
        key: String,
        origin: Origin,
        value: String,
    },
    #[error("`{}`: architecture {} is not supported by nvcc {} (it supports {}); the list came from {}", .0.key, .0.arch, .0.version, .0.supported, .0.origin)]
    NotSupported(Box<Unsupported>),
    #[error("`{key}` (from {origin}) asks for SASS of both {number} and {number}f: nvcc makes the same GPU code (`sm_{number}`) for both and refuses them together")]
    PlainAndFamily {
        key: String,
        origin: Origin,
        number: u32,
    },
    #[error("`{key}` (from {origin}) asks for \"native\", but {why}")]
    NoNativeGpu {
        key: String,
        origin: Origin,
        why: String,
    },
}

impl Hint for ArchError {
    fn hints(&self) -> Vec<String> {
        match self {
            ArchError::BadSpelling { value, .. } => {
                let mut out = Vec::new();
                if let Some(s) = suggest(value) {
                    out.push(format!("did you mean {s:?}?"));
                }
                out.push("architectures are written CMake style (\"80\", \"90a\", \"100f\", \"86-real\", \"90-virtual\", \"all-major\", \"native\") or PyTorch style (\"8.0\", \"8.6+PTX\", \"9.0a\"), separated by `;` or spaces".into());
                out
            }
            ArchError::NotSupported(u) => {
                let arch = &u.arch;
                let mut out = vec![format!(
                    "drop {arch} from `archs`, or build with an nvcc that supports it (`cuda`, `toolkit`, CUDA_HOME)"
                )];
                if arch.ends_with('f') || arch.ends_with('a') {
                    out.push("arch-specific `a` forms need CUDA 12.0 (sm_90a) or 12.8 (sm_100a and newer); family `f` forms need CUDA 12.9".into());
                } else if arch.parse::<u32>().is_ok_and(|n| n < 75) {
                    out.push("CUDA 13 dropped architectures below 75 (Turing); build those with CUDA 12 (`cuda = 12`)".into());
                }
                out
            }
            ArchError::PlainAndFamily { number, .. } => vec![format!(
                "keep one: \"{number}f\" runs on every GPU of the {number} family, \"{number}\" also carries its PTX (or write \"{number}-virtual\" next to \"{number}f-real\")"
            )],
            ArchError::NoNativeGpu { .. } => vec![
                "\"native\" builds for the GPUs of this machine; on a machine without one, name the archs (e.g. \"90\")".into(),
            ],
        }
    }
}

/// An arch the nvcc in use cannot build, and what it can.
#[derive(Debug)]
pub(crate) struct Unsupported {
    pub(crate) key: String,
    pub(crate) origin: Origin,
    pub(crate) arch: String,
    pub(crate) version: String,
    pub(crate) supported: String,
}

/// `sm_90` for `"90"`, the CMake spelling for `"sm_90"`/`"compute_90"`/`"9.0.0"`-like slips.
fn suggest(value: &str) -> Option<String> {
    let body = value
        .strip_prefix("sm_")
        .or_else(|| value.strip_prefix("compute_"))
        .or_else(|| value.strip_prefix("lto_"))?;
    parse_one(body).map(|_| body.to_string())
}

/// How one architecture is embedded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ArchKind {
    /// SASS, plus PTX as `ptx` says (CMake `"80"`).
    Default,
    /// SASS only (`"80-real"`, PyTorch `"8.0"`).
    Real,
    /// PTX only (`"80-virtual"`).
    Virtual,
    /// SASS and PTX whatever `ptx` says (PyTorch `"8.0+PTX"`).
    RealAndPtx,
}

/// One architecture: `number` is major * 10 + minor (`90`, `100`, `121`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Arch {
    pub(crate) number: u32,
    /// `""`, `"a"` (arch-specific) or `"f"` (family).
    pub(crate) suffix: String,
    pub(crate) kind: ArchKind,
}

impl Arch {
    /// `90a`, as nvcc's `sm_`/`compute_` names end.
    pub(crate) fn id(&self) -> String {
        format!("{}{}", self.number, self.suffix)
    }
}

/// One item of `archs` after parsing; groups expand against nvcc (or the driver).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ArchSpec {
    One(Arch),
    AllMajor,
    All,
    /// The compute capabilities of the build machine's GPUs, SASS only.
    Native,
}

/// A parsed list with the key and origin its messages name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ArchList {
    pub(crate) specs: Vec<ArchSpec>,
    /// `tool.cudawheel.archs` or `tool.cudawheel.extension[0].archs`.
    pub(crate) key: String,
    pub(crate) origin: Origin,
}

/// One `-gencode` pair.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Gencode {
    /// `compute_90a`
    pub(crate) arch: String,
    /// `sm_90a` or `compute_90a`
    pub(crate) code: String,
}

impl fmt::Display for Gencode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "arch={},code={}", self.arch, self.code)
    }
}

/// What the nvcc in use can build, read from it by the toolchain stage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NvccArchs {
    /// CUDA major (picks the default list).
    pub(crate) major: u32,
    /// `13.5.37`
    pub(crate) version: String,
    /// Virtual archs it accepts, without `compute_`: `75`, `90a`, `100f`, ...
    pub(crate) supported: Vec<String>,
    /// The wheel is for aarch64 (SBSA) systems: the default list is theirs.
    pub(crate) sbsa: bool,
}

/// PyTorch's named architectures (`torch.utils.cpp_extension`), from Volta on.
const NAMED: &[(&str, &str)] = &[
    ("Volta", "7.0+PTX"),
    ("Volta+Tegra", "7.2"),
    ("Turing", "7.5+PTX"),
    ("Ampere", "8.0;8.6+PTX"),
    ("Ampere+Tegra", "8.7"),
    ("Ada", "8.9+PTX"),
    ("Hopper", "9.0+PTX"),
];

/// Parses one item in any spelling; `None` if it is none of them.
fn parse_one(raw: &str) -> Option<ArchSpec> {
    match raw {
        "all-major" => return Some(ArchSpec::AllMajor),
        "all" => return Some(ArchSpec::All),
        "native" => return Some(ArchSpec::Native),
        _ => {}
    }
    let arch = |number: u32, suffix: &str, kind| {
        Some(ArchSpec::One(Arch {
            number,
            suffix: suffix.to_string(),
            kind,
        }))
    };
    let split_suffix = |s: &str| -> Option<(String, String)> {
        let digits: String = s.chars().take_while(char::is_ascii_digit).collect();
        let suffix = &s[digits.len()..];
        matches!(suffix, "" | "a" | "f").then(|| (digits, suffix.to_string()))
    };
    // PyTorch: MAJOR.MINOR[a|f][+PTX]
    if let Some((major, rest)) = raw.split_once('.') {
        let (rest, kind) = match rest.strip_suffix("+PTX") {
            Some(r) => (r, ArchKind::RealAndPtx),
            None => (rest, ArchKind::Real),
        };
        let (minor, suffix) = split_suffix(rest)?;
        if major.is_empty()
            || major.len() > 2
            || !major.chars().all(|c| c.is_ascii_digit())
            || minor.len() != 1
        {
            return None;
        }
        let number = major.parse::<u32>().ok()? * 10 + minor.parse::<u32>().ok()?;
        return arch(number, &suffix, kind);
    }
    // CMake: NN[a|f][-real|-virtual]
    let (body, kind) = if let Some(b) = raw.strip_suffix("-real") {
        (b, ArchKind::Real)
    } else if let Some(b) = raw.strip_suffix("-virtual") {
        (b, ArchKind::Virtual)
    } else {
        (raw, ArchKind::Default)
    };
    let (digits, suffix) = split_suffix(body)?;
    if !(2..=4).contains(&digits.len()) || digits.starts_with('0') {
        return None;
    }
    arch(digits.parse().ok()?, &suffix, kind)
}

/// Parses a list in any spelling (items separated by `;`, `,` or whitespace; PyTorch's
/// names expand). `key` and `origin` are for the error.
pub(crate) fn parse_list(
    text: &str,
    key: &str,
    origin: &Origin,
) -> Result<Vec<ArchSpec>, ArchError> {
    let mut out = Vec::new();
    for item in text
        .split(|c: char| c == ';' || c == ',' || c.is_whitespace())
        .filter(|s| !s.is_empty())
    {
        if let Some((_, expansion)) = NAMED.iter().find(|(n, _)| *n == item) {
            out.extend(parse_list(expansion, key, origin)?);
            continue;
        }
        out.push(parse_one(item).ok_or_else(|| ArchError::BadSpelling {
            key: key.to_string(),
            origin: origin.clone(),
            value: item.to_string(),
        })?);
    }
    Ok(out)
}

/// Parses the raw strings of a configuration value into an `ArchList`.
pub(crate) fn parse_items(
    items: &[String],
    key: &str,
    origin: &Origin,
) -> Result<ArchList, ArchError> {
    let mut specs = Vec::new();
    for item in items {
        specs.extend(parse_list(item, key, origin)?);
    }
    Ok(ArchList {
        specs,
        key: key.to_string(),
        origin: origin.clone(),
    })
}

/// The default `archs` for a CUDA major (docs/explanations/architectures.md).
pub(crate) fn default_archs(major: u32) -> &'static [u32] {
    match major {
        11 => &[70, 75, 80, 86],
        12 => &[70, 75, 80, 86, 89, 90],
        _ => &[75, 80, 86, 89, 90, 100, 120],
    }
}

/// The default `archs` of an aarch64 (SBSA) wheel: Grace Hopper (90), Grace Blackwell
/// (100: GB200, and GB300's 10.3 through the same major's SASS compatibility), RTX PRO and
/// DGX Spark (120, 121).
pub(crate) const SBSA_ARCHS: &[u32] = &[90, 100, 120];

/// The virtual archs nvcc accepts, without `compute_`, from the output of
/// `nvcc --list-gpu-arch` and of `nvcc --help` (whose `--gpu-architecture` allowed values
/// also name the `a`/`f` forms that `--list-gpu-arch` leaves out). Sorted by number.
pub(crate) fn nvcc_supported(list_gpu_arch: &str, help: &str) -> Vec<String> {
    let mut set: BTreeSet<(u32, String)> = BTreeSet::new();
    let mut add = |word: &str| {
        if let Some(id) = word.strip_prefix("compute_") {
            let digits: String = id.chars().take_while(char::is_ascii_digit).collect();
            if let Ok(n) = digits.parse::<u32>() {
                if matches!(&id[digits.len()..], "" | "a" | "f") {
                    set.insert((n, id.to_string()));
                }
            }
        }
    };
    list_gpu_arch.split_whitespace().for_each(&mut add);
    // The allowed values follow the `--gpu-architecture` heading, up to the next option.
    let help = format!("\n{help}");
    if let Some(start) = help.find("\n--gpu-architecture ") {
        let section = &help[start + 1..];
        let section = match section[1..].find("\n--") {
            Some(end) => &section[..end + 1],
            None => section,
        };
        if let Some(at) = section.find("Allowed values for this option:") {
            section[at..]
                .split(|c: char| c == ',' || c == '\'' || c.is_whitespace() || c == '.')
                .for_each(&mut add);
        }
    }
    set.into_iter().map(|(_, id)| id).collect()
}

/// Compute capabilities (`major * 10 + minor`) of the GPUs the CUDA driver sees, without
/// creating a context. `Err` says why there are none.
pub(crate) fn driver_gpus() -> Result<Vec<u32>, String> {
    driver::compute_capabilities()
}

mod driver {
    use std::ffi::{c_int, c_uint, c_void, CStr};

    const CC_MAJOR: c_int = 75; // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
    const CC_MINOR: c_int = 76; // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR

    type Init = unsafe extern "C" fn(c_uint) -> c_int;
    type Count = unsafe extern "C" fn(*mut c_int) -> c_int;
    type Get = unsafe extern "C" fn(*mut c_int, c_int) -> c_int;
    type Attr = unsafe extern "C" fn(*mut c_int, c_int, c_int) -> c_int;

    fn sym(lib: *mut c_void, name: &CStr) -> Result<*mut c_void, String> {
        // SAFETY: `lib` is a live handle from dlopen; `name` is NUL-terminated.
        let p = unsafe { libc::dlsym(lib, name.as_ptr()) };
        if p.is_null() {
            Err(format!("libcuda.so.1 has no {}", name.to_string_lossy()))
        } else {
            Ok(p)
        }
    }

    pub(crate) fn compute_capabilities() -> Result<Vec<u32>, String> {
        // SAFETY: dlopen with a NUL-terminated name; the handle is never closed (unloading
        // the driver library is not supported by it).
        let lib = unsafe { libc::dlopen(c"libcuda.so.1".as_ptr(), libc::RTLD_NOW) };
        if lib.is_null() {
            return Err(
                "this machine has no CUDA driver (libcuda.so.1 could not be loaded)".into(),
            );
        }
        // SAFETY: the symbols are the CUDA driver API functions of these exact signatures
        // (cuda.h); every pointer passed is to a live local.
        unsafe {
            let init: Init = std::mem::transmute(sym(lib, c"cuInit")?);
            let count: Count = std::mem::transmute(sym(lib, c"cuDeviceGetCount")?);
            let get: Get = std::mem::transmute(sym(lib, c"cuDeviceGet")?);
            let attr: Attr = std::mem::transmute(sym(lib, c"cuDeviceGetAttribute")?);
            let rc = init(0);
            if rc != 0 {
                return Err(format!(
                    "the CUDA driver found no usable GPU (cuInit: CUDA error {rc})"
                ));
            }
            let mut n: c_int = 0;
            if count(&mut n) != 0 || n <= 0 {
                return Err("the CUDA driver sees no GPU".into());
            }
            let mut out = Vec::new();
            for i in 0..n {
                let (mut dev, mut major, mut minor) = (0, 0, 0);
                if get(&mut dev, i) != 0
                    || attr(&mut major, CC_MAJOR, dev) != 0
                    || attr(&mut minor, CC_MINOR, dev) != 0
                {
                    return Err(format!("the CUDA driver could not describe GPU {i}"));
                }
                out.push(major as u32 * 10 + minor as u32);
            }
            Ok(out)
        }
    }
}

/// Expands a list (or the default of the major, for `None`) into `-gencode` pairs, checking
/// every arch against what nvcc accepts. `native` gives the build machine's GPUs.
pub(crate) fn gencodes_with(
    list: Option<&ArchList>,
    ptx: Ptx,
    nvcc: &NvccArchs,
    native: &dyn Fn() -> Result<Vec<u32>, String>,
) -> Result<Vec<Gencode>, ArchError> {
    let archs = expand(list, nvcc, native)?;
    Ok(to_gencodes(&archs, ptx))
}

/// The list's archs (or the major's defaults), each checked against what nvcc accepts.
fn expand(
    list: Option<&ArchList>,
    nvcc: &NvccArchs,
    native: &dyn Fn() -> Result<Vec<u32>, String>,
) -> Result<Vec<Arch>, ArchError> {
    let plain = |n: u32, kind| Arch {
        number: n,
        suffix: String::new(),
        kind,
    };
    let supported_plain = || {
        nvcc.supported
            .iter()
            .filter_map(|s| s.parse::<u32>().ok())
            .collect::<BTreeSet<u32>>()
    };
    let mut archs: Vec<Arch> = Vec::new();
    match list {
        // The defaults, less what this nvcc cannot build (an older 12.x has no 90).
        None => archs.extend(
            (if nvcc.sbsa {
                SBSA_ARCHS
            } else {
                default_archs(nvcc.major)
            })
            .iter()
            .filter(|n| nvcc.supported.contains(&n.to_string()))
            .map(|&n| plain(n, ArchKind::Default)),
        ),
        Some(l) => {
            for spec in &l.specs {
                match spec {
                    ArchSpec::One(a) => archs.push(a.clone()),
                    ArchSpec::All => archs.extend(
                        supported_plain()
                            .into_iter()
                            .map(|n| plain(n, ArchKind::Default)),
                    ),
                    ArchSpec::AllMajor => archs.extend(
                        supported_plain()
                            .into_iter()
                            .filter(|n| n % 10 == 0)
                            .map(|n| plain(n, ArchKind::Default)),
                    ),
                    ArchSpec::Native => {
                        let gpus = native().map_err(|why| ArchError::NoNativeGpu {
                            key: l.key.clone(),
                            origin: l.origin.clone(),
                            why,
                        })?;
                        archs.extend(
                            gpus.into_iter()
                                .collect::<BTreeSet<_>>()
                                .into_iter()
                                .map(|n| plain(n, ArchKind::Real)),
                        );
                    }
                }
            }
            for a in &archs {
                if !nvcc.supported.contains(&a.id()) {
                    return Err(ArchError::NotSupported(Box::new(Unsupported {
                        key: l.key.clone(),
                        origin: l.origin.clone(),
                        arch: a.id(),
                        version: nvcc.version.clone(),
                        supported: nvcc.supported.join(", "),
                    })));
                }
            }
        }
    }
    if let Some(l) = list {
        let sass = |a: &&Arch| a.kind != ArchKind::Virtual;
        for f in archs.iter().filter(sass).filter(|a| a.suffix == "f") {
            if archs
                .iter()
                .filter(sass)
                .any(|a| a.number == f.number && a.suffix.is_empty())
            {
                return Err(ArchError::PlainAndFamily {
                    key: l.key.clone(),
                    origin: l.origin.clone(),
                    number: f.number,
                });
            }
        }
    }
    Ok(archs)
}

/// SASS for every real arch, then PTX as `ptx` says.
fn to_gencodes(archs: &[Arch], ptx: Ptx) -> Vec<Gencode> {
    let mut out: Vec<Gencode> = Vec::new();
    let mut push = |arch: &Arch, code: &str| {
        let g = Gencode {
            arch: format!("compute_{}", arch.id()),
            code: format!("{code}_{}", arch.id()),
        };
        if !out.contains(&g) {
            out.push(g);
        }
    };
    for a in archs.iter().filter(|a| a.kind != ArchKind::Virtual) {
        push(a, "sm");
    }
    // PTX: `-virtual` and `+PTX` entries always; the plain ones as `ptx` says. "highest"
    // prefers a generic arch (an `a` PTX runs on one arch only, an `f` PTX on one family).
    let mut ptx_archs: Vec<&Arch> = archs
        .iter()
        .filter(|a| matches!(a.kind, ArchKind::Virtual | ArchKind::RealAndPtx))
        .collect();
    let candidates: Vec<&Arch> = archs
        .iter()
        .filter(|a| a.kind == ArchKind::Default)
        .collect();
    match ptx {
        Ptx::None => {}
        Ptx::All => ptx_archs.extend(candidates.iter().copied()),
        Ptx::Highest => {
            if let Some(top) = candidates
                .iter()
                .max_by_key(|a| (a.suffix.is_empty(), a.number, a.suffix.clone()))
            {
                ptx_archs.push(top);
            }
        }
    }
    for a in ptx_archs {
        push(a, "compute");
    }
    out
}

/// `gencodes_with` asking the CUDA driver for `"native"`.
pub(crate) fn gencodes(
    list: Option<&ArchList>,
    ptx: Ptx,
    nvcc: &NvccArchs,
) -> Result<Vec<Gencode>, ArchError> {
    gencodes_with(list, ptx, nvcc, &driver_gpus)
}

/// The `-gencode` pairs as the build systems spell them: CMake's `CMAKE_CUDA_ARCHITECTURES`
/// (and `CUDAARCHS`: `80-real;90`, SASS and PTX for a plain number) and PyTorch's
/// `TORCH_CUDA_ARCH_LIST` (`8.0;9.0+PTX`; PTX alone, which it cannot say, becomes `+PTX`).
pub(crate) fn build_system_spellings(gencodes: &[Gencode]) -> (String, String) {
    let mut ids: Vec<&str> = Vec::new();
    for g in gencodes {
        let id = g.arch.trim_start_matches("compute_");
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    let has = |code: String| gencodes.iter().any(|g| g.code == code);
    let (mut cmake, mut torch) = (Vec::new(), Vec::new());
    for id in ids {
        let (sass, ptx) = (has(format!("sm_{id}")), has(format!("compute_{id}")));
        cmake.push(match (sass, ptx) {
            (true, true) => id.to_string(),
            (true, false) => format!("{id}-real"),
            _ => format!("{id}-virtual"),
        });
        let digits: String = id.chars().take_while(char::is_ascii_digit).collect();
        let suffix = &id[digits.len()..];
        let (major, minor) = digits.split_at(digits.len().saturating_sub(1));
        let plus = if ptx { "+PTX" } else { "" };
        torch.push(format!("{major}.{minor}{suffix}{plus}"));
    }
    (cmake.join(";"), torch.join(";"))
}

/// Where the archs of a build come from, for `doctor` and verbose output.
pub(crate) fn describe_origin(list: Option<&ArchList>, major: u32) -> String {
    match list {
        Some(l) => format!("{} (`{}`)", l.origin, l.key),
        None => format!("the default for CUDA {major}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_systems_get_the_same_archs_in_their_spellings() {
        let pair = |arch: &str, code: &str| Gencode {
            arch: arch.into(),
            code: code.into(),
        };
        let gencodes = vec![
            pair("compute_80", "sm_80"),
            pair("compute_90a", "sm_90a"),
            pair("compute_120", "sm_120"),
            pair("compute_120", "compute_120"),
            pair("compute_100f", "compute_100f"),
        ];
        let (cmake, torch) = build_system_spellings(&gencodes);
        assert_eq!(cmake, "80-real;90a-real;120;100f-virtual");
        assert_eq!(torch, "8.0;9.0a;12.0+PTX;10.0f+PTX");
    }

    fn nvcc13() -> NvccArchs {
        NvccArchs {
            major: 13,
            version: "13.5.37".into(),
            supported: [
                "75", "80", "86", "87", "88", "89", "90", "90a", "100", "100a", "100f", "120",
                "120a", "120f",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
            sbsa: false,
        }
    }

    fn nvcc124() -> NvccArchs {
        NvccArchs {
            major: 12,
            version: "12.4.131".into(),
            supported: ["50", "52", "60", "70", "75", "80", "86", "89", "90", "90a"]
                .iter()
                .map(|s| s.to_string())
                .collect(),
            sbsa: false,
        }
    }

    fn list(text: &str, origin: Origin) -> ArchList {
        ArchList {
            specs: parse_list(text, "tool.cudawheel.archs", &origin).unwrap(),
            key: "tool.cudawheel.archs".into(),
            origin,
        }
    }

    fn codes(text: &str, ptx: Ptx) -> Vec<String> {
        gencodes_with(
            Some(&list(text, Origin::Pyproject)),
            ptx,
            &nvcc13(),
            &|| Ok(vec![90, 90, 80]),
        )
        .unwrap()
        .iter()
        .map(ToString::to_string)
        .collect()
    }

    #[test]
    fn default_archs_give_sass_each_and_ptx_of_the_highest() {
        let g: Vec<String> = gencodes(None, Ptx::Highest, &nvcc13())
            .unwrap()
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            g,
            [
                "arch=compute_75,code=sm_75",
                "arch=compute_80,code=sm_80",
                "arch=compute_86,code=sm_86",
                "arch=compute_89,code=sm_89",
                "arch=compute_90,code=sm_90",
                "arch=compute_100,code=sm_100",
                "arch=compute_120,code=sm_120",
                "arch=compute_120,code=compute_120",
            ]
        );
        // CUDA 12's default, for an nvcc 12.4.
        let g = gencodes(None, Ptx::None, &nvcc124()).unwrap();
        assert_eq!(g.len(), 6);
    }

    #[test]
    fn cmake_spellings() {
        assert_eq!(
            codes("80", Ptx::Highest),
            [
                "arch=compute_80,code=sm_80",
                "arch=compute_80,code=compute_80"
            ]
        );
        assert_eq!(
            codes("80-real", Ptx::Highest),
            ["arch=compute_80,code=sm_80"]
        );
        assert_eq!(
            codes("90-virtual", Ptx::Highest),
            ["arch=compute_90,code=compute_90"]
        );
        assert_eq!(
            codes("80-real;90a;75-virtual", Ptx::All),
            [
                "arch=compute_80,code=sm_80",
                "arch=compute_90a,code=sm_90a",
                "arch=compute_75,code=compute_75",
                "arch=compute_90a,code=compute_90a"
            ]
        );
        assert_eq!(
            codes("100f-real 120", Ptx::None),
            [
                "arch=compute_100f,code=sm_100f",
                "arch=compute_120,code=sm_120"
            ]
        );
    }

    #[test]
    fn pytorch_spellings() {
        assert_eq!(
            codes("8.0;8.6+PTX", Ptx::Highest),
            [
                "arch=compute_80,code=sm_80",
                "arch=compute_86,code=sm_86",
                "arch=compute_86,code=compute_86"
            ]
        );
        assert_eq!(
            codes("8.0 9.0a", Ptx::Highest),
            ["arch=compute_80,code=sm_80", "arch=compute_90a,code=sm_90a"]
        );
        assert_eq!(
            codes("10.0f 12.0+PTX", Ptx::None),
            [
                "arch=compute_100f,code=sm_100f",
                "arch=compute_120,code=sm_120",
                "arch=compute_120,code=compute_120"
            ]
        );
        assert_eq!(
            codes("Ampere;Hopper", Ptx::None),
            [
                "arch=compute_80,code=sm_80",
                "arch=compute_86,code=sm_86",
                "arch=compute_90,code=sm_90",
                "arch=compute_86,code=compute_86",
                "arch=compute_90,code=compute_90"
            ]
        );
    }

    #[test]
    fn groups_and_native() {
        assert_eq!(
            codes("all-major", Ptx::None),
            [
                "arch=compute_80,code=sm_80",
                "arch=compute_90,code=sm_90",
                "arch=compute_100,code=sm_100",
                "arch=compute_120,code=sm_120"
            ]
        );
        // The GPUs the driver reports, each once, SASS only.
        assert_eq!(
            codes("native", Ptx::Highest),
            ["arch=compute_80,code=sm_80", "arch=compute_90,code=sm_90"]
        );
        let err = gencodes_with(
            Some(&list("native", Origin::Setting("archs".into()))),
            Ptx::Highest,
            &nvcc13(),
            &|| Err("this machine has no CUDA driver".into()),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "`tool.cudawheel.archs` (from config setting `-C archs`) asks for \"native\", but this machine has no CUDA driver"
        );
    }

    #[test]
    fn ptx_highest_prefers_a_generic_arch() {
        assert_eq!(
            codes("90;90a", Ptx::Highest),
            [
                "arch=compute_90,code=sm_90",
                "arch=compute_90a,code=sm_90a",
                "arch=compute_90,code=compute_90"
            ]
        );
    }

    #[test]
    fn unsupported_archs_name_arch_version_and_list() {
        let l = list("70;100f", Origin::Env("TORCH_CUDA_ARCH_LIST".into()));
        let err = gencodes(Some(&l), Ptx::None, &nvcc13()).unwrap_err();
        assert!(
            err.to_string().starts_with(
                "`tool.cudawheel.archs`: architecture 70 is not supported by nvcc 13.5.37 (it supports 75, 80,"
            ),
            "{err}"
        );
        assert!(err
            .to_string()
            .contains("environment variable `TORCH_CUDA_ARCH_LIST`"));
        assert!(
            err.hints()[1].contains("CUDA 13 dropped"),
            "{:?}",
            err.hints()
        );
        let l = list("100f", Origin::Pyproject);
        let err = gencodes(Some(&l), Ptx::None, &nvcc124()).unwrap_err();
        assert!(err
            .to_string()
            .contains("architecture 100f is not supported by nvcc 12.4.131"));
        assert!(err.hints()[1].contains("family `f` forms need CUDA 12.9"));
    }

    #[test]
    fn plain_and_family_sass_of_one_arch_is_refused() {
        let l = list("100;100f", Origin::Pyproject);
        let err = gencodes(Some(&l), Ptx::None, &nvcc13()).unwrap_err();
        assert!(
            err.to_string().contains("SASS of both 100 and 100f"),
            "{err}"
        );
        // PTX of one and SASS of the other is fine.
        assert_eq!(
            codes("100-virtual;100f-real", Ptx::Highest),
            [
                "arch=compute_100f,code=sm_100f",
                "arch=compute_100,code=compute_100"
            ]
        );
    }

    #[test]
    fn bad_spellings() {
        for bad in [
            "sm_80", "8", "90b", "8.0.0", "8.10", "080", "80-reall", "8.0+ptx", ".0", "x",
        ] {
            let err = parse_list(bad, "tool.cudawheel.archs", &Origin::Pyproject).unwrap_err();
            assert!(err
                .to_string()
                .contains(&format!("{bad:?} is not a CUDA architecture")));
        }
        let err = parse_list("sm_80", "k", &Origin::Pyproject).unwrap_err();
        assert_eq!(err.hints()[0], "did you mean \"80\"?");
        assert_eq!(
            parse_list("100f-real", "k", &Origin::Pyproject).unwrap(),
            [ArchSpec::One(Arch {
                number: 100,
                suffix: "f".into(),
                kind: ArchKind::Real
            })]
        );
    }

    #[test]
    fn reads_what_nvcc_accepts() {
        let list = "compute_75\ncompute_80\ncompute_90\ncompute_100\n";
        let help = "--gpu-architecture <arch>   (-arch)\n        Specify ...\n        Allowed values for this option:  'all','all-major','compute_100',\n        'compute_100a','compute_100f','compute_75','compute_80','compute_90',\n        'compute_90a','lto_90a','native','sm_100','sm_90a'.\n\n--gpu-code <code>,...\n        Allowed values for this option:  'compute_999'.\n";
        assert_eq!(
            nvcc_supported(list, help),
            ["75", "80", "90", "90a", "100", "100a", "100f"]
        );
        assert_eq!(nvcc_supported(list, ""), ["75", "80", "90", "100"]);
    }
}
