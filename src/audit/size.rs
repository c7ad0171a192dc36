//! Wheel size: above `WARN_BYTES`, say which members are biggest and which GPU
//! architectures cost most, read from the fatbins inside the built ELF files
//! (`inspect::fatbin`).

use std::io::Read;

use crate::inspect::fatbin::{fatbin_entries, fatbin_section};
use std::path::Path;

/// The size above which a build warns: 100 MiB, as PyPI's default upload limit.
pub const WARN_BYTES: u64 = 100 << 20;

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64)
}

/// The warning text for a wheel of `size` bytes above `limit`, else `None`.
pub fn report(wheel: &Path, size: u64, limit: u64) -> std::io::Result<Option<String>> {
    if size <= limit {
        return Ok(None);
    }
    let mut zip = zip::ZipArchive::new(std::fs::File::open(wheel)?)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
    let mut members: Vec<(String, u64)> = Vec::new();
    let mut archs: std::collections::BTreeMap<String, u64> = Default::default();
    for i in 0..zip.len() {
        let mut f = zip
            .by_index(i)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
        members.push((f.name().to_string(), f.compressed_size()));
        if f.name().ends_with(".so") || f.name().contains(".so.") {
            let mut bytes = Vec::new();
            f.read_to_end(&mut bytes)?;
            if let Some(section) = fatbin_section(&bytes) {
                for (arch, n) in fatbin_entries(section) {
                    *archs.entry(arch).or_default() += n;
                }
            }
        }
    }
    members.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut archs: Vec<(String, u64)> = archs.into_iter().collect();
    archs.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let list = |items: &[(String, u64)]| {
        items
            .iter()
            .take(5)
            .map(|(n, s)| format!("{n} {}", mib(*s)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut text = format!(
        "{} is {}, above {}: PyPI refuses files this big unless the project's limit was raised.\n  biggest members (compressed): {}",
        wheel.file_name().unwrap_or_default().to_string_lossy(),
        mib(size),
        mib(limit),
        list(&members)
    );
    if !archs.is_empty() {
        text.push_str(&format!(
            "\n  GPU code by architecture: {}\n  fewer `archs` (e.g. only the `-real` ones you ship for, plus one PTX) or `ptx = \"highest\"` make it smaller",
            list(&archs)
        ));
    }
    Ok(Some(text))
}
