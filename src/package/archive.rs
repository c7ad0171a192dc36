//! Archives: wheels (zip + RECORD) and sdists (tar.gz). Knows bytes and paths, not CUDA.
//!
//! Deterministic by construction: entries sorted, fixed timestamps (`SOURCE_DATE_EPOCH`, else
//! 1980-01-01), normalized modes and owners. Atomic: written to a temporary file in the output
//! folder and renamed at the end, so a failure leaves no partial archive behind.
//!
//! Incremental: a wheel member whose path, bytes, mode and time are those of a member of the
//! previous wheel built here is copied compressed from it instead of being deflated again (the
//! most of a no-op rebuild's time for a few MB of GPU code). The copy is byte for byte what
//! deflating again would write.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use sha2::Digest as _;

use crate::hint::Hint;

#[derive(Debug, thiserror::Error)]
pub(crate) enum ArchiveError {
    #[error("Cannot write to the output folder {}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("Cannot write the archive {}: {message}", path.display())]
    Zip { path: PathBuf, message: String },
    #[error("Cannot read {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl Hint for ArchiveError {
    fn hints(&self) -> Vec<String> {
        match self {
            ArchiveError::Io { .. } | ArchiveError::Zip { .. } => {
                vec!["check that the output folder exists, is writable and has free space".into()]
            }
            ArchiveError::Read { .. } => vec!["check that the file exists and is readable".into()],
        }
    }
}

#[derive(Debug, Clone)]
struct Entry {
    bytes: Vec<u8>,
    executable: bool,
}

/// Collects files in memory, then writes them in a fixed order.
#[derive(Debug, Default)]
pub(crate) struct Files {
    entries: BTreeMap<String, Entry>,
}

impl Files {
    pub(crate) fn add_bytes(&mut self, path: &str, bytes: impl Into<Vec<u8>>, executable: bool) {
        self.entries.insert(
            path.to_string(),
            Entry {
                bytes: bytes.into(),
                executable,
            },
        );
    }

    pub(crate) fn add_file(&mut self, path: &str, source: &Path) -> Result<(), ArchiveError> {
        use std::os::unix::fs::PermissionsExt;
        let bytes = std::fs::read(source).map_err(|e| ArchiveError::Read {
            path: source.to_path_buf(),
            source: e,
        })?;
        let executable = source
            .metadata()
            .is_ok_and(|m| m.permissions().mode() & 0o111 != 0);
        self.add_bytes(path, bytes, executable);
        Ok(())
    }

    /// `(path, bytes, executable)` in path order.
    pub(crate) fn into_entries(self) -> Vec<(String, Vec<u8>, bool)> {
        self.entries
            .into_iter()
            .map(|(p, e)| (p, e.bytes, e.executable))
            .collect()
    }
}

/// Days since 1970-01-01 -> (year, month, day) (proleptic Gregorian).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// The zip timestamp for `epoch` (zip cannot go before 1980).
fn zip_time(epoch: Option<u64>) -> zip::DateTime {
    const MIN: u64 = 315_532_800; // 1980-01-01T00:00:00Z
    let t = epoch.unwrap_or(MIN).clamp(MIN, 4_354_819_199);
    let (y, mo, d) = civil_from_days((t / 86_400) as i64);
    let s = t % 86_400;
    zip::DateTime::from_date_and_time(
        y as u16,
        mo as u8,
        d as u8,
        (s / 3600) as u8,
        (s % 3600 / 60) as u8,
        (s % 60) as u8,
    )
    .unwrap_or_default()
}

fn record_hash(bytes: &[u8]) -> String {
    let digest = sha2::Sha256::digest(bytes);
    format!(
        "sha256={}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest)
    )
}

/// A temporary file in `dir` that becomes `dir/name` on `persist`, or vanishes when dropped.
fn temp_in(dir: &Path) -> Result<tempfile::NamedTempFile, ArchiveError> {
    std::fs::create_dir_all(dir).map_err(|source| ArchiveError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    tempfile::Builder::new()
        .prefix(".cudawheel-partial-")
        .tempfile_in(dir)
        .map_err(|source| ArchiveError::Io {
            path: dir.to_path_buf(),
            source,
        })
}

fn persist(tmp: tempfile::NamedTempFile, target: &Path) -> Result<(), ArchiveError> {
    use std::os::unix::fs::PermissionsExt;
    let _ = std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o644));
    tmp.persist(target).map_err(|e| ArchiveError::Io {
        path: target.to_path_buf(),
        source: e.error,
    })?;
    Ok(())
}

