//! The stable-ABI audit of torch extensions: an extension built with `torch-stable-abi` may
//! import only from PyTorch's stable C shims (`aoti_torch_*`, `torch_*`), Python's limited API,
//! the C/C++ runtime (glibc, libstdc++, libgcc) and CUDA; any other import (a `c10::`, `at::`
//! or `torch::` C++ symbol, a `_Py*` outside the stable ABI) ties it to one torch minor or one
//! CPython. The build refuses such a file naming each symbol (demangled), the object files
//! that use it and the fix; the wheel audit says the same for any torch wheel, and for a
//! pinned one which symbols tie it to one torch minor.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::hint::Hint;
use crate::inspect::elf::Import;

/// Libraries of the C and C++ runtime (their versioned symbols are the platform's).
const RUNTIME_LIBRARIES: &[&str] = &[
    "libc.so.6",
    "libm.so.6",
    "libstdc++.so.6",
    "libgcc_s.so.1",
    "libpthread.so.0",
    "libdl.so.2",
    "librt.so.1",
    "ld-linux-x86-64.so.2",
    "ld-linux-aarch64.so.1",
];

/// Prefixes of the CUDA runtime's and NVIDIA libraries' C entry points.
const CUDA_PREFIXES: &[&str] = &[
    "cuda",
    "__cuda",
    "cublas",
    "cufft",
    "curand",
    "cusparse",
    "cusolver",
    "cudnn",
    "nvrtc",
    "nvJitLink",
    "nvtx",
    "nccl",
    "nvshmem",
];

/// `_Py*` names of Python's stable ABI: what the limited API's macros call or read.
const PY_ABI_ONLY: &[&str] = &[
    "_Py_Dealloc",
    "_Py_DecRef",
    "_Py_IncRef",
    "_Py_NoneStruct",
    "_Py_NotImplementedStruct",
    "_Py_TrueStruct",
    "_Py_FalseStruct",
    "_Py_EllipsisObject",
    "_Py_SwappedOp",
    "_Py_CheckRecursiveCall",
    "_Py_BuildValue_SizeT",
    "_Py_VaBuildValue_SizeT",
    "_PyArg_Parse_SizeT",
    "_PyArg_ParseTuple_SizeT",
    "_PyArg_ParseTupleAndKeywords_SizeT",
    "_PyArg_VaParse_SizeT",
    "_PyArg_VaParseTupleAndKeywords_SizeT",
    "_PyObject_CallFunction_SizeT",
    "_PyObject_CallMethod_SizeT",
    "_PyObject_New",
    "_PyObject_NewVar",
    "_PyObject_GC_New",
    "_PyObject_GC_NewVar",
    "_PyObject_GC_Resize",
    "_PyErr_BadInternalCall",
    "_PyWeakref_RefType",
    "_PyWeakref_ProxyType",
    "_PyWeakref_CallableProxyType",
];

/// What an import outside the stable ABI is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outside {
    /// torch's C++ API (`c10::`, `at::`, `torch::`, `caffe2::`): one torch minor.
    TorchCpp,
    /// CPython beyond the limited API: one Python version.
    Python,
    /// Anything else the stable ABI does not promise.
    Other,
}

impl Outside {
    pub(crate) fn fix(self) -> &'static str {
        match self {
            Outside::TorchCpp => "write it against the stable API: torch::stable::Tensor and torch/csrc/stable/ops.h instead of at::Tensor and its methods, STD_TORCH_CHECK instead of TORCH_CHECK, THO_DISPATCH_V2 instead of AT_DISPATCH_*, torch::stable::accelerator::DeviceGuard instead of the CUDA guards, an op without a stable wrapper through torch_call_dispatcher; include only torch/csrc/stable/, torch/headeronly/ and the C shims",
            Outside::Python => "use only Python's limited C API (the extension is compiled with Py_LIMITED_API), or none at all",
            Outside::Other => "the stable ABI promises only the stable C shims (aoti_torch_*, torch_*), the limited Python API, the C/C++ runtime and CUDA: compile that code into the extension or drop the reference",
        }
    }
}

