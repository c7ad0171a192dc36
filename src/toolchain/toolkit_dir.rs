//! A standard-layout CUDA toolkit folder for builds cudawheel does not run itself (wrap mode,
//! `python -m cudawheel env`): `bin/` (nvcc and the tools it runs), `include/`, `lib64/` (and
//! `lib` naming the same folder) with the linker names NVIDIA's wheels lack (`libcudart.so` ->
//! `libcudart.so.13`), and `nvvm/`, merged from the toolkit of the nvcc in use and NVIDIA's
//! wheels on `sys.path`.
//!
//! Everything is a symbolic link into those folders except `bin/nvcc`, a hard link (or a copy
//! across file systems): nvcc reads its `nvcc.profile` from the folder it was started from
//! (`TOP = $(_HERE_)/..`), and CMake resolves a symbolic-link nvcc to its real place, so a
//! real file is what makes both see this folder as the toolkit's root. Then CMake's
//! `enable_language(CUDA)` and `find_package(CUDAToolkit)` (`CUDA::cudart`, `CUDA::cufft`) and
//! torch's `CUDA_HOME` work as with an installed toolkit.
//!
//! NVIDIA's CUDA 13 wheels keep libnvvm beside the other libraries (`nvidia/cu13/lib/
//! libnvvm.so.4`, from `nvidia-nvvm`), where an installed toolkit has `nvvm/lib64/libnvvm.so`;
//! nvlink loads that path from the toolkit root for a device link-time optimisation (`-dlto`),
//! so the folder names it there too (`nvvm_lib`).
//!
//! Every folder made holds a marker file (`MARKER`): discovery never takes a folder cudawheel
//! made for a system toolkit (`made_by_cudawheel`), so the environment `python -m cudawheel
//! env` prints does not turn the next build's own folder into its nvcc.

use std::fs;
use std::io;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use super::Nvcc;
use crate::config::PythonInfo;

/// The folders of a toolkit that are merged, and where each goes.
const PARTS: &[(&str, &str)] = &[
    ("bin", "bin"),
    ("include", "include"),
    ("nvvm", "nvvm"),
    ("lib64", "lib64"),
    ("lib", "lib64"),
];

/// The file in every toolkit folder cudawheel makes.
pub(crate) const MARKER: &str = ".cudawheel-toolkit";

/// Whether `path` (an nvcc, a toolkit root) lies in a toolkit folder cudawheel made.
pub(crate) fn made_by_cudawheel(path: &Path) -> bool {
    path.ancestors().any(|dir| dir.join(MARKER).is_file())
}

/// A toolkit folder that was made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ToolkitDir {
    pub(crate) root: PathBuf,
    /// `root/bin/nvcc`.
    pub(crate) nvcc: PathBuf,
    /// The folders merged into it, first wins.
    pub(crate) sources: Vec<PathBuf>,
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum ToolkitDirError {
    #[error("Cannot make the CUDA toolkit folder {}: {what}: {source}", root.display())]
    Io {
        root: PathBuf,
        what: String,
        source: io::Error,
    },
}

impl crate::hint::Hint for ToolkitDirError {
    fn hints(&self) -> Vec<String> {
        vec![
            "the folder is made inside `build-dir`: check that it is writable, or point `build-dir` elsewhere".into(),
        ]
    }
}

/// The toolkit roots to merge: the nvcc's own, then NVIDIA's wheels on `sys.path`
/// (`nvidia/cu<major>/` from CUDA 13 on, each `nvidia/<component>/` before).
pub(crate) fn sources(nvcc: &Nvcc, python: &PythonInfo) -> Vec<PathBuf> {
    let mut out = vec![nvcc.root.clone()];
    for site in python.toolkit_sites() {
        let nvidia = site.join("nvidia");
        let mut found: Vec<PathBuf> = match fs::read_dir(&nvidia) {
            Ok(entries) => entries.flatten().map(|e| e.path()).collect(),
            Err(_) => continue,
        };
        found.sort();
        let own = nvidia.join(format!("cu{}", nvcc.major));
        let wheel_roots = found.into_iter().filter(|p| {
            let major_folder = p
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_prefix("cu"))
                .is_some_and(|rest| rest.chars().all(|c| c.is_ascii_digit()));
            // Another major's folder (`nvidia/cu12` beside `cu13`) is not this toolkit's.
            (!major_folder || *p == own) && (p.join("include").is_dir() || p.join("lib").is_dir())
        });
        for root in wheel_roots {
            if !out.contains(&root) {
                out.push(root);
            }
        }
    }
    same_release_first(&mut out, nvcc);
    out
}

