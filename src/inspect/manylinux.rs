//! auditwheel's manylinux policies (PEP 600): allowed libraries, symbol versions and blacklists
//! per policy and architecture, from the vendored policy file (`src/inspect/data/`, refreshed by
//! `scripts/dev/refresh-manylinux-policy.py`).

use std::collections::BTreeMap;

/// One manylinux policy.
#[derive(Debug, serde::Deserialize)]
pub(crate) struct Policy {
    pub(crate) name: String,
    pub(crate) priority: i64,
    /// arch -> family (`GLIBC`, `GLIBCXX`, ...) -> allowed versions.
    pub(crate) symbol_versions: BTreeMap<String, BTreeMap<String, Vec<String>>>,
    pub(crate) lib_whitelist: Vec<String>,
    /// library -> symbols a wheel must not import from it.
    pub(crate) blacklist: BTreeMap<String, Vec<String>>,
}

#[derive(Debug, serde::Deserialize)]
struct PolicyFile {
    policies: Vec<Policy>,
}

pub(crate) fn policies() -> &'static [Policy] {
    static POLICIES: std::sync::OnceLock<Vec<Policy>> = std::sync::OnceLock::new();
    POLICIES.get_or_init(|| {
        let file: PolicyFile = serde_json::from_str(include_str!("data/manylinux-policy.json"))
            .expect("the vendored manylinux policy file parses");
        let mut list = file.policies;
        // Oldest (highest priority) first.
        list.sort_by_key(|p| -p.priority);
        list
    })
}

/// Libraries every manylinux policy lets a wheel load from the system.
pub(crate) const SYSTEM_LIBRARIES: &[&str] = &[
    "libgcc_s.so.1",
    "libstdc++.so.6",
    "libm.so.6",
    "libdl.so.2",
    "librt.so.1",
    "libc.so.6",
    "libnsl.so.1",
    "libutil.so.1",
    "libpthread.so.0",
    "libresolv.so.2",
    "libX11.so.6",
    "libXext.so.6",
    "libXrender.so.1",
    "libICE.so.6",
    "libSM.so.6",
    "libGL.so.1",
    "libgobject-2.0.so.0",
    "libgthread-2.0.so.0",
    "libglib-2.0.so.0",
    "ld-linux-x86-64.so.2",
    "ld-linux-aarch64.so.1",
    "libz.so.1",
    "libexpat.so.1",
    "libatomic.so.1",
    "libanl.so.1",
    "libmvec.so.1",
    // The driver's library: never bundled, never in RPATH, always from the system.
    "libcuda.so.1",
];

/// `manylinux = "2_N"`: whether auditwheel's policies know `manylinux_2_N` for `arch`.
pub(crate) fn known_policy(minor: u32, arch: &str) -> Result<(), Vec<String>> {
    let name = format!("manylinux_2_{minor}");
    let known: Vec<String> = policies()
        .iter()
        .filter(|p| p.symbol_versions.contains_key(arch) && p.name.starts_with("manylinux_2_"))
        .map(|p| p.name.clone())
        .collect();
    if known.contains(&name) {
        Ok(())
    } else {
        Err(known)
    }
}
