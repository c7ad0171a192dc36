//! `python -m cudawheel doctor [PROJECT]`: what discovery sees, as a report a user can read.
//!
//! Reuses the stages' own discovery (toolchain.rs, libraries.rs, pep517's resolution) so the
//! report says exactly what a build would do: every nvcc candidate with where it comes from and
//! its version, the CUDA major a build would use, the host compiler, each catalogue library
//! (folder, SONAME, providing wheel and version, or why it was not found), and the wheel a
//! build would make now (file name without the platform tag, `Requires-Dist`). Never fails:
//! whatever cannot be found or parsed becomes a line of the report.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::bindings;
use crate::config::PythonInfo;
use crate::config::{Bindings, Config, ConfigError, Cudart, Overrides, ToolConfig};
use crate::libraries;
use crate::libraries::catalog::CATALOG;
use crate::pep517::{self, Request};
use crate::plan::arch;
use crate::toolchain::{self, headers, Nvcc, NvccOrigin, PIP_MAJOR};

fn origin_text(n: &Nvcc) -> String {
    match &n.origin {
        NvccOrigin::System(label) => label.clone(),
        NvccOrigin::Pip(site) => format!("NVIDIA wheel nvidia-cuda-nvcc in {}", site.display()),
    }
}

/// The report. `source_tree` need not hold a pyproject.toml.
pub fn report(source_tree: &Path, overrides: &Overrides, python: &PythonInfo) -> String {
    let env = &overrides.env;
    let mut out = String::new();
    let w = &mut out;
    let _ = writeln!(w, "cudawheel {} doctor", env!("CARGO_PKG_VERSION"));
    let _ = writeln!(
        w,
        "Python: {}.{} ({}, {}-{}), headers in {}",
        python.version.0,
        python.version.1,
        python.implementation,
        python.python_tag,
        python.abi_tag,
        python.include_dir.display()
    );
    let has_pyproject = source_tree.join("pyproject.toml").is_file();
    let (config, tool) = project_section(w, source_tree, overrides, has_pyproject);
    let tool = match tool {
        Ok(t) => t,
        Err(e) => {
            let _ = writeln!(w, "{}", indent(&crate::render(&e.into())));
            return out;
        }
    };
    let nvcc = nvcc_section(w, &tool, env, python);
    if let Some(n) = &nvcc {
        header_report(w, &tool, n, env, python);
    }
    let sbsa =
        matches!(toolchain::cross::cross(&tool, python), Ok(Some(c)) if c.machine == "aarch64");
    gpu_archs(w, &tool, nvcc.as_ref(), sbsa);
    match pep517::build_requirements(&tool, env, python) {
        Ok(reqs) if reqs.is_empty() => {
            let _ = writeln!(w, "Build requirements (isolated builds): none");
        }
        Ok(reqs) => {
            let _ = writeln!(w, "Build requirements (isolated builds):");
            for r in reqs {
                let _ = writeln!(w, "  {r}");
            }
        }
        Err(_) => {}
    }
    // A cross-build (`target`): zig compiles for the target, its wheels are fetched once.
    let target_python = target_section(w, &tool, source_tree, python);
    // Host compiler: zig for `manylinux`, else the configured one.
    if let Some(line) = zig_report(&tool, env, target_python.as_ref().unwrap_or(python)) {
        let _ = writeln!(w, "{line}");
    } else {
        host_report(w, &tool, env);
    }
    launcher_report(w, &tool, env, python);
    // What memory admission will allow (a container's cgroup limit shows here).
    match crate::compile::memory::MemoryLimit::new(tool.max_memory) {
        Some(m) => {
            let _ = writeln!(
                w,
                "Memory for parallel steps: {} (from {})",
                crate::compile::memory::human(m.bytes),
                m.source
            );
        }
        None => {
            let _ = writeln!(w, "Memory for parallel steps: no limit (nothing readable)");
        }
    }
    if let Some(c) = &config {
        bindings_section(w, c, python);
    }
    libraries_section(w, &tool, nvcc.as_ref(), env, python);
    let req = Request {
        source_tree,
        overrides,
        python,
    };
    wheel_section(w, &req, config.is_some(), has_pyproject);
    out
}

