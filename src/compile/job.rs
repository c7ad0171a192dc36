//! Compile: lower the plan into compiler commands (pure data, `Display` = the exact
//! shell-quoted command) and run them in a pool of `jobs` workers.
//!
//! Commands never go through a shell: every flag is one argument.

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};

use crate::config::PythonInfo;
use crate::hint::Hint;
use crate::plan::arch::Gencode;
use crate::plan::{BuildPlan, Lang, TargetPlan};
use crate::toolchain::Toolchain;

#[derive(Debug, thiserror::Error)]
pub(crate) enum CompileError {
    #[error("{what} failed ({status}):\n  $ {command}\n{}", indent(output))]
    Failed {
        what: String,
        command: String,
        status: String,
        output: String,
    },
    #[error("Cannot start {program}")]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
    },
    /// nvcc runs its internal steps through `/bin/sh`, wrapping each argument in double quotes:
    /// `$`, backquotes and backslashes in an argument would be expanded (or run) by that shell.
    #[error("{what}: the argument {} holds {ch:?}, which nvcc would hand to /bin/sh unescaped (nvcc runs its internal steps through a shell)", quote(arg))]
    NvccShellUnsafe { what: String, arg: String, ch: char },
    #[error("Cannot create the build folder {}", path.display())]
    BuildDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl Hint for CompileError {
    fn hints(&self) -> Vec<String> {
        match self {
            CompileError::Failed { status, output, .. } if killed(status, output) => vec![
                "it was killed (signal 9), most often by the kernel's out-of-memory killer: the build needed more memory than this machine or its container (cgroup) allows".into(),
                "lower `max-memory` (e.g. `-C max-memory=4G`) or `jobs`; `python -m cudawheel doctor` shows the memory cudawheel plans with, and `-C verbose=true` each step's expected peak".into(),
            ],
            CompileError::Failed { .. } => vec![
                "the compiler's own message is above; fix the source or the flags in `[tool.cudawheel]`".into(),
            ],
            CompileError::BuildDir { .. } => vec!["choose a writable `build-dir`".into()],
            CompileError::NvccShellUnsafe { .. } => vec![
                "keep `$`, backquotes and backslashes out of what reaches nvcc: `defines`, `nvcc-flags`, `include-dirs`, the host compiler's path and the project's own folder path".into(),
                "a string value with such characters can be defined in a header instead of with `defines`".into(),
            ],
            CompileError::Spawn { .. } => vec![
                "check that the program exists and may be executed, or fix `host-compiler` / `compiler-launcher`".into(),
            ],
        }
    }
}