/// `c10::Error::Error(...)` for `_ZN3c105ErrorC1E...`; the name itself when not mangled.
pub(crate) fn demangle(name: &str) -> String {
    cpp_demangle::Symbol::new(name)
        .ok()
        .and_then(|s| s.demangle(&cpp_demangle::DemangleOptions::default()).ok())
        .unwrap_or_else(|| name.to_string())
}

/// Whether the stable ABI allows this import; else what it is.
pub(crate) fn classify(i: &Import) -> Option<Outside> {
    if i.weak {
        return None;
    }
    if let Some(lib) = &i.library {
        let runtime = RUNTIME_LIBRARIES.contains(&lib.as_str());
        let cuda = lib.starts_with("libcu") || lib.starts_with("libnv");
        if runtime || cuda {
            return None;
        }
    }
    let n = i.name.as_str();
    let shim = (n.starts_with("aoti_torch_") || n.starts_with("torch_")) && !n.starts_with("_Z");
    if shim || CUDA_PREFIXES.iter().any(|p| n.starts_with(p)) {
        return None;
    }
    if n.starts_with("Py") || PY_ABI_ONLY.contains(&n) {
        return None;
    }
    if n.starts_with("_Py") {
        return Some(Outside::Python);
    }
    let d = demangle(n);
    if ["c10::", "at::", "torch::", "caffe2::"]
        .iter()
        .any(|ns| d.contains(ns))
    {
        return Some(Outside::TorchCpp);
    }
    Some(Outside::Other)
}

/// One import outside the stable ABI and the object files that ask for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Offender {
    pub(crate) symbol: String,
    pub(crate) demangled: String,
    pub(crate) kind: Outside,
    pub(crate) objects: Vec<String>,
}

/// A stable-ABI extension imports symbols outside the stable ABI.
#[derive(Debug, thiserror::Error)]
#[error("{file} (`{key}`) is built for torch's stable ABI (`torch-stable-abi`), but imports {} symbol(s) outside it:{}", offenders.len(), list(offenders))]
pub(crate) struct StableAbiBroken {
    pub(crate) file: String,
    pub(crate) key: String,
    pub(crate) offenders: Vec<Offender>,
}

fn list(offenders: &[Offender]) -> String {
    let mut out = String::new();
    for o in offenders {
        out.push_str(&format!("\n  {}", o.demangled));
        if o.demangled != o.symbol {
            out.push_str(&format!(" ({})", o.symbol));
        }
        if !o.objects.is_empty() {
            out.push_str(&format!(", used by {}", o.objects.join(", ")));
        }
    }
    out
}

impl Hint for StableAbiBroken {
    fn hints(&self) -> Vec<String> {
        let kinds: BTreeSet<&'static str> = self.offenders.iter().map(|o| o.kind.fix()).collect();
        let mut out: Vec<String> = kinds.into_iter().map(str::to_string).collect();
        out.push(
            "or drop `torch-stable-abi` for a wheel pinned to the build torch's minor".to_string(),
        );
        out
    }
}

/// Refuses a built stable-ABI file whose imports leave the stable ABI; `objects` are the
/// target's object files (named relative to `root` where they are inside it).
pub(crate) fn check_built(
    file: &Path,
    wheel_path: &str,
    key: &str,
    objects: &[PathBuf],
    root: &Path,
) -> Result<(), Box<StableAbiBroken>> {
    let Ok(bytes) = std::fs::read(file) else {
        return Ok(());
    };
    let Ok(imports) = crate::inspect::elf::imports_in(file, &bytes) else {
        return Ok(());
    };
    let undefined: Vec<(String, BTreeSet<String>)> = objects
        .iter()
        .map(|o| {
            let shown = o.strip_prefix(root).unwrap_or(o).display().to_string();
            let syms = crate::inspect::elf::object_undefined(o).unwrap_or_default();
            (shown, syms)
        })
        .collect();
    let offenders: Vec<Offender> = imports
        .iter()
        .filter_map(|i| {
            let kind = classify(i)?;
            Some(Offender {
                symbol: i.name.clone(),
                demangled: demangle(&i.name),
                kind,
                objects: undefined
                    .iter()
                    .filter(|(_, syms)| syms.contains(&i.name))
                    .map(|(o, _)| o.clone())
                    .collect(),
            })
        })
        .collect();
    if offenders.is_empty() {
        return Ok(());
    }
    Err(Box::new(StableAbiBroken {
        file: wheel_path.to_string(),
        key: key.to_string(),
        offenders,
    }))
}

