//! The wheel target's door: a wheel, as `python -m cudawheel audit` reads it (the zip, its
//! `.dist-info/METADATA`, `RECORD`, `WHEEL` and `variant.json`, every ELF member) and as
//! `python -m cudawheel repair` reads and plans it, and the readers of an installed
//! distribution's `.dist-info` files.
//!
//! A mutated zip rarely survives its own checksums, so the input is either a zip file as is
//! (it starts with `PK`) or a wheel described as text, which this door zips (see
//! `wheel_text`): mutations then reach the members' contents.

use std::io::{Cursor, Write};
use std::path::Path;
use std::sync::OnceLock;

use crate::audit::wheel_audit;
use crate::inspect::site;

/// The file name given to a wheel passed as a zip file (the audit reads its tags).
const ZIP_NAME: &str = "demo-1.0-cp311-cp311-manylinux_2_17_x86_64.whl";

/// What starts each member of a wheel described as text.
const MEMBER: &[u8] = b"\n=== ";

/// A wheel described as text: its file name on the first line, then each member as a line
/// `=== <member name>` followed by its bytes (up to the next such line). The form the wheel
/// target's seeds and regression inputs take.
pub fn wheel_text(file_name: &str, members: &[(&str, &[u8])]) -> Vec<u8> {
    let mut out = file_name.as_bytes().to_vec();
    for (name, bytes) in members {
        out.extend_from_slice(MEMBER);
        out.extend_from_slice(name.as_bytes());
        out.push(b'\n');
        out.extend_from_slice(bytes);
    }
    out
}

/// A wheel: a zip file, or a wheel described as text (`wheel_text`), through the audit, the
/// GPU code report and, for a described wheel, the `.dist-info` readers. Returns whether the
/// audit could read the wheel (its violations and errors are rendered, as a user would see
/// them).
pub fn wheel(data: &[u8]) -> bool {
    let (file_name, members) = if data.starts_with(b"PK") {
        (ZIP_NAME.to_string(), Vec::new())
    } else {
        parse_text(data)
    };
    let archive = if data.starts_with(b"PK") {
        data.to_vec()
    } else {
        zip_of(&members)
    };
    dist_info(&members);
    size_report(&file_name, &archive);
    let path = Path::new(&file_name);
    let _ = wheel_audit::gpu_code_of_wheel_bytes(path, &archive);
    // What `python -m cudawheel repair` reads and decides (no tool runs, nothing is written).
    match crate::package::repair::plan_of_bytes(path, &archive) {
        Ok(lines) => {
            let _ = lines.join("\n");
        }
        Err(e) => {
            let _ = crate::render(&crate::Error::from(e));
        }
    }
    match wheel_audit::audit_wheel_bytes(path, &archive) {
        Ok(violations) => {
            let _: Vec<String> = violations.iter().map(ToString::to_string).collect();
            true
        }
        Err(e) => {
            let _ = crate::render(&crate::Error::from(e));
            false
        }
    }
}

/// The file name and the members of a wheel described as text.
fn parse_text(data: &[u8]) -> (String, Vec<(String, Vec<u8>)>) {
    let mut parts = split(data, MEMBER).into_iter();
    let head = parts.next().unwrap_or_default();
    let first_line = head.split(|b| *b == b'\n').next().unwrap_or_default();
    let members = parts
        .map(|part| {
            let (name, bytes) = match part.iter().position(|b| *b == b'\n') {
                Some(at) => (&part[..at], &part[at + 1..]),
                None => (part, &[][..]),
            };
            (String::from_utf8_lossy(name).into_owned(), bytes.to_vec())
        })
        .collect();
    (String::from_utf8_lossy(first_line).into_owned(), members)
}

/// `data` cut at every `sep`.
fn split<'a>(data: &'a [u8], sep: &[u8]) -> Vec<&'a [u8]> {
    let mut parts = Vec::new();
    let mut rest = data;
    while let Some(at) = rest.windows(sep.len()).position(|w| w == sep) {
        parts.push(&rest[..at]);
        rest = &rest[at + sep.len()..];
    }
    parts.push(rest);
    parts
}

/// The members zipped as a wheel (stored; a member whose name the zip writer refuses, such as
/// a second one of the same name, is left out).
fn zip_of(members: &[(String, Vec<u8>)]) -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let options =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    for (name, bytes) in members {
        if zip.start_file(name.as_str(), options).is_ok() {
            let _ = zip.write_all(bytes);
        }
    }
    zip.finish().map(Cursor::into_inner).unwrap_or_default()
}

/// `python -m cudawheel size` (which also reads `.dist-info/WHEEL`) on a folder holding this
/// wheel alone: it reads wheels from files, so the wheel is written to a folder made once per
/// process.
fn size_report(file_name: &str, archive: &[u8]) {
    static DIR: OnceLock<Option<tempfile::TempDir>> = OnceLock::new();
    let Some(dir) = DIR.get_or_init(|| tempfile::tempdir().ok()) else {
        return;
    };
    let plain = !file_name.contains(['/', '\\', '\0']) && file_name.len() < 200;
    let name = match file_name.strip_suffix(".whl") {
        Some(stem) if plain && !stem.is_empty() && !stem.starts_with('.') => file_name,
        _ => ZIP_NAME,
    };
    let path = dir.path().join(name);
    if std::fs::write(&path, archive).is_ok() {
        let _ = crate::audit::size::release(dir.path());
        let _ = std::fs::remove_file(&path);
    }
}

/// The readers of an installed distribution's `.dist-info`: which files RECORD lists, the
/// name and version METADATA declares.
fn dist_info(members: &[(String, Vec<u8>)]) {
    for (name, bytes) in members {
        let text = String::from_utf8_lossy(bytes);
        if name.ends_with(".dist-info/RECORD") {
            for member in members {
                let _ = site::record_lists(&text, &member.0);
            }
        } else if name.ends_with(".dist-info/METADATA") {
            let _ = site::name_and_version(&text);
        }
    }
}
