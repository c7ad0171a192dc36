//! Wrap mode's build: another PEP 517 backend (`build-backend`) runs on the project's own build
//! files in a child process of the build's Python, with the environment that hands it
//! cudawheel's choices (`wrapped_env`).
//!
//! A hook's result comes back through a JSON file (the backend prints freely); its output goes
//! to stderr as it comes, and its end is kept to explain a failure in one line.

use std::collections::{BTreeMap, VecDeque};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::wrapped_env::BuildEnv;
use crate::config::PythonInfo;
use crate::hint::Hint;

/// The child's script: imports the backend, calls one hook with the arguments in `argv[3]`
/// (JSON), writes `{"result": ...}`, `{"absent": true}` (an optional hook it lacks) or
/// `{"missing": module}` (the backend's module is not installed) to `argv[4]`.
const HOOK_SCRIPT: &str = r#"
import importlib, json, sys
backend, hook, args_file, out_file = sys.argv[1:5]
def answer(value, status=0):
    with open(out_file, "w") as f:
        json.dump(value, f)
    sys.exit(status)
module, _, attrs = backend.partition(":")
try:
    obj = importlib.import_module(module)
except ModuleNotFoundError as e:
    if e.name and (module == e.name or module.startswith(e.name + ".")):
        answer({"missing": e.name}, 3)
    raise
for attr in filter(None, attrs.split(".")):
    obj = getattr(obj, attr)
fn = getattr(obj, hook, None)
if fn is None:
    answer({"absent": True})
with open(args_file) as f:
    args = json.load(f)
answer({"result": fn(*args)})
"#;

/// CMake's and torch's messages that mean the build found no CUDA.
const NO_CUDA: &[&str] = &[
    "No CMAKE_CUDA_COMPILER could be found",
    "Could NOT find CUDAToolkit",
    "Failed to find nvcc",
    "CUDA_HOME environment variable is not set",
    "Failed to detect a default CUDA architecture",
    "The CUDA compiler identification is unknown",
];

#[derive(Debug, thiserror::Error)]
pub(crate) enum WrapError {
    #[error("`tool.cudawheel.build-backend` = {backend:?}: the module `{module}` is not installed in the build environment; add \"{package}\" to `[build-system].requires` in pyproject.toml")]
    BackendMissing {
        backend: String,
        module: String,
        package: String,
    },
    #[error("The wrapped build ({backend}) found no CUDA (\"{line}\") in {hook}, though cudawheel gave it {}", given_text(given))]
    NoCuda {
        backend: String,
        hook: String,
        line: String,
        /// `BuildEnv::cuda_summary` of what the hook was given (empty: nothing).
        given: String,
    },
    #[error("The wrapped backend {backend} failed in {hook} ({status}); its output is above{}", last.as_ref().map(|l| format!(", ending: {l}")).unwrap_or_default())]
    HookFailed {
        backend: String,
        hook: String,
        status: String,
        last: Option<String>,
    },
    #[error("The wrapped backend {backend}'s {hook} returned {answer}, not a file name in {}", dir.display())]
    BadAnswer {
        backend: String,
        hook: String,
        answer: String,
        dir: PathBuf,
    },
    #[error("An editable install is not made in wrap mode (`tool.cudawheel.build-backend` = {backend:?})")]
    Editable { backend: String },
    /// Keeping the wheel `prepare_metadata_for_build_wheel` built, for `build_wheel`.
    #[error("{what} {}: {why}", path.display())]
    Stash {
        what: &'static str,
        path: PathBuf,
        why: String,
    },
    #[error("Running the wrapped backend {backend} with {}: {why}", python.display())]
    Spawn {
        backend: String,
        python: PathBuf,
        why: String,
    },
}

impl Hint for WrapError {
    fn hints(&self) -> Vec<String> {
        match self {
            WrapError::BackendMissing { .. } => vec![
                "the wrapped backend runs in cudawheel's build environment: it must be a build requirement".into(),
            ],
            WrapError::NoCuda { backend, .. } => no_cuda_hints(backend),
            WrapError::Editable { .. } => vec!["build and install the wheel (`pip install .`), or install with the wrapped backend alone for development".into()],
            WrapError::Stash { .. } => vec!["check that the metadata folder the frontend gave is writable".into()],
            WrapError::HookFailed { .. } | WrapError::BadAnswer { .. } | WrapError::Spawn { .. } => {
                vec!["run the same build with the wrapped backend alone to see whether it builds without cudawheel".into()]
            }
        }
    }
}

