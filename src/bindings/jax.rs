//! `bindings = "jax"`: JAX extensions through XLA FFI. Extensions are nanobind modules (see
//! `python_module`); on top of that the jax of the build environment is asked (a probe run with
//! the build's interpreter, as for torch) for `jax.ffi.include_dir()`, which goes on the include
//! path of every target, shared libraries included (a `.cu` handler includes
//! `xla/ffi/api/ffi.h`). The wheel then requires `jax>=` the jaxlib release whose FFI headers
//! were used: XLA keeps older FFI API versions working (`c_api.h`: "at least 12 months"), while
//! handlers built with newer headers may need fields an older runtime lacks.

use std::path::PathBuf;

use serde::Deserialize;

use crate::config::{Bindings, PythonInfo, ToolConfig};

use crate::hint::Hint;
use crate::plan::BuildPlan;

/// The build requirement: 0.5 is the first jax with `jax.ffi` (`include_dir`, `ffi_call`,
/// `register_ffi_target`).
pub(crate) const REQUIREMENT: &str = "jax>=0.5";
/// nanobind, which JAX's own FFI examples use for the modules handing out handler capsules.
pub(crate) const NANOBIND: &str = "nanobind>=2.0";

/// What the probe reports, plus the FFI API version read from the headers.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub(crate) struct JaxInfo {
    /// `jax.__version__`.
    pub(crate) version: String,
    /// `jaxlib.__version__`: the headers come from jaxlib.
    pub(crate) jaxlib: String,
    /// `jax.ffi.include_dir()`.
    pub(crate) include_dir: PathBuf,
    /// `(XLA_FFI_API_MAJOR, XLA_FFI_API_MINOR)` of `xla/ffi/api/c_api.h` there.
    #[serde(skip)]
    pub(crate) ffi_api: Option<(u32, u32)>,
}

impl JaxInfo {
    /// `jax>=0.10.2` for jaxlib `0.10.2` (a local or pre-release part dropped).
    pub(crate) fn requirement(&self) -> String {
        requirement_for(&self.jaxlib)
    }
}

/// The floor a module built with jaxlib `jaxlib`'s FFI headers needs: `jax>=` that release's
/// first three parts (a local or pre-release part dropped, and a hotfix's fourth part: jaxlib
/// 0.12.0.1 gives `jax>=0.12.0`, whose FFI headers are the same). An older jax's XLA passes an
/// older FFI API, which the handler refuses at its first call.
pub(crate) fn requirement_for(jaxlib: &str) -> String {
    let release: Vec<&str> = jaxlib
        .split(['+', 'a', 'b', 'r', 'd'])
        .next()
        .unwrap_or("")
        .split('.')
        .filter(|p| !p.is_empty())
        .take(3)
        .collect();
    format!("jax>={}", release.join("."))
}

/// Bytes every XLA FFI handler carries in its read-only data, whatever built it: the struct
/// name its call-frame size check reports (`xla/ffi/api/api.h`: `StructSizeIsGreaterOrEqual(
/// call_frame->api, "XLA_FFI_CallFrame", ...)`). How a repair tells a JAX extension from a
/// plain one: nothing links jaxlib.
pub(crate) const FFI_HANDLER_MARK: &[u8] = b"XLA_FFI_CallFrame";

#[derive(Debug, thiserror::Error)]
pub(crate) enum JaxError {
    #[error("`bindings = \"jax\"`: jax was not found in the build environment; searched: {}", probes.join("; "))]
    NotFound { probes: Vec<String> },
    #[error("`bindings = \"jax\"`: jax {version} has no `jax.ffi.include_dir()` (the `jax.ffi` module came with jax 0.5)")]
    TooOld { version: String },
    #[error("`bindings = \"jax\"`: asking the jax in {} about itself with {} failed: {message}", jax.display(), python.display())]
    Probe {
        python: PathBuf,
        jax: PathBuf,
        message: String,
    },
    #[error("`bindings = \"jax\"`: jax.ffi.include_dir() is {}, which has no xla/ffi/api/ffi.h", dir.display())]
    NoHeaders { dir: PathBuf },
}

impl Hint for JaxError {
    fn hints(&self) -> Vec<String> {
        match self {
            JaxError::NotFound { .. } => vec![format!(
                "with build isolation (the default) the frontend installs jax; with `--no-build-isolation`, `pip install \"{REQUIREMENT}\" \"{NANOBIND}\"` into the environment that builds"
            )],
            JaxError::TooOld { .. } => vec![format!(
                "upgrade jax in the environment that builds: `pip install -U \"{REQUIREMENT}\"` (or build with build isolation)"
            )],
            JaxError::Probe { .. } => vec![
                "check that `python -c \"import jax.ffi\"` works in the environment that builds (set CUDAWHEEL_DEBUG=1 for details)".into(),
            ],
            JaxError::NoHeaders { .. } => vec![
                "reinstall jaxlib (`pip install --force-reinstall jaxlib`): its wheel ships the XLA FFI headers".into(),
            ],
        }
    }
}

/// Whether the project uses jax: the top-level `bindings` (shared libraries included) or any
/// extension's.
pub(crate) fn wanted(tool: &ToolConfig) -> bool {
    tool.bindings.value == Bindings::Jax
        || tool
            .extensions
            .iter()
            .any(|e| e.bindings == Some(Bindings::Jax))
}

const PROBE: &str = r#"
import json, os, sys
sys.path[:0] = json.loads(sys.argv[1])
try:
    import jax, jaxlib
except Exception as e:
    print(json.dumps({"error": "%s: %s" % (type(e).__name__, e)}))
    raise SystemExit(0)