/// Puts a wheel folder whose runtime headers are nvcc's release before nvcc's own folder when
/// that holds another release's (pip's two build prefixes: nvcc's unpinned runtime dependency
/// at the newest release beside nvcc, the framework's runtime pinned to nvcc's release in the
/// other), so that the merged `include/` and `lib64/` are nvcc's release: CCCL stops a compile
/// whose `cuda_runtime_api.h` is not nvcc's release.
fn same_release_first(sources: &mut Vec<PathBuf>, nvcc: &Nvcc) {
    let want = Some((nvcc.major, nvcc.minor));
    let release = |root: &PathBuf| super::headers::runtime_release(&root.join("include"));
    if sources.first().is_none_or(|own| release(own) == want) {
        return;
    }
    if let Some(i) = sources.iter().position(|root| release(root) == want) {
        let matching = sources.remove(i);
        sources.insert(0, matching);
    }
}

/// Makes the toolkit folder at `root` (replacing what was there) from `nvcc`'s toolkit and
/// NVIDIA's wheels on `python`'s `sys.path`.
pub(crate) fn make(
    root: &Path,
    nvcc: &Nvcc,
    python: &PythonInfo,
) -> Result<ToolkitDir, ToolkitDirError> {
    let sources = sources(nvcc, python);
    let err = |what: String| {
        let root = root.to_path_buf();
        move |source| ToolkitDirError::Io { root, what, source }
    };
    if root.symlink_metadata().is_ok() {
        fs::remove_dir_all(root).map_err(err("removing the old folder".into()))?;
    }
    for (_, to) in PARTS {
        fs::create_dir_all(root.join(to)).map_err(err(format!("creating {to}/")))?;
    }
    symlink("lib64", root.join("lib")).map_err(err("linking lib -> lib64".into()))?;
    for source in &sources {
        for (from, to) in PARTS {
            let dir = source.join(from);
            if dir.is_dir() {
                merge(&dir, &root.join(to)).map_err(err(format!("linking {}", dir.display())))?;
            }
        }
    }
    linker_names(&root.join("lib64")).map_err(err("adding the linker names".into()))?;
    nvvm_lib(root).map_err(err("linking nvvm/lib64/libnvvm.so".into()))?;
    fs::write(
        root.join(MARKER),
        "A CUDA toolkit folder made by cudawheel: never taken for a system toolkit.\n",
    )
    .map_err(err(format!("writing {MARKER}")))?;
    let nvcc_path = root.join("bin/nvcc");
    real_nvcc(&nvcc.path, &nvcc_path).map_err(err(format!("placing {}", nvcc.path.display())))?;
    Ok(ToolkitDir {
        root: root.to_path_buf(),
        nvcc: nvcc_path,
        sources,
    })
}