/// What a `NoCuda` message says the hook was given.
fn given_text(summary: &str) -> String {
    if summary.is_empty() {
        "no toolkit variables in this hook".into()
    } else {
        summary.to_string()
    }
}

/// The kind of build files a backend runs, for hints and requirements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BackendKind {
    /// setuptools (`setup.py`; torch's `cpp_extension` for CUDA).
    Setuptools,
    /// A backend that runs CMake (scikit-build-core, py-build-cmake).
    CMake,
    Other,
}

/// The kind of `backend` (`setuptools.build_meta:__legacy__` is setuptools).
pub(crate) fn backend_kind(backend: &str) -> BackendKind {
    let module = backend.split(':').next().unwrap_or(backend);
    let top = module.split('.').next().unwrap_or(module);
    match top {
        "setuptools" => BackendKind::Setuptools,
        "scikit_build_core" | "py_build_cmake" | "cmake_build_extension" => BackendKind::CMake,
        _ => BackendKind::Other,
    }
}

/// The build tools a wrapped build asks for beside the backend's own requirements: `ninja`
/// for setuptools, whose CUDA builds are torch's `BuildExtension` (without ninja it compiles
/// one file after another and `MAX_JOBS` does nothing; a setup.py without torch never runs it).
/// A CMake backend asks for ninja itself when it needs it.
pub(crate) fn build_tools(backend: &str) -> &'static [&'static str] {
    match backend_kind(backend) {
        BackendKind::Setuptools => &["ninja"],
        BackendKind::CMake | BackendKind::Other => &[],
    }
}

/// The hints of `NoCuda`, for the kind of build files `backend` runs.
fn no_cuda_hints(backend: &str) -> Vec<String> {
    let mut out = vec!["the build files may look for CUDA elsewhere (a fixed path, their own variable): point them at the toolkit folder (`python -m cudawheel env` prints it)".to_string()];
    match backend_kind(backend) {
        BackendKind::Setuptools => out.push("torch's `cpp_extension` takes the toolkit from `CUDA_HOME` (then `CUDA_PATH`, then nvcc on PATH), which cudawheel sets; a setup.py that finds nvcc its own way (`shutil.which(\"nvcc\")`, a fixed `/usr/local/cuda`) needs to read `CUDA_HOME` instead".into()),
        BackendKind::CMake => out.push("a CMake project needs `enable_language(CUDA)` or `find_package(CUDAToolkit)`; CMake 3.17 or newer reads CUDACXX and CUDAToolkit_ROOT".into()),
        BackendKind::Other => {}
    }
    out
}

/// The package that provides a backend's module, for the message (PyPI's name where the two
/// differ).
fn package_of(module: &str) -> String {
    let top = module.split('.').next().unwrap_or(module);
    match top {
        "scikit_build_core" => "scikit-build-core",
        "mesonpy" => "meson-python",
        "flit_core" => "flit-core",
        "pdm" => "pdm-backend",
        "py_build_cmake" => "py-build-cmake",
        other => other,
    }
    .replace('_', "-")
}

/// One hook call of the wrapped backend.
pub(crate) struct Inner<'a> {
    pub(crate) backend: &'a str,
    pub(crate) python: &'a PythonInfo,
    /// The project folder (the hook's working directory).
    pub(crate) root: &'a Path,
    /// Where the call's argument and answer files go.
    pub(crate) scratch: &'a Path,
    pub(crate) env: &'a BuildEnv,
}