/// The project, if there is one; otherwise defaults (plus -C / CUDAWHEEL_* overrides).
fn project_section(
    w: &mut String,
    source_tree: &Path,
    overrides: &Overrides,
    has_pyproject: bool,
) -> (Option<Config>, Result<ToolConfig, ConfigError>) {
    let mut config: Option<Config> = None;
    let tool = if has_pyproject {
        match Config::load(source_tree, overrides) {
            Ok(c) => {
                let _ = writeln!(
                    w,
                    "Project: {} {} ({})",
                    c.project.name,
                    c.project.version,
                    c.root.join("pyproject.toml").display()
                );
                let t = c.tool.clone();
                config = Some(c);
                Ok(t)
            }
            Err(e) => {
                let _ = writeln!(
                    w,
                    "Project: {} cannot be read:",
                    source_tree.join("pyproject.toml").display()
                );
                let _ = writeln!(w, "{}", indent(&crate::render(&e.into())));
                default_tool(overrides)
            }
        }
    } else {
        let _ = writeln!(
            w,
            "Project: none ({} has no pyproject.toml); showing discovery with default settings",
            source_tree.display()
        );
        default_tool(overrides)
    };
    (config, tool)
}

/// nvcc candidates in discovery order, then the choice.
fn nvcc_section(
    w: &mut String,
    tool: &ToolConfig,
    env: &std::collections::BTreeMap<String, String>,
    python: &PythonInfo,
) -> Option<Nvcc> {
    let _ = writeln!(w, "\nnvcc candidates (in the order discovery tries them):");
    for c in toolchain::nvcc_candidates(env, python) {
        let status = match &c.probe {
            None => "not found".to_string(),
            Some(Ok(n)) => format!("CUDA {}", n.full_version),
            Some(Err(e)) => format!("broken: {e}"),
        };
        let _ = writeln!(w, "  {:<22} {} : {status}", c.label, c.path.display());
    }
    match toolchain::choose_nvcc(tool, env, python) {
        Ok(Some(n)) => {
            let _ = writeln!(
                w,
                "A build would use: CUDA {} — nvcc {} ({}: {})",
                n.major,
                n.full_version,
                origin_text(&n),
                n.path.display()
            );
            Some(n)
        }
        Ok(None) => {
            let _ = writeln!(
                w,
                "A build would use: CUDA {PIP_MAJOR} from PyPI — not installed here; with build \
                 isolation the frontend installs what `requires` lists below"
            );
            None
        }
        Err(e) => {
            let _ = writeln!(w, "A build would use: nothing that fits:");
            let _ = writeln!(w, "{}", indent(&crate::render(&crate::Error::Toolchain(e))));
            None
        }
    }
}

/// Binding libraries the project asks for.
fn bindings_section(w: &mut String, c: &Config, python: &PythonInfo) {
    // A JAX extension is a nanobind module: nanobind is reported, and jax below.
    let mut kinds: Vec<Bindings> = bindings::used(&c.tool)
        .into_iter()
        .map(|k| {
            if k == Bindings::Jax {
                Bindings::Nanobind
            } else {
                k
            }
        })
        .collect();
    kinds.dedup();
    for kind in kinds {
        match bindings::locate(kind, &python.sys_path) {
            Ok(found) => {
                let _ = writeln!(
                    w,
                    "Bindings {}: {} {} in {}",
                    kind.name(),
                    kind.name(),
                    found.version.as_deref().unwrap_or("(version unknown)"),
                    found.root.display()
                );
            }
            Err(e) => {
                let _ = writeln!(w, "Bindings {}: not found ({e})", kind.name());
            }
        }
    }
    if bindings::jax::wanted(&c.tool) {
        jax_report(w, python);
    }
}

