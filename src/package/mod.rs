//! Stage 8, package: what goes into a wheel or sdist and how it is written. `metadata` renders
//! Core Metadata and WHEEL; `import_helper` generates `<package>/_cuda_libs.py`; `variants`
//! makes wheel variants (PEP 825); `wheels` describes the wheels a build writes (whole,
//! editable, split library + bindings; `editable` the editable wheel's `.pth` and start-up
//! finder; `several` what a wheel holding a build per CUDA major adds: the loaders and
//! `_cuda_select.py`); `wheel` and `sdist` say what each archive holds; `archive`
//! writes deterministic, atomic zip/tar.gz files; `repair` makes a wheel built by anything
//! into one (`python -m cudawheel repair`, wrap mode).

pub(crate) mod archive;
mod editable;
pub(crate) mod finish;
mod import_helper;
pub(crate) mod metadata;
pub(crate) mod repair;
pub(crate) mod sdist;
pub(crate) mod several;
pub(crate) mod variants;
pub(crate) mod wheel;
pub(crate) mod wheels;

use crate::config::Config;
use metadata::DistName;

/// The distribution name: the project's, plus `name-suffix` unless this is a variant build
/// (variants of every CUDA major share one name).
pub(crate) fn dist_name(config: &Config, variant: Option<&variants::Spec>, major: u32) -> DistName {
    match variant {
        Some(_) => DistName::new(&config.project, ""),
        // One wheel holding several majors: the project's name, or a suffix without `{major}`.
        None if config.several().is_some() || config.part.is_some() => {
            let suffix = match config.tool.name_suffix_origin {
                Some(_) => config.tool.name_suffix.as_str(),
                None => "",
            };
            DistName::new(&config.project, suffix)
        }
        None => DistName::new(&config.project, &config.tool.suffix_for(major)),
    }
}
