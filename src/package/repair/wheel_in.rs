//! The wheel being repaired, read whole: its members (bytes, executable bit), its `.dist-info`
//! folder and METADATA, the parts of its file name.

use std::io::{Read, Seek};
use std::path::Path;

use super::RepairError;

/// One member of the wheel.
#[derive(Debug, Clone)]
pub(super) struct Member {
    pub(super) path: String,
    pub(super) bytes: Vec<u8>,
    pub(super) executable: bool,
}

impl Member {
    pub(super) fn is_elf(&self) -> bool {
        self.bytes.starts_with(b"\x7fELF")
    }
}

#[derive(Debug, Clone)]
pub(super) struct WheelIn {
    pub(super) members: Vec<Member>,
    /// `pkg-1.0.dist-info`
    pub(super) dist_info: String,
    pub(super) metadata: String,
    /// The file name's parts: distribution, version, optional build tag, python, abi, platform.
    pub(super) name_parts: Vec<String>,
}

impl WheelIn {
    pub(super) fn read(path: &Path) -> Result<WheelIn, RepairError> {
        let file = std::fs::File::open(path).map_err(|e| RepairError::Read {
            wheel: path.display().to_string(),
            message: e.to_string(),
        })?;
        WheelIn::from_reader(path, file)
    }

    /// The wheel read from `archive`; `path` gives its file name (and names it in messages).
    pub(super) fn from_reader<R: Read + Seek>(
        path: &Path,
        archive: R,
    ) -> Result<WheelIn, RepairError> {
        let bad = |message: String| RepairError::Read {
            wheel: path.display().to_string(),
            message,
        };
        let filename = path
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        let name_parts: Vec<String> = filename
            .strip_suffix(".whl")
            .unwrap_or("")
            .split('-')
            .map(str::to_string)
            .collect();
        if !(5..=6).contains(&name_parts.len()) {
            return Err(bad(
                "its file name is not `<name>-<version>[-<build>]-<python>-<abi>-<platform>.whl`"
                    .into(),
            ));
        }
        let mut zip = zip::ZipArchive::new(archive).map_err(|e| bad(e.to_string()))?;
        let mut members = Vec::new();
        for i in 0..zip.len() {
            let mut entry = zip.by_index(i).map_err(|e| bad(e.to_string()))?;
            if entry.is_dir() {
                continue;
            }
            let name = entry.name().to_string();
            if name.starts_with('/') || name.split('/').any(|c| c == "..") {
                return Err(bad(format!(
                    "the member {name:?} would land outside the wheel"
                )));
            }
            let executable = entry.unix_mode().is_some_and(|m| m & 0o111 != 0);
            let mut bytes = Vec::new();
            entry
                .read_to_end(&mut bytes)
                .map_err(|e| bad(e.to_string()))?;
            members.push(Member {
                path: name,
                bytes,
                executable,
            });
        }
        let meta = members
            .iter()
            .find(|m| m.path.ends_with(".dist-info/METADATA") && m.path.matches('/').count() == 1)
            .ok_or_else(|| bad("it has no <name>.dist-info/METADATA".into()))?;
        let dist_info = meta.path.split('/').next().unwrap_or("").to_string();
        let metadata = String::from_utf8_lossy(&meta.bytes).into_owned();
        Ok(WheelIn {
            members,
            dist_info,
            metadata,
            name_parts,
        })
    }

    /// `1.0` or `1.0-1` (with a build tag).
    pub(super) fn version_part(&self) -> String {
        self.name_parts[1..self.name_parts.len() - 3].join("-")
    }

    /// `cp311-cp311`
    pub(super) fn python_abi(&self) -> String {
        let n = self.name_parts.len();
        format!("{}-{}", self.name_parts[n - 3], self.name_parts[n - 2])
    }

    /// The CPU of the platform tag (`linux_x86_64` -> `x86_64`).
    pub(super) fn machine(&self) -> String {
        let plat = self.name_parts.last().map_or("", String::as_str);
        ["x86_64", "aarch64", "ppc64le", "s390x", "i686", "armv7l"]
            .into_iter()
            .find(|a| plat.ends_with(a))
            .unwrap_or("x86_64")
            .to_string()
    }

    /// The version as `.dist-info` names it (`1.0`).
    pub(super) fn version(&self) -> String {
        self.name_parts[1].clone()
    }

    /// `path` with the `.dist-info` (and `.data`) folder renamed to `dist_info`'s stem.
    pub(super) fn renamed_path(&self, path: &str, dist_info: &str) -> String {
        let old_stem = self.dist_info.trim_end_matches(".dist-info");
        let new_stem = dist_info.trim_end_matches(".dist-info");
        match path.split_once('/') {
            Some((top, rest)) if top == self.dist_info => format!("{dist_info}/{rest}"),
            Some((top, rest)) if top == format!("{old_stem}.data") => {
                format!("{new_stem}.data/{rest}")
            }
            _ => path.to_string(),
        }
    }
}