/// `bindings = "jax"`: the jax found, its XLA FFI headers and the requirement a wheel gets.
fn jax_report(w: &mut String, python: &PythonInfo) {
    let _ = match bindings::jax::probe(python) {
        Ok(info) => writeln!(
            w,
            "Bindings jax: jax {} (jaxlib {}), XLA FFI headers in {}{}; a wheel requires {}",
            info.version,
            info.jaxlib,
            info.include_dir.display(),
            info.ffi_api
                .map(|(a, b)| format!(" (XLA FFI API {a}.{b})"))
                .unwrap_or_default(),
            info.requirement()
        ),
        Err(e) => writeln!(w, "Bindings jax: not usable ({e})"),
    };
}

/// Catalogue libraries, for the major a build would use.
fn libraries_section(
    w: &mut String,
    tool: &ToolConfig,
    nvcc: Option<&Nvcc>,
    env: &std::collections::BTreeMap<String, String>,
    python: &PythonInfo,
) {
    let major = nvcc.map_or(PIP_MAJOR, |n| n.major);
    let probe_nvcc = nvcc.cloned().unwrap_or_else(|| placeholder_nvcc(major));
    let _ = writeln!(w, "\nCUDA {major} libraries (catalogue):");
    let sys_path = &python.sys_path;
    for entry in CATALOG {
        let Ok(spec) = libraries::spec_for(entry.name, major, tool, "doctor") else {
            continue;
        };
        match libraries::find(&spec, major, &probe_nvcc, env, sys_path, false) {
            Ok(found) => {
                let folder = found
                    .shared
                    .first()
                    .and_then(|s| s.path.parent().map(Path::to_path_buf))
                    .or_else(|| found.include_dirs.first().cloned())
                    .unwrap_or_default();
                let sonames: Vec<&str> = found.shared.iter().map(|s| s.soname.as_str()).collect();
                let provider = match &found.provider {
                    Some(p) => format!("provided by {} {}.{}", p.dist, p.floor.0, p.floor.1),
                    None if sonames.is_empty() => "headers only".to_string(),
                    None => "no providing wheel known".to_string(),
                };
                let _ = writeln!(
                    w,
                    "  {:<10} {} [{}] {provider} (found in {})",
                    entry.name,
                    folder.display(),
                    if sonames.is_empty() {
                        "-".to_string()
                    } else {
                        sonames.join(", ")
                    },
                    found.found_in
                );
            }
            Err(_) => {
                let _ = writeln!(
                    w,
                    "  {:<10} not found (set {p}_DIR, or {p}_INCLUDE_PATH and {p}_LIBRARY_PATH; \
                     with build isolation its wheel {} is installed when a target uses it)",
                    entry.name,
                    spec.pip_package.as_deref().unwrap_or("(none)"),
                    p = spec.env_prefix
                );
            }
        }
    }
}

/// The wheel a build would make now.
fn wheel_section(w: &mut String, req: &Request<'_>, config_ok: bool, has_pyproject: bool) {
    let _ = writeln!(w);
    match (config_ok, has_pyproject) {
        (_, false) => {
            let _ = writeln!(w, "Wheel: no project here; run `python -m cudawheel doctor PROJECT` in or on a folder with pyproject.toml");
        }
        (false, true) => {
            let _ = writeln!(
                w,
                "Wheel: cannot tell until pyproject.toml is fixed (above)"
            );
        }
        (true, true) => match pep517::preview_wheel(req) {
            Ok(p) => {
                let _ = writeln!(
                    w,
                    "Wheel: {}-<platform>.whl (the platform tag comes from the linked ELF files)",
                    p.file_prefix
                );
                if p.requires.is_empty() {
                    let _ = writeln!(w, "  Requires-Dist: none");
                }
                for r in p.requires {
                    let _ = writeln!(w, "  Requires-Dist: {r}");
                }
                for f in &p.floors {
                    let (a, b) = f.cuda;
                    let _ = writeln!(w, "  needs a driver for CUDA {a}.{b}+: {}", f.reason);
                }
                let _ = if p.checked_at_import.is_empty() {
                    writeln!(w, "  GPU check at import: none (check-gpu = false, or no extension in a package)")
                } else {
                    writeln!(w, "  GPU check at import: {} (CUDAWHEEL_SKIP_GPU_CHECK=1 skips it at run time)", p.checked_at_import.join(", "))
                };
            }
            Err(e) => {
                let _ = writeln!(w, "Wheel: a build now would fail:");
                let _ = writeln!(w, "{}", indent(&crate::render(&e)));
            }
        },
    }
}

