//! libcudart's rules: its `Requires-Dist` floor (not above the wheel installed, not above the
//! headers compiled against), whether the headers and the linked runtime are of different
//! releases, and the lines that say which headers and which libcudart a build uses, and why.

use crate::inspect::site::owning_distribution;
use crate::libraries::FoundLibrary;
use crate::toolchain::headers::HeaderSet;

/// The runtime's `Requires-Dist` floor: the linked wheel's version, lowered to the headers'
/// release when those are older (code compiled against 13.0 headers needs nothing newer than
/// a 13.0 runtime). Never above the wheel installed, so the build environment satisfies it.
pub(crate) fn runtime_floor(set: &HeaderSet, wheel_floor: (u64, u64)) -> (u64, u64) {
    match set.version {
        Some((a, b))
            if (u64::from(a), u64::from(b)) < wheel_floor && u64::from(a) == wheel_floor.0 =>
        {
            (a.into(), b.into())
        }
        _ => wheel_floor,
    }
}

/// The release of the linked libcudart's distribution (`nvidia-cuda-runtime 13.5.37` -> 13.5).
fn linked_release(rt: &FoundLibrary) -> Option<(u64, u64)> {
    let (_, v) = owning_distribution(&rt.shared.first()?.path)?;
    let r = v.release();
    Some((*r.first()?, r.get(1).copied().unwrap_or(0)))
}

/// Whether the headers compiled against and the libcudart linked are of different releases
/// (or one wheel folder mixes releases): then a build says which is which, and why.
pub(crate) fn runtime_differs(set: &HeaderSet, rt: &FoundLibrary) -> bool {
    let headers = set.version.map(|(a, b)| (u64::from(a), u64::from(b)));
    !set.mixed.is_empty() || linked_release(rt).is_some_and(|v| Some(v) != headers)
}

/// What a build compiles against and links, and why: the lines `doctor` and a build show.
pub(crate) fn explain(set: &HeaderSet, cudart: Option<&FoundLibrary>) -> Vec<String> {
    let mut out = Vec::new();
    let owner = set
        .owner
        .as_ref()
        .map(|(d, v)| format!(", from {d} {v}"))
        .unwrap_or_default();
    out.push(format!(
        "headers: CUDA {} ({}{owner}): {}",
        set.version_text(),
        set.from,
        set.dirs()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    ));
    if !set.mixed.is_empty() {
        out.push(format!(
            "warning: that folder mixes two CUDA releases: {}",
            set.mixed.join("; ")
        ));
    }
    let Some(rt) = cudart else {
        return out;
    };
    let file = rt
        .shared
        .first()
        .map(|s| s.path.clone())
        .or_else(|| rt.statics.first().cloned())
        .unwrap_or_default();
    let how = if rt.shared.is_empty() {
        "linked statically"
    } else {
        "linked by SONAME"
    };
    let why = if rt.found_in.starts_with("the CUDA toolkit") {
        "no NVIDIA runtime wheel of this CUDA major in the build environment, so the toolkit's own"
    } else if rt.found_in.contains(" in ") && rt.provider.is_some() {
        "NVIDIA's runtime wheel in the build environment comes before the toolkit, so the extension loads the copy this environment (and its Requires-Dist) provides"
    } else {
        "the first place discovery found it"
    };
    out.push(format!(
        "libcudart: {} ({how}; found in {}): {why}",
        file.display(),
        rt.found_in
    ));
    if let Some(p) = &rt.provider {
        out.push(format!(
            "Requires-Dist for it: {}{}",
            p.requirement(),
            match linked_release(rt) {
                Some(v) if runtime_differs(set, rt) => format!(
                    " (headers {} and the runtime {}.{} differ: the floor is the lower of the two, never above the runtime installed)",
                    set.version_text(),
                    v.0,
                    v.1
                ),
                _ => String::new(),
            }
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::toolchain::headers::cudart_version;
    use std::path::PathBuf;

    #[test]
    fn cudart_versions_and_floors() {
        assert_eq!(
            cudart_version("#define CUDART_VERSION  13050\n"),
            Some((13, 5))
        );
        assert_eq!(
            cudart_version("#define CUDART_VERSION 12040"),
            Some((12, 4))
        );
        assert_eq!(
            cudart_version("# define __CUDART_API_VERSION CUDART_VERSION"),
            None
        );
        let set = |v| HeaderSet {
            include: vec![],
            system: vec![],
            implicit: vec![],
            runtime_header: PathBuf::new(),
            version: Some(v),
            owner: None,
            from: String::new(),
            mixed: vec![],
        };
        // Headers older than the wheel: the floor follows the headers.
        assert_eq!(runtime_floor(&set((13, 0)), (13, 5)), (13, 0));
        // Headers newer than the wheel: never above the wheel installed.
        assert_eq!(runtime_floor(&set((13, 5)), (13, 0)), (13, 0));
        assert_eq!(runtime_floor(&set((12, 4)), (12, 9)), (12, 4));
    }
}
