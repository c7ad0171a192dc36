//! Link: one shared object per target, linked by the host compiler. NVIDIA libraries
//! are linked by SONAME (`-L<dir> -l:libcublas.so.13`); the project's own shared libraries by
//! their SONAME from the staging tree. DT_RPATH holds `$ORIGIN`-relative folders only (plus
//! absolute folders of libraries found outside NVIDIA's wheels when `system-rpath = true`).

use std::path::{Component, Path, PathBuf};

use crate::compile::job::Job;
use crate::libraries::FoundLibrary;
use crate::plan::{TargetKind, TargetPlan};
use crate::toolchain::Toolchain;

/// `$ORIGIN/..` steps from a file at `wheel_path` back to site-packages, then `site_dir`.
pub(crate) fn origin_rpath(wheel_path: &str, site_dir: &str) -> String {
    let depth = wheel_path.matches('/').count();
    let mut s = "$ORIGIN".to_string();
    for _ in 0..depth {
        s.push_str("/..");
    }
    format!("{s}/{site_dir}")
}

/// `$ORIGIN`-relative path from the folder of `from` (a wheel path) to the folder `to_dir`.
pub(crate) fn origin_relative(from: &str, to_dir: &str) -> String {
    let from_dir: Vec<&str> = from
        .split('/')
        .collect::<Vec<_>>()
        .split_last()
        .map(|(_, d)| d.to_vec())
        .unwrap_or_default();
    let to: Vec<&str> = to_dir.split('/').filter(|c| !c.is_empty()).collect();
    let common = from_dir.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut parts = vec!["$ORIGIN".to_string()];
    parts.extend(std::iter::repeat_n(
        "..".to_string(),
        from_dir.len() - common,
    ));
    parts.extend(to[common..].iter().map(|s| s.to_string()));
    parts.join("/")
}

/// The RPATH entries a target must carry: one per wheel folder of its NVIDIA libraries, one per
/// folder of the project's shared libraries it links, and (with `system_rpath`) the absolute
/// folders of libraries found outside NVIDIA's wheels.
pub(crate) fn rpath_for(
    target: &TargetPlan,
    libs: &[&FoundLibrary],
    linked: &[&TargetPlan],
    system_rpath: bool,
) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut push = |e: String| {
        if !out.contains(&e) {
            out.push(e);
        }
    };
    for lib in libs.iter().filter(|l| !l.shared.is_empty()) {
        if let Some(dir) = &lib.site_lib_dir {
            push(origin_rpath(&target.wheel_path, dir));
        }
    }
    for other in linked {
        let dir = other.wheel_path.rsplit_once('/').map_or("", |(d, _)| d);
        push(origin_relative(&target.wheel_path, dir));
    }
    if system_rpath {
        for lib in libs {
            if let Some(dir) = &lib.outside_dir {
                push(dir.display().to_string());
            }
        }
    }
    out
}

fn clean(p: &Path) -> PathBuf {
    p.components()
        .filter(|c| !matches!(c, Component::CurDir))
        .collect()
}

/// Leaves the objects' local symbols out of the output's `.symtab`. Their names may say where a
/// step ran rather than what it built: each object's STT_FILE symbol is the base name of the
/// host compile's input, which nvcc names after the object (`-objtemp`) and a launcher that runs
/// nvcc's steps itself names its own way (sccache: `x_0.cudafe1.cpp`, here or on a build server),
/// and GCC names a static initializer after that file when the unit defines nothing global
/// (`_GLOBAL__sub_I_<file>`). Without them, a local build, a cluster build and a cache hit give
/// the same bytes. Kept: `.dynsym` (all the loader and the audits read), the global symbols and
/// the hidden ones the link turns local, and any debug information. zig mode strips everything
/// (`-s`) already. GNU ld, gold, lld and mold all take it.
const DISCARD_LOCALS: &str = "-Wl,--discard-all";

