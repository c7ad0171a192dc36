//! `python -m cudawheel doctor [PROJECT]`: a resolution (`resolve::Resolution::describe`)
//! rendered as a report a user can read.
//!
//! Everything shown comes from that one value: every nvcc candidate with where it comes from
//! and its version, the CUDA major a build would use, the header set and libcudart, the archs
//! and their `-gencode` flags, what an isolated build installs, the target CPU, the host
//! compiler or zig, the launcher, the memory for parallel steps, the binding libraries, each
//! catalogue library (folder, SONAME, providing wheel and version, or why it was not found),
//! and the wheel a build would make now (file name without the platform tag,
//! `Requires-Dist`) or why a build here would fail and whether an isolated build would not.
//! Never fails: whatever cannot be found or parsed becomes a line of the report.

use std::fmt::Write as _;
use std::path::Path;

use crate::config::{Overrides, PythonInfo, ToolConfig};
use crate::libraries::FoundLibrary;
use crate::plan::arch::{self, Gencode};
use crate::resolve::{
    ArchReport, Catalogue, Environment, Outcome, Project, Request, Resolution, Target, Whose,
    WrapView,
};
use crate::toolchain::survey::Survey;
use crate::toolchain::PIP_MAJOR;

/// The report. `source_tree` need not hold a pyproject.toml.
pub(crate) fn report(source_tree: &Path, overrides: &Overrides, python: &PythonInfo) -> String {
    let req = Request {
        source_tree,
        overrides,
        python,
    };
    render(&Resolution::describe(&req))
}

/// The whole resolution as text.
fn render(res: &Resolution) -> String {
    let mut out = String::new();
    let w = &mut out;
    let _ = writeln!(w, "cudawheel {} doctor", env!("CARGO_PKG_VERSION"));
    let py = &res.python;
    let _ = writeln!(
        w,
        "Python: {}.{} ({}, {}-{}), headers in {}",
        py.version.0,
        py.version.1,
        py.implementation,
        py.python_tag,
        py.abi_tag,
        py.include_dir.display()
    );
    project_section(w, res);
    let tool = match &res.tool {
        Some(Ok(t)) => t,
        Some(Err(e)) => {
            let _ = writeln!(w, "{}", indent(&crate::render(e)));
            return out;
        }
        None => return out,
    };
    let Some(env) = &res.environment else {
        return out;
    };
    environment_section(w, tool, env, res);
    match &res.wrapped {
        Some(view) => wrap_section(w, view),
        None => wheel_section(w, res),
    }
    out
}

