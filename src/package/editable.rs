//! What an editable (PEP 660) wheel holds besides nothing: the `.pth` that puts the source tree
//! on `sys.path` and, where the extensions run the GPU check at import, a start-up module
//! (`_editable_finder.py`, filled here) that runs each extension's import helper `preload()`
//! before the extension is loaded. In the source tree the extensions' `$ORIGIN` RPATH reaches
//! none of NVIDIA's wheels, so without it the loader refuses an extension before its init (and
//! the check) runs; with it an editable import says what an installed wheel says.

use std::fmt::Write as _;

use super::archive::Files;
use crate::bindings::import_check;
use crate::plan::{TargetKind, TargetPlan};

/// The finder's source: a real Python module (linted with the rest) whose marked line `module`
/// fills; the marker is replaced whole, so the output is exactly the data.
const FINDER: &str = include_str!("_editable_finder.py");

/// The start-up module's name for the distribution whose file-name stem is `stem`.
fn finder_module(stem: &str) -> String {
    format!("_cudawheel_editable_{stem}")
}

/// `(extension module, its import helper)` for every extension of `targets`.
fn preload_first(targets: &[TargetPlan]) -> Vec<(String, String)> {
    targets
        .iter()
        .filter(|t| t.kind == TargetKind::Extension)
        .map(|t| (t.module.clone(), import_check::helper_module(&t.module)))
        .collect()
}

/// The finder module's text for `pairs` (extension module, helper).
fn finder_source(pairs: &[(String, String)]) -> String {
    let mut table = String::new();
    for (module, helper) in pairs {
        let _ = writeln!(table, "    {module:?}: {helper:?},");
    }
    FINDER
        .replace("@VERSION@", env!("CARGO_PKG_VERSION"))
        .replace("    # @PRELOAD_FIRST@\n", &table)
}

/// Adds the editable wheel's files for the distribution `stem` to `files`: the `.pth` naming
/// `source`, and with `check_gpu` (the extensions' init runs `preload()`) and at least one
/// extension, the finder module and the `.pth` line that imports it at start-up.
pub(crate) fn add_files(
    files: &mut Files,
    stem: &str,
    source: &std::path::Path,
    targets: &[TargetPlan],
    check_gpu: bool,
) {
    let pth = format!("__editable__.{stem}.pth");
    let pairs = if check_gpu {
        preload_first(targets)
    } else {
        Vec::new()
    };
    if pairs.is_empty() {
        files.add_bytes(&pth, format!("{}\n", source.display()), false);
        return;
    }
    let module = finder_module(stem);
    files.add_bytes(&format!("{module}.py"), finder_source(&pairs), false);
    files.add_bytes(
        &pth,
        format!("{}\nimport {module}\n", source.display()),
        false,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_finder_lists_each_extension_with_its_helper() {
        let text = finder_source(&[
            ("saxpy._core".into(), "saxpy._cuda_libs".into()),
            ("topmod".into(), "_topmod_cuda_libs".into()),
        ]);
        assert!(
            text.contains(
                "PRELOAD_FIRST = {\n    \"saxpy._core\": \"saxpy._cuda_libs\",\n    \"topmod\": \"_topmod_cuda_libs\",\n}\n"
            ),
            "{text}"
        );
        assert!(
            !text.contains("@PRELOAD_FIRST@") && !text.contains("@VERSION@"),
            "{text}"
        );
        assert_eq!(
            finder_module("saxpy_cu13"),
            "_cudawheel_editable_saxpy_cu13"
        );
    }
}
