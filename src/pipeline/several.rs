//! `cuda = ["12", "13"]`: one wheel holding a build per CUDA major. Each major resolves,
//! compiles, links and is audited as a build of its own (`Config::parts`: that major, its own
//! build-dir `<build-dir>/cu<major>`, its extensions and helpers named for the major); then
//! `package::several` adds the loaders, `_cuda_select.py` and `_cuda_libs.py`, and the one
//! wheel is written as every wheel is (`write_one`: archive, audit, size budget counting every
//! build). METADATA: the framework's requirements of torch/jax extensions (the framework brings
//! its CUDA), else each major's NVIDIA wheels under the extra `cu<major>`. The tag: the
//! strictest platform of the builds.

use std::path::{Path, PathBuf};

use super::{check_prepared_dist, compile_and_link, import_helpers_with, write_all, Built, Wheels};
use crate::audit;
use crate::config::{Config, ConfigError, CudaDeps};
use crate::error::Error;
use crate::package::archive::Files;
use crate::package::metadata;
use crate::package::several::{self, part_helper_path};
use crate::package::wheel as wheel_files;
use crate::package::wheels::{Dist, WheelSpec};
use crate::resolve::{resolve_with, Request, Resolved};
use crate::ui;

/// Builds every part (one per major, lowest first; `Config::parts` makes two or more) and writes the one wheel into `wheel_dir`.
pub(super) fn build(
    req: &Request<'_>,
    parts: Vec<Config>,
    wheels: Wheels,
    wheel_dir: &Path,
    metadata_dir: Option<&Path>,
) -> Result<Vec<PathBuf>, Error> {
    if wheels != Wheels::Whole {
        return Err(ConfigError::Unsupported {
            key: "tool.cudawheel.cuda".into(),
            what: "an editable install (or split wheels) with several CUDA majors".into(),
            instead: "install in editable mode for one major: `pip install -e . -C cuda=13`".into(),
        }
        .into());
    }
    let resolved = resolve_parts(req, parts)?;
    let Some(dist) = dist_of(&resolved)? else {
        return Ok(Vec::new());
    };
    check_prepared_dist(&dist.info(), metadata_dir)?;
    // Each `Built` holds its build-dir's lock until the wheel is written.
    let mut built: Vec<Built> = Vec::new();
    for r in &resolved {
        ui::status(&format!("building the CUDA {} build", major_of(r)));
        let b = compile_and_link(r)?;
        // Each build's GPU code and driver floor (the wheel's summary is the newest build's).
        let elfs: Vec<PathBuf> = r
            .plan
            .targets
            .iter()
            .map(|t| b.out_dir.join(&t.wheel_path))
            .collect();
        if let Some(line) = audit::size::gpu_line(&elfs, r.toolchain.compress, major_of(r)) {
            ui::status(&format!("the CUDA {} build: {line}", major_of(r)));
        }
        built.push(b);
    }
    let extra_for = |r: &Resolved| {
        let under_extras = dist.framework_requires.is_empty() && dist.cuda_deps != CudaDeps::None;
        under_extras.then(|| metadata::major_extra(major_of(r)))
    };
    let mut pieces = Vec::new();
    for (r, b) in resolved.iter().zip(&built) {
        let extra = extra_for(r);
        let helpers = import_helpers_with(
            r,
            b,
            extra.as_deref().map(|e| (dist.name.display.as_str(), e)),
        );
        pieces.push(several::Part {
            major: major_of(r),
            targets: &r.plan.targets,
            out_dir: &b.out_dir,
            helpers: helpers
                .into_iter()
                .map(|(path, text)| (part_helper_path(&path, major_of(r)), text))
                .collect(),
        });
    }
    let (last_r, last_b) = match (resolved.last(), built.last()) {
        (Some(r), Some(b)) => (r, b),
        _ => return Ok(Vec::new()),
    };
    let (files, elfs): (Files, Vec<PathBuf>) =
        several::contents(&pieces, &last_r.plan.python_source, &last_r.plan.packages)?;
    let mut tag = last_b.tag.clone();
    for b in &built {
        tag = tag.stricter(&b.tag);
    }
    let spec = WheelSpec {
        files,
        dist,
        tag,
        elfs,
        previous: last_r.plan.build_dir.parent().map(|d| d.join("last.whl")),
    };
    write_all(last_r, last_b, wheel_dir, vec![spec])
}

/// Stages 1-5 for every major, stopping at the first error.
fn resolve_parts(req: &Request<'_>, parts: Vec<Config>) -> Result<Vec<Resolved>, Error> {
    parts
        .into_iter()
        .map(|part| resolve_with(req, part, false))
        .collect()
}

fn major_of(r: &Resolved) -> u32 {
    r.toolchain.nvcc.major
}

/// The one wheel's `.dist-info` from every major's build.
fn dist_of(resolved: &[Resolved]) -> Result<Option<Dist>, ConfigError> {
    let Some(last) = resolved.last() else {
        return Ok(None);
    };
    let base = Dist::of(&last.dist_info());
    let per_major = resolved
        .iter()
        .map(|r| {
            let info = r.dist_info();
            (
                major_of(r),
                info.cuda_requires.to_vec(),
                info.framework_requires,
            )
        })
        .collect();
    combine(base, per_major).map(Some)
}

