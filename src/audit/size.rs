//! Wheel size: a finished wheel above `max-wheel-size` is an error naming its
//! biggest members and the GPU architectures that cost most (read from the fatbins inside its
//! ELF files, `inspect::fatbin`), with the fixes.

use std::io::Read;
use std::path::Path;

use crate::config::compress::{linux_driver, Compress};
use crate::inspect::fatbin::{entries, fatbin_section, Codec, Entry, EntryKind};

/// What the budget check needs to know of the build, for its hints.
#[derive(Debug, Clone)]
pub(crate) struct Budget {
    pub(crate) max_bytes: u64,
    /// The compression mode this build used (`None`: the build's own nvcc flags chose it, as in
    /// a repaired wheel; it is read from the wheel's fatbins when the wheel is over budget) and
    /// the CUDA major it built for.
    pub(crate) compress: Option<Compress>,
    pub(crate) cuda_major: u32,
    /// `ptx = "all"` was in force (PTX of every arch).
    pub(crate) ptx_all: bool,
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum SizeError {
    #[error("{wheel} is {}, above `max-wheel-size` ({}){}; the wheel was not kept.\n{report}", human(*size), human(*limit), if *limit == crate::config::MAX_WHEEL_SIZE { ", PyPI's default limit per file" } else { "" })]
    TooBig {
        wheel: String,
        size: u64,
        limit: u64,
        /// The biggest members and the GPU code per architecture.
        report: String,
        hints: Vec<String>,
    },
    #[error("cannot read the wheel {wheel} to size it: {source}")]
    Read {
        wheel: String,
        source: std::io::Error,
    },
}

impl crate::hint::Hint for SizeError {
    fn hints(&self) -> Vec<String> {
        match self {
            SizeError::TooBig { hints, .. } => hints.clone(),
            SizeError::Read { .. } => vec!["build again; if it persists, report it".into()],
        }
    }
}

/// `19.8 kB`, `104.9 MB` (decimal, as PyPI counts).
pub(crate) fn human(bytes: u64) -> String {
    match bytes {
        b if b >= 1_000_000 => format!("{:.1} MB", b as f64 / 1e6),
        b => format!("{:.1} kB", b as f64 / 1e3),
    }
}

/// The members of a wheel by stored size, the fatbin bytes per GPU architecture (biggest
/// first), and how its GPU code is compressed (`compress_of`).
type Sizes = (Vec<(String, u64)>, Vec<(String, u64)>, Option<Compress>);

fn sizes(wheel: &Path) -> std::io::Result<Sizes> {
    let bad = |e| std::io::Error::new(std::io::ErrorKind::InvalidData, e);
    let mut zip = zip::ZipArchive::new(std::fs::File::open(wheel)?).map_err(bad)?;
    let mut members: Vec<(String, u64)> = Vec::new();
    let mut archs: std::collections::BTreeMap<String, u64> = Default::default();
    let mut all = Vec::new();
    for i in 0..zip.len() {
        let mut f = zip.by_index(i).map_err(bad)?;
        members.push((f.name().to_string(), f.compressed_size()));
        if f.name().ends_with(".so") || f.name().contains(".so.") {
            let mut bytes = Vec::new();
            f.read_to_end(&mut bytes)?;
            if let Some(section) = fatbin_section(&bytes) {
                for e in entries(section) {
                    *archs.entry(e.name()).or_default() += e.size;
                    all.push(e);
                }
            }
        }
    }
    members.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut archs: Vec<(String, u64)> = archs.into_iter().collect();
    archs.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    Ok((members, archs, compress_of(&all)))
}

fn list(items: &[(String, u64)]) -> String {
    items
        .iter()
        .take(5)
        .map(|(n, s)| format!("{n} {}", human(*s)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The fixes, in the order they usually help most.
fn fixes(budget: &Budget, compress: Compress, archs: &[(String, u64)]) -> Vec<String> {
    let mut hints = Vec::new();
    if !archs.is_empty() {
        hints.push(format!(
            "fewer `archs`: each costs what the list above says (the biggest: {}); ship SASS for the GPUs you support (`\"86-real\"`) plus one PTX for newer ones",
            list(&archs[..1])
        ));
        if budget.ptx_all {
            hints.push("`ptx = \"highest\"`: PTX of the newest arch only (this build embeds PTX of every arch)".into());
        } else {
            hints.push("`ptx = \"none\"`: no PTX at all (the wheel then runs only on the archs it has SASS for)".into());
        }
    }
    let floor = Compress::Size.driver_floor(budget.cuda_major);
    if compress != Compress::Size {
        let driver = linux_driver(floor)
            .map(|d| format!(", Linux driver {d}"))
            .unwrap_or_default();
        hints.push(format!(
            "`compress = \"size\"`: the smallest fatbins (this build used \"{}\"); with CUDA {} it needs a driver for CUDA {}.{} or newer{driver}",
            compress.name(),
            budget.cuda_major,
            floor.0,
            floor.1
        ));
    } else {
        hints.push("`compress` is already \"size\", the smallest fatbins nvcc makes".into());
    }
    hints.push("`max-wheel-size`: raise it (e.g. \"200MB\") when PyPI raised your project's limit or you publish elsewhere".into());
    hints
}

/// The summary line on the GPU code of the built ELF files: its bytes as stored and what the
/// compression mode asks of the driver; `None` without GPU code.
pub(crate) fn gpu_line(
    elfs: &[std::path::PathBuf],
    compress: Compress,
    cuda_major: u32,
) -> Option<String> {
    let bytes: u64 = elfs
        .iter()
        .filter_map(|p| std::fs::read(p).ok())
        .filter_map(|elf| fatbin_section(&elf).map(|s| s.len() as u64))
        .sum();
    let floor = compress.driver_floor(cuda_major);
    (bytes > 0).then(|| {
        format!(
            "GPU code {} as stored (compress = \"{}\": loads on a driver for CUDA {}.{} or newer)",
            human(bytes),
            compress.name(),
            floor.0,
            floor.1
        )
    })
}

/// The `compress` mode fatbin entries were built with (for a wheel cudawheel did not compile,
/// whose flags it did not choose): zstd on SASS is "size", zstd on PTX only "balance", LZ4
/// "speed", nothing compressed "none"; `None` without GPU code.
fn compress_of(all: &[Entry]) -> Option<Compress> {
    let has = |kind: Option<EntryKind>, codec: Codec| {
        all.iter()
            .any(|e| e.codec == codec && kind.is_none_or(|k| e.kind == k))
    };
    match () {
        _ if all.is_empty() => None,
        _ if has(Some(EntryKind::Sass), Codec::Zstd) => Some(Compress::Size),
        _ if has(None, Codec::Zstd) => Some(Compress::Balance),
        _ if has(None, Codec::Lz4) => Some(Compress::Speed),
        _ => Some(Compress::None),
    }
}

/// Whether a wheel's file name has a per-CPython ABI tag the limited API could replace
/// (`cp312-cp312`; not `abi3`/`none`, nor a free-threaded `cp313t`, which has no limited API).
fn per_python(filename: &str) -> bool {
    let stem = filename.trim_end_matches(".whl");
    let parts: Vec<&str> = stem.split('-').collect();
    // name-version[-build]-py-abi-platform[-variant label]: the ABI tag is the one after a `cpXY`.
    parts.windows(2).any(|w| {
        w[0].starts_with("cp") && w[1].starts_with("cp") && w[1] != "abi3" && !w[1].ends_with('t')
    })
}

/// Checks a finished wheel of `size` bytes against the budget.
pub(crate) fn check(wheel: &Path, size: u64, budget: &Budget) -> Result<(), SizeError> {
    if size <= budget.max_bytes {
        return Ok(());
    }
    let name = wheel
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .to_string();
    let (members, archs, read) = sizes(wheel).map_err(|source| SizeError::Read {
        wheel: name.clone(),
        source,
    })?;
    let compress = budget.compress.or(read).unwrap_or(Compress::None);
    let mut report = format!("  biggest members (compressed): {}", list(&members));
    if !archs.is_empty() {
        report.push_str(&format!("\n  GPU code by architecture: {}", list(&archs)));
    }
    let mut hints = fixes(budget, compress, &archs);
    if per_python(&name) && !archs.is_empty() {
        hints.push("this wheel serves one CPython version and every other version's wheel carries the same GPU code again: `py-limited-api` (the C API; nanobind from cp312) builds one wheel for all of them, and `python -m cudawheel size DIR` shows what a release folder repeats".into());
    }
    Err(SizeError::TooBig {
        wheel: name,
        size,
        limit: budget.max_bytes,
        report,
        hints,
    })
}

/// `python -m cudawheel size DIR`: what a folder of wheels costs on PyPI.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub(crate) struct Release {
    /// Every `*.whl` in the folder, by file name.
    pub(crate) wheels: Vec<WheelSize>,
    /// Per distribution name (the file name's first part), in the order first met.
    pub(crate) projects: Vec<ProjectSize>,
    pub(crate) total_bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub(crate) struct WheelSize {
    /// The file name.
    pub(crate) wheel: String,
    pub(crate) bytes: u64,
    /// The `.nv_fatbin` sections of its ELF members.
    pub(crate) gpu_bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub(crate) struct ProjectSize {
    pub(crate) project: String,
    pub(crate) wheels: u64,
    pub(crate) bytes: u64,
    pub(crate) gpu_bytes: u64,
    /// GPU code byte-identical across wheels of one version, platform and variant (one wheel
    /// per CPython version): every copy but one, what one library wheel would save.
    pub(crate) duplicated_gpu_bytes: u64,
}

/// Version, platform tags and the variant (`variant.json`'s digest): wheels of one project that
/// agree on these could share one library wheel.
type Group = (String, Vec<String>, Option<[u8; 32]>);

/// One wheel as the release report reads it.
struct Scanned {
    size: WheelSize,
    project: String,
    group: Group,
    /// Each fatbin: (bytes, digest).
    fatbins: Vec<(u64, [u8; 32])>,
}

fn digest(bytes: &[u8]) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).into()
}

fn scan(path: &Path) -> std::io::Result<Scanned> {
    let bad = |e| std::io::Error::new(std::io::ErrorKind::InvalidData, e);
    let wheel = path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut parts = wheel.trim_end_matches(".whl").split('-');
    let project = parts.next().unwrap_or_default().to_string();
    let version = parts.next().unwrap_or_default().to_string();
    let bytes = std::fs::metadata(path)?.len();
    let mut zip = zip::ZipArchive::new(std::fs::File::open(path)?).map_err(bad)?;
    let (mut platforms, mut variant, mut fatbins) = (Vec::new(), None, Vec::new());
    for i in 0..zip.len() {
        let mut f = zip.by_index(i).map_err(bad)?;
        let name = f.name().to_string();
        let wanted = name.ends_with(".dist-info/WHEEL")
            || name.ends_with(".dist-info/variant.json")
            || name.ends_with(".so")
            || name.contains(".so.");
        if !wanted {
            continue;
        }
        let mut data = Vec::new();
        f.read_to_end(&mut data)?;
        if name.ends_with(".dist-info/WHEEL") {
            let text = String::from_utf8_lossy(&data);
            let tags = text.lines().filter_map(|l| l.strip_prefix("Tag:"));
            platforms = tags
                .filter_map(|t| t.trim().rsplit('-').next().map(str::to_string))
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
        } else if name.ends_with(".dist-info/variant.json") {
            variant = Some(digest(&data));
        } else if let Some(section) = fatbin_section(&data).filter(|s| !s.is_empty()) {
            fatbins.push((section.len() as u64, digest(section)));
        }
    }
    Ok(Scanned {
        size: WheelSize {
            wheel,
            bytes,
            gpu_bytes: fatbins.iter().map(|(n, _)| n).sum(),
        },
        project,
        group: (version, platforms, variant),
        fatbins,
    })
}

/// The release report of every `*.whl` in `dir` (sorted by name).
pub(crate) fn release(dir: &Path) -> Result<Release, SizeError> {
    let read = |wheel: &Path, source| SizeError::Read {
        wheel: wheel.display().to_string(),
        source,
    };
    let mut names: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| read(dir, e))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "whl"))
        .collect();
    names.sort();
    let scanned = names
        .iter()
        .map(|p| scan(p).map_err(|e| read(p, e)))
        .collect::<Result<Vec<_>, _>>()?;
    let mut out = Release::default();
    // (project, group) -> digest -> (bytes, copies)
    type Copies = std::collections::BTreeMap<[u8; 32], (u64, u64)>;
    let mut groups: Vec<((String, &Group), Copies)> = Vec::new();
    for w in &scanned {
        let index = match out.projects.iter().position(|p| p.project == w.project) {
            Some(i) => i,
            None => {
                out.projects.push(ProjectSize {
                    project: w.project.clone(),
                    wheels: 0,
                    bytes: 0,
                    gpu_bytes: 0,
                    duplicated_gpu_bytes: 0,
                });
                out.projects.len() - 1
            }
        };
        let p = &mut out.projects[index];
        p.wheels += 1;
        p.bytes += w.size.bytes;
        p.gpu_bytes += w.size.gpu_bytes;
        let key = (w.project.clone(), &w.group);
        let copies = match groups.iter().position(|(k, _)| *k == key) {
            Some(i) => &mut groups[i].1,
            None => {
                groups.push((key, Copies::new()));
                &mut groups.last_mut().expect("just pushed").1
            }
        };
        for (n, d) in &w.fatbins {
            copies.entry(*d).or_insert((*n, 0)).1 += 1;
        }
        out.total_bytes += w.size.bytes;
        out.wheels.push(w.size.clone());
    }
    for ((project, _), copies) in groups {
        let dup: u64 = copies.values().map(|(n, c)| n * (c - 1)).sum();
        if let Some(p) = out.projects.iter_mut().find(|p| p.project == project) {
            p.duplicated_gpu_bytes += dup;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wheel(dir: &Path, name: &str, tag: &str) -> u64 {
        use std::io::Write;
        let path = dir.join(name);
        let mut z = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
        let opts = zip::write::SimpleFileOptions::default();
        z.start_file("p-1.dist-info/WHEEL", opts).unwrap();
        z.write_all(format!("Wheel-Version: 1.0\nTag: {tag}\n").as_bytes())
            .unwrap();
        z.finish().unwrap();
        std::fs::metadata(&path).unwrap().len()
    }

    #[test]
    fn release_totals_per_wheel_and_project_in_file_name_order() {
        let d = tempfile::tempdir().unwrap();
        let b = wheel(d.path(), "b-1-py3-none-any.whl", "py3-none-any");
        let a1 = wheel(
            d.path(),
            "a-1-cp39-abi3-linux_x86_64.whl",
            "cp39-abi3-linux_x86_64",
        );
        let a2 = wheel(
            d.path(),
            "a-1-cp310-abi3-linux_x86_64.whl",
            "cp310-abi3-linux_x86_64",
        );
        std::fs::write(d.path().join("notes.txt"), "not a wheel").unwrap();
        let rep = release(d.path()).unwrap();
        let names: Vec<&str> = rep.wheels.iter().map(|w| w.wheel.as_str()).collect();
        assert_eq!(
            names,
            [
                "a-1-cp310-abi3-linux_x86_64.whl",
                "a-1-cp39-abi3-linux_x86_64.whl",
                "b-1-py3-none-any.whl"
            ]
        );
        assert_eq!(rep.total_bytes, a1 + a2 + b);
        let projects: Vec<(&str, u64, u64)> = rep
            .projects
            .iter()
            .map(|p| (p.project.as_str(), p.wheels, p.bytes))
            .collect();
        assert_eq!(projects, [("a", 2, a1 + a2), ("b", 1, b)]);
        assert!(rep
            .projects
            .iter()
            .all(|p| p.gpu_bytes == 0 && p.duplicated_gpu_bytes == 0));
    }

    #[test]
    fn per_python_wheels_are_told_apart() {
        assert!(per_python("p-0.1.0-cp312-cp312-manylinux_2_34_x86_64.whl"));
        assert!(!per_python("p-0.1.0-cp39-abi3-manylinux_2_17_x86_64.whl"));
        assert!(!per_python(
            "p-0.1.0-cp313-cp313t-manylinux_2_17_x86_64.whl"
        ));
        assert!(!per_python("p-0.1.0-py3-none-manylinux_2_17_x86_64.whl"));
    }

    #[test]
    fn the_compression_is_read_from_the_entries() {
        let entry = |kind, codec| Entry {
            kind,
            sm: 90,
            suffix: "",
            version: (1, 8),
            size: 8,
            codec,
        };
        let (sass, ptx) = (EntryKind::Sass, EntryKind::Ptx);
        let mode = |e: &[(EntryKind, Codec)]| {
            compress_of(&e.iter().map(|&(k, c)| entry(k, c)).collect::<Vec<_>>())
        };
        // As nvcc 13.5 writes each mode (`inspect::fatbin`'s measured flags).
        assert_eq!(
            mode(&[(sass, Codec::Stored), (ptx, Codec::Stored)]),
            Some(Compress::None)
        );
        assert_eq!(
            mode(&[(sass, Codec::Stored), (ptx, Codec::Lz4)]),
            Some(Compress::Speed)
        );
        assert_eq!(
            mode(&[(sass, Codec::Stored), (ptx, Codec::Zstd)]),
            Some(Compress::Balance)
        );
        assert_eq!(
            mode(&[(sass, Codec::Zstd), (ptx, Codec::Zstd)]),
            Some(Compress::Size)
        );
        assert_eq!(mode(&[]), None);
    }

    #[test]
    fn hints_name_the_fixes_and_the_driver_floor() {
        let budget = Budget {
            max_bytes: 1,
            compress: Some(Compress::Speed),
            cuda_major: 12,
            ptx_all: true,
        };
        let hints = fixes(&budget, Compress::Speed, &[("sm_90".into(), 3_000_000)]);
        let text = hints.join("\n");
        assert!(text.contains("sm_90 3.0 MB"), "{text}");
        assert!(text.contains("`ptx = \"highest\"`"), "{text}");
        assert!(
            text.contains("this build used \"speed\"")
                && text.contains("CUDA 12.4 or newer, Linux driver 550.54.14"),
            "{text}"
        );
        assert!(text.contains("`max-wheel-size`"), "{text}");
    }
}