pub(crate) fn indent(text: &str) -> String {
    let t = text.trim_end();
    if t.is_empty() {
        return "  (no output)".into();
    }
    t.lines()
        .map(|l| format!("  | {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// One process to run: a compile, a device link or a link.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Job {
    pub(crate) program: PathBuf,
    pub(crate) args: Vec<String>,
    /// A compiler wrapper (`sccache`, `ccache`) run with `program` and `args` as its arguments.
    pub(crate) launcher: Option<PathBuf>,
    /// The file it writes.
    pub(crate) output: PathBuf,
    /// Files it reads, besides those the depfile lists (objects and libraries of a link).
    pub(crate) inputs: Vec<PathBuf>,
    /// The source a compile step compiles, as cudawheel sees it (`None`: a device link or a
    /// link); the compilation database lists the steps that have one.
    pub(crate) source: Option<PathBuf>,
    /// The dependency file the compiler writes (`-MD -MF`, added when it runs): the source and
    /// every header.
    pub(crate) depfile: Option<PathBuf>,
    /// Whether the depfile is left out the first time the step runs in a `build-dir` (nvcc
    /// under sccache: there nvcc's dependency pass is a separate full preprocessing, about as
    /// long as a cache hit itself; a clean CI checkout never needs the list). The step then
    /// runs once more, with the depfile, if the same `build-dir` is built again.
    pub(crate) depfile_lazy: bool,
    /// Short label for progress lines: `nvcc csrc/saxpy.cu`.
    pub(crate) label: String,
    /// What else the progress line shows: `sm_80,sm_90`.
    pub(crate) detail: String,
    /// An nvcc compile, which can take `--threads`.
    pub(crate) threadable: bool,
    /// nvcc's device passes (one per virtual architecture, each a preprocess, cicc and
    /// ptxas chain): the most `--threads` it can use.
    pub(crate) passes: usize,
    /// Expected seconds, for scheduling when no earlier build timed it.
    pub(crate) estimate: f64,
    /// Where it runs (`None`: where cudawheel runs); relative paths in `args` and in the
    /// depfile are relative to it (see `stable_paths`).
    pub(crate) cwd: Option<PathBuf>,
    /// Variables set for it on top of the inherited environment (the launcher's settings).
    pub(crate) env: Vec<(String, String)>,
    /// A step of a `split = "library"` library: its output does not depend on the Python the
    /// build is for, so its record is keyed without it (one compile for every `--python`).
    pub(crate) python_free: bool,
}

#[cfg(test)]
impl Job {
    /// A job for unit tests: `program args`, writing `output`, nothing else set.
    pub(crate) fn for_tests(program: &str, args: Vec<String>, output: PathBuf) -> Job {
        Job {
            program: program.into(),
            args,
            launcher: None,
            output,
            inputs: Vec::new(),
            source: None,
            depfile: None,
            depfile_lazy: false,
            label: "test".into(),
            detail: String::new(),
            threadable: false,
            passes: 1,
            estimate: 1.0,
            cwd: None,
            env: Vec::new(),
            python_free: false,
        }
    }
}

impl fmt::Display for Job {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.command_line(None))
    }
}

/// Shell-quotes a word for display, leaving plainly safe words (`-gencode arch=x,code=y`) bare.
pub(crate) fn quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c));
    if plain {
        word.to_string()
    } else {
        shlex::try_quote(word).map_or_else(|_| format!("{word:?}"), |q| q.into_owned())
    }
}

impl Job {
    /// The words of the process to start: launcher, compiler, arguments, `-MD -MF depfile`,
    /// `--threads N`.
    fn argv(&self, threads: Option<usize>) -> (PathBuf, Vec<String>) {
        let mut args = self.args.clone();
        if let Some(depfile) = &self.depfile {
            let depfile = match &self.cwd {
                Some(cwd) => depfile.strip_prefix(cwd).unwrap_or(depfile),
                None => depfile,
            };
            args.extend([
                "-MD".into(),
                "-MF".into(),
                depfile.to_string_lossy().into_owned(),
            ]);
        }
        if let Some(n) = threads {
            args.extend(["--threads".into(), n.to_string()]);
        }
        match &self.launcher {
            None => (self.program.clone(), args),
            Some(l) => {
                args.insert(0, self.program.to_string_lossy().into_owned());
                (l.clone(), args)
            }
        }
    }

    /// The compiler's own words, as `run` starts it behind any launcher: the program, then its
    /// arguments with `-MD -MF depfile` and `--threads N` (the compilation database's entry).
    pub(crate) fn compiler_words(&self, threads: Option<usize>) -> Vec<String> {
        let (program, args) = Job {
            launcher: None,
            ..self.clone()
        }
        .argv(threads);
        std::iter::once(program.to_string_lossy().into_owned())
            .chain(args)
            .collect()
    }

    /// The exact command, shell-quoted, as messages show it.
    pub(crate) fn command_line(&self, threads: Option<usize>) -> String {
        let (program, args) = self.argv(threads);
        let words = std::iter::once(program.to_string_lossy().into_owned()).chain(args);
        words.map(|w| quote(&w)).collect::<Vec<_>>().join(" ")
    }

