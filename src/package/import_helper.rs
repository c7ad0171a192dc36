//! The generated `<package>/_cuda_libs.py`: a pure renderer.
//!
//! `preload()` checks the CUDA driver (through libcuda's `cuDriverGetVersion`, when a driver is
//! installed) and the GPUs CUDA would use (through NVML, never `cuInit`: importing a package must
//! not initialise CUDA, which would break `fork()`), keeping what they answered in a small file
//! keyed by what `/proc` shows of the machine, so only the first import on a machine as it stands
//! loads NVML (docs/explanations/architectures.md). It loads each NVIDIA library the package's
//! extensions need from the first `sys.path` entry that holds it, so imports work where the
//! `$ORIGIN` RPATH cannot reach (platlib/purelib split, `pip install --target`, user site,
//! editable installs). A library
//! found nowhere raises an ImportError that names it and the wheel to install (or, with
//! `cuda-deps = "extra"`, the package's extra). `load(name)` preloads, then opens one of the
//! package's shared-library targets with ctypes.

use std::fmt::Write as _;

use crate::inspect::fatbin::GpuCode;
use crate::plan::driver_floors::Floor;

/// One library to preload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Preload {
    pub(crate) soname: String,
    /// Folder inside site-packages (`nvidia/cu13/lib`).
    pub(crate) site_dir: String,
    /// The requirement that provides it (`nvidia-cuda-runtime>=13.5,<14`).
    pub(crate) requirement: String,
}

fn py_str(s: &str) -> String {
    format!("{s:?}")
}

