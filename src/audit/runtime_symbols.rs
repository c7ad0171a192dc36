//! The runtime-symbol check: an extension compiled against headers newer than the libcudart it
//! links may import CUDA runtime functions that library lacks; such an ELF is refused here
//! instead of failing at import with `undefined symbol`.

use crate::libraries::FoundLibrary;
use crate::toolchain::headers::{HeaderError, HeaderSet};
use crate::toolchain::ToolchainError;

/// Refuses an ELF that imports CUDA runtime functions the linked libcudart lacks: headers newer
/// than the runtime wheel linked (13.5 headers, a 13.0 wheel) declare API that wheel does not
/// have, and the extension would fail at import with `undefined symbol`. Checked only then.
pub fn check_runtime(
    set: &HeaderSet,
    cudart: &FoundLibrary,
    file: &str,
    report: &crate::inspect::elf::ElfReport,
) -> Result<(), ToolchainError> {
    let (Some(p), Some(lib), Some((a, b))) = (&cudart.provider, cudart.shared.first(), set.version)
    else {
        return Ok(());
    };
    if p.floor >= (a.into(), b.into()) || !report.needed.contains(&lib.soname) {
        return Ok(());
    }
    let Ok(exported) = crate::inspect::elf::exported(&lib.path) else {
        return Ok(());
    };
    let symbols: Vec<String> = report
        .undefined
        .iter()
        .filter(|s| s.starts_with("cuda") || s.starts_with("__cuda"))
        .filter(|s| !exported.contains(*s))
        .cloned()
        .collect();
    if symbols.is_empty() {
        return Ok(());
    }
    Err(HeaderError::RuntimeTooOld {
        file: file.to_string(),
        symbols,
        soname: lib.soname.clone(),
        lib: lib.path.clone(),
        dist: p.dist.clone(),
        headers: set.version_text(),
    }
    .into())
}