/// What the wheel audit says about one torch extension (an ELF needing a torch library).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Every import within the stable ABI: `imports` of them.
    Stable { imports: usize },
    /// Imports outside it (demangled), torch's C++ API first.
    Pinned { offenders: Vec<Offender> },
}

impl Verdict {
    /// The line `python -m cudawheel audit` prints.
    pub(crate) fn line(&self) -> String {
        match self {
            Verdict::Stable { imports } => format!(
                "stable ABI: all {imports} imports come from torch's stable C shims, the limited Python API, the C/C++ runtime or CUDA (runs on later torch releases)"
            ),
            Verdict::Pinned { offenders } => {
                let torch: Vec<&Offender> = offenders
                    .iter()
                    .filter(|o| o.kind == Outside::TorchCpp)
                    .collect();
                let shown: Vec<&str> = offenders
                    .iter()
                    .take(5)
                    .map(|o| o.demangled.as_str())
                    .collect();
                format!(
                    "pinned to one torch minor: {} of its imports are torch's C++ API ({} outside the stable ABI in all), e.g. {}",
                    torch.len(),
                    offenders.len(),
                    shown.join("; ")
                )
            }
        }
    }
}

/// The verdict on an ELF, or None when it needs no torch library (not a torch extension).
pub(crate) fn verdict(needed: &[String], imports: &[Import]) -> Option<Verdict> {
    let torch = needed
        .iter()
        .any(|n| n.starts_with("libtorch") || n.starts_with("libc10"));
    if !torch {
        return None;
    }
    let mut offenders: Vec<Offender> = imports
        .iter()
        .filter_map(|i| {
            classify(i).map(|kind| Offender {
                symbol: i.name.clone(),
                demangled: demangle(&i.name),
                kind,
                objects: Vec::new(),
            })
        })
        .collect();
    if offenders.is_empty() {
        return Some(Verdict::Stable {
            imports: imports.len(),
        });
    }
    offenders.sort_by_key(|o| o.kind != Outside::TorchCpp);
    Some(Verdict::Pinned { offenders })
}

/// The verdict on each torch extension among a wheel's ELF members, by member name.
pub(crate) fn verdicts(
    members: &[(String, Vec<u8>)],
) -> std::collections::BTreeMap<String, Verdict> {
    let mut out = std::collections::BTreeMap::new();
    for (name, bytes) in members.iter().filter(|(_, b)| b.starts_with(b"\x7fELF")) {
        let path = Path::new(name);
        let (Ok(report), Ok(imports)) = (
            crate::inspect::elf::parse(path, bytes),
            crate::inspect::elf::imports_in(path, bytes),
        ) else {
            continue;
        };
        if let Some(v) = verdict(&report.needed, &imports) {
            out.insert(name.clone(), v);
        }
    }
    out
}

/// Whether a requirement on torch promises later minors (no `<`, `<=`, `==`, `~=` or `!=`
/// bound above its floor): what a stable-ABI wheel asks for.
pub(crate) fn open_ended(req: &pep508_rs::Requirement<pep508_rs::VerbatimUrl>) -> bool {
    use pep440_rs::Operator;
    match &req.version_or_url {
        Some(pep508_rs::VersionOrUrl::VersionSpecifier(specs)) => specs.iter().all(|s| {
            matches!(
                s.operator(),
                Operator::GreaterThanEqual | Operator::GreaterThan
            )
        }),
        Some(pep508_rs::VersionOrUrl::Url(_)) => false,
        None => true,
    }
}