impl Inner<'_> {
    /// Calls `hook(*args)`; `Ok(None)` when the backend lacks that (optional) hook.
    pub(crate) fn call(
        &self,
        hook: &str,
        args: &serde_json::Value,
    ) -> Result<Option<serde_json::Value>, WrapError> {
        Ok(self.call_logged(hook, args)?.0)
    }

    /// `call`, with the output lines that mention nvcc (its command lines and warnings: what
    /// `audit::built_archs` reads).
    fn call_logged(
        &self,
        hook: &str,
        args: &serde_json::Value,
    ) -> Result<(Option<serde_json::Value>, Vec<String>), WrapError> {
        let spawn_err = |why: String| WrapError::Spawn {
            backend: self.backend.to_string(),
            python: interpreter(self.python),
            why,
        };
        std::fs::create_dir_all(self.scratch).map_err(|e| spawn_err(e.to_string()))?;
        let args_file = self.scratch.join(format!("{hook}.args.json"));
        let out_file = self.scratch.join(format!("{hook}.answer.json"));
        let _ = std::fs::remove_file(&out_file);
        std::fs::write(&args_file, args.to_string()).map_err(|e| spawn_err(e.to_string()))?;
        #[allow(clippy::disallowed_methods)] // the wrapped backend is the build's compiler here
        let mut child = Command::new(interpreter(self.python))
            .arg("-c")
            .arg(HOOK_SCRIPT)
            .arg(self.backend)
            .arg(hook)
            .arg(&args_file)
            .arg(&out_file)
            .current_dir(self.root)
            .envs(self.env.vars.iter().map(|(k, v)| (k, v)))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| spawn_err(e.to_string()))?;
        let (tail, nvcc_lines) = relay(&mut child);
        let status = child.wait().map_err(|e| spawn_err(e.to_string()))?;
        let answer: Option<serde_json::Value> = std::fs::read_to_string(&out_file)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok());
        if let Some(module) = answer.as_ref().and_then(|a| a.get("missing")?.as_str()) {
            return Err(WrapError::BackendMissing {
                backend: self.backend.to_string(),
                module: module.to_string(),
                package: package_of(module),
            });
        }
        if !status.success() {
            return Err(self.failure(hook, &status.to_string(), &tail));
        }
        match answer {
            Some(a) if a.get("absent").is_some() => Ok((None, nvcc_lines)),
            Some(mut a) if a.get("result").is_some() => {
                Ok((a.get_mut("result").map(|v| v.take()), nvcc_lines))
            }
            _ => Err(self.failure(hook, "no answer", &tail)),
        }
    }

    fn failure(&self, hook: &str, status: &str, tail: &VecDeque<String>) -> WrapError {
        if let Some(line) = tail
            .iter()
            .find(|l| NO_CUDA.iter().any(|pat| l.contains(pat)))
        {
            return WrapError::NoCuda {
                backend: self.backend.to_string(),
                hook: hook.to_string(),
                line: line.trim().to_string(),
                given: self.env.cuda_summary(),
            };
        }
        WrapError::HookFailed {
            backend: self.backend.to_string(),
            hook: hook.to_string(),
            status: status.to_string(),
            last: tail
                .iter()
                .rev()
                .find(|l| !l.trim().is_empty())
                .map(|l| l.trim().to_string()),
        }
    }

    /// `get_requires_for_build_wheel` (or `_sdist`): the backend's own requirements.
    pub(crate) fn requires(
        &self,
        hook: &str,
        settings: &BTreeMap<String, String>,
    ) -> Result<Vec<String>, WrapError> {
        let answer = self.call(hook, &serde_json::json!([settings]))?;
        Ok(answer
            .and_then(|a| serde_json::from_value(a).ok())
            .unwrap_or_default())
    }

    /// `build_wheel` or `build_sdist` into `out` (`metadata_dir` for `build_wheel`): the path
    /// of what it wrote.
    pub(crate) fn build(
        &self,
        hook: &str,
        out: &Path,
        settings: &BTreeMap<String, String>,
    ) -> Result<PathBuf, WrapError> {
        Ok(self.build_logged(hook, out, settings)?.0)
    }

    /// `build`, with the output lines that mention nvcc.
    pub(crate) fn build_logged(
        &self,
        hook: &str,
        out: &Path,
        settings: &BTreeMap<String, String>,
    ) -> Result<(PathBuf, Vec<String>), WrapError> {
        let _ = std::fs::create_dir_all(out);
        let (answer, nvcc_lines) = self.call_logged(
            hook,
            &serde_json::json!([out.display().to_string(), settings]),
        )?;
        let answer = answer.unwrap_or_default();
        let name = answer.as_str().unwrap_or_default();
        let path = out.join(name);
        if name.is_empty() || name.contains('/') || !path.is_file() {
            return Err(WrapError::BadAnswer {
                backend: self.backend.to_string(),
                hook: hook.to_string(),
                answer: answer.to_string(),
                dir: out.to_path_buf(),
            });
        }
        Ok((path, nvcc_lines))
    }
}

