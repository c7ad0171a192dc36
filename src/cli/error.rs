//! `CliError`: what stops a command before any stage runs (another interpreter that cannot
//! describe itself, an output folder that cannot be made, a wheel whose helpers cannot be read).

use crate::hint::Hint;

#[derive(Debug, thiserror::Error)]
pub(crate) enum CliError {
    /// `wheel --python PY`: PY could not be started.
    #[error("--python {python}: cannot run it ({reason})")]
    CannotRun { python: String, reason: String },
    /// `wheel --python PY`: PY ran but did not print its facts.
    #[error("--python {python}: it failed to report itself:\n{stderr}")]
    NoReport { python: String, stderr: String },
    /// `wheel --python PY`: PY printed something that is not its facts.
    #[error("--python {python}: its report is unreadable ({reason})")]
    BadReport { python: String, reason: String },
    /// The output folder, or the project folder the hooks run in.
    #[error("{what} {path}: {source}")]
    Folder {
        what: &'static str,
        path: String,
        source: std::io::Error,
    },
    /// A wheel's `_cuda_libs.py` files could not be read.
    #[error("cannot read the helpers of {wheel}: {reason}")]
    Wheel { wheel: String, reason: String },
}

impl Hint for CliError {
    fn hints(&self) -> Vec<String> {
        match self {
            CliError::CannotRun { .. } => {
                vec!["--python takes an interpreter's path, or a name found on PATH".into()]
            }
            CliError::NoReport { python, .. } | CliError::BadReport { python, .. } => vec![format!(
                "`{python} -c 'import sysconfig'` should run cleanly: cudawheel asks the interpreter about itself with sys and sysconfig only"
            )],
            CliError::Folder { .. } => {
                vec!["check that the folder's parent exists and is writable".into()]
            }
            CliError::Wheel { .. } => vec!["check that the file is a complete wheel (a zip)".into()],
        }
    }
}
