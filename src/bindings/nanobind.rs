//! `bindings = "nanobind"` (`nanobind_add_module`, static libnanobind, size-optimised release):
//! its `src/nb_combined.cpp` compiled into the extension, `include/` and
//! `ext/robin_map/include`, `-fno-strict-aliasing -ffunction-sections -fdata-sections`,
//! `NB_COMPACT_ASSERTIONS`, link `-Wl,--gc-sections`; `NB_FREE_THREADED` for a module declared
//! GIL-free (`free-threaded = true`) built for a free-threaded Python.

use std::path::{Path, PathBuf};

use crate::plan::{Lang, Source, TargetPlan};

pub(crate) fn apply(target: &mut TargetPlan, root: &Path) {
    super::add_module_flags(
        target,
        root,
        "nanobind",
        &[
            "-fno-strict-aliasing",
            "-ffunction-sections",
            "-fdata-sections",
        ],
        &["-Xcompiler", "-fno-strict-aliasing"],
    );
    super::add_include(target, root.join("ext/robin_map/include"));
    target.defines.push("NB_COMPACT_ASSERTIONS".into());
    if target.free_threaded {
        // nanobind's FREE_THREADED form: its own sources and the module's alike (NB_MODULE then
        // declares the module GIL-free, and nanobind's internals take their locks).
        target.defines.push("NB_FREE_THREADED".into());
    }
    target.link_flags.insert(0, "-Wl,--gc-sections".into());
    target.sources.push(Source {
        path: root.join("src/nb_combined.cpp"),
        rel: PathBuf::from("_nanobind/nb_combined.cpp"),
        lang: Lang::Cxx,
    });
}
