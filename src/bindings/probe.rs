//! Asking a framework about itself: a small Python script run with the build's own interpreter
//! (`sys.path` as the build sees it, no user site), answering one JSON line. torch's and jax's
//! probes use it; each reads its own answer.

use std::path::PathBuf;
use std::process::Command;

use crate::config::PythonInfo;

/// The interpreter a probe runs with.
pub(crate) fn interpreter(python: &PythonInfo) -> PathBuf {
    python
        .executable
        .clone()
        .unwrap_or_else(|| PathBuf::from("python3"))
}

/// Runs `script` (given `sys.path` as JSON in `argv[1]`) and returns its last JSON line, parsed;
/// an `Err` holds what went wrong (the end of stderr and the exit status, or why the answer is
/// unreadable).
pub(crate) fn run(
    python: &PythonInfo,
    script: &str,
    env: &[(&str, &str)],
) -> Result<serde_json::Value, String> {
    let path_json = serde_json::to_string(&python.sys_path).unwrap_or_else(|_| "[]".into());
    #[allow(clippy::disallowed_methods)] // asking a framework about itself is part of discovery
    let out = Command::new(interpreter(python))
        .args(["-c", script, &path_json])
        .env("PYTHONNOUSERSITE", "1")
        .envs(env.iter().copied())
        .output()
        .map_err(|e| e.to_string())?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout.lines().rev().find(|l| l.starts_with('{'));
    let Some(line) = last.filter(|_| out.status.success()) else {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = stderr.lines().rev().take(5).collect();
        return Err(format!(
            "{} ({})",
            tail.into_iter().rev().collect::<Vec<_>>().join(" | "),
            out.status
        ));
    };
    serde_json::from_str(line).map_err(|e| format!("unreadable answer: {e}"))
}

/// The first `sys.path` entry holding the package `name` with every one of its `markers`
/// (files relative to the package folder): `(the entry, the package folder)`. Otherwise what
/// was seen where, for the error.
pub(crate) fn find_package(
    sys_path: &[PathBuf],
    name: &str,
    markers: &[&str],
) -> Result<(PathBuf, PathBuf), Vec<String>> {
    let mut probes = Vec::new();
    for site in sys_path {
        let root = site.join(name);
        if !root.is_dir() {
            continue;
        }
        match markers.iter().find(|m| !root.join(m).is_file()) {
            Some(missing) => probes.push(format!("{}: no {missing}", root.display())),
            None => return Ok((site.clone(), root)),
        }
    }
    if probes.is_empty() {
        probes.push(format!(
            "no `{name}` package in any of the {} sys.path entries",
            sys_path.len()
        ));
    }
    Err(probes)
}
