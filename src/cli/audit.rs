//! `audit WHEEL...`: each wheel's violations, the GPU code of each ELF file, each torch
//! extension's ABI and the driver floors its helpers recorded; exit status 1 when a wheel fails
//! (or cannot be read). `doctor WHEEL`: the GPU-code lines alone.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::{abspath, helpers, pretty_json, Output};
use crate::commands;
use crate::inspect::fatbin::GpuCode;

/// One wheel in `audit --json`.
#[derive(serde::Serialize)]
struct Audited<'a> {
    wheel: &'a str,
    ok: bool,
    violations: Vec<String>,
    gpu_code: BTreeMap<String, GpuCode>,
    torch_abi: BTreeMap<String, String>,
    driver_floors: Vec<DriverFloor>,
}

#[derive(serde::Serialize)]
struct DriverFloor {
    package: String,
    reason: String,
    cuda: (u32, u32),
}

pub(crate) fn audit(wheels: &[String], json: bool) -> Output {
    let mut out = Output::default();
    let mut failed = false;
    let mut report = Vec::new();
    for wheel in wheels {
        let audited = match audit_one(wheel) {
            Ok(a) => a,
            Err(e) => {
                out.stderr.push_str(&e.stderr);
                failed = true;
                continue;
            }
        };
        failed |= !audited.ok;
        if !json {
            out.stdout.push_str(&render(&audited));
        }
        report.push(audited);
    }
    if json {
        out.stdout = format!("{}\n", pretty_json(&report));
    }
    out.code = i32::from(failed);
    out
}

fn audit_one(wheel: &str) -> Result<Audited<'_>, Output> {
    let path = abspath(wheel);
    let found = commands::audit(&path).map_err(|e| Output::failed(&e))?;
    let mut driver_floors = Vec::new();
    for helper in helpers::of_wheel(&path).map_err(|e| Output::failed(&e))? {
        let package = helper.owner();
        for (reason, cuda) in helper.floors() {
            driver_floors.push(DriverFloor {
                package: package.clone(),
                reason,
                cuda,
            });
        }
    }
    Ok(Audited {
        wheel,
        ok: found.violations.is_empty(),
        violations: found.violations,
        gpu_code: found.gpu_code,
        torch_abi: found.torch_abi,
        driver_floors,
    })
}

fn render(a: &Audited<'_>) -> String {
    let mut text = format!("{} {}\n", if a.ok { "OK  " } else { "FAIL" }, a.wheel);
    for violation in &a.violations {
        let _ = writeln!(text, "  {violation}");
    }
    for (path, code) in &a.gpu_code {
        let _ = writeln!(text, "{}", gpu_code_line(path, code));
    }
    for (path, line) in &a.torch_abi {
        let _ = writeln!(text, "  torch ABI {path}: {line}");
    }
    for f in &a.driver_floors {
        let (major, minor) = f.cuda;
        let _ = writeln!(
            text,
            "  driver floor CUDA {major}.{minor}+ ({}): {}",
            f.package, f.reason
        );
    }
    text
}

/// `  GPU code <elf>: SASS sm_80 sm_90 | PTX compute_90 | PTX ISA 9.0: JIT needs a driver for CUDA 13.0+`.
fn gpu_code_line(path: &str, code: &GpuCode) -> String {
    let or_dash = |archs: &[String]| match archs {
        [] => "-".to_string(),
        archs => archs.join(" "),
    };
    let mut line = format!(
        "  GPU code {path}: SASS {} | PTX {}",
        or_dash(&code.sass),
        or_dash(&code.ptx)
    );
    if let Some((major, minor)) = code.ptx_toolkit {
        let isa = code.ptx_isa.as_deref().unwrap_or("None");
        let _ = write!(
            line,
            " | PTX ISA {isa}: JIT needs a driver for CUDA {major}.{minor}+"
        );
    }
    line
}

/// `doctor WHEEL`: the GPU-code lines `audit` prints for that wheel.
pub(super) fn gpu_code_only(wheel: &str) -> Output {
    match commands::audit(&abspath(wheel)) {
        Ok(found) => {
            let mut text = format!("GPU code of {wheel}:\n");
            for (path, code) in &found.gpu_code {
                let _ = writeln!(text, "{}", gpu_code_line(path, code));
            }
            Output::text(text)
        }
        Err(e) => Output::failed(&e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpu_code_lines_name_sass_ptx_and_the_jit_floor() {
        let code = GpuCode {
            sass: vec!["sm_80".into(), "sm_90".into()],
            ptx: vec!["compute_90".into()],
            ptx_isa: Some("9.0".into()),
            ptx_toolkit: Some((13, 0)),
        };
        assert_eq!(
            gpu_code_line("p/_core.so", &code),
            "  GPU code p/_core.so: SASS sm_80 sm_90 | PTX compute_90 | PTX ISA 9.0: JIT needs a driver for CUDA 13.0+"
        );
        let sass_only = GpuCode {
            ptx: vec![],
            ptx_isa: None,
            ptx_toolkit: None,
            ..code
        };
        assert_eq!(
            gpu_code_line("p/_core.so", &sass_only),
            "  GPU code p/_core.so: SASS sm_80 sm_90 | PTX -"
        );
    }
}
