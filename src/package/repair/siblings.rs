//! The wheel's own shared libraries stored once. A zip has no symlinks, so CMake's chain
//! `libX.so -> libX.so.0 -> libX.so.0.9.1` arrives as three copies of one file (and again in
//! every folder it was installed to). Each set of byte-identical `lib*.so*` files keeps one
//! member: in a folder inside a Python package (the one Python code loads from) over any
//! other, the name the package's Python code spells out over the linker name `libX.so` (what
//! ctypes and `dlopen` by name use) over the SONAME over the rest. The kept file's SONAME
//! becomes its name and every NEEDED entry that named one of the dropped names names it
//! (patchelf), so everything that loaded it by a name still finds it; the RPATHs to its folder
//! are the repair's (`needs::rpath_for`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::wheel_in::Member;
use super::{tools, RepairError, RepairSettings};

/// A file name that is a shared library by name (`libX.so`, `libX.so.0.9.1`).
fn is_library_name(file: &str) -> bool {
    file.starts_with("lib") && (file.ends_with(".so") || file.contains(".so."))
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Whether Python code spells out `file` whole (not as the start of a longer name).
fn mentions(python: &str, file: &str) -> bool {
    python.match_indices(file).any(|(i, _)| {
        let next = python[i + file.len()..].chars().next();
        let prev = python[..i].chars().next_back();
        let part =
            |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
        !part(next) && !part(prev)
    })
}

/// The member kept of one set of identical copies: lowest rank first.
fn rank(
    path: &str,
    soname: Option<&str>,
    packages: &BTreeSet<&str>,
    python: &str,
) -> (u8, u8, usize) {
    let top = path.split('/').next().unwrap_or("");
    let outside = u8::from(!(path.contains('/') && packages.contains(top)));
    let file = file_name(path);
    let name = if mentions(python, file) {
        0
    } else if file.ends_with(".so") {
        1
    } else if Some(file) == soname {
        2
    } else {
        3
    };
    (outside, name, path.len())
}

/// The members with every set of identical shared libraries stored once, SONAMEs and NEEDED
/// entries made to agree with the names kept; the status line that says what it saved (none
/// when nothing was stored twice).
pub(super) fn store_once(
    members: Vec<Member>,
    settings: &RepairSettings,
    scratch: &Path,
) -> Result<(Vec<Member>, Option<String>), RepairError> {
    let mut groups: BTreeMap<(usize, u64), Vec<usize>> = BTreeMap::new();
    for (i, m) in members.iter().enumerate() {
        if m.is_elf() && is_library_name(file_name(&m.path)) && !m.path.contains(".data/") {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            std::hash::Hash::hash(&m.bytes, &mut h);
            groups
                .entry((m.bytes.len(), std::hash::Hasher::finish(&h)))
                .or_default()
                .push(i);
        }
    }
    let packages: BTreeSet<&str> = members
        .iter()
        .filter_map(|m| m.path.strip_suffix("/__init__.py"))
        .filter(|p| !p.contains('/'))
        .collect();
    let python: String = members
        .iter()
        .filter(|m| m.path.ends_with(".py"))
        .map(|m| String::from_utf8_lossy(&m.bytes).into_owned())
        .collect();
    // Dropped member index -> the kept one; each name that loaded a dropped copy -> the kept name.
    let mut dropped: BTreeMap<usize, usize> = BTreeMap::new();
    let mut renamed: BTreeMap<String, String> = BTreeMap::new();
    let mut set_soname: BTreeMap<usize, String> = BTreeMap::new();
    for copies in groups.values().filter(|g| g.len() > 1) {
        let first = &members[copies[0]];
        if copies.iter().any(|&i| members[i].bytes != first.bytes) {
            continue;
        }
        let soname = crate::inspect::elf::parse(Path::new(&first.path), &first.bytes)
            .ok()
            .and_then(|r| r.soname);
        let Some(&keep) = copies
            .iter()
            .min_by_key(|&&i| rank(&members[i].path, soname.as_deref(), &packages, &python))
        else {
            continue;
        };
        let kept = file_name(&members[keep].path).to_string();
        for &i in copies.iter().filter(|&&i| i != keep) {
            dropped.insert(i, keep);
            renamed.insert(file_name(&members[i].path).to_string(), kept.clone());
        }
        if let Some(s) = soname.filter(|s| *s != kept) {
            renamed.insert(s, kept.clone());
            set_soname.insert(keep, kept);
        }
    }
    if dropped.is_empty() {
        return Ok((members, None));
    }
    let saved: u64 = dropped.keys().map(|&i| members[i].bytes.len() as u64).sum();
    let names: Vec<String> = dropped.keys().map(|&i| members[i].path.clone()).collect();
    let dir = scratch.join("siblings");
    std::fs::create_dir_all(&dir).map_err(|e| RepairError::io(&dir, e))?;
    let mut out = Vec::new();
    for (i, mut m) in members.into_iter().enumerate() {
        if dropped.contains_key(&i) {
            continue;
        }
        if m.is_elf() {
            let Ok(r) = crate::inspect::elf::parse(Path::new(&m.path), &m.bytes) else {
                out.push(m);
                continue;
            };
            let replace: Vec<(String, String)> = r
                .needed
                .iter()
                .filter_map(|n| renamed.get(n).map(|k| (n.clone(), k.clone())))
                .filter(|(n, k)| n != k)
                .collect();
            if !replace.is_empty() || set_soname.contains_key(&i) {
                m.bytes = tools::rename_links(
                    &m.bytes,
                    set_soname.get(&i).map(String::as_str),
                    &replace,
                    &dir,
                    settings,
                )?;
            }
        }
        out.push(m);
    }
    let line = format!(
        "stored {} identical copies of the wheel's own libraries once: removed {} ({:.1} MB saved); \
         kept names: {}",
        names.len(),
        names.join(", "),
        saved as f64 / 1e6,
        dropped
            .values()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .map(|&k| out_path(&out, k, &dropped))
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok((out, Some(line)))
}

/// The path of original member `k` in `out` (members after `k` moved up by the dropped ones).
fn out_path(out: &[Member], k: usize, dropped: &BTreeMap<usize, usize>) -> String {
    let before = dropped.keys().filter(|&&d| d < k).count();
    out.get(k - before)
        .map_or(String::new(), |m| m.path.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kept_copy_is_in_the_package_and_named_as_python_loads_it() {
        let packages: BTreeSet<&str> = ["llama_cpp"].into_iter().collect();
        let soname = Some("libllama.so.0");
        let order = |paths: &[&'static str], python: &str| -> &'static str {
            let mut v = paths.to_vec();
            v.sort_by_key(|p| rank(p, soname, &packages, python));
            v[0]
        };
        let all = [
            "lib/libllama.so",
            "lib/libllama.so.0",
            "llama_cpp/lib/libllama.so.0.9.1",
            "llama_cpp/lib/libllama.so.0",
            "llama_cpp/lib/libllama.so",
        ];
        assert_eq!(
            order(&all, "f\"lib{name}.so\""),
            "llama_cpp/lib/libllama.so"
        );
        assert_eq!(order(&all[..4], ""), "llama_cpp/lib/libllama.so.0");
        assert_eq!(
            order(&all, "CDLL('libllama.so.0.9.1')"),
            "llama_cpp/lib/libllama.so.0.9.1"
        );
        assert!(
            is_library_name("libggml-cpu.so.0.9.1") && !is_library_name("_core.cpython-311.so")
        );
    }
}
