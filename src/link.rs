//! Stage 5, link: one shared object per extension, linked by the host compiler with libcudart
//! by SONAME (`-l:libcudart.so.13`) and a DT_RPATH of `$ORIGIN`-relative folders only.

use std::path::{Path, PathBuf};

use crate::compile::Job;
use crate::config::Cudart;
use crate::plan::ExtensionPlan;
use crate::toolchain::Toolchain;

/// `$ORIGIN/..` steps from a file at `wheel_path` back to site-packages, then `site_dir`.
pub fn origin_rpath(wheel_path: &str, site_dir: &str) -> String {
    let depth = wheel_path.matches('/').count();
    let mut s = "$ORIGIN".to_string();
    for _ in 0..depth {
        s.push_str("/..");
    }
    format!("{s}/{site_dir}")
}

/// The RPATH entries a built extension must carry.
pub fn rpath_for(ext: &ExtensionPlan, tc: &Toolchain, cudart: Cudart) -> Vec<String> {
    match cudart {
        Cudart::Shared => vec![origin_rpath(&ext.wheel_path, &tc.cudart.site_dir)],
        Cudart::Static => Vec::new(),
    }
}

/// The link command of one extension.
pub fn link_job(
    ext: &ExtensionPlan,
    objects: &[PathBuf],
    tc: &Toolchain,
    cudart: Cudart,
    out_dir: &Path,
) -> Job {
    let output = out_dir.join(&ext.wheel_path);
    let mut args: Vec<String> = tc.host.args.clone();
    args.extend([
        "-shared".into(),
        "-o".into(),
        output.to_string_lossy().into_owned(),
    ]);
    args.extend(objects.iter().map(|o| o.to_string_lossy().into_owned()));
    match cudart {
        Cudart::Shared => {
            args.push(format!("-L{}", tc.cudart.lib_dir.display()));
            args.push(format!("-l:{}", tc.cudart.file));
        }
        Cudart::Static => {
            args.push(
                tc.cudart
                    .lib_dir
                    .join(&tc.cudart.file)
                    .to_string_lossy()
                    .into_owned(),
            );
            args.extend(["-ldl".into(), "-lrt".into(), "-lpthread".into()]);
        }
    }
    // DT_RPATH (not RUNPATH): searched before LD_LIBRARY_PATH and for the libraries' own needs.
    args.push("-Wl,--disable-new-dtags".into());
    for entry in rpath_for(ext, tc, cudart) {
        args.push(format!("-Wl,-rpath,{entry}"));
    }
    args.extend(["-Wl,-O1".into(), "-Wl,--as-needed".into()]);
    args.extend(ext.link_flags.iter().cloned());
    Job {
        program: tc.host.path.clone(),
        args,
        output,
        label: format!("link {}", ext.wheel_path),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rpath_climbs_one_level_per_package() {
        assert_eq!(
            origin_rpath("saxpy/_core.abi3.so", "nvidia/cu13/lib"),
            "$ORIGIN/../nvidia/cu13/lib"
        );
        assert_eq!(
            origin_rpath("a/b/_c.so", "nvidia/cu13/lib"),
            "$ORIGIN/../../nvidia/cu13/lib"
        );
        assert_eq!(
            origin_rpath("_c.so", "nvidia/cuda_runtime/lib"),
            "$ORIGIN/nvidia/cuda_runtime/lib"
        );
    }
}