/// Wrap mode: the wrapped backend, the environment it gets, what happens to its wheel.
fn wrap_section(w: &mut String, view: &WrapView) {
    let s = &view.settings;
    let _ = writeln!(w);
    let _ = writeln!(
        w,
        "Wheel: wrap mode: {} builds the project from its own build files, with this environment:",
        s.backend
    );
    match &view.env {
        Ok(p) => {
            for (k, v) in &p.env.vars {
                let _ = writeln!(w, "  {k}={v}");
            }
            let _ = writeln!(
                w,
                "  (the toolkit folder {} is made at build time from: {})",
                p.toolkit.root.display(),
                p.toolkit
                    .sources
                    .iter()
                    .map(|s| s.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        Err(why) => {
            let _ = writeln!(
                w,
                "  CUDACXX, CUDA_HOME, CUDA_PATH, CUDAToolkit_ROOT: the toolkit folder {}/toolkit, made when nvcc is installed (an isolated build installs the requirements above); archs and parallelism then",
                s.tool.build_dir
            );
            let _ = writeln!(w, "  here now: {}", why.lines().next().unwrap_or_default());
        }
    }
    let suffix = if s.tool.name_suffix.is_empty() {
        "keeps the project's name".to_string()
    } else {
        format!(
            "gets the name suffix {:?} when it links CUDA",
            s.tool.name_suffix
        )
    };
    let _ = writeln!(
        w,
        "  then its wheel is repaired: {suffix}; NVIDIA's libraries by SONAME through $ORIGIN RPATHs, Requires-Dist for exactly those (cuda-deps = {:?}); the GPU check in front of each module that links CUDA{}",
        s.tool.cuda_deps.name(),
        if s.tool.check_gpu { "" } else { " (off: `check-gpu = false`)" }
    );
    if !s.passed.is_empty() {
        let passed: Vec<String> = s.passed.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let _ = writeln!(
            w,
            "  settings passed on to {}: {}",
            s.backend,
            passed.join(", ")
        );
    }
}

fn project_section(w: &mut String, res: &Resolution) {
    let file = res.source_tree.join("pyproject.toml");
    match &res.project {
        Project::Loaded(c) => {
            let _ = writeln!(
                w,
                "Project: {} {} ({})",
                c.project.name,
                c.project.version,
                c.root.join("pyproject.toml").display()
            );
        }
        Project::Unreadable if res.wrapped.is_some() => {
            let _ = writeln!(
                w,
                "Project: {} (wrap mode: its metadata is the wrapped backend's)",
                file.display()
            );
        }
        Project::Unreadable => {
            let _ = writeln!(w, "Project: {} cannot be read:", file.display());
            if let Some(f) = res.failure() {
                let _ = writeln!(w, "{}", indent(&f.render()));
            }
        }
        Project::Missing => {
            let _ = writeln!(
                w,
                "Project: none ({} has no pyproject.toml); showing discovery with default settings",
                res.source_tree.display()
            );
        }
    }
}

/// What this environment has, in the order a reader follows a build.
fn environment_section(w: &mut String, tool: &ToolConfig, env: &Environment, res: &Resolution) {
    nvcc_section(w, &env.toolchain);
    header_section(w, env);
    arch_section(w, &env.archs, &env.toolchain);
    match env.requirements.as_deref() {
        Some([]) => {
            let _ = writeln!(w, "Build requirements (isolated builds): none");
        }
        Some(reqs) => {
            let _ = writeln!(w, "Build requirements (isolated builds):");
            for r in reqs {
                let _ = writeln!(w, "  {r}");
            }
        }
        None => {}
    }
    target_section(w, &env.target, tool, &res.python);
    host_section(w, &env.toolchain, tool);
    launcher_section(w, &env.toolchain, tool);
    // What memory admission will allow (a container's cgroup limit shows here).
    let _ = match &env.memory {
        Some(m) => writeln!(
            w,
            "Memory for parallel steps: {} (from {})",
            crate::compile::memory::human(m.bytes),
            m.source
        ),
        None => writeln!(w, "Memory for parallel steps: no limit (nothing readable)"),
    };
    bindings_section(w, env);
    catalogue_section(w, &env.catalogue);
}

/// nvcc candidates in discovery order, then the choice.
fn nvcc_section(w: &mut String, tc: &Survey) {
    let _ = writeln!(w, "\nnvcc candidates (in the order discovery tries them):");
    for c in &tc.candidates {
        let status = match &c.probe {
            None => "not found".to_string(),
            Some(Ok(n)) => format!("CUDA {}", n.full_version),
            Some(Err(e)) => format!("broken: {e}"),
        };
        let _ = writeln!(w, "  {:<22} {} : {status}", c.label, c.path.display());
    }
    match &tc.nvcc {
        Ok(c) => {
            let n = &c.nvcc;
            let _ = writeln!(
                w,
                "A build would use: CUDA {} — nvcc {} ({}: {})",
                n.major,
                n.full_version,
                n.origin.describe(),
                n.path.display()
            );
        }
        Err(_) if tc.pip_pending => {
            let _ = writeln!(
                w,
                "A build would use: CUDA {PIP_MAJOR} from PyPI — not installed here; with build \
                 isolation the frontend installs what `requires` lists below"
            );
        }
        Err(e) => {
            let _ = writeln!(w, "A build would use: nothing that fits:");
            let _ = writeln!(w, "{}", indent(&crate::render(e)));
        }
    }
}

/// Which headers a build compiles against and which libcudart it links, and why.
fn header_section(w: &mut String, env: &Environment) {
    let Ok(chosen) = &env.toolchain.nvcc else {
        return;
    };
    match &chosen.headers {
        Ok(set) => {
            let cudart = env.cudart.as_ref().and_then(|c| c.as_ref().ok());
            let _ = writeln!(w, "Header set and runtime a build would use:");
            for line in crate::libraries::cudart::explain(set, cudart) {
                let _ = writeln!(w, "  {line}");
            }
            if cudart.is_none() {
                let _ = writeln!(w, "  libcudart: not found (see the libraries below)");
            }
        }
        Err(e) => {
            let _ = writeln!(w, "Header set: unusable:");
            let _ = writeln!(w, "{}", indent(&crate::render(e)));
        }
    }
}

/// The archs a build would use, where each list came from, and the `-gencode` flags they
/// expand to with this nvcc.
fn arch_section(w: &mut String, archs: &ArchReport, tc: &Survey) {
    let src = &archs.sources;
    let top = match &src.top {
        Ok(top) => top,
        Err(e) => {
            let _ = writeln!(w, "GPU architectures: cannot be read:");
            let _ = writeln!(w, "{}", indent(&crate::render(e)));
            return;
        }
    };
    for o in &src.overrides {
        if let Err(e) = &o.list {
            let _ = writeln!(w, "  {}: {e}", o.name);
        }
    }
    if let Some(t) = src.torch.as_ref().filter(|t| !t.ignored.is_empty()) {
        let _ = writeln!(
            w,
            "TORCH_CUDA_ARCH_LIST={:?} is ignored for {}: PyTorch's variable applies to `bindings = \"torch\"` extensions only (set CUDAARCHS or `archs` for the others)",
            t.raw,
            t.ignored.join(", ")
        );
    }
    for u in &archs.uses {
        let title = match u.whose {
            Whose::Top => format!(
                "GPU architectures: {}{}",
                src.top_raw
                    .as_ref()
                    .map_or(String::new(), |r| format!("{r:?} ")),
                match (top, archs.sbsa) {
                    (None, true) => "from the default for aarch64 (SBSA) systems".to_string(),
                    _ => format!("from {}", arch::describe_origin(top.as_ref(), archs.major)),
                }
            ),
            Whose::Target(i) => {
                let o = &src.overrides[i];
                format!("  {} ({}) overrides them: {:?}", o.name, o.key, o.raw)
            }
            Whose::Torch(i) => match &src.torch {
                Some(t) => format!(
                    "  {} (bindings = \"torch\") takes them from {}: {:?}",
                    t.takers[i].0, t.origin, t.raw
                ),
                None => continue,
            },
        };
        let _ = writeln!(w, "{title}");
        let _ = match &u.gencodes {
            Some(Ok(g)) => writeln!(w, "    {}", gencode_flags(g)),
            Some(Err(e)) => writeln!(w, "    a build would fail: {e}"),
            None => writeln!(
                w,
                "    (the -gencode flags depend on the nvcc a build finds)"
            ),
        };
    }
    compress_lines(w, tc);
}

fn gencode_flags(g: &[Gencode]) -> String {
    let flags: Vec<String> = g.iter().map(|g| format!("-gencode {g}")).collect();
    flags.join(" ")
}

/// What the nvcc found can build, and the fatbin compression it would use.
fn compress_lines(w: &mut String, tc: &Survey) {
    let Some(n) = tc.with_archs() else { return };
    let Ok(chosen) = &tc.nvcc else { return };
    let _ = writeln!(
        w,
        "  nvcc {} can build: {}",
        n.full_version,
        n.archs.join(" ")
    );
    let c = &chosen.compress;
    let how = match &c.flags {
        Ok(flags) if flags.is_empty() => "no flag".to_string(),
        Ok(flags) => flags.join(" "),
        Err(why) => format!("a build would fail: {why}"),
    };
    let _ = writeln!(
        w,
        "  fatbin compression: compress = \"{}\" ({how}); its GPU code loads on a driver for CUDA {}.{}+ (the wheel promises {}.{})",
        c.mode.name(),
        c.floor.0,
        c.floor.1,
        c.promised.0,
        c.promised.1
    );
}

/// `target`: the CPU the wheel is for, and for a cross-build the target's NVIDIA wheels
/// already fetched.
fn target_section(w: &mut String, target: &Target, tool: &ToolConfig, python: &PythonInfo) {
    match &target.cross {
        Ok(None) => {
            let _ = writeln!(w, "Target: {} (this machine)", python.machine);
        }
        Ok(Some(c)) => {
            let origin = tool.target.as_ref().map(|t| t.origin.to_string());
            let _ = writeln!(
                w,
                "Target: {} (cross-build from {}, from {}), glibc {}, EXT_SUFFIX {}",
                c.machine,
                python.machine,
                origin.unwrap_or_default(),
                c.glibc,
                target.python.ext_suffix
            );
            let Some((site, found)) = &target.site else {
                return;
            };
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
        }
        Err(e) => {
            let _ = writeln!(w, "Target: cannot build");
            let _ = writeln!(w, "{}", indent(&crate::render(e)));
        }
    }
}

/// Host compiler: zig for `manylinux` (with the mode), else the configured one.
fn host_section(w: &mut String, tc: &Survey, tool: &ToolConfig) {
    if let Some(wanted) = &tool.manylinux {
        let _ = writeln!(
            w,
            "Mode: portable, manylinux_2_{} (from {})",
            wanted.value.minor, wanted.origin
        );
        let _ = match &tc.zig {
            Ok(Some(z)) => writeln!(
                w,
                "Host compiler: zig {} ({}), target {}, libc++ linked statically",
                z.version,
                z.binary.display(),
                z.target
            ),
            Ok(None) => Ok(()),
            Err(e) => writeln!(
                w,
                "Host compiler: zig not found\n{}",
                indent(&crate::render(e))
            ),
        };
        return;
    }
    match &tc.host {
        Ok(h) => {
            let from = tool
                .host_compiler
                .as_ref()
                .map_or("the default `c++`".to_string(), |s| s.origin.to_string());
            let version = tc.host_version.as_deref().unwrap_or("version unknown");
            let _ = writeln!(
                w,
                "Host compiler: {} ({version}; from {from})",
                h.path.display()
            );
        }
        Err(e) => {
            let _ = writeln!(w, "Host compiler: not found");
            let _ = writeln!(w, "{}", indent(&crate::render(e)));
        }
    }
}

/// `compiler-launcher`: which one, its version, and for sccache whether a build cluster
/// (sccache-dist scheduler) is configured and answers.
fn launcher_section(w: &mut String, tc: &Survey, tool: &ToolConfig) {
    let (Some(name), Some(found)) = (tool.compiler_launcher.as_deref(), &tc.launcher) else {
        return;
    };
    match found {
        Ok(l) => {
            let version = l
                .version
                .map_or("version unknown".into(), |(a, b, c)| format!("{a}.{b}.{c}"));
            let _ = writeln!(w, "Compiler launcher: {} ({version})", l.path.display());
            if l.kind == crate::toolchain::launcher::Kind::Sccache {
                let _ = writeln!(w, "  build cluster: {}", l.dist.describe());
            }
        }
        Err(e) => {
            let _ = writeln!(w, "Compiler launcher: {name}");
            let _ = writeln!(w, "{}", indent(&crate::render(e)));
        }
    }
}

/// Binding libraries the project asks for (a JAX extension is a nanobind module: nanobind is
/// reported, and jax after it).
fn bindings_section(w: &mut String, env: &Environment) {
    for (kind, found) in &env.bindings {
        let _ = match found {
            Ok(found) => writeln!(
                w,
                "Bindings {}: {} {} in {}",
                kind.name(),
                kind.name(),
                found.version.as_deref().unwrap_or("(version unknown)"),
                found.root.display()
            ),
            Err(e) => writeln!(w, "Bindings {}: not found ({e})", kind.name()),
        };
    }
    let _ = match &env.jax {
        None => Ok(()),
        Some(Ok(info)) => writeln!(
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
        Some(Err(e)) => writeln!(w, "Bindings jax: not usable ({e})"),
    };
}

/// Catalogue libraries, for the major a build would use.
fn catalogue_section(w: &mut String, cat: &Catalogue) {
    let _ = writeln!(w, "\nCUDA {} libraries (catalogue):", cat.major);
    if !cat.toolkit_searched {
        let _ = writeln!(
            w,
            "  (no CUDA toolkit in this environment: searched the variables, NVIDIA's wheels on sys.path and the system folders; an isolated build installs the libraries its targets use)"
        );
    }
    for (spec, found) in &cat.entries {
        match found {
            Ok(found) => library_line(w, &spec.name, found),
            Err(_) => {
                let _ = writeln!(
                    w,
                    "  {:<10} not found (set {p}_DIR, or {p}_INCLUDE_PATH and {p}_LIBRARY_PATH; \
                     with build isolation its wheel {} is installed when a target uses it)",
                    spec.name,
                    spec.pip_package.as_deref().unwrap_or("(none)"),
                    p = spec.env_prefix
                );
            }
        }
    }
}

fn library_line(w: &mut String, name: &str, found: &FoundLibrary) {
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
        name,
        folder.display(),
        if sonames.is_empty() {
            "-".to_string()
        } else {
            sonames.join(", ")
        },
        found.found_in
    );
}

/// The wheel a build would make now, or why a build here would fail and whether an isolated
/// build gets past it.
fn wheel_section(w: &mut String, res: &Resolution) {
    let _ = writeln!(w);
    match (&res.project, &res.wheel) {
        (Project::Missing, _) => {
            let _ = writeln!(w, "Wheel: no project here; run `python -m cudawheel doctor PROJECT` in or on a folder with pyproject.toml");
        }
        (Project::Unreadable, _) => {
            let _ = writeln!(
                w,
                "Wheel: cannot tell until pyproject.toml is fixed (above)"
            );
        }
        (Project::Loaded(_), Outcome::Done(r)) => {
            let p = r.preview();
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
                writeln!(
                    w,
                    "  GPU check at import: none (check-gpu = false, or no extension in a package)"
                )
            } else {
                writeln!(
                    w,
                    "  GPU check at import: {} (CUDAWHEEL_SKIP_GPU_CHECK=1 skips it at run time)",
                    p.checked_at_import.join(", ")
                )
            };
            if res.isolation().is_some_and(|i| !i.requirements.is_empty()) {
                let _ = writeln!(w, "  (what a build in this environment makes; an isolated build (`pip wheel .`, `pip install .`) discovers again among the build requirements above, whose versions may differ)");
            }
        }
        (Project::Loaded(_), _) => failure_lines(w, res),
    }
}

/// Why the wheel's stages stopped here, and what an isolated build installs instead.
fn failure_lines(w: &mut String, res: &Resolution) {
    let Some(failure) = res.failure() else {
        return;
    };
    let isolation = res.isolation().filter(|i| i.supplies_missing);
    let Some(iso) = isolation else {
        let _ = writeln!(w, "Wheel: a build now would fail:");
        let _ = writeln!(w, "{}", indent(&failure.render()));
        return;
    };
    let _ = writeln!(
        w,
        "Wheel: an isolated build (`pip wheel .`, `pip install .`) installs its build requirements first ({}), which this environment lacks; the wheel's name and Requires-Dist are known once they are there",
        iso.requirements.join(", ")
    );
    let _ = writeln!(
        w,
        "  A `--no-build-isolation` build in this environment would fail:"
    );
    let _ = writeln!(w, "{}", indent(&failure.render()));
    let quoted: Vec<String> = iso.requirements.iter().map(|r| format!("{r:?}")).collect();
    let _ = writeln!(
        w,
        "  To build here without isolation, first: pip install {}",
        quoted.join(" ")
    );
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