/// The link command of one target.
#[allow(clippy::too_many_arguments)]
pub(crate) fn link_job(
    target: &TargetPlan,
    objects: &[PathBuf],
    tc: &Toolchain,
    libs: &[&FoundLibrary],
    linked: &[&TargetPlan],
    rpath: &[String],
    out_dir: &Path,
) -> Job {
    let output = out_dir.join(&target.wheel_path);
    let mut args: Vec<String> = tc.host.args.clone();
    args.extend([
        "-shared".into(),
        "-o".into(),
        output.to_string_lossy().into_owned(),
    ]);
    if let TargetKind::SharedLibrary { soname } = &target.kind {
        args.push(format!("-Wl,-soname,{soname}"));
    }
    args.extend(objects.iter().map(|o| o.to_string_lossy().into_owned()));
    // An rdc target's device-link object refers to host-side parts of the static device
    // libraries (NVSHMEM's init/finalize, fatbin wrappers): they follow the objects.
    if target.rdc {
        for lib in libs.iter().filter(|l| !l.shared.is_empty()) {
            args.extend(lib.statics.iter().map(|s| s.to_string_lossy().into_owned()));
        }
    }
    // Every library asked for is recorded in DT_NEEDED (some compilers default to
    // --as-needed): Requires-Dist, predicted from the configuration, must match the ELF.
    args.push("-Wl,--no-as-needed".into());
    for other in linked {
        let file = out_dir.join(&other.wheel_path);
        args.push(format!(
            "-L{}",
            clean(file.parent().unwrap_or(out_dir)).display()
        ));
        args.push(format!(
            "-l:{}",
            file.file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_default()
        ));
    }
    for lib in libs {
        for s in &lib.shared {
            let dir = s.path.parent().unwrap_or(Path::new("/"));
            let by_name = s
                .path
                .file_name()
                .is_some_and(|f| f.to_string_lossy() == s.soname);
            if by_name {
                args.push(format!("-L{}", dir.display()));
                args.push(format!("-l:{}", s.soname));
            } else {
                args.push(s.path.to_string_lossy().into_owned());
            }
        }
        // Static libraries of a library without shared ones (libcudart_static.a); the static
        // device libraries of rdc targets went into the device link instead.
        if lib.shared.is_empty() {
            args.extend(lib.statics.iter().map(|s| s.to_string_lossy().into_owned()));
            if lib
                .statics
                .iter()
                .any(|s| s.to_string_lossy().contains("cudart_static"))
            {
                args.extend(["-ldl".into(), "-lrt".into(), "-lpthread".into()]);
            }
        }
        args.extend(lib.ldflags.iter().cloned());
    }
    // DT_RPATH (not RUNPATH): searched before LD_LIBRARY_PATH and for the libraries' own needs.
    args.push("-Wl,--disable-new-dtags".into());
    for entry in rpath {
        args.push(format!("-Wl,-rpath,{entry}"));
    }
    match &tc.zig {
        // zig mode: static libc++, stripped, only the module's own symbols exported.
        Some(zig) => args.extend(crate::toolchain::zig::link_flags(
            zig,
            target.kind == TargetKind::Extension,
        )),
        None => args.extend(["-Wl,-O1".into(), DISCARD_LOCALS.into()]),
    }
    args.extend(target.link_flags.iter().cloned());
    let mut inputs = objects.to_vec();
    inputs.extend(linked.iter().map(|o| out_dir.join(&o.wheel_path)));
    for lib in libs {
        inputs.extend(lib.shared.iter().map(|s| s.path.clone()));
        inputs.extend(lib.statics.iter().cloned());
    }
    Job {
        program: tc.host.path.clone(),
        args,
        launcher: None,
        output,
        inputs,
        source: None,
        depfile: None,
        depfile_lazy: false,
        label: format!("link {}", target.wheel_path),
        detail: String::new(),
        threadable: false,
        passes: 1,
        estimate: 0.5,
        cwd: None,
        env: Vec::new(),
        python_free: target.split_library.is_some(),
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

    #[test]
    fn relative_paths_between_wheel_folders() {
        assert_eq!(origin_relative("pkg/_ext.so", "pkg/lib"), "$ORIGIN/lib");
        assert_eq!(
            origin_relative("pkg/sub/_ext.so", "pkg/lib"),
            "$ORIGIN/../lib"
        );
        assert_eq!(origin_relative("pkg/lib/libb.so", "pkg/lib"), "$ORIGIN");
        assert_eq!(origin_relative("_ext.so", "other/lib"), "$ORIGIN/other/lib");
    }
}
