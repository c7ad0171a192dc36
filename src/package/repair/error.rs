//! `RepairError`: what stops a repair, each with where it happened and the fix.

use std::path::Path;

use crate::hint::Hint;

#[derive(Debug, thiserror::Error)]
pub(crate) enum RepairError {
    #[error("Cannot read the wheel {wheel}: {message}")]
    Read { wheel: String, message: String },
    #[error("Cannot write {path}: {message}")]
    Io { path: String, message: String },
    #[error("{member} needs {lib}, which no NVIDIA wheel provides and which is not on this machine to graft into the wheel")]
    Unprovided { member: String, lib: String },
    #[error("{member} has the RPATH entry {entry:?}, an absolute path into a build environment, through which it loads {lib}: no NVIDIA wheel provides that library and the build environment is gone once the build ends")]
    BuildEnvRpath {
        member: String,
        entry: String,
        lib: String,
    },
    #[error("Cannot tell the CUDA major of {wheel}: it links no libcudart and no NVIDIA wheel installed here holds the NVIDIA libraries it links")]
    NoCudaMajor { wheel: String },
    #[error("{lib} has no NVIDIA wheel for CUDA {major}")]
    NoWheelForMajor { lib: String, major: u32 },
    #[error("{member} is an extension module and the wheel also ships {shadow}, which the GPU check's loader would replace")]
    Shadowed { member: String, shadow: String },
    #[error("{tool} is not installed: `repair` runs it ({why})")]
    ToolMissing {
        tool: &'static str,
        why: &'static str,
    },
    #[error("{tool} failed on {file}:\n{output}")]
    ToolFailed {
        tool: &'static str,
        file: String,
        output: String,
    },
    #[error(transparent)]
    Elf(#[from] crate::audit::elf_rules::ElfError),
    /// Finishing the repaired wheel: its archive, the built-in audit, the size budget.
    #[error(transparent)]
    Finish(#[from] crate::package::finish::FinishError),
    #[error(transparent)]
    Archive(#[from] crate::package::archive::ArchiveError),
}

impl RepairError {
    pub(super) fn io(path: &Path, e: std::io::Error) -> RepairError {
        RepairError::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        }
    }
}

impl Hint for RepairError {
    fn hints(&self) -> Vec<String> {
        match self {
            RepairError::Read { .. } => vec!["pass a wheel (.whl) file that a build finished writing".into()],
            RepairError::Io { .. } => vec!["check the output folder's permissions and free space".into()],
            RepairError::Unprovided { lib, .. } => vec![
                format!("install the package that ships {lib} where the repair runs (or put its folder on LD_LIBRARY_PATH): it is then grafted into the wheel"),
                "or link that library statically".into(),
            ],
            RepairError::BuildEnvRpath { lib, .. } => vec![
                format!("declare the package that ships {lib} as a dependency and reach it with an `$ORIGIN`-relative RPATH, or link it statically"),
                "drop the build-environment path from the build's RPATH settings (CMake: INSTALL_RPATH, setuptools: runtime_library_dirs)".into(),
            ],
            RepairError::NoCudaMajor { .. } => vec![
                "pass --cuda N (the CUDA major the wheel was built with), or install the NVIDIA wheels it links where the repair runs".into(),
            ],
            RepairError::NoWheelForMajor { .. } => vec!["check the CUDA major the wheel was built with (--cuda N)".into()],
            RepairError::Shadowed { .. } => vec!["remove the Python file of the same name from the package, or repair with check-gpu = false".into()],
            RepairError::ToolMissing { tool, .. } => vec![format!("pip install {tool} (into the environment running cudawheel)")],
            RepairError::ToolFailed { .. } => vec!["the tool's own output is above".into()],
            RepairError::Elf(e) => e.hints(),
            RepairError::Finish(e) => e.hints(),
            RepairError::Archive(e) => e.hints(),
        }
    }
}
