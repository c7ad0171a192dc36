//! Packages whose own Python code loads their CUDA libraries (ctypes, `dlopen`; llama-cpp-python
//! loads `libllama.so`, which needs `libggml-cuda.so`): no extension module stands in front of
//! such a library, so no generated loader would run the GPU check. With the check on, each
//! shared library that links or carries CUDA and that no wrapped extension reaches gets it
//! from its top-level package's `__init__.py`: one statement, inserted after the docstring and
//! the `from __future__` imports, calls `_cuda_libs.preload()` (the driver, every visible GPU
//! against the package's GPU code, NVIDIA's libraries from their wheels, else the error that
//! names the wheel to install). delvewheel edits `__init__.py` the same way on Windows.

use std::collections::{BTreeMap, BTreeSet};

use super::loader::{grafted_or_data, Extension};
use super::needs::Needs;
use super::wheel_in::Member;
use super::RepairSettings;
use crate::audit::elf_rules::ElfReport;
use crate::inspect::fatbin::GpuCode;

/// Inserts the preload into the `__init__.py` of each package that needs it; returns the
/// status lines (what got the check, and a library no `__init__.py` can stand in front of).
pub(super) fn apply(
    members: &mut [Member],
    reports: &BTreeMap<String, ElfReport>,
    gpu: &BTreeMap<String, GpuCode>,
    needs: &Needs,
    settings: &RepairSettings,
    extensions: &[Extension],
) -> Vec<String> {
    if !settings.check_gpu || !needs.links_cuda() {
        return Vec::new();
    }
    let reached: BTreeSet<&str> = extensions
        .iter()
        .flat_map(|e| e.reach.files.iter().map(String::as_str))
        .collect();
    let mut by_package: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (path, report) in reports {
        let cuda =
            gpu.contains_key(path) || report.needed.iter().any(|l| needs.nvidia.contains_key(l));
        // A wrapped extension reaches itself: its loader runs the check.
        if !cuda || reached.contains(path.as_str()) || grafted_or_data(path) {
            continue;
        }
        if let Some((package, _)) = path.split_once('/') {
            by_package
                .entry(package.to_string())
                .or_default()
                .push(path.clone());
        }
    }
    let mut status = Vec::new();
    for (package, libs) in by_package {
        let init = format!("{package}/__init__.py");
        let Some(m) = members.iter_mut().find(|m| m.path == init) else {
            status.push(format!(
                "{} link CUDA and no extension module loads them, but {package}/ has no __init__.py: nothing runs the GPU check before them",
                libs.join(", ")
            ));
            continue;
        };
        let text = String::from_utf8_lossy(&m.bytes).into_owned();
        m.bytes = with_preload(&text, &package).into_bytes();
        status.push(format!(
            "{init}: the GPU check and NVIDIA's libraries before {} (loaded by the package's own code)",
            libs.join(", ")
        ));
    }
    status
}

/// `text` with the preload statement after its docstring and `from __future__` imports.
fn with_preload(text: &str, package: &str) -> String {
    let at = header_end(text);
    let sep = if at == 0 || text[..at].ends_with('\n') {
        ""
    } else {
        "\n"
    };
    format!(
        "{}{sep}# Added by `cudawheel repair`: the GPU check and NVIDIA's libraries before this package's\n\
         # code loads its CUDA libraries (CUDAWHEEL_SKIP_GPU_CHECK=1 skips the check).\n\
         __import__(\"{package}._cuda_libs\", fromlist=[\"preload\"]).preload()\n{}",
        &text[..at],
        &text[at..]
    )
}

/// The byte offset after the module docstring and the `from __future__` imports (what
/// Python requires before a future import), blank and comment lines among them included.
fn header_end(text: &str) -> usize {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let (mut i, mut end, mut doc_seen) = (0, 0, false);
    let offset = |n: usize| lines[..n].iter().map(|l| l.len()).sum::<usize>();
    while i < lines.len() {
        let t = lines[i].trim();
        if t.is_empty() || t.starts_with('#') {
            i += 1;
            continue;
        }
        if !doc_seen && end == 0 {
            if let Some(quote) = string_start(t) {
                doc_seen = true;
                i = closing_line(&lines, i, quote) + 1;
                end = offset(i);
                continue;
            }
        }
        if t.starts_with("from __future__") {
            let open = t.contains('(') && !t.contains(')');
            let mut j = i;
            while (open && !lines[j].contains(')') || lines[j].trim_end().ends_with('\\'))
                && j + 1 < lines.len()
            {
                j += 1;
            }
            i = j + 1;
            end = offset(i);
            continue;
        }
        break;
    }
    end
}

/// The quote a statement that is a string literal starts with (`"""`, `'''`, `"` or `'`, after
/// an `r`/`u` prefix).
fn string_start(t: &str) -> Option<&'static str> {
    let t = t.strip_prefix(['r', 'R', 'u', 'U']).unwrap_or(t);
    ["\"\"\"", "'''", "\"", "'"]
        .into_iter()
        .find(|q| t.starts_with(q))
}

/// The line where the string opened on line `i` with `quote` closes.
fn closing_line(lines: &[&str], i: usize, quote: &str) -> usize {
    let first = lines[i].trim();
    let first = first.strip_prefix(['r', 'R', 'u', 'U']).unwrap_or(first);
    if first[quote.len()..].contains(quote) || quote.len() == 1 {
        return i;
    }
    (i + 1..lines.len())
        .find(|&j| lines[j].contains(quote))
        .unwrap_or(lines.len() - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: &str = "__import__(\"pkg._cuda_libs\", fromlist=[\"preload\"]).preload()\n";

    fn before_line(text: &str) -> String {
        let out = with_preload(text, "pkg");
        let at = out.find(LINE).expect("the statement");
        let head = &out[..at];
        head[..head.rfind("# Added by").unwrap()].to_string()
    }

    #[test]
    fn the_call_goes_after_the_docstring_and_the_future_imports() {
        let text = "#!/usr/bin/env python\n\"\"\"Docs\n\nmore.\n\"\"\"\n\nfrom __future__ import (\n    annotations,\n)\nfrom __future__ import division\nimport ctypes\n";
        assert_eq!(
            before_line(text),
            "#!/usr/bin/env python\n\"\"\"Docs\n\nmore.\n\"\"\"\n\nfrom __future__ import (\n    annotations,\n)\nfrom __future__ import division\n"
        );
        assert!(with_preload(text, "pkg").ends_with(&format!("{LINE}import ctypes\n")));
        // A one-line docstring, then code; then no docstring at all; then an empty file.
        assert_eq!(
            before_line("r'''One line.'''\nimport os\n"),
            "r'''One line.'''\n"
        );
        assert_eq!(before_line("import os\n\"\"\"not a docstring\"\"\"\n"), "");
        assert_eq!(before_line(""), "");
        // No newline at the end of the header: one is added before the comment.
        assert!(with_preload("\"\"\"Doc.\"\"\"", "pkg").starts_with("\"\"\"Doc.\"\"\"\n# Added by"));
    }

    #[test]
    fn the_result_still_compiles_where_python_is_strict() {
        // `from __future__` must stay before any other statement: the inserted call never
        // precedes one (control: a future import after the call would be a SyntaxError).
        let out = with_preload("from __future__ import annotations\nx = 1\n", "pkg");
        let call = out.find(LINE).unwrap();
        assert!(out.find("from __future__").unwrap() < call);
    }
}
