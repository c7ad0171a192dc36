//! `size DIR`: what a folder of wheels costs on PyPI. Each wheel's bytes and GPU code, each
//! project's total and what one library wheel would save; exit status 1 when a file is above
//! PyPI's default file limit (`config::MAX_WHEEL_SIZE`). A project above PyPI's default project
//! limit is named too.

use std::fmt::Write as _;
use std::path::Path;

use super::{abspath, pretty_json, Output};
use crate::audit::size::{human, Release};
use crate::commands;
use crate::config::MAX_WHEEL_SIZE;

/// PyPI's default limit on a project's total size (10 GB).
pub(crate) const PYPI_PROJECT_LIMIT: u64 = 10_000_000_000;

pub(crate) fn size(folder: &str, json: bool) -> Output {
    if !Path::new(folder).is_dir() {
        return Output::usage(format!("size: {folder} is not a folder of wheels"));
    }
    match commands::size_report(&abspath(folder)) {
        Err(e) => Output::failed(&e),
        Ok(rep) if json => Output::text(format!("{}\n", pretty_json(&rep))),
        Ok(rep) => render(&rep),
    }
}

fn render(rep: &Release) -> Output {
    let mut out = Output::default();
    let text = &mut out.stdout;
    let width = rep
        .wheels
        .iter()
        .map(|w| w.wheel.chars().count())
        .chain([5])
        .max()
        .unwrap_or(5);
    let _ = writeln!(
        text,
        "{:<width$}  {:>13}  {:>13}",
        "wheel", "bytes", "GPU code"
    );
    for w in &rep.wheels {
        let mut flag = "";
        if w.bytes > MAX_WHEEL_SIZE {
            out.code = 1;
            flag = "  above PyPI's 100 MB file limit";
        }
        let (bytes, gpu) = (grouped(w.bytes), grouped(w.gpu_bytes));
        let _ = writeln!(text, "{:<width$}  {bytes:>13}  {gpu:>13}{flag}", w.wheel);
    }
    for p in &rep.projects {
        let _ = write!(
            text,
            "project {}: {} wheel(s), {} bytes ({}), GPU code {} bytes",
            p.project,
            p.wheels,
            grouped(p.bytes),
            human(p.bytes),
            grouped(p.gpu_bytes)
        );
        if p.duplicated_gpu_bytes > 0 {
            let _ = write!(
                text,
                "; the same GPU code is in several wheels: shipping it once, in one Python-independent \
                 library wheel, would save about {} bytes ({})",
                grouped(p.duplicated_gpu_bytes),
                human(p.duplicated_gpu_bytes)
            );
        }
        if p.bytes > PYPI_PROJECT_LIMIT {
            text.push_str("; above PyPI's 10 GB project limit");
        }
        text.push('\n');
    }
    let _ = writeln!(
        text,
        "total: {} wheel(s), {} bytes ({})",
        rep.wheels.len(),
        grouped(rep.total_bytes),
        human(rep.total_bytes)
    );
    out
}

/// `n` with a comma between each group of three digits (Python's `f"{n:,}"`).
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(d);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::size::{ProjectSize, WheelSize};

    #[test]
    fn numbers_are_grouped_as_python_does() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1000), "1,000");
        assert_eq!(grouped(100_000_100), "100,000,100");
    }

    #[test]
    fn a_file_above_the_limit_is_flagged_and_fails() {
        let rep = Release {
            wheels: vec![WheelSize {
                wheel: "huge-1-py3-none-any.whl".into(),
                bytes: MAX_WHEEL_SIZE + 1,
                gpu_bytes: 0,
            }],
            projects: vec![ProjectSize {
                project: "huge".into(),
                wheels: 1,
                bytes: MAX_WHEEL_SIZE + 1,
                gpu_bytes: 0,
                duplicated_gpu_bytes: 0,
            }],
            total_bytes: MAX_WHEEL_SIZE + 1,
        };
        let out = render(&rep);
        assert_eq!(out.code, 1);
        assert_eq!(
            out.stdout,
            "wheel                            bytes       GPU code\n\
             huge-1-py3-none-any.whl    100,000,001              0  above PyPI's 100 MB file limit\n\
             project huge: 1 wheel(s), 100,000,001 bytes (100.0 MB), GPU code 0 bytes\n\
             total: 1 wheel(s), 100,000,001 bytes (100.0 MB)\n"
        );
    }
}
