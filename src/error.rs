//! The crate's error type: one enum per stage, gathered here, plus the `hint:` lines.
//!
//! Messages say what was wrong and where (file, TOML key, path); hints say what to do next.
//! `render` is the single place that turns an error into the text a user reads.

use std::fmt::Write as _;

pub(crate) use crate::hint::Hint;

use crate::audit::elf_rules::ElfError;
use crate::bindings::BindingsError;
use crate::compile::job::CompileError;
use crate::config::ConfigError;
use crate::package::archive::ArchiveError;
use crate::plan::PlanError;
use crate::toolchain::ToolchainError;

#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Plan(#[from] PlanError),
    #[error(transparent)]
    Toolchain(#[from] ToolchainError),
    #[error(transparent)]
    Library(#[from] crate::libraries::LibraryError),
    #[error(transparent)]
    Bindings(#[from] BindingsError),
    #[error(transparent)]
    Compile(#[from] CompileError),
    #[error(transparent)]
    Elf(#[from] ElfError),
    #[error(transparent)]
    Archive(#[from] ArchiveError),
    #[error(transparent)]
    Audit(#[from] crate::audit::wheel_audit::AuditError),
    #[error(transparent)]
    Size(#[from] crate::audit::size::SizeError),
    #[error(transparent)]
    RuntimeSymbols(#[from] Box<crate::audit::runtime_symbols::RuntimeTooOld>),
    #[error(transparent)]
    StableAbi(#[from] Box<crate::audit::torch_abi::StableAbiBroken>),
    #[error(transparent)]
    Variant(#[from] crate::package::variants::VariantError),
    /// Wrap mode: the archs a wrapped build compiled for.
    #[error(transparent)]
    BuiltArchs(#[from] crate::audit::built_archs::ArchsError),
    #[error(transparent)]
    Repair(#[from] crate::package::repair::RepairError),
    /// Wrap mode: the repair of the wrapped backend's wheel, with the repair's own error (and
    /// its hints) as the cause.
    #[error("Repairing {}, the wheel of the wrapped build: {source}", wheel.display())]
    WrappedRepair {
        wheel: std::path::PathBuf,
        #[source]
        source: crate::package::repair::RepairError,
    },
    /// Wrap mode (`build-backend`): the wrapped backend and the repair of its wheel.
    #[error(transparent)]
    Wrap(#[from] crate::compile::wrapped::WrapError),
    #[error(transparent)]
    WrapEnv(#[from] crate::compile::wrapped_env::EnvError),
    /// Finishing a wheel: its archive, the built-in audit, the size budget.
    #[error(transparent)]
    Finish(#[from] crate::package::finish::FinishError),
    /// `prepare_metadata_for_build_wheel` wrote something the wheel build would not.
    #[error("The METADATA prepared earlier differs from the one this build produces ({0})")]
    InconsistentMetadata(String),
    /// Building an sdist made for one CUDA major as another.
    #[error("This sdist is {sdist}, but this build would make {wheel}: an sdist builds only the CUDA major it was made for")]
    SdistMismatch { sdist: String, wheel: String },
}

impl Hint for Error {
    fn hints(&self) -> Vec<String> {
        match self {
            Error::Config(e) => e.hints(),
            Error::Plan(e) => e.hints(),
            Error::Toolchain(e) => e.hints(),
            Error::Library(e) => e.hints(),
            Error::Bindings(e) => e.hints(),
            Error::Compile(e) => e.hints(),
            Error::Elf(e) => e.hints(),
            Error::Archive(e) => e.hints(),
            Error::Audit(e) => e.hints(),
            Error::Variant(e) => e.hints(),
            Error::BuiltArchs(e) => e.hints(),
            Error::Repair(e) => e.hints(),
            Error::WrappedRepair { source, .. } => {
                let mut hints = source.hints();
                hints.push("`python -m cudawheel repair WHEEL -w OUT` runs the same repair on that wheel alone".into());
                hints
            }
            Error::Wrap(e) => e.hints(),
            Error::WrapEnv(e) => e.hints(),
            Error::Size(e) => e.hints(),
            Error::RuntimeSymbols(e) => e.hints(),
            Error::StableAbi(e) => e.hints(),
            Error::Finish(e) => e.hints(),
            Error::SdistMismatch { .. } => vec![
                "use the sdist made for that CUDA major (`python -m build --sdist -C cuda=N` on the source tree), or build from the source tree".into(),
                "an sdist made with `variant` set has no -cuNN in its name and builds variant wheels only: pass `-C variant=cuda` (or the same variant settings)".into(),
            ],
            Error::InconsistentMetadata(_) => {
                vec![
                    "the build environment changed between the two hooks; run the build again"
                        .into(),
                ]
            }
        }
    }
}

/// The full user-facing text: the message, its causes, then `hint:` lines (of `Error` or of
/// one stage's error).
pub(crate) fn render<E: std::error::Error + Hint + ?Sized>(err: &E) -> String {
    let mut out = format!("cudawheel: error: {err}");
    let mut source = err.source();
    // `transparent` variants forward `source` to the inner error; skip what Display already showed.
    let shown = err.to_string();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !shown.contains(&text) {
            let _ = write!(out, "\n  caused by: {text}");
        }
        source = cause.source();
    }
    for hint in err.hints() {
        let _ = write!(out, "\n\nhint: {hint}");
    }
    out
}

impl From<crate::inspect::elf::ReadError> for Error {
    fn from(e: crate::inspect::elf::ReadError) -> Self {
        Error::Elf(ElfError::Read(e))
    }
}

/// jax's errors, from `bindings::jax` called directly, are the bindings stage's.
impl From<crate::bindings::jax::JaxError> for Error {
    fn from(e: crate::bindings::jax::JaxError) -> Self {
        Error::Bindings(e.into())
    }
}

impl From<crate::audit::built::CheckError> for Error {
    fn from(e: crate::audit::built::CheckError) -> Self {
        match e {
            crate::audit::built::CheckError::Elf(e) => Error::Elf(e),
            crate::audit::built::CheckError::Runtime(e) => Error::RuntimeSymbols(e),
            crate::audit::built::CheckError::StableAbi(e) => Error::StableAbi(e),
        }
    }
}

impl From<crate::package::sdist::NameMismatch> for Error {
    fn from(e: crate::package::sdist::NameMismatch) -> Self {
        Error::SdistMismatch {
            sdist: e.sdist,
            wheel: e.wheel,
        }
    }
}
