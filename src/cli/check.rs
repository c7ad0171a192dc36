//! `check PACKAGE|WHEEL`: whether this machine's driver and GPUs can run a package or wheel.
//! The facts come from the package's own generated helpers, run in the interpreter that would
//! import it (`cudawheel/_check.py`: the driver, NVML's GPUs, the helper's verdict per GPU);
//! this decides and renders: exit status 1 on a driver below a floor or a GPU the package has
//! no code for, 2 when there is nothing to check.

use std::fmt::Write as _;

use serde::Deserialize;

use super::Output;

/// What `_check.py` reports: an error finding the helpers, or each helper's facts.
#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum Facts {
    Error(String),
    Helpers(Vec<HelperFacts>),
}

#[derive(Deserialize)]
struct HelperFacts {
    package: String,
    cuda: (u32, u32),
    floors: Vec<(String, (u32, u32))>,
    driver_status: String,
    /// The import's error text when the driver is below a floor; the rest is not asked then.
    driver_problem: Option<String>,
    #[serde(default)]
    other_copies: Vec<String>,
    #[serde(default)]
    driver_version: Option<i64>,
    #[serde(default)]
    gpus: Vec<GpuFacts>,
    /// A wheel holding several CUDA majors: which build this interpreter would load, and why.
    #[serde(default)]
    cuda_choice: Option<CudaChoiceFacts>,
}

/// What the package's `_cuda_select.py` chose here (`choice()`), among the majors it holds.
#[derive(Deserialize)]
struct CudaChoiceFacts {
    majors: Vec<u32>,
    major: u32,
    reason: String,
}

#[derive(Deserialize)]
struct GpuFacts {
    index: serde_json::Value,
    name: serde_json::Value,
    sm: serde_json::Value,
    verdict: String,
    message: Option<String>,
}

/// The verdicts that stop the import.
const FAILING: [&str; 2] = ["no-code", "ptx-driver-too-old"];

pub(crate) fn check(what: &str, facts_json: &str) -> Output {
    let facts: Facts = match serde_json::from_str(facts_json) {
        Ok(f) => f,
        Err(e) => return Output::usage(format!("check: internal error: unreadable facts: {e}")),
    };
    let helpers = match facts {
        Facts::Error(err) => return Output::usage(format!("check: {err}")),
        Facts::Helpers(h) if h.is_empty() => {
            return Output::usage(format!(
                "check: {what} holds no cudawheel helper (_cuda_libs.py): nothing to check"
            ))
        }
        Facts::Helpers(h) => h,
    };
    let mut out = Output::default();
    for h in &helpers {
        if !render(h, &mut out.stdout) {
            out.code = 1;
        }
    }
    out
}

/// One helper's lines; false when it fails.
fn render(h: &HelperFacts, text: &mut String) -> bool {
    let (major, minor) = h.cuda;
    if let Some(c) = &h.cuda_choice {
        let majors: Vec<String> = c.majors.iter().map(u32::to_string).collect();
        let _ = writeln!(
            text,
            "{}: holds builds for CUDA {}; this interpreter loads the CUDA {} build: {}",
            h.package,
            majors.join(", "),
            c.major,
            c.reason
        );
    }
    let _ = writeln!(text, "{}: built with CUDA {major}.{minor}", h.package);
    for (reason, (major, minor)) in &h.floors {
        let _ = writeln!(text, "  needs a driver for CUDA {major}.{minor}+: {reason}");
    }
    let _ = writeln!(text, "  driver: {}", h.driver_status);
    if let Some(problem) = h.driver_problem.as_deref().filter(|p| !p.is_empty()) {
        let _ = writeln!(text, "  FAIL {problem}");
        return false;
    }
    for sentence in &h.other_copies {
        let _ = writeln!(text, "  WARN {sentence}");
    }
    if h.driver_version.is_some() && h.gpus.is_empty() {
        text.push_str("  GPUs: none visible through NVML (nothing checked)\n");
    }
    let mut ok = true;
    for g in &h.gpus {
        ok &= !FAILING.contains(&g.verdict.as_str());
        let detail = match g.message.as_deref().filter(|m| !m.is_empty()) {
            Some(m) => format!(": {}", m.lines().next().unwrap_or_default()),
            None => String::new(),
        };
        let _ = writeln!(
            text,
            "  GPU {} ({}, {}): {}{detail}",
            as_python(&g.index),
            as_python(&g.name),
            as_python(&g.sm),
            g.verdict
        );
    }
    ok
}