/// Which headers a build compiles against and which libcudart it links, and why.
fn header_report(
    w: &mut String,
    tool: &ToolConfig,
    n: &Nvcc,
    env: &std::collections::BTreeMap<String, String>,
    python: &PythonInfo,
) {
    match headers::probe(n) {
        Ok(set) => {
            let spec = match tool.cudart {
                Cudart::Shared => libraries::spec_for("cudart", n.major, tool, "doctor").ok(),
                Cudart::Static => Some(libraries::static_cudart_spec()),
            };
            let cudart = spec
                .and_then(|s| libraries::find(&s, n.major, n, env, &python.sys_path, false).ok())
                .map(|mut f| {
                    if let Some(p) = f.provider.as_mut() {
                        p.floor = crate::libraries::cudart::runtime_floor(&set, p.floor);
                    }
                    f
                });
            let _ = writeln!(w, "Header set and runtime a build would use:");
            for line in crate::libraries::cudart::explain(&set, cudart.as_ref()) {
                let _ = writeln!(w, "  {line}");
            }
            if cudart.is_none() {
                let _ = writeln!(w, "  libcudart: not found (see the libraries below)");
            }
        }
        Err(e) => {
            let _ = writeln!(w, "Header set: unusable:");
            let e = crate::Error::Toolchain(e);
            let _ = writeln!(w, "{}", indent(&crate::render(&e)));
        }
    }
}

/// The archs a build would use, where each list came from, and the `-gencode` flags they
/// expand to with this nvcc.
fn gpu_archs(w: &mut String, tool: &ToolConfig, nvcc: Option<&Nvcc>, sbsa: bool) {
    let major = nvcc.map_or(PIP_MAJOR, |n| n.major);
    let mut lists: Vec<(String, Option<arch::ArchList>)> = Vec::new();
    let top = match &tool.archs {
        None => Ok(None),
        Some(s) => arch::parse_items(&s.value, "tool.cudawheel.archs", &s.origin).map(Some),
    };
    let raw_top = tool.archs.as_ref().map(|s| s.value.join(" "));
    match top {
        Ok(l) => lists.push((
            format!(
                "GPU architectures: {}{}",
                raw_top.map_or(String::new(), |r| format!("{r:?} ")),
                match (&l, sbsa) {
                    (None, true) => "from the default for aarch64 (SBSA) systems".to_string(),
                    _ => format!("from {}", arch::describe_origin(l.as_ref(), major)),
                }
            ),
            l,
        )),
        Err(e) => {
            let _ = writeln!(w, "GPU architectures: cannot be read:");
            let _ = writeln!(
                w,
                "{}",
                indent(&crate::render(&crate::Error::from(
                    crate::plan::PlanError::from(e)
                )))
            );
            return;
        }
    }
    for t in tool.shared_libraries.iter().chain(&tool.extensions) {
        let Some(raw) = &t.archs else { continue };
        let key = format!("{}.archs", t.key);
        match arch::parse_items(raw, &key, &crate::config::Origin::Pyproject) {
            Ok(l) => lists.push((
                format!("  {} ({}) overrides them: {:?}", t.name, key, raw.join(" ")),
                Some(l),
            )),
            Err(e) => {
                let _ = writeln!(w, "  {}: {e}", t.name);
            }
        }
    }
    if let Some(torch) = &tool.torch_archs {
        torch_arch_list(w, &mut lists, tool, torch);
    }
    let mut probed = nvcc.cloned();
    let supported = probed
        .as_mut()
        .and_then(|n| toolchain::probe_archs(n).ok().map(|()| n.clone()));
    for (title, list) in lists {
        let _ = writeln!(w, "{title}");
        match &supported {
            Some(n) => match arch::gencodes(
                list.as_ref(),
                tool.ptx,
                &arch::NvccArchs {
                    sbsa,
                    ..n.arch_info()
                },
            ) {
                Ok(g) => {
                    let flags: Vec<String> = g.iter().map(|g| format!("-gencode {g}")).collect();
                    let _ = writeln!(w, "    {}", flags.join(" "));
                }
                Err(e) => {
                    let _ = writeln!(w, "    a build would fail: {e}");
                }
            },
            None => {
                let _ = writeln!(
                    w,
                    "    (the -gencode flags depend on the nvcc a build finds)"
                );
            }
        }
    }
    if let Some(n) = &supported {
        let _ = writeln!(
            w,
            "  nvcc {} can build: {}",
            n.full_version,
            n.archs.join(" ")
        );
        let (mode, promised) = toolchain::compress_choice(tool, (n.major, n.minor));
        let floor = mode.driver_floor(n.major);
        let how = match mode.flags((n.major, n.minor)) {
            Ok(flags) if flags.is_empty() => "no flag".to_string(),
            Ok(flags) => flags.join(" "),
            Err(why) => format!("a build would fail: {why}"),
        };
        let _ = writeln!(
            w,
            "  fatbin compression: compress = \"{}\" ({how}); its GPU code loads on a driver for CUDA {}.{}+ (the wheel promises {}.{})",
            mode.name(),
            floor.0,
            floor.1,
            promised.0,
            promised.1
        );
    }
}

