//! `build-dir/build.log`: every step that ran in the last build that ran any, with its command,
//! its time and everything the compiler printed. What a successful compile prints is mostly
//! not for the console: ptxas's `-v` statistics (a project's `--ptxas-options=-v` gives a few
//! lines per kernel and arch), nvlink's info lines, notes. Those stay in the log; output with
//! a real warning is also shown as `cudawheel: warning:` (minus the statistics).

use std::fs::File;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The build log, created (emptied) when the first step of a build finishes.
pub(crate) struct BuildLog {
    path: PathBuf,
    file: Mutex<Option<File>>,
}

impl BuildLog {
    pub(crate) fn new(build_dir: &Path) -> BuildLog {
        BuildLog {
            path: build_dir.join("build.log"),
            file: Mutex::new(None),
        }
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one finished step. A log that cannot be written is not a build failure.
    pub(crate) fn step(&self, label: &str, command: &str, secs: f64, output: &str) {
        let Ok(mut file) = self.file.lock() else {
            return;
        };
        if file.is_none() {
            *file = File::create(&self.path).ok();
        }
        if let Some(f) = file.as_mut() {
            let _ = write!(f, "== {label} ({secs:.1} s)\n$ {command}\n{output}");
            if !output.is_empty() && !output.ends_with('\n') {
                let _ = writeln!(f);
            }
        }
    }
}

/// The part of a successful step's output to show as a warning: `None` when no line is a
/// warning (or an error); else the output without the statistics lines.
pub(crate) fn warnings(output: &str) -> Option<String> {
    let mut kept = Vec::new();
    let mut in_statistics = false;
    let mut any = false;
    for line in output.lines() {
        in_statistics = is_statistics(line, in_statistics);
        if in_statistics {
            continue;
        }
        let lower = line.to_ascii_lowercase();
        any |= lower.contains("warning") || lower.contains("error");
        kept.push(line);
    }
    any.then(|| kept.join("\n"))
}

/// ptxas's `-v` lines (`ptxas info    : Used 12 registers, ...`), nvlink's and fatbinary's
/// info lines, and the indented lines continuing them (`    0 bytes stack frame, ...`).
fn is_statistics(line: &str, continues: bool) -> bool {
    let t = line.trim_start();
    ["ptxas info", "nvlink info", "fatbinary info"]
        .iter()
        .any(|p| t.starts_with(p))
        || (continues && line.starts_with(char::is_whitespace) && !t.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTXAS: &str = "ptxas info    : 0 bytes gmem\n\
ptxas info    : Compiling entry function '_Z6kernelPf' for 'sm_80'\n\
ptxas info    : Function properties for _Z6kernelPf\n    \
0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n\
ptxas info    : Used 10 registers, used 0 barriers, 360 bytes cmem[0]\n";

    #[test]
    fn statistics_are_not_warnings_and_warnings_stay() {
        assert_eq!(warnings(PTXAS), None);
        assert_eq!(warnings(""), None);
        assert_eq!(
            warnings("csrc/a.cpp:3:5: note: the ABI changed in GCC 7.1\n"),
            None
        );
        let mixed = format!("{PTXAS}csrc/k.cu(4): warning #177-D: variable \"x\" was declared but never referenced\n");
        assert_eq!(
            warnings(&mixed).as_deref(),
            Some("csrc/k.cu(4): warning #177-D: variable \"x\" was declared but never referenced")
        );
    }

    #[test]
    fn the_log_holds_every_step_and_starts_over_each_build() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("build.log"), "an older build\n").unwrap();
        let log = BuildLog::new(tmp.path());
        log.step("nvcc csrc/k.cu", "nvcc -c csrc/k.cu", 1.25, PTXAS);
        log.step("link x", "c++ -shared", 0.5, "");
        let text = std::fs::read_to_string(log.path()).unwrap();
        assert!(
            text.starts_with("== nvcc csrc/k.cu (1.2 s)\n$ nvcc -c csrc/k.cu\nptxas info"),
            "{text}"
        );
        assert!(
            text.ends_with("== link x (0.5 s)\n$ c++ -shared\n"),
            "{text}"
        );
        assert!(!text.contains("older"));
    }
}