/// `base` (the newest build's `.dist-info`: the project's name, no major in it) with every
/// major's framework requirements (each once) and, without a framework, each major's NVIDIA
/// wheels under its extra. `per_major`: (major, NVIDIA requirements, framework requirements).
fn combine(
    mut base: Dist,
    per_major: Vec<(u32, Vec<String>, Vec<String>)>,
) -> Result<Dist, ConfigError> {
    let frameworks: Vec<Vec<String>> = per_major.iter().map(|(_, _, f)| f.clone()).collect();
    base.framework_requires =
        several::framework_requires(&frameworks).map_err(|reqs| ConfigError::Unsupported {
            key: "tool.cudawheel.cuda".into(),
            what: format!("one wheel of builds that need {reqs} (no one requirement holds them all)"),
            instead: "write the extension against torch's stable ABI (`torch-stable-abi`), whose builds join into one range, or build one wheel per major (`-C cuda=12`, `-C cuda=13`)".into(),
        })?;
    base.cuda_requires.clear();
    base.cuda_by_major = match base.framework_requires.is_empty() {
        true => per_major
            .into_iter()
            .map(|(m, cuda, _)| (m, cuda))
            .collect(),
        // torch / jax extensions: the framework brings its own CUDA runtime.
        false => Vec::new(),
    };
    Ok(base)
}

/// `prepare_metadata_for_build_wheel` for a `cuda` list: every major resolved, the one
/// `.dist-info` written into `metadata_dir`; returns its name.
pub(crate) fn write_metadata(
    req: &Request<'_>,
    parts: Vec<Config>,
    metadata_dir: &Path,
) -> Result<String, Error> {
    let resolved = resolve_parts(req, parts)?;
    let Some(dist) = dist_of(&resolved)? else {
        return Ok(String::new());
    };
    let info = dist.info();
    let mut files = Files::default();
    info.add_files(&mut files)?;
    wheel_files::write_tree(metadata_dir, files)?;
    Ok(info.dir())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Overrides;
    use crate::package::metadata::DistName;

    fn dist() -> Dist {
        let dir = tempfile::tempdir().unwrap();
        let text = "[project]\nname = \"demo\"\nversion = \"1\"\n";
        let config = Config::from_text(dir.path(), text.into(), &Overrides::default()).unwrap();
        Dist {
            name: DistName::new(&config.project, ""),
            project: config.project,
            root: dir.path().to_path_buf(),
            framework_requires: vec!["stale".into()],
            cuda_requires: vec!["nvidia-cuda-runtime>=13.5,<14".into()],
            cuda_deps: CudaDeps::Required,
            cuda_extra: "cuda".into(),
            cuda_by_major: Vec::new(),
        }
    }

    #[test]
    fn nvidia_wheels_go_under_each_major_s_extra_unless_a_framework_brings_cuda() {
        let cu12 = vec!["nvidia-cuda-runtime-cu12>=12.4,<13".to_string()];
        let cu13 = vec!["nvidia-cuda-runtime>=13.5,<14".to_string()];
        let plain = combine(
            dist(),
            vec![
                (12, cu12.clone(), Vec::new()),
                (13, cu13.clone(), Vec::new()),
            ],
        )
        .unwrap();
        let text = plain.info().metadata();
        assert!(text.contains("Requires-Dist: nvidia-cuda-runtime-cu12>=12.4,<13; extra == \"cu12\"\nRequires-Dist: nvidia-cuda-runtime>=13.5,<14; extra == \"cu13\"\nProvides-Extra: cu12\nProvides-Extra: cu13\n"), "{text}");
        assert_eq!(text.matches("Requires-Dist:").count(), 2, "{text}");
        // torch extensions: torch's pin (once), no NVIDIA wheel, no extra.
        let torch = vec!["torch>=2.9,<2.10".to_string()];
        let framework = combine(
            dist(),
            vec![(12, cu12.clone(), torch.clone()), (13, cu13.clone(), torch)],
        )
        .unwrap();
        let text = framework.info().metadata();
        assert!(text.contains("Requires-Dist: torch>=2.9,<2.10\n"), "{text}");
        assert_eq!(text.matches("Requires-Dist:").count(), 1, "{text}");
        assert!(
            !text.contains("nvidia") && !text.contains("Provides-Extra"),
            "{text}"
        );
        // A stable-ABI extension: each build's torch range, joined.
        let (t12, t13) = (
            vec!["torch>=2.10,<2.11".to_string()],
            vec!["torch>=2.11".to_string()],
        );
        let stable = combine(
            dist(),
            vec![(12, cu12.clone(), t12), (13, cu13.clone(), t13)],
        );
        let text = stable.unwrap().info().metadata();
        assert!(text.contains("Requires-Dist: torch>=2.10\n"), "{text}");
        // Control: pinned builds of two torch minors make no one wheel.
        let (p12, p13) = (
            vec!["torch==2.10.*".to_string()],
            vec!["torch==2.15.*".to_string()],
        );
        let err = combine(dist(), vec![(12, cu12, p12), (13, cu13, p13)]).unwrap_err();
        assert!(
            err.to_string().contains("torch==2.10.* and torch==2.15.*"),
            "{err}"
        );
    }
}