    /// Runs the job (never through a shell), capturing its output; a failure carries the
    /// command and the compiler's own message. Returns the peak memory (max RSS, KiB) of the
    /// process and the children it waited for, and what it printed (for the build log and,
    /// where it holds warnings, the console: `compile::log`).
    pub(crate) fn run(&self, threads: Option<usize>) -> Result<(u64, String), CompileError> {
        if let Some(parent) = self.output.parent() {
            std::fs::create_dir_all(parent).map_err(|source| CompileError::BuildDir {
                path: parent.to_path_buf(),
                source,
            })?;
        }
        // A stale output from an earlier build must never be taken for this one's.
        let _ = std::fs::remove_file(&self.output);
        let (program, args) = self.argv(threads);
        let spawn_error = |source| CompileError::Spawn {
            program: program.display().to_string(),
            source,
        };
        #[allow(clippy::disallowed_methods)] // the one place that runs compilers
        let mut command = Command::new(&program);
        command.args(&args).envs(self.env.iter().cloned());
        if let Some(cwd) = &self.cwd {
            command.current_dir(cwd);
        }
        fixed_addresses(&mut command);
        let mut child = command
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .map_err(spawn_error)?;
        // Both pipes drained at once (a compiler blocked on a full pipe would never exit).
        let mut stderr = child.stderr.take().expect("piped");
        let err_reader = std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = std::io::Read::read_to_end(&mut stderr, &mut buf);
            buf
        });
        let mut out = Vec::new();
        if let Some(mut stdout) = child.stdout.take() {
            let _ = std::io::Read::read_to_end(&mut stdout, &mut out);
        }
        let err = err_reader.join().unwrap_or_default();
        let (status, peak_kib) = wait_with_peak(&mut child).map_err(spawn_error)?;
        let mut text = String::from_utf8_lossy(&out).into_owned();
        text.push_str(&String::from_utf8_lossy(&err));
        if !status.success() || !self.output.is_file() {
            let _ = std::fs::remove_file(&self.output);
            return Err(CompileError::Failed {
                what: self.label.clone(),
                command: self.command_line(threads),
                status: describe_status(status),
                output: text,
            });
        }
        Ok((peak_kib, text))
    }
}

/// Runs `command` (and what it runs: nvcc's cicc, ptxas) with the address space laid out the
/// same way in every run, as `setarch -R` does (`personality(2)`'s `ADDR_NO_RANDOMIZE`, which
/// exec keeps). cicc's code for some files depends on where its data lands: one of llama.cpp's
/// flash-attention tile instances, compiled twice with one `-frandom-seed`, differed in its
/// register numbering, and was the same bytes twice without address randomisation (with
/// another environment and working folder too). Best effort: where the kernel or a seccomp
/// filter refuses (Docker's default profile does), the command runs as it would have.
pub(crate) fn fixed_addresses(command: &mut Command) {
    use std::os::unix::process::CommandExt;
    const QUERY: libc::c_ulong = 0xffff_ffff;
    // SAFETY: between fork and exec the closure makes two personality(2) system calls and
    // touches nothing of the parent's; a refusal is ignored.
    unsafe {
        command.pre_exec(|| {
            let current = libc::personality(QUERY);
            if let Ok(current) = libc::c_ulong::try_from(current) {
                let wanted =
                    current | libc::c_ulong::try_from(libc::ADDR_NO_RANDOMIZE).unwrap_or(0);
                libc::personality(wanted);
            }
            Ok(())
        });
    }
}

