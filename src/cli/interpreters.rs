//! `python -m cudawheel wheel --python PY`: the facts of another interpreter, which need not
//! have cudawheel. It runs the same fixed script the backend's own interpreter reports itself
//! with (`python/cudawheel/_interpreter.py`, which `cudawheel/__init__.py` imports), passed
//! with `-c`, and reads its last line.

use std::process::Command;

use super::error::CliError;
use crate::config::PythonInfo;

/// The script, as shipped in the backend's Python package: run as `__main__`, it prints its
/// interpreter's facts as one JSON line.
const SCRIPT: &str = include_str!("../../python/cudawheel/_interpreter.py");

/// The facts `python` (a path, or a name on `PATH`) reports about itself.
pub(super) fn facts(python: &str) -> Result<PythonInfo, CliError> {
    #[allow(clippy::disallowed_methods)] // the interpreter a wheel is built for, asked about itself
    let out = Command::new(python)
        .args(["-c", SCRIPT])
        .output()
        .map_err(|e| CliError::CannotRun {
            python: python.into(),
            reason: e.to_string(),
        })?;
    if !out.status.success() {
        return Err(CliError::NoReport {
            python: python.into(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        });
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout.trim().lines().last().unwrap_or_default();
    serde_json::from_str(last).map_err(|e| CliError::BadReport {
        python: python.into(),
        reason: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_interpreter_cannot_run() {
        let err = facts("/no/such/python").unwrap_err();
        assert!(err
            .to_string()
            .starts_with("--python /no/such/python: cannot run it ("));
    }

    #[test]
    fn the_script_prints_its_facts_as_main() {
        assert!(SCRIPT.contains("if __name__ == \"__main__\":"));
    }
}