/// `TORCH_CUDA_ARCH_LIST`: the torch extensions without archs of their own take it (a list
/// each); the other targets ignore it, which is said.
fn torch_arch_list(
    w: &mut String,
    lists: &mut Vec<(String, Option<arch::ArchList>)>,
    tool: &ToolConfig,
    torch: &crate::config::Sourced<Vec<String>>,
) {
    let raw = torch.value.join(" ");
    let mut ignored = Vec::new();
    for t in tool.shared_libraries.iter().chain(&tool.extensions) {
        let is_torch = !tool.shared_libraries.contains(t)
            && t.bindings.unwrap_or(tool.bindings.value) == crate::config::Bindings::Torch;
        if !is_torch {
            ignored.push(t.name.as_str());
            continue;
        }
        if t.archs.is_some() {
            continue;
        }
        if let Ok(l) = arch::parse_items(&torch.value, "tool.cudawheel.archs", &torch.origin) {
            lists.push((
                format!(
                    "  {} (bindings = \"torch\") takes them from {}: {raw:?}",
                    t.name, torch.origin
                ),
                Some(l),
            ));
        }
    }
    if !ignored.is_empty() {
        let _ = writeln!(
            w,
            "TORCH_CUDA_ARCH_LIST={raw:?} is ignored for {}: PyTorch's variable applies to `bindings = \"torch\"` extensions only (set CUDAARCHS or `archs` for the others)",
            ignored.join(", ")
        );
    }
}