/// Waits for `child` with `wait4`, which also reports its peak memory: the largest max RSS
/// (KiB) of the child and of the descendants it waited for (nvcc's cicc, ptxas, ...).
pub(crate) fn wait_with_peak(
    child: &mut std::process::Child,
) -> std::io::Result<(ExitStatus, u64)> {
    use std::os::unix::process::ExitStatusExt;
    let pid = libc::pid_t::try_from(child.id()).map_err(std::io::Error::other)?;
    loop {
        let mut status: libc::c_int = 0;
        // SAFETY: an all-zero rusage is a valid value of this plain C struct.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `pid` is our own child, not yet reaped (std never waited for it); both
        // pointers are to live locals.
        let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if rc == pid {
            return Ok((
                ExitStatus::from_raw(status),
                u64::try_from(usage.ru_maxrss).unwrap_or(0),
            ));
        }
        let err = std::io::Error::last_os_error();
        if err.kind() != std::io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

/// A value for nvcc's `-Xcompiler`: nvcc splits it on unescaped commas and pastes each piece
/// unquoted into the command line it gives `/bin/sh`, so a path with a space would split there.
/// Shell-quoted (plain words stay bare) and with commas escaped, it reaches the host compiler as
/// one argument.
fn xcompiler(value: &str) -> String {
    quote(value).replace(',', "\\,")
}

/// `-DPy_LIMITED_API=0x03090000` for `cp39`.
pub(crate) fn limited_api_define(minor: u32) -> String {
    format!("-DPy_LIMITED_API=0x03{minor:02X}0000")
}

fn object_path(obj_dir: &Path, ext: &TargetPlan, rel: &Path) -> PathBuf {
    let flat = rel.to_string_lossy().replace(['/', '\\'], "__");
    obj_dir.join(&ext.module).join(format!("{flat}.o"))
}

/// Writes the plan's generated sources (`BuildPlan::generated`) into build-dir, leaving a file
/// alone when its text is unchanged (so an incremental build reuses its object).
pub(crate) fn write_generated(plan: &BuildPlan) -> Result<(), CompileError> {
    for (path, text) in &plan.generated {
        if std::fs::read_to_string(path).ok().as_deref() == Some(text.as_str()) {
            continue;
        }
        let written = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(path, text));
        written.map_err(|source| CompileError::BuildDir {
            path: path.clone(),
            source,
        })?;
    }
    Ok(())
}

/// The compile commands of one target. `cuda_includes`: the CUDA include arguments, in order
/// (its libraries' folders and the toolkit's header set: `compile::includes::include_args`).
pub(crate) fn compile_jobs(
    ext: &TargetPlan,
    plan: &BuildPlan,
    tc: &Toolchain,
    python: &PythonInfo,
    gencodes: &[Gencode],
    obj_dir: &Path,
    cuda_includes: &[String],
) -> Vec<Job> {
    let mut common: Vec<String> = vec!["-O3".into(), "-DNDEBUG".into()];
    // A `split = "library"` library is Python-independent: no Python headers, no limited API.
    let python_dir = ext.split_library.is_none().then_some(&python.include_dir);
    if let Some(minor) = plan.limited_api.filter(|_| ext.split_library.is_none()) {
        common.push(limited_api_define(minor));
    }
    common.extend(ext.defines.iter().map(|d| format!("-D{d}")));
    // The project's absolute path never reaches the objects (`__FILE__`): the commands run in
    // the project root and name its files relatively (`stable_paths`).
    for dir in ext.include_dirs.iter().chain(python_dir) {
        common.push(format!("-I{}", dir.display()));
    }
    common.extend(cuda_includes.iter().cloned());
    let codes = gencodes
        .iter()
        .map(|g| g.code.as_str())
        .collect::<Vec<_>>()
        .join(",");
    let passes = gencodes
        .iter()
        .map(|g| g.arch.as_str())
        .collect::<std::collections::BTreeSet<_>>()
        .len()
        .max(1);
    let launcher = tc.launcher.as_ref().map(|l| l.path.clone());
    let nvcc_launcher = launcher.clone().filter(|_| tc.launcher_wraps_nvcc);
    let nvcc_sccache = nvcc_launcher.is_some()
        && tc
            .launcher
            .as_ref()
            .is_some_and(|l| l.kind == crate::toolchain::launcher::Kind::Sccache);
    ext.sources
        .iter()
        .map(|src| {
            let output = object_path(obj_dir, ext, &src.rel);
            let depfile = output.with_extension("d");
            let io = [
                "-c".to_string(),
                src.path.to_string_lossy().into_owned(),
                "-o".into(),
                output.to_string_lossy().into_owned(),
            ];
            let (program, args, tool) = match src.lang {
                Lang::Cuda => (
                    &tc.nvcc.path,
                    nvcc_args(&io, &src.rel, tc, ext, &common, gencodes, nvcc_sccache),
                    "nvcc",
                ),
                Lang::C | Lang::Cxx => (
                    &tc.host.path,
                    host_args(&io, src.lang, tc, ext, &common),
                    "c++",
                ),
            };
            let cuda = src.lang == Lang::Cuda;
            Job {
                program: program.clone(),
                args,
                launcher: if cuda {
                    nvcc_launcher.clone()
                } else {
                    launcher.clone()
                },
                output,
                inputs: Vec::new(),
                source: Some(src.path.clone()),
                // The source and every header it included, for incremental builds.
                depfile: Some(depfile),
                depfile_lazy: cuda && nvcc_sccache,
                label: format!("{tool} {}", src.rel.display()),
                detail: if cuda { codes.clone() } else { String::new() },
                threadable: cuda,
                passes: if cuda { passes } else { 1 },
                estimate: estimate(&src.path, cuda, gencodes.len()),
                cwd: None,
                env: Vec::new(),
                python_free: ext.split_library.is_some(),
            }
        })
        .collect()
}

/// `CUDAWHEEL_EVEN_SHARE=1`: the schedule from before time shares (every ready compile an even
/// share of the free slots, the first build's estimate from the file's size alone), so that a
/// benchmark can measure it beside the current one with the same backend. Read once.
pub(crate) fn even_share() -> bool {
    static EVEN: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *EVEN.get_or_init(|| std::env::var_os("CUDAWHEEL_EVEN_SHARE").is_some_and(|v| v == "1"))
}

/// Headers of CUDA template libraries: a file that includes one instantiates most of its device
/// code from them, so its size says little about its compile time.
const TEMPLATE_LIBRARIES: &[&str] = &["cub/", "thrust/", "cutlass/", "cute/", "cuda/std/"];

/// Expected seconds of a compile until a build here has timed it (only to order the first
/// build and share its slots): a device pass per architecture, longer for longer sources, and
/// ten times longer for a CUDA file that includes a template library (CUB, Thrust, CUTLASS,
/// CuTe, libcu++), which is what makes one file hold a build.
fn estimate(path: &Path, cuda: bool, gencodes: usize) -> f64 {
    let text = std::fs::read(path).unwrap_or_default();
    let kb = (text.len() as f64 / 1e3).max(0.1);
    if !cuda {
        return 0.2 + kb / 20.0;
    }
    let templated = String::from_utf8_lossy(&text).lines().any(|l| {
        let l = l.trim_start();
        l.starts_with('#')
            && l.contains("include")
            && TEMPLATE_LIBRARIES.iter().any(|lib| l.contains(lib))
    });
    let weight = if templated && !even_share() {
        10.0
    } else {
        1.0
    };
    weight * gencodes.max(1) as f64 * (1.0 + kb / 4.0)
}

/// nvcc's arguments for one CUDA source: `io` (`-c SRC -o OBJ`), the host compiler, the common
/// flags, the gencodes and the target's own flags.
fn nvcc_args(
    io: &[String],
    src_rel: &Path,
    tc: &Toolchain,
    ext: &TargetPlan,
    common: &[String],
    gencodes: &[Gencode],
    nvcc_sccache: bool,
) -> Vec<String> {
    let mut args: Vec<String> = io.to_vec();
    args.extend(["-ccbin".into(), tc.host.path.to_string_lossy().into_owned()]);
    if tc.zig.is_some() {
        args.extend(crate::toolchain::zig::nvcc_flags());
    }
    for a in &tc.host.args {
        args.extend(["-Xcompiler".into(), xcompiler(a)]);
    }
    args.extend(["-Xcompiler".into(), "-fPIC".into()]);
    // Temporary files named after the object, not nvcc's process id (which
    // otherwise lands in the symbol table), and a module id (used in internal
    // symbol names) from the project-relative path rather than the absolute one.
    // sccache runs nvcc's steps itself and loses the object under
    // `-objtemp` (exit 0, no file); cache hits are byte-identical anyway.
    if !nvcc_sccache {
        args.push("-objtemp".into());
    }
    args.extend([
        "-Xcudafe".into(),
        format!("--orig_src_path_name={}", src_rel.display()),
    ]);
    // Internal symbol names from the target and the source, not the front end's process id
    // (`Nvcc::takes_random_seed`); one seed per object, as nvcc asks.
    if tc.nvcc.takes_random_seed() {
        args.push(format!(
            "-frandom-seed={}/{}",
            ext.module,
            src_rel.display()
        ));
    }
    args.extend(common.iter().cloned());
    if ext.rdc {
        args.push("-rdc=true".into());
    }
    for g in gencodes {
        args.extend(["-gencode".into(), g.to_string()]);
    }
    args.extend(tc.compress_flags.iter().cloned());
    args.extend(ext.nvcc_flags.iter().cloned());
    args
}

/// The host compiler's arguments for one C or C++ source.
fn host_args(
    io: &[String],
    lang: Lang,
    tc: &Toolchain,
    ext: &TargetPlan,
    common: &[String],
) -> Vec<String> {
    let mut args: Vec<String> = tc.host.args.clone();
    if lang == Lang::C {
        args.extend(["-x".into(), "c".into()]);
    }
    args.extend(io.iter().cloned());
    args.push("-fPIC".into());
    args.extend(common.iter().cloned());
    args.extend(ext.cxx_flags.iter().cloned());
    args
}

/// The device-link step of an `rdc = true` target: resolves device symbols across its `.cu`
/// objects and the static device libraries (`libnvshmem_device.a`) into one more object.
pub(crate) fn dlink_job(
    ext: &TargetPlan,
    cuda_objects: &[PathBuf],
    tc: &Toolchain,
    gencodes: &[Gencode],
    statics: &[PathBuf],
    obj_dir: &Path,
) -> Job {
    let output = obj_dir.join(&ext.module).join("__device_link.o");
    let mut args: Vec<String> = vec!["-dlink".into()];
    args.extend(
        cuda_objects
            .iter()
            .map(|o| o.to_string_lossy().into_owned()),
    );
    args.extend(["-o".into(), output.to_string_lossy().into_owned()]);
    args.extend(["-ccbin".into(), tc.host.path.to_string_lossy().into_owned()]);
    if tc.zig.is_some() {
        args.extend(crate::toolchain::zig::nvcc_flags());
    }
    args.extend(["-Xcompiler".into(), "-fPIC".into()]);
    for g in gencodes {
        args.extend(["-gencode".into(), g.to_string()]);
    }
    args.extend(tc.compress_flags.iter().cloned());
    // nvlink silently ignores `-l` names it cannot find: give archives by path.
    args.extend(statics.iter().map(|s| s.to_string_lossy().into_owned()));
    args.extend(ext.nvcc_flags.iter().cloned());
    let mut inputs = cuda_objects.to_vec();
    inputs.extend(statics.iter().cloned());
    Job {
        program: tc.nvcc.path.clone(),
        args,
        launcher: None,
        output,
        inputs,
        source: None,
        depfile: None,
        depfile_lazy: false,
        label: format!("nvcc -dlink {}", ext.module),
        detail: String::new(),
        threadable: false,
        passes: 1,
        estimate: 2.0,
        cwd: None,
        env: Vec::new(),
        python_free: ext.split_library.is_some(),
    }
}

/// A step, or a tool nvcc ran, killed by SIGKILL (what the out-of-memory killer sends).
/// nvcc reports a killed tool as exit code 137 (128 + 9) and its shell's `Killed`.
fn killed(status: &str, output: &str) -> bool {
    status == "killed by signal 9"
        || status == "exit code 137"
        || output.contains("died due to signal 9")
        || output.lines().any(|l| l.trim() == "Killed")
}

fn describe_status(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit code {code}"),
        (None, Some(sig)) => format!("killed by signal {sig}"),
        _ => status.to_string(),
    }
}