/// `lib64/stubs/libcuda.so`, the driver's link-time stand-in, where the toolkit brings none
/// (NVIDIA's wheels ship no driver stub; nvcc.profile, CMake's `CUDA::cuda_driver` and
/// `-lcuda` look there): a shared library named `libcuda.so.1`, made with the host compiler,
/// that defines every driver API function `include/cuda.h` declares (and the `_vN` names its
/// macros point at) as an empty function. A link then keeps it even with `--as-needed` and
/// records `NEEDED libcuda.so.1`, which the driver provides at run time.
#[allow(clippy::disallowed_methods)] // the host compiler, with an argument vector
pub(crate) fn driver_stub(
    root: &Path,
    host: &super::HostCompiler,
) -> Result<bool, ToolkitDirError> {
    let stubs = root.join("lib64/stubs");
    if stubs.join("libcuda.so").exists() {
        return Ok(false);
    }
    let err = |what: &str| {
        let (root, what) = (root.to_path_buf(), what.to_string());
        move |source| ToolkitDirError::Io { root, what, source }
    };
    if stubs.symlink_metadata().is_err() {
        fs::create_dir_all(&stubs).map_err(err("creating lib64/stubs/"))?;
    }
    let source = stubs.join("cudawheel-libcuda-stub.c");
    let header = fs::read_to_string(root.join("include/cuda.h")).unwrap_or_default();
    let mut text = String::from("/* libcuda.so.1's link-time stand-in, made by cudawheel */\n");
    for name in driver_functions(&header) {
        text.push_str(&format!("void {name}(void) {{}}\n"));
    }
    fs::write(&source, text).map_err(err("writing the driver stub's source"))?;
    let out = std::process::Command::new(&host.path)
        .args(&host.args)
        .args(["-shared", "-x", "c"])
        .arg(&source)
        .args(["-Wl,-soname,libcuda.so.1", "-o"])
        .arg(stubs.join("libcuda.so"))
        .output()
        .map_err(err("running the host compiler for the driver stub"))?;
    let _ = fs::remove_file(&source);
    if !out.status.success() {
        return Err(ToolkitDirError::Io {
            root: root.to_path_buf(),
            what: format!(
                "making the driver stub lib64/stubs/libcuda.so with {}",
                host.path.display()
            ),
            source: io::Error::other(String::from_utf8_lossy(&out.stderr).into_owned()),
        });
    }
    Ok(true)
}

/// The driver API's function names in `cuda.h`: each `CUDAAPI cuX(` declaration and both
/// names of each `#define cuX cuX_vN`, sorted, once each.
fn driver_functions(header: &str) -> std::collections::BTreeSet<String> {
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut out = std::collections::BTreeSet::new();
    for line in header.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("#define ") {
            let mut words = rest.split_whitespace();
            if let (Some(a), Some(b)) = (words.next(), words.next()) {
                if a.starts_with("cu") && b.starts_with(a) && b[a.len()..].starts_with("_v") {
                    out.insert(ident(a));
                    out.insert(ident(b));
                }
            }
        } else if let Some((_, rest)) = line.split_once("CUDAAPI ") {
            let rest = rest.trim_start();
            let name = ident(rest);
            if name.starts_with("cu") && rest[name.len()..].trim_start().starts_with('(') {
                out.insert(name);
            }
        }
    }
    out
}

/// Links every entry of `from` into `to`; where both hold a folder of one name, their
/// entries are merged one level further (first wins).
fn merge(from: &Path, to: &Path) -> io::Result<()> {
    let mut entries: Vec<_> = fs::read_dir(from)?.flatten().map(|e| e.path()).collect();
    entries.sort();
    for entry in entries {
        let Some(name) = entry.file_name() else {
            continue;
        };
        let dest = to.join(name);
        match dest.symlink_metadata() {
            Err(_) => symlink(&entry, &dest)?,
            Ok(meta) => {
                if !(entry.is_dir() && dest.is_dir()) {
                    continue;
                }
                if meta.file_type().is_symlink() {
                    // Make it a real folder holding the first one's entries, then add ours.
                    let first = fs::read_link(&dest)?;
                    fs::remove_file(&dest)?;
                    fs::create_dir(&dest)?;
                    merge(&first, &dest)?;
                }
                merge(&entry, &dest)?;
            }
        }
    }
    Ok(())
}