try:
    import jax.ffi
    include = jax.ffi.include_dir()
except (ImportError, AttributeError):
    print(json.dumps({"too_old": jax.__version__}))
    raise SystemExit(0)
print(json.dumps({"version": jax.__version__, "jaxlib": jaxlib.__version__, "include_dir": include}))
"#;

/// The first `sys.path` entry holding a `jax` package.
pub(crate) fn locate(sys_path: &[PathBuf]) -> Result<PathBuf, JaxError> {
    super::probe::find_package(sys_path, "jax", &["__init__.py"])
        .map(|(_, dir)| dir)
        .map_err(|probes| JaxError::NotFound { probes })
}

/// `(XLA_FFI_API_MAJOR, XLA_FFI_API_MINOR)` from `c_api.h`'s text.
pub(crate) fn ffi_api_version(c_api: &str) -> Option<(u32, u32)> {
    let read = |name: &str| {
        c_api.lines().find_map(|l| {
            let rest = l.trim().strip_prefix("#define ")?.strip_prefix(name)?;
            rest.trim().parse::<u32>().ok()
        })
    };
    Some((read("XLA_FFI_API_MAJOR")?, read("XLA_FFI_API_MINOR")?))
}

/// Locates jax on `sys.path` and runs the probe with the build's interpreter.
pub(crate) fn probe(python: &PythonInfo) -> Result<JaxInfo, JaxError> {
    let dir = locate(&python.sys_path)?;
    let exe = super::probe::interpreter(python);
    let failed = |message: String| JaxError::Probe {
        python: exe.clone(),
        jax: dir.clone(),
        message,
    };
    let value = super::probe::run(python, PROBE, &[("JAX_PLATFORMS", "cpu")]).map_err(failed)?;
    if let Some(e) = value.get("error").and_then(|e| e.as_str()) {
        return Err(failed(format!("`import jax` failed: {e}")));
    }
    if let Some(v) = value.get("too_old").and_then(|v| v.as_str()) {
        return Err(JaxError::TooOld { version: v.into() });
    }
    let mut info: JaxInfo =
        serde_json::from_value(value).map_err(|e| failed(format!("unreadable answer: {e}")))?;
    if !info.include_dir.join("xla/ffi/api/ffi.h").is_file() {
        return Err(JaxError::NoHeaders {
            dir: info.include_dir,
        });
    }
    info.ffi_api = std::fs::read_to_string(info.include_dir.join("xla/ffi/api/c_api.h"))
        .ok()
        .and_then(|t| ffi_api_version(&t));
    Ok(info)
}

/// Puts jax's include folder on every target's include path, mapped away in debug info.
pub(crate) fn apply(plan: &mut BuildPlan, info: &JaxInfo) {
    let dir = &info.include_dir;
    let map = format!("-ffile-prefix-map={}/=jaxlib/include/", dir.display());
    for target in &mut plan.targets {
        if !target.include_dirs.contains(dir) {
            target.include_dirs.push(dir.clone());
        }
        target.cxx_flags.insert(0, map.clone());
        target.nvcc_flags.insert(0, map.replace(',', "\\,"));
        target.nvcc_flags.insert(0, "-Xcompiler".into());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(jaxlib: &str) -> JaxInfo {
        JaxInfo {
            version: jaxlib.into(),
            jaxlib: jaxlib.into(),
            include_dir: "/site/jaxlib/include".into(),
            ffi_api: None,
        }
    }

    #[test]
    fn requirement_is_the_jaxlib_release() {
        assert_eq!(info("0.10.2").requirement(), "jax>=0.10.2");
        assert_eq!(info("0.10.3.dev20260101").requirement(), "jax>=0.10.3");
        assert_eq!(info("0.11.0rc1").requirement(), "jax>=0.11.0");
        assert_eq!(info("0.10.2+cuda13").requirement(), "jax>=0.10.2");
        assert_eq!(info("0.12.0.1").requirement(), "jax>=0.12.0");
    }

    #[test]
    fn ffi_api_version_from_c_api_h() {
        let text = "// c
#define XLA_FFI_API_MAJOR 0

#define XLA_FFI_API_MINOR 3
";
        assert_eq!(ffi_api_version(text), Some((0, 3)));
        assert_eq!(
            ffi_api_version(
                "#define XLA_FFI_API_MAJOR 0
"
            ),
            None
        );
    }

    #[test]
    fn locate_needs_a_jax_package() {
        let site = tempfile::tempdir().unwrap();
        let err = locate(&[site.path().to_path_buf()]).unwrap_err();
        assert!(
            err.to_string().contains("no `jax` package in any of the 1"),
            "{err}"
        );
        std::fs::create_dir_all(site.path().join("jax")).unwrap();
        let err = locate(&[site.path().to_path_buf()]).unwrap_err();
        assert!(err.to_string().contains("no __init__.py"), "{err}");
        std::fs::write(site.path().join("jax/__init__.py"), "").unwrap();
        assert_eq!(
            locate(&[site.path().to_path_buf()]).unwrap(),
            site.path().join("jax")
        );
    }

    #[test]
    fn wanted_by_the_top_level_or_an_extension() {
        let parse =
            |t: &str| ToolConfig::parse(&toml::from_str(t).unwrap(), &Default::default()).unwrap();
        assert!(wanted(&parse(r#"bindings = "jax""#)));
        assert!(wanted(&parse(
            r#"
            [[extension]]
            name = "a._x"
            sources = ["x.cc"]
            bindings = "jax"
            "#
        )));
        assert!(!wanted(&parse(r#"bindings = "nanobind""#)));
    }
}