/// Characters that nvcc's internal shell would interpret inside its double quotes.
const NVCC_SHELL_UNSAFE: &[char] = &['$', '`', '\\'];

/// Refuses an nvcc job with an argument its internal `/bin/sh` would change or run (see
/// `CompileError::NvccShellUnsafe`); the host compiler and the linker are run directly and take
/// any argument.
pub(crate) fn check_nvcc_args(job: &Job) -> Result<(), CompileError> {
    // A launcher (`Job::launcher`) is not nvcc's business: only the compiler and its arguments.
    if job.program.file_name().is_none_or(|n| n != "nvcc") {
        return Ok(());
    }
    let words =
        std::iter::once(job.program.to_string_lossy().into_owned()).chain(job.args.iter().cloned());
    for arg in words {
        // `\,` is nvcc's own escape inside -Xcompiler values; it never reaches the shell.
        if let Some(ch) = arg
            .replace("\\,", ",")
            .chars()
            .find(|c| NVCC_SHELL_UNSAFE.contains(c))
        {
            return Err(CompileError::NvccShellUnsafe {
                what: job.label.clone(),
                arg,
                ch,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nvcc_arguments_its_shell_would_expand_are_refused() {
        let job = |program: &str, args: &[&str]| Job {
            label: "nvcc x.cu".into(),
            ..Job::for_tests(
                program,
                args.iter().map(|s| s.to_string()).collect(),
                "x.o".into(),
            )
        };
        let safe = [
            "-DMSG=\"a b 'q' ;|&*\"",
            "/my proj/ü/x.cu",
            "-ffile-prefix-map=/a\\,b/=",
        ];
        check_nvcc_args(&job("/cuda/bin/nvcc", &safe)).unwrap();
        for bad in ["-DX=$HOME", "-DX=`id`", "-DX=a\\b"] {
            let e = check_nvcc_args(&job("/cuda/bin/nvcc", &["-c", bad])).unwrap_err();
            assert!(e.to_string().contains("nvcc would hand to /bin/sh"), "{e}");
            let behind_launcher = Job {
                launcher: Some("/usr/bin/ccache".into()),
                ..job("/cuda/bin/nvcc", &[bad])
            };
            let e = check_nvcc_args(&behind_launcher).unwrap_err();
            assert!(matches!(e, CompileError::NvccShellUnsafe { .. }), "{e}");
        }
        let e = check_nvcc_args(&job("/a $b/nvcc", &[])).unwrap_err();
        assert!(e.to_string().contains("'/a $b/nvcc'"), "{e}");
        // The host compiler runs without a shell: anything goes.
        check_nvcc_args(&job("/usr/bin/g++", &["-DX=$HOME`id`\\"])).unwrap();
    }

    #[test]
    fn a_file_of_template_library_code_is_expected_to_dominate() {
        let tmp = tempfile::tempdir().unwrap();
        let plain = tmp.path().join("plain.cu");
        let heavy = tmp.path().join("heavy.cu");
        let body = "__global__ void k(float *x) { x[0] = 1; }\n";
        std::fs::write(&plain, body).unwrap();
        std::fs::write(
            &heavy,
            format!("#include <cub/block/block_load.cuh>\n{body}"),
        )
        .unwrap();
        let (p, h) = (estimate(&plain, true, 2), estimate(&heavy, true, 2));
        assert!(h > 9.0 * p, "{h} vs {p}");
        // A comment naming the library is not an include.
        std::fs::write(&heavy, format!("// cub/ would help\n{body}")).unwrap();
        assert!(estimate(&heavy, true, 2) < 1.1 * p);
        assert!(estimate(&plain, false, 2) < p);
    }

    #[test]
    fn xcompiler_values_survive_nvccs_shell() {
        assert_eq!(xcompiler("-fPIC"), "-fPIC");
        // shlex picks double quotes around a single quote; nvcc turns `\,` back into `,`.
        assert_eq!(
            xcompiler("-ffile-prefix-map=/my proj/='q',x/="),
            r#""-ffile-prefix-map=/my proj/='q'\,x/=""#
        );
    }

    #[test]
    fn commands_display_shell_quoted() {
        let args = [
            "-gencode",
            "arch=compute_90,code=sm_90",
            "-DMSG=a b",
            "$ORIGIN",
        ];
        let job = Job {
            launcher: Some("sccache".into()),
            ..Job::for_tests(
                "/opt/cuda/bin/nvcc",
                args.map(String::from).to_vec(),
                "x.o".into(),
            )
        };
        assert_eq!(
            job.to_string(),
            "sccache /opt/cuda/bin/nvcc -gencode arch=compute_90,code=sm_90 '-DMSG=a b' '$ORIGIN'"
        );
        assert!(job.command_line(Some(2)).ends_with("'$ORIGIN' --threads 2"));
    }
}