/// `(member, problem, fix)` for each torch extension of a wheel that requires torch without
/// an upper bound (the promise of the stable ABI) yet imports torch's C++ API.
pub(crate) fn wheel_problems(
    members: &[(String, Vec<u8>)],
    requirements: &[pep508_rs::Requirement<pep508_rs::VerbatimUrl>],
) -> Vec<(String, String, String)> {
    let Some(torch) = requirements
        .iter()
        .find(|r| r.name.as_ref() == "torch" && r.marker.is_true())
    else {
        return Vec::new();
    };
    if !open_ended(torch) {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (name, v) in verdicts(members) {
        let Verdict::Pinned { offenders } = v else {
            continue;
        };
        let Some(first) = offenders.iter().find(|o| o.kind == Outside::TorchCpp) else {
            continue;
        };
        let shown: Vec<&str> = offenders
            .iter()
            .filter(|o| o.kind == Outside::TorchCpp)
            .take(5)
            .map(|o| o.demangled.as_str())
            .collect();
        out.push((
            name,
            format!(
                "it requires `{torch}` (every later torch), but imports {} symbols of torch's C++ API, which changes between torch minors: {}",
                offenders.iter().filter(|o| o.kind == Outside::TorchCpp).count(),
                shown.join("; ")
            ),
            format!(
                "{}; or require the torch minor it was built against (`torch>=X.Y,<X.(Y+1)`)",
                first.kind.fix()
            ),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn import(name: &str, library: Option<&str>) -> Import {
        Import {
            name: name.into(),
            library: library.map(str::to_string),
            weak: false,
        }
    }

    #[test]
    fn the_stable_abi_allows_shims_limited_python_runtime_and_cuda() {
        for ok in [
            import("aoti_torch_get_data_ptr", None),
            import("torch_call_dispatcher", None),
            import("PyModule_Create2", None),
            import("_Py_Dealloc", None),
            import("memcpy", Some("libc.so.6")),
            import("_ZNSt13runtime_errorD1Ev", Some("libstdc++.so.6")),
            import("__cudaLaunchKernel", Some("libcudart.so.13")),
            import("cudaGetLastError", None),
        ] {
            assert_eq!(classify(&ok), None, "{ok:?}");
        }
        let weak = Import {
            weak: true,
            ..import("__gmon_start__", None)
        };
        assert_eq!(classify(&weak), None);
        let c10 = import("_ZN3c106detail14torchCheckFailEPKcS2_jS2_", None);
        assert_eq!(classify(&c10), Some(Outside::TorchCpp));
        assert!(demangle(&c10.name).starts_with("c10::detail::torchCheckFail("));
        assert_eq!(
            classify(&import("_PyObject_GetState", None)),
            Some(Outside::Python)
        );
        assert_eq!(
            classify(&import("omp_get_num_threads", None)),
            Some(Outside::Other)
        );
    }

    #[test]
    fn verdicts_for_the_wheel_audit() {
        let needed = vec!["libtorch_cpu.so".to_string()];
        let stable = [import("aoti_torch_get_numel", None)];
        assert_eq!(
            verdict(&needed, &stable),
            Some(Verdict::Stable { imports: 1 })
        );
        let pinned = [
            import("PyErr_Occurred", None),
            import("_ZN3c106detail14torchCheckFailEPKcS2_jS2_", None),
        ];
        let v = verdict(&needed, &pinned).unwrap();
        assert!(
            v.line().starts_with("pinned to one torch minor: 1 of"),
            "{}",
            v.line()
        );
        assert!(
            v.line().contains("c10::detail::torchCheckFail"),
            "{}",
            v.line()
        );
        // Control: no torch library needed, no verdict.
        assert_eq!(verdict(&["libc.so.6".to_string()], &pinned), None);
    }
}