/// `libX.so` -> `libX.so.N` for every versioned library that has no linker name yet (the
/// shortest version first: `libcufft.so.12` before `libcufft.so.12.1`).
fn linker_names(lib: &Path) -> io::Result<()> {
    let mut names: Vec<String> = fs::read_dir(lib)?
        .flatten()
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .collect();
    names.sort_by_key(|n| (n.len(), n.clone()));
    for name in &names {
        if let Some(linker) = linker_name(name) {
            let dest = lib.join(&linker);
            if dest.symlink_metadata().is_err() {
                symlink(name, dest)?;
            }
        }
    }
    Ok(())
}

/// `nvvm/lib64/libnvvm.so` (and its versioned name) -> the libnvvm in `lib64/`, where NVIDIA's
/// CUDA 13 wheels keep it, unless a toolkit's own `nvvm/lib64` was merged in.
fn nvvm_lib(root: &Path) -> io::Result<()> {
    let dir = root.join("nvvm/lib64");
    if dir.symlink_metadata().is_ok() {
        return Ok(());
    }
    let mut found: Vec<String> = fs::read_dir(root.join("lib64"))?
        .flatten()
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .filter(|n| n.starts_with("libnvvm.so.") && linker_name(n).is_some())
        .collect();
    // The shortest versioned name (`libnvvm.so.4`): the SONAME.
    found.sort_by_key(|n| (n.len(), n.clone()));
    let Some(versioned) = found.first() else {
        return Ok(());
    };
    fs::create_dir(&dir)?;
    let target = Path::new("../../lib64").join(versioned);
    symlink(&target, dir.join(versioned))?;
    symlink(&target, dir.join("libnvvm.so"))
}

/// `libcudart.so.13` -> `libcudart.so`; `None` for a name that is not `lib*.so.<digits>...`.
pub(crate) fn linker_name(name: &str) -> Option<String> {
    let (stem, version) = name.split_once(".so.")?;
    let versioned = version
        .split('.')
        .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()));
    (stem.starts_with("lib") && versioned).then(|| format!("{stem}.so"))
}

