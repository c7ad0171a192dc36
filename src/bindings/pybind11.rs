//! `bindings = "pybind11"`: `-std=c++17 -fvisibility=hidden` and pybind11's `include/`
//! (as `pybind11_add_module` does); header-only, nothing to compile or link.

use std::path::Path;

use crate::plan::TargetPlan;

pub(crate) fn apply(target: &mut TargetPlan, root: &Path) {
    super::add_module_flags(target, root, "pybind11", &[], &[]);
}