/// An earlier wheel whose compressed members may be copied: its RECORD (path -> hash, size).
struct Previous {
    zip: zip::ZipArchive<std::fs::File>,
    record: std::collections::HashMap<String, (String, u64)>,
}

impl Previous {
    /// `None` when there is none or it cannot be read: then everything is deflated anew.
    fn open(path: &Path) -> Option<Previous> {
        let mut zip = zip::ZipArchive::new(std::fs::File::open(path).ok()?).ok()?;
        let record_name = zip
            .file_names()
            .find(|n| n.ends_with(".dist-info/RECORD"))?
            .to_string();
        let mut text = String::new();
        std::io::Read::read_to_string(&mut zip.by_name(&record_name).ok()?, &mut text).ok()?;
        let record = text
            .lines()
            .filter_map(|line| {
                // Paths with a comma are quoted; they are simply not reused.
                let mut fields = line.rsplitn(3, ',');
                let size = fields.next()?.parse().ok()?;
                let hash = fields.next()?.to_string();
                Some((fields.next()?.to_string(), (hash, size)))
            })
            .collect();
        Some(Previous { zip, record })
    }

    /// The member that holds exactly these bytes with this mode and time, ready to be copied.
    fn find(
        &mut self,
        path: &str,
        hash: &str,
        bytes: &[u8],
        mode: u32,
        time: zip::DateTime,
    ) -> Option<zip::read::ZipFile<'_, std::fs::File>> {
        let (h, size) = self.record.get(path)?;
        if h != hash || *size != bytes.len() as u64 {
            return None;
        }
        let index = self.zip.index_for_name(path)?;
        let member = self.zip.by_index_raw(index).ok()?;
        let same = member.compression() == zip::CompressionMethod::Deflated
            && member.size() == bytes.len() as u64
            && member.crc32() == crc32fast::hash(bytes)
            && member.unix_mode().map(|m| m & 0o7777) == Some(mode)
            && member.last_modified() == Some(time);
        same.then_some(member)
    }
}

/// Writes `files` plus `<dist_info>/RECORD` as the wheel `out_dir/filename`, copying the
/// unchanged members of `previous` (an earlier wheel of the same project) compressed as they are.
pub(crate) fn write_wheel(
    out_dir: &Path,
    filename: &str,
    dist_info: &str,
    files: Files,
    epoch: Option<u64>,
    previous: Option<&Path>,
) -> Result<PathBuf, ArchiveError> {
    let method = zip::CompressionMethod::Deflated;
    write(
        out_dir,
        (filename, dist_info),
        files,
        epoch,
        previous,
        method,
    )
}

/// Writes a wheel that only another tool reads before the wheel is written anew (auditwheel's
/// input in a repair): its members stored, not deflated.
pub(crate) fn write_scratch_wheel(
    out_dir: &Path,
    filename: &str,
    dist_info: &str,
    files: Files,
) -> Result<PathBuf, ArchiveError> {
    let method = zip::CompressionMethod::Stored;
    write(out_dir, (filename, dist_info), files, None, None, method)
}

fn write(
    out_dir: &Path,
    (filename, dist_info): (&str, &str),
    mut files: Files,
    epoch: Option<u64>,
    previous: Option<&Path>,
    method: zip::CompressionMethod,
) -> Result<PathBuf, ArchiveError> {
    let target = out_dir.join(filename);
    let record_path = format!("{dist_info}/RECORD");
    files.entries.remove(&record_path);
    let mut record = String::new();
    let prefix = format!("{dist_info}/");
    // Package files first, then .dist-info, RECORD last (the order installers expect).
    let mut order: Vec<(&String, &Entry)> = files
        .entries
        .iter()
        .filter(|(p, _)| !p.starts_with(&prefix))
        .collect();
    order.extend(files.entries.iter().filter(|(p, _)| p.starts_with(&prefix)));
    let mut hashes = Vec::with_capacity(order.len());
    for (path, entry) in &order {
        let hash = record_hash(&entry.bytes);
        record.push_str(&format!(
            "{},{},{}\n",
            csv_field(path),
            hash,
            entry.bytes.len()
        ));
        hashes.push(hash);
    }
    record.push_str(&format!("{},,\n", csv_field(&record_path)));
    let record_entry = Entry {
        bytes: record.into_bytes(),
        executable: false,
    };
    order.push((&record_path, &record_entry));
    hashes.push(String::new());

    let mut previous = previous.and_then(Previous::open);
    let tmp = temp_in(out_dir)?;
    let zip_err = |e: zip::result::ZipError| ArchiveError::Zip {
        path: target.clone(),
        message: e.to_string(),
    };
    let mut zip = zip::ZipWriter::new(tmp.as_file());
    let time = zip_time(epoch);
    for ((path, entry), hash) in order.into_iter().zip(&hashes) {
        let mode = if entry.executable { 0o755 } else { 0o644 };
        // RECORD (no hash of its own) is always written anew.
        let reusable = match previous.as_mut() {
            Some(prev) if !hash.is_empty() => prev.find(path, hash, &entry.bytes, mode, time),
            _ => None,
        };
        if let Some(member) = reusable {
            zip.raw_copy_file(member).map_err(zip_err)?;
            continue;
        }
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(method)
            .last_modified_time(time)
            .unix_permissions(mode);
        zip.start_file(path.as_str(), options).map_err(zip_err)?;
        zip.write_all(&entry.bytes)
            .map_err(|source| ArchiveError::Io {
                path: target.clone(),
                source,
            })?;
    }
    zip.finish().map_err(zip_err)?;
    tmp.as_file()
        .sync_all()
        .map_err(|source| ArchiveError::Io {
            path: target.clone(),
            source,
        })?;
    persist(tmp, &target)?;
    Ok(target)
}