fn default_tool(overrides: &Overrides) -> Result<ToolConfig, ConfigError> {
    ToolConfig::parse(&toml::Table::new(), overrides)
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|l| {
            if l.is_empty() {
                String::new()
            } else {
                format!("    {l}")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Library discovery wants a toolkit; without one, a root that holds nothing.
fn placeholder_nvcc(major: u32) -> Nvcc {
    Nvcc {
        path: PathBuf::from("/nonexistent/nvcc"),
        root: PathBuf::from("/nonexistent"),
        major,
        minor: 0,
        full_version: format!("{major}.0"),
        origin: NvccOrigin::System("none".into()),
        archs: Vec::new(),
    }
}

/// The configured host compiler (the mode without `manylinux`).
fn host_report(
    w: &mut String,
    tool: &ToolConfig,
    env: &std::collections::BTreeMap<String, String>,
) {
    match toolchain::host_compiler(tool, env) {
        Ok(h) => {
            let from = tool
                .host_compiler
                .as_ref()
                .map_or("the default `c++`".to_string(), |s| s.origin.to_string());
            let version = toolchain::compiler_version(&h.path)
                .unwrap_or_else(|| "version unknown".to_string());
            let _ = writeln!(
                w,
                "Host compiler: {} ({version}; from {from})",
                h.path.display()
            );
        }
        Err(e) => {
            let _ = writeln!(w, "Host compiler: not found");
            let _ = writeln!(w, "{}", indent(&crate::render(&crate::Error::Toolchain(e))));
        }
    }
}

/// `compiler-launcher`: which one, its version, and for sccache whether a build cluster
/// (sccache-dist scheduler) is configured and answers.
fn launcher_report(
    w: &mut String,
    tool: &ToolConfig,
    env: &std::collections::BTreeMap<String, String>,
    python: &PythonInfo,
) {
    let Some(name) = tool.compiler_launcher.as_deref() else {
        return;
    };
    match toolchain::launcher::find(name, env, python) {
        Ok(l) => {
            let version = l
                .version
                .map_or("version unknown".into(), |(a, b, c)| format!("{a}.{b}.{c}"));
            let _ = writeln!(w, "Compiler launcher: {} ({version})", l.path.display());
            if l.kind == toolchain::launcher::Kind::Sccache {
                let _ = writeln!(w, "  build cluster: {}", l.dist.describe());
            }
        }
        Err(e) => {
            let _ = writeln!(w, "Compiler launcher: {name}");
            let _ = writeln!(w, "{}", indent(&crate::render(&crate::Error::Toolchain(e))));
        }
    }
}

/// `target`: the CPU the wheel is for, and for a cross-build the target's NVIDIA wheels
/// already fetched; returns the interpreter as the target sees it.
fn target_section(
    w: &mut String,
    tool: &ToolConfig,
    source_tree: &Path,
    python: &PythonInfo,
) -> Option<PythonInfo> {
    use toolchain::cross;
    match cross::cross(tool, python) {
        Ok(None) => {
            let _ = writeln!(w, "Target: {} (this machine)", python.machine);
            None
        }
        Ok(Some(c)) => {
            let origin = tool.target.as_ref().map(|t| t.origin.to_string());
            let dir = cross::build_dir(&source_tree.join(&tool.build_dir), c.machine);
            let site = cross::site(&dir);
            let _ = writeln!(
                w,
                "Target: {} (cross-build from {}, from {}), glibc {}, EXT_SUFFIX {}",
                c.machine,
                python.machine,
                origin.unwrap_or_default(),
                c.glibc,
                cross::target_python(python, &c).ext_suffix
            );
            let found = cross::unpacked(&site);
            if found.is_empty() {
                let _ = writeln!(
                    w,
                    "  {} wheels: none yet in {} (fetched by pip, for manylinux_2_{}_{} and older, when a build or the wheel preview below needs them)",
                    c.machine,
                    site.display(),
                    c.glibc.minor,
                    c.machine
                );
            } else {
                let _ = writeln!(w, "  {} wheels in {}:", c.machine, site.display());
                for f in found {
                    let _ = writeln!(w, "    {f}");
                }
            }
            Some(cross::target_python(python, &c))
        }
        Err(e) => {
            let _ = writeln!(w, "Target: cannot build");
            let _ = writeln!(
                w,
                "{}",
                indent(&crate::render(&crate::Error::Toolchain(e.into())))
            );
            None
        }
    }
}

/// `manylinux = "2_N"`: the mode, zig's version and the target, or why zig is missing.
fn zig_report(
    tool: &ToolConfig,
    env: &std::collections::BTreeMap<String, String>,
    python: &PythonInfo,
) -> Option<String> {
    let wanted = tool.manylinux.as_ref()?;
    let mode = format!(
        "Mode: portable, manylinux_2_{} (from {})",
        wanted.value.minor, wanted.origin
    );
    Some(match toolchain::zig::find(tool, env, python) {
        Ok(Some(z)) => format!(
            "{mode}\nHost compiler: zig {} ({}), target {}, libc++ linked statically",
            z.version,
            z.binary.display(),
            z.target
        ),
        Ok(None) => mode,
        Err(e) => format!(
            "{mode}\nHost compiler: zig not found\n{}",
            indent(&crate::render(&crate::Error::Toolchain(e.into())))
        ),
    })
}