/// The build's interpreter (`python3` when the facts lack it).
fn interpreter(python: &PythonInfo) -> PathBuf {
    python
        .executable
        .clone()
        .unwrap_or_else(|| PathBuf::from("python3"))
}

/// How many of the child's last lines are kept to explain a failure.
const TAIL: usize = 400;

/// Copies the child's stdout and stderr to this process's stderr as they come; returns their
/// last lines, and every line that mentions nvcc.
fn relay(child: &mut std::process::Child) -> (VecDeque<String>, Vec<String>) {
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let mut readers = Vec::new();
    let stdout = child
        .stdout
        .take()
        .map(|s| Box::new(s) as Box<dyn std::io::Read + Send>);
    let stderr = child
        .stderr
        .take()
        .map(|s| Box::new(s) as Box<dyn std::io::Read + Send>);
    for stream in [stdout, stderr].into_iter().flatten() {
        let tx = tx.clone();
        readers.push(std::thread::spawn(move || {
            for line in BufReader::new(stream).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        }));
    }
    drop(tx);
    let mut tail = VecDeque::new();
    let mut nvcc_lines = Vec::new();
    let mut err = std::io::stderr();
    for line in rx {
        let _ = writeln!(err, "{line}");
        if line.contains("nvcc") {
            nvcc_lines.push(line.clone());
        }
        if tail.len() == TAIL {
            tail.pop_front();
        }
        tail.push_back(line);
    }
    for r in readers {
        let _ = r.join();
    }
    (tail, nvcc_lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packages_are_named_as_pypi_names_them() {
        assert_eq!(package_of("scikit_build_core.build"), "scikit-build-core");
        assert_eq!(package_of("setuptools.build_meta"), "setuptools");
        assert_eq!(package_of("hatchling.build"), "hatchling");
        assert_eq!(package_of("mesonpy"), "meson-python");
    }

    fn no_cuda(backend: &str, given: &str) -> WrapError {
        WrapError::NoCuda {
            backend: backend.into(),
            hook: "get_requires_for_build_wheel".into(),
            line: "OSError: CUDA_HOME environment variable is not set.".into(),
            given: given.into(),
        }
    }

    #[test]
    fn no_cuda_says_what_the_hook_was_given_and_hints_for_its_build_files() {
        let e = no_cuda("setuptools.build_meta", "CUDA_HOME=/p/tk");
        assert_eq!(
            e.to_string(),
            "The wrapped build (setuptools.build_meta) found no CUDA (\"OSError: CUDA_HOME environment variable is not set.\") in get_requires_for_build_wheel, though cudawheel gave it CUDA_HOME=/p/tk"
        );
        let text = e.to_string();
        assert!(!text.ends_with("gave it "), "{text}");
        assert!(no_cuda("setuptools.build_meta", "")
            .to_string()
            .ends_with("though cudawheel gave it no toolkit variables in this hook"));
        let hints = e.hints().join("\n");
        assert!(
            hints.contains("CUDA_HOME") && hints.contains("torch"),
            "{hints}"
        );
        assert!(!hints.contains("enable_language"), "{hints}");
        let cmake = no_cuda("scikit_build_core.build", "CUDACXX=/p/tk/bin/nvcc")
            .hints()
            .join("\n");
        assert!(
            cmake.contains("enable_language(CUDA)") && !cmake.contains("torch"),
            "{cmake}"
        );
    }

    #[test]
    fn setuptools_builds_ask_for_ninja_and_cmake_backends_do_not() {
        assert_eq!(build_tools("setuptools.build_meta"), ["ninja"]);
        assert_eq!(build_tools("setuptools.build_meta:__legacy__"), ["ninja"]);
        assert!(build_tools("scikit_build_core.build").is_empty());
        assert!(build_tools("hatchling.build").is_empty());
    }
}