/// Keeps a copy of `wheel` as `keep` (the next build's `previous`). Best effort: without it
/// the next build only deflates everything again.
pub(crate) fn keep_copy(wheel: &Path, keep: &Path) {
    let Some(dir) = keep.parent() else { return };
    let Ok(tmp) = temp_in(dir) else { return };
    if std::fs::copy(wheel, tmp.path()).is_ok() {
        let _ = tmp.persist(keep);
    }
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Writes `files` under `<top>/` as the sdist `out_dir/filename` (tar.gz).
pub(crate) fn write_sdist(
    out_dir: &Path,
    filename: &str,
    top: &str,
    files: Files,
    epoch: Option<u64>,
) -> Result<PathBuf, ArchiveError> {
    let target = out_dir.join(filename);
    let tmp = temp_in(out_dir)?;
    let io = |source| ArchiveError::Io {
        path: target.clone(),
        source,
    };
    let mtime = epoch.unwrap_or(0);
    let gz = flate2::GzBuilder::new()
        .mtime(0)
        .write(tmp.as_file(), flate2::Compression::default());
    let mut tar = tar::Builder::new(gz);
    tar.mode(tar::HeaderMode::Deterministic);
    for (path, entry) in &files.entries {
        let mut header = tar::Header::new_gnu();
        header.set_size(entry.bytes.len() as u64);
        header.set_mode(if entry.executable { 0o755 } else { 0o644 });
        header.set_mtime(mtime);
        header.set_uid(0);
        header.set_gid(0);
        header.set_entry_type(tar::EntryType::Regular);
        tar.append_data(&mut header, format!("{top}/{path}"), entry.bytes.as_slice())
            .map_err(io)?;
    }
    let gz = tar.into_inner().map_err(io)?;
    gz.finish().map_err(io)?;
    tmp.as_file().sync_all().map_err(io)?;
    persist(tmp, &target)?;
    Ok(target)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19_723), (2024, 1, 1));
        let t = zip_time(Some(1_700_000_000)); // 2023-11-14T22:13:20Z
        assert_eq!(
            (t.year(), t.month(), t.day(), t.hour(), t.minute()),
            (2023, 11, 14, 22, 13)
        );
    }

    #[test]
    fn unchanged_members_are_copied_compressed_from_the_previous_wheel() {
        use std::io::Read as _;
        let dir = tempfile::tempdir().unwrap();
        let big: Vec<u8> = (0..200_000u32)
            .map(|i| ((i % 251) ^ (i / 7)) as u8)
            .collect();
        let files = |so: &[u8], py: &str| {
            let mut f = Files::default();
            f.add_bytes("pkg/_core.so", so.to_vec(), true);
            f.add_bytes("pkg/__init__.py", py.to_string(), false);
            f.add_bytes("x-1.dist-info/METADATA", "m", false);
            f
        };
        // The previous wheel, its big member deflated at another level than ours: still the
        // same bytes once inflated, but recognisably not what this writer would produce.
        let prev = dir.path().join("prev.whl");
        {
            let mut zip = zip::ZipWriter::new(std::fs::File::create(&prev).unwrap());
            let mut record = String::new();
            for (name, bytes, mode, level) in [
                ("pkg/_core.so", big.clone(), 0o755, 1),
                ("pkg/__init__.py", b"old".to_vec(), 0o644, 6),
                ("x-1.dist-info/METADATA", b"m".to_vec(), 0o644, 6),
            ] {
                let opts = zip::write::SimpleFileOptions::default()
                    .compression_method(zip::CompressionMethod::Deflated)
                    .compression_level(Some(level))
                    .last_modified_time(zip_time(Some(1_700_000_000)))
                    .unix_permissions(mode);
                zip.start_file(name, opts).unwrap();
                zip.write_all(&bytes).unwrap();
                record.push_str(&format!("{name},{},{}\n", record_hash(&bytes), bytes.len()));
            }
            zip.start_file(
                "x-1.dist-info/RECORD",
                zip::write::SimpleFileOptions::default(),
            )
            .unwrap();
            zip.write_all(record.as_bytes()).unwrap();
            zip.finish().unwrap();
        }
        let compressed = |path: &Path, name: &str| {
            let mut zip = zip::ZipArchive::new(std::fs::File::open(path).unwrap()).unwrap();
            let size = zip.by_name(name).unwrap().compressed_size();
            size
        };
        // The same files (the .so unchanged, __init__.py changed) into `dir/sub`.
        let write = |sub: &str, epoch: u64, previous: Option<&Path>| {
            write_wheel(
                &dir.path().join(sub),
                "x-1-py3-none-any.whl",
                "x-1.dist-info",
                files(&big, "new"),
                Some(epoch),
                previous,
            )
            .unwrap()
        };
        let epoch = 1_700_000_000;
        let fresh = write("a", epoch, None);
        let reused = write("b", epoch, Some(&prev));
        // The unchanged .so came over compressed as it was (level 1); __init__.py changed.
        assert_eq!(
            compressed(&reused, "pkg/_core.so"),
            compressed(&prev, "pkg/_core.so")
        );
        assert_ne!(
            compressed(&fresh, "pkg/_core.so"),
            compressed(&prev, "pkg/_core.so")
        );
        let mut zip = zip::ZipArchive::new(std::fs::File::open(&reused).unwrap()).unwrap();
        let mut so = Vec::new();
        zip.by_name("pkg/_core.so")
            .unwrap()
            .read_to_end(&mut so)
            .unwrap();
        assert_eq!(so, big);
        let m = zip.by_name("pkg/_core.so").unwrap().unix_mode().unwrap();
        assert_eq!(m & 0o777, 0o755);
        let mut init = String::new();
        zip.by_name("pkg/__init__.py")
            .unwrap()
            .read_to_string(&mut init)
            .unwrap();
        assert_eq!(init, "new");
        // Another time stamp: deflated anew.
        let later = write("c", 1_800_000_000, Some(&prev));
        assert_eq!(
            compressed(&later, "pkg/_core.so"),
            compressed(&fresh, "pkg/_core.so")
        );
        // A wheel of our own as `previous`: the result is byte for byte a fresh write.
        let again = write("d", epoch, Some(&fresh));
        assert_eq!(
            std::fs::read(&again).unwrap(),
            std::fs::read(&fresh).unwrap()
        );
        // An unreadable `previous` is no error.
        std::fs::write(dir.path().join("junk.whl"), b"not a zip").unwrap();
        write("e", epoch, Some(&dir.path().join("junk.whl")));
    }

    #[test]
    fn wheel_has_sorted_entries_and_a_record_that_matches() {
        let dir = tempfile::tempdir().unwrap();
        let mut files = Files::default();
        files.add_bytes("pkg/b.py", "b", false);
        files.add_bytes("pkg/a.py", "a", false);
        files.add_bytes("x-1.dist-info/METADATA", "m", false);
        let path = write_wheel(
            dir.path(),
            "x-1-py3-none-any.whl",
            "x-1.dist-info",
            files,
            None,
            None,
        )
        .unwrap();
        let mut zip = zip::ZipArchive::new(std::fs::File::open(&path).unwrap()).unwrap();
        let names: Vec<String> = (0..zip.len())
            .map(|i| zip.by_index(i).unwrap().name().to_string())
            .collect();
        assert_eq!(
            names,
            [
                "pkg/a.py",
                "pkg/b.py",
                "x-1.dist-info/METADATA",
                "x-1.dist-info/RECORD"
            ]
        );
        let mut record = String::new();
        std::io::Read::read_to_string(
            &mut zip.by_name("x-1.dist-info/RECORD").unwrap(),
            &mut record,
        )
        .unwrap();
        assert!(
            record.starts_with("pkg/a.py,sha256=ypeBEsobvcr6wjGzmiPcTaeG7_gUfE5yuYB3ha_uSLs,1\n"),
            "{record}"
        );
        assert!(record.ends_with("x-1.dist-info/RECORD,,\n"));
        // nothing else left in the folder
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