/// A value as Python's `str()` shows it (strings bare, `None` for null).
fn as_python(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => "None".into(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GPUS: &str = r#"{"helpers": [{"package": "saxpy", "cuda": [13, 0],
        "floors": [["built with CUDA 13.0", [13, 0]]], "driver_status": "CUDA 13.0 (driver 580)",
        "driver_problem": null, "other_copies": [], "driver_version": 13000,
        "gpus": [{"index": 0, "name": "H100", "sm": "sm_90", "verdict": "no-code", "message": "no code\nmore"},
                 {"index": 1, "name": "A100", "sm": "sm_80", "verdict": "sass", "message": ""}]}]}"#;

    #[test]
    fn the_chosen_major_and_why_come_first() {
        let facts = r#"{"helpers": [{"package": "saxpy", "cuda": [12, 4], "floors": [],
            "driver_status": "no driver", "driver_problem": null,
            "cuda_choice": {"majors": [12, 13], "major": 12, "reason": "the CUDA 12 runtime wheel nvidia-cuda-runtime-cu12 is installed (/s/nvidia/cuda_runtime/lib/libcudart.so.12)"}}]}"#;
        let out = check("saxpy", facts);
        assert_eq!(out.code, 0, "{}", out.stdout);
        assert!(out.stdout.starts_with("saxpy: holds builds for CUDA 12, 13; this interpreter loads the CUDA 12 build: the CUDA 12 runtime wheel nvidia-cuda-runtime-cu12 is installed (/s/nvidia/cuda_runtime/lib/libcudart.so.12)\nsaxpy: built with CUDA 12.4\n"), "{}", out.stdout);
    }

    #[test]
    fn a_gpu_without_code_fails() {
        let out = check("saxpy", GPUS);
        assert_eq!(out.code, 1);
        assert_eq!(
            out.stdout,
            "saxpy: built with CUDA 13.0\n  needs a driver for CUDA 13.0+: built with CUDA 13.0\n  \
             driver: CUDA 13.0 (driver 580)\n  GPU 0 (H100, sm_90): no-code: no code\n  GPU 1 (A100, sm_80): sass\n"
        );
    }

    #[test]
    fn nothing_to_check_and_errors_are_status_2() {
        let none = check("x.whl", r#"{"helpers": []}"#);
        assert_eq!(
            (none.code, none.stderr.as_str()),
            (
                2,
                "check: x.whl holds no cudawheel helper (_cuda_libs.py): nothing to check\n"
            )
        );
        let err = check(
            "nope",
            r#"{"error": "no package or module 'nope' on sys.path"}"#,
        );
        assert_eq!(
            (err.code, err.stderr.as_str()),
            (2, "check: no package or module 'nope' on sys.path\n")
        );
    }

    #[test]
    fn a_driver_below_a_floor_fails_before_the_gpus() {
        let facts = r#"{"helpers": [{"package": "p", "cuda": [13, 0], "floors": [], "driver_status": "CUDA 12.4",
            "driver_problem": "p needs a driver for CUDA 13.0"}]}"#;
        let out = check("p", facts);
        assert_eq!(out.code, 1);
        assert!(out
            .stdout
            .ends_with("  driver: CUDA 12.4\n  FAIL p needs a driver for CUDA 13.0\n"));
    }
}
