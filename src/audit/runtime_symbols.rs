//! The runtime-symbol check: an extension compiled against headers newer than the libcudart it
//! links may import CUDA runtime functions that library lacks; such an ELF is refused here
//! instead of failing at import with `undefined symbol`.

use std::path::PathBuf;

use crate::hint::Hint;
use crate::libraries::FoundLibrary;
use crate::toolchain::headers::HeaderSet;

/// A built ELF imports CUDA runtime functions the libcudart it links lacks (boxed where
/// returned: it is large).
#[derive(Debug, thiserror::Error)]
#[error("{file} uses {}, which {} of {dist} (linked from {}) does not define: it was compiled against CUDA {headers} headers, and that runtime wheel is older", symbols.join(", "), soname, lib.display())]
pub(crate) struct RuntimeTooOld {
    /// The ELF's path in the wheel.
    pub(crate) file: String,
    pub(crate) symbols: Vec<String>,
    pub(crate) soname: String,
    pub(crate) lib: PathBuf,
    /// The runtime wheel providing `lib`.
    pub(crate) dist: String,
    /// The version of the headers compiled against.
    pub(crate) headers: String,
}

impl Hint for RuntimeTooOld {
    fn hints(&self) -> Vec<String> {
        let RuntimeTooOld { dist, headers, .. } = self;
        vec![
            format!("upgrade it in the build environment: `pip install \"{dist}>={headers},<{}\"`", headers.split('.').next().and_then(|m| m.parse::<u32>().ok()).map_or(0, |m| m + 1)),
            "or build with a toolkit no newer than that runtime wheel, or with build isolation (the toolkit's own libcudart is linked then)".into(),
        ]
    }
}

/// Refuses an ELF that imports CUDA runtime functions the linked libcudart lacks: headers newer
/// than the runtime wheel linked (13.5 headers, a 13.0 wheel) declare API that wheel does not
/// have, and the extension would fail at import with `undefined symbol`. Checked only then.
pub(crate) fn check_runtime(
    set: &HeaderSet,
    cudart: &FoundLibrary,
    file: &str,
    report: &crate::inspect::elf::ElfReport,
) -> Result<(), Box<RuntimeTooOld>> {
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
    Err(Box::new(RuntimeTooOld {
        file: file.to_string(),
        symbols,
        soname: lib.soname.clone(),
        lib: lib.path.clone(),
        dist: p.dist.clone(),
        headers: set.version_text(),
    }))
}