fn py_tuple(items: &[String]) -> String {
    match items {
        [] => "()".into(),
        [one] => format!("({},)", py_str(one)),
        many => format!(
            "({})",
            many.iter()
                .map(|s| py_str(s))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// What one package's helper holds.
pub(crate) struct Helper<'a> {
    /// What to preload.
    pub(crate) libs: &'a [Preload],
    /// nvcc's (major, minor).
    pub(crate) cuda: (u32, u32),
    /// The package's extensions use torch, whose import (first thing in the module) loads
    /// torch's libraries and the NVIDIA libraries it pins, so those resolve to torch's copies.
    pub(crate) torch: bool,
    /// Each built ELF of the package with GPU code (its wheel path and what its fatbin holds).
    pub(crate) gpus: &'a [(String, GpuCode)],
    /// Why the wheel needs a driver this new (`plan::driver_floors`).
    pub(crate) floors: &'a [Floor],
}

/// The helper's text.
/// The end of every generated loader module (a repaired extension's, a several-majors build's):
/// the extension file at `_path` loaded under the loader's own name, in `sys.modules` before it
/// runs (as the import system does), so `import pkg.mod` returns the extension module. The
/// loader's text above it defines `_path` and imports `importlib.machinery`, `importlib.util`
/// and `sys`.
pub(crate) const LOAD_EXTENSION: &str = r#"_spec = importlib.util.spec_from_file_location(
    __name__, _path, loader=importlib.machinery.ExtensionFileLoader(__name__, _path)
)
_module = importlib.util.module_from_spec(_spec)
sys.modules[__name__] = _module
_spec.loader.exec_module(_module)
"#;

pub(crate) fn render(h: &Helper<'_>) -> String {
    let (libs, cuda, torch, gpus) = (h.libs, h.cuda, h.torch, h.gpus);
    let mut table = String::new();
    for l in libs {
        let _ = writeln!(
            table,
            "    ({}, {}, {}),",
            py_str(&l.soname),
            py_str(&l.site_dir),
            py_str(&l.requirement)
        );
    }
    let mut code = String::new();
    for (path, g) in gpus {
        let _ = writeln!(
            code,
            "    {}: {{\"sass\": {}, \"ptx\": {}, \"ptx_isa\": {}, \"ptx_toolkit\": {}}},",
            py_str(path),
            py_tuple(&g.sass),
            py_tuple(&g.ptx),
            g.ptx_isa.as_deref().map_or("None".into(), py_str),
            g.ptx_toolkit
                .map_or("None".into(), |(a, b)| format!("({a}, {b})")),
        );
    }
    let mut floors = String::new();
    for f in h.floors {
        let _ = writeln!(
            floors,
            "    ({}, ({}, {})),",
            py_str(&f.reason),
            f.cuda.0,
            f.cuda.1
        );
    }
    TEMPLATE
        .replace("@VERSION@", env!("CARGO_PKG_VERSION"))
        .replace("    # @FLOORS@\n", &floors)
        .replace(
            "(0, 0)  # @CUDA_VERSION@",
            &format!("({}, {})", cuda.0, cuda.1),
        )
        .replace("    # @LIBRARIES@\n", &table)
        .replace("# @IMPORT_FIRST@\n", if torch { TORCH_FIRST } else { "" })
        .replace("    # @GPU_CODE@\n", &code)
}

/// Fills the parts of `render`'s text for `load()` and the extras scheme: `shared` (a
/// shared-library target's name, its path below the package folder) and `extra` (the
/// distribution and the extra the NVIDIA wheels are under, with `cuda-deps = "extra"`).
pub(crate) fn with_loads(
    text: &str,
    shared: &[(String, String)],
    extra: Option<(&str, &str)>,
) -> String {
    let table: String = shared
        .iter()
        .map(|(name, path)| format!("    {}: {},\n", py_str(name), py_str(path)))
        .collect();
    let extra = extra.map_or("None".into(), |(dist, e)| {
        format!("({}, {})", py_str(dist), py_str(e))
    });
    text.replace("    # @SHARED_LIBRARIES@\n", &table)
        .replace("None  # @CUDA_EXTRA@", &extra)
        .replace("    # @MODULES@\n", "")
}

/// One extension module a repaired wheel wraps: its dotted name, the SONAMEs it links and the
/// GPU code entries it carries (through the wheel's own libraries it loads).
pub(crate) struct Module {
    pub(crate) name: String,
    pub(crate) sonames: Vec<String>,
    pub(crate) code: Vec<String>,
}

/// Fills `MODULES` (repair's per-module preloads); before `with_loads`, which empties it.
pub(crate) fn with_modules(text: &str, modules: &[Module]) -> String {
    let table: String = modules
        .iter()
        .map(|m| {
            format!(
                "    {}: ({}, {}),\n",
                py_str(&m.name),
                py_tuple(&m.sonames),
                py_tuple(&m.code)
            )
        })
        .collect();
    text.replace("    # @MODULES@\n", &table)
}

pub(crate) const TORCH_FIRST: &str = "# torch first: it loads its own libraries and the CUDA libraries it pins.\nimport torch  # noqa: F401\n\n";

/// The helper's source: a real Python module (linted with the rest), whose marked lines
/// `render` and `with_loads` fill. Each marker is valid Python as it stands, and is replaced
/// whole (comment, indent and newline), so the output is exactly the data.
const TEMPLATE: &str = include_str!("_cuda_libs.py");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_the_table() {
        let libs = [Preload {
            soname: "libcudart.so.13".into(),
            site_dir: "nvidia/cu13/lib".into(),
            requirement: "nvidia-cuda-runtime>=13.5,<14".into(),
        }];
        let gpus = [(
            "saxpy/_core.abi3.so".into(),
            GpuCode {
                sass: vec!["sm_80".into(), "sm_90a".into()],
                ptx: vec!["compute_90".into()],
                ptx_isa: Some("9.5".into()),
                ptx_toolkit: Some((13, 5)),
            },
        )];
        let floors = crate::plan::driver_floors::floors(13, 5, &[]);
        let text = render(&Helper {
            libs: &libs,
            cuda: (13, 5),
            torch: false,
            gpus: &gpus,
            floors: &floors,
        });
        assert!(
            text.contains("GPU_CODE = {\n    \"saxpy/_core.abi3.so\": {\"sass\": (\"sm_80\", \"sm_90a\"), \"ptx\": (\"compute_90\",), \"ptx_isa\": \"9.5\", \"ptx_toolkit\": (13, 5)},\n}\n"),
            "{text}"
        );
        assert!(text.contains("CUDA_VERSION = (13, 5)\n"));
        assert!(text.contains("LIBRARIES = [\n    (\"libcudart.so.13\", \"nvidia/cu13/lib\", \"nvidia-cuda-runtime>=13.5,<14\"),\n]\n"));
        assert!(!text.contains("import torch"));
        assert!(
            text.contains("DRIVER_FLOORS = [\n    (\"built with CUDA 13.5, which runs on any driver for CUDA 13.0 or newer (minor-version compatibility)\", (13, 0)),\n]\n"),
            "{text}"
        );
        let text = render(&Helper {
            libs: &[],
            cuda: (13, 2),
            torch: true,
            gpus: &[],
            floors: &[],
        });
        let torch = text.find("\nimport torch").expect("imports torch");
        assert!(torch < text.find("\nimport ctypes").unwrap(), "{text}");
    }

    #[test]
    fn fills_the_loads_and_the_extra() {
        let text = render(&Helper {
            libs: &[],
            cuda: (13, 0),
            torch: false,
            gpus: &[],
            floors: &[],
        });
        let filled = with_loads(
            &text,
            &[("jax_ffi_cuda".into(), "lib/libjax_ffi_cuda.so".into())],
            Some(("jax-ffi-example-cuda13x", "cuda_pip")),
        );
        assert!(
            filled.contains(
                "SHARED_LIBRARIES = {\n    \"jax_ffi_cuda\": \"lib/libjax_ffi_cuda.so\",\n}\n"
            ),
            "{filled}"
        );
        assert!(filled.contains("CUDA_EXTRA = (\"jax-ffi-example-cuda13x\", \"cuda_pip\")\n"));
        assert!(!filled.contains('@'), "{filled}");
        assert!(filled.contains("MODULES = {\n}\n"), "{filled}");
        let modules = with_modules(
            &text,
            &[Module {
                name: "pkg._gpu".into(),
                sonames: vec!["libcudart.so.13".into()],
                code: vec!["pkg/_gpu.so".into()],
            }],
        );
        let modules = with_loads(&modules, &[], None);
        assert!(
            modules.contains(
                "MODULES = {\n    \"pkg._gpu\": ((\"libcudart.so.13\",), (\"pkg/_gpu.so\",)),\n}\n"
            ),
            "{modules}"
        );
        let plain = with_loads(&text, &[], None);
        assert!(
            plain.contains("SHARED_LIBRARIES = {\n}\n") && plain.contains("CUDA_EXTRA = None\n")
        );
    }
}
