//! `bindings = "nanobind"` (`nanobind_add_module`, static libnanobind, size-optimised release):
//! its `src/nb_combined.cpp` compiled into the extension, `include/` and
//! `ext/robin_map/include`, `-fno-strict-aliasing -ffunction-sections -fdata-sections`,
//! `NB_COMPACT_ASSERTIONS`, link `-Wl,--gc-sections`.

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
    target.link_flags.insert(0, "-Wl,--gc-sections".into());
    target.sources.push(Source {
        path: root.join("src/nb_combined.cpp"),
        rel: PathBuf::from("_nanobind/nb_combined.cpp"),
        lang: Lang::Cxx,
    });
}