/// `to` made the same file as `from` (a hard link, else a copy), replacing the symbolic link
/// the merge left there.
fn real_nvcc(from: &Path, to: &Path) -> io::Result<()> {
    let from = fs::canonicalize(from)?;
    if to.symlink_metadata().is_ok() {
        fs::remove_file(to)?;
    }
    if fs::hard_link(&from, to).is_err() {
        fs::copy(&from, to)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_folder_with_nvccs_release_of_the_runtime_is_merged_first() {
        let tmp = tempfile::tempdir().unwrap();
        let root = |name: &str, v: Option<u32>| {
            let dir = tmp.path().join(name);
            std::fs::create_dir_all(dir.join("include")).unwrap();
            if let Some(v) = v {
                std::fs::write(
                    dir.join("include/cuda_runtime_api.h"),
                    format!("#define CUDART_VERSION {v}\n"),
                )
                .unwrap();
            }
            dir
        };
        let (own, other, pinned) = (
            root("normal", Some(13050)),
            root("cudnn", None),
            root("overlay", Some(13020)),
        );
        let nvcc = |minor| Nvcc {
            path: own.join("bin/nvcc"),
            root: own.clone(),
            major: 13,
            minor,
            full_version: format!("13.{minor}.0"),
            origin: super::super::NvccOrigin::Pip(tmp.path().to_path_buf()),
            archs: Vec::new(),
        };
        let mut sources = vec![own.clone(), other.clone(), pinned.clone()];
        same_release_first(&mut sources, &nvcc(2));
        assert_eq!(sources, [pinned.clone(), own.clone(), other.clone()]);
        // Control: nvcc 13.5 beside its own release's runtime keeps the order.
        let mut sources = vec![own.clone(), other.clone(), pinned.clone()];
        same_release_first(&mut sources, &nvcc(5));
        assert_eq!(sources, [own, other, pinned]);
    }

    use super::*;
    use crate::toolchain::NvccOrigin;

    fn fake_wheel(site: &Path) -> PathBuf {
        let cu = site.join("nvidia/cu13");
        for dir in ["bin", "include/crt", "lib", "nvvm/bin"] {
            fs::create_dir_all(cu.join(dir)).unwrap();
        }
        fs::write(cu.join("bin/nvcc"), "#!/bin/sh\n").unwrap();
        fs::write(cu.join("bin/nvcc.profile"), "TOP = $(_HERE_)/..\n").unwrap();
        fs::write(cu.join("include/cuda_runtime.h"), "").unwrap();
        fs::write(cu.join("include/crt/host_defines.h"), "").unwrap();
        fs::write(cu.join("lib/libcudart.so.13"), "").unwrap();
        fs::write(cu.join("lib/libcudart_static.a"), "").unwrap();
        cu
    }

    fn nvcc_at(root: &Path) -> Nvcc {
        Nvcc {
            path: root.join("bin/nvcc"),
            root: root.to_path_buf(),
            major: 13,
            minor: 0,
            full_version: "13.0.0".into(),
            origin: NvccOrigin::Pip(root.to_path_buf()),
            archs: Vec::new(),
        }
    }

    #[test]
    fn linker_names_are_the_versioned_names_without_their_version() {
        assert_eq!(
            linker_name("libcudart.so.13").as_deref(),
            Some("libcudart.so")
        );
        assert_eq!(
            linker_name("libnvrtc-builtins.so.13.2").as_deref(),
            Some("libnvrtc-builtins.so")
        );
        assert_eq!(linker_name("libcudart_static.a"), None);
        assert_eq!(linker_name("libcudart.so"), None);
        assert_eq!(linker_name("libfoo.so.13.x"), None);
    }

    #[test]
    fn a_folder_merges_the_wheels_with_linker_names_and_a_real_nvcc() {
        let tmp = tempfile::tempdir().unwrap();
        let site_a = tmp.path().join("a");
        let site_b = tmp.path().join("b");
        let cu = fake_wheel(&site_a);
        // A second site with another library and more headers in a folder of the same name.
        let other = site_b.join("nvidia/cu13");
        fs::create_dir_all(other.join("lib")).unwrap();
        fs::create_dir_all(other.join("include/crt")).unwrap();
        fs::write(other.join("lib/libcufft.so.12"), "").unwrap();
        fs::write(other.join("include/crt/extra.h"), "").unwrap();
        fs::write(other.join("include/cufft.h"), "").unwrap();
        // Another major's folder is not merged.
        fs::create_dir_all(site_b.join("nvidia/cu12/lib")).unwrap();
        fs::write(site_b.join("nvidia/cu12/lib/libcudart.so.12"), "").unwrap();

        let mut python = PythonInfo::for_tests(tmp.path());
        python.sys_path = vec![site_a.clone(), site_b.clone()];
        let dir = make(&tmp.path().join("tk"), &nvcc_at(&cu), &python).unwrap();
        let root = &dir.root;
        assert_eq!(dir.sources, vec![cu.clone(), other.clone()]);
        assert_eq!(
            fs::read_link(root.join("lib64/libcudart.so")).unwrap(),
            PathBuf::from("libcudart.so.13")
        );
        assert!(root.join("lib64/libcudart.so").exists());
        assert!(root.join("lib/libcufft.so").exists());
        assert!(!root.join("lib64/libcudart.so.12").exists());
        assert!(root.join("include/crt/host_defines.h").exists());
        assert!(root.join("include/crt/extra.h").exists());
        assert!(root.join("include/cufft.h").exists());
        assert!(root.join("bin/nvcc.profile").exists());
        let nvcc_meta = root.join("bin/nvcc").symlink_metadata().unwrap();
        assert!(
            nvcc_meta.file_type().is_file(),
            "bin/nvcc must be a real file"
        );
        // Made again: replaced, not merged into the old one.
        fs::remove_file(other.join("lib/libcufft.so.12")).unwrap();
        make(root, &nvcc_at(&cu), &python).unwrap();
        assert!(root.join("lib64/libcudart.so").exists());
        assert!(root.join("lib64/libcufft.so").symlink_metadata().is_err());
    }

    #[test]
    fn libnvvm_is_where_nvlink_loads_it_and_the_folder_is_marked() {
        let tmp = tempfile::tempdir().unwrap();
        let site = tmp.path().join("site");
        let cu = fake_wheel(&site);
        // nvidia-nvvm's CUDA 13 layout: beside the other libraries, libdevice under nvvm/.
        fs::write(cu.join("lib/libnvvm.so.4"), "nvvm").unwrap();
        fs::create_dir_all(cu.join("nvvm/libdevice")).unwrap();
        fs::write(cu.join("nvvm/libdevice/libdevice.10.bc"), "").unwrap();
        let mut python = PythonInfo::for_tests(tmp.path());
        python.sys_path = vec![site.clone()];
        let dir = make(&tmp.path().join("tk"), &nvcc_at(&cu), &python).unwrap();
        let root = &dir.root;
        // nvlink -dlto opens `<root>/nvvm/lib64/libnvvm.so`; CMake's CUDA::nvvm the same folder.
        for name in ["nvvm/lib64/libnvvm.so", "nvvm/lib64/libnvvm.so.4"] {
            assert_eq!(
                fs::read_to_string(root.join(name)).unwrap(),
                "nvvm",
                "{name}"
            );
        }
        assert!(root.join("nvvm/libdevice/libdevice.10.bc").exists());
        assert!(root.join("nvvm/bin").is_dir());
        assert!(root.join(MARKER).is_file());
        assert!(made_by_cudawheel(&root.join("bin/nvcc")));
        assert!(made_by_cudawheel(root));
        assert!(!made_by_cudawheel(&cu.join("bin/nvcc")));
        // A toolkit whose own nvvm/lib64 holds libnvvm keeps it.
        let installed = tmp.path().join("cuda");
        fs::create_dir_all(installed.join("bin")).unwrap();
        fs::create_dir_all(installed.join("nvvm/lib64")).unwrap();
        fs::write(installed.join("bin/nvcc"), "").unwrap();
        fs::write(installed.join("nvvm/lib64/libnvvm.so.4"), "own").unwrap();
        let python = PythonInfo::for_tests(tmp.path());
        let dir = make(&tmp.path().join("tk2"), &nvcc_at(&installed), &python).unwrap();
        let lib = dir.root.join("nvvm/lib64/libnvvm.so.4");
        assert_eq!(fs::read_to_string(lib).unwrap(), "own");
        assert!(dir
            .root
            .join("nvvm/lib64/libnvvm.so")
            .symlink_metadata()
            .is_err());
    }

    #[test]
    fn a_driver_stub_is_made_where_the_toolkit_has_none() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("tk");
        fs::create_dir_all(root.join("lib64")).unwrap();
        fs::create_dir_all(root.join("include")).unwrap();
        fs::write(
            root.join("include/cuda.h"),
            "#define cuCtxCreate                         cuCtxCreate_v4\n\
             CUresult CUDAAPI cuInit(unsigned int Flags);\n\
             CUresult CUDAAPI cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev);\n\
             #define CUDAAPI __stdcall\n",
        )
        .unwrap();
        let host = crate::toolchain::HostCompiler {
            path: PathBuf::from("cc"),
            args: Vec::new(),
        };
        assert!(driver_stub(&root, &host).unwrap());
        let stub = fs::read(root.join("lib64/stubs/libcuda.so")).unwrap();
        let report = crate::inspect::elf::parse(Path::new("libcuda.so"), &stub).unwrap();
        assert_eq!(report.soname.as_deref(), Some("libcuda.so.1"));
        let exported = crate::inspect::elf::exported_in(Path::new("libcuda.so"), &stub).unwrap();
        for name in ["cuInit", "cuCtxCreate", "cuCtxCreate_v4"] {
            assert!(exported.contains(name), "{name}: {exported:?}");
        }
        assert!(!root.join("lib64/stubs/cudawheel-libcuda-stub.c").exists());
        // Control: a toolkit's own stub (a system toolkit's lib64/stubs) is left alone.
        assert!(!driver_stub(&root, &host).unwrap());
    }
}
