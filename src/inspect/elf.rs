//! ELF files as the dynamic loader sees them (goblin): SONAME, NEEDED, RPATH/RUNPATH, symbol
//! versions, imports and exports. Reading only; `audit::elf_rules` judges what is read.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::hint::Hint;

#[derive(Debug, thiserror::Error)]
pub(crate) enum ReadError {
    #[error("Cannot read {}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is not a readable ELF file: {message}", path.display())]
    Malformed { path: PathBuf, message: String },
}

impl Hint for ReadError {
    fn hints(&self) -> Vec<String> {
        match self {
            ReadError::Io { .. } => vec!["check that the file exists and is readable".into()],
            ReadError::Malformed { .. } => vec![
                "the linker's output is damaged or is not a shared object: delete `build-dir` and build again".into(),
            ],
        }
    }
}

/// What an ELF shared object declares about its loading.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ElfReport {
    pub(crate) soname: Option<String>,
    pub(crate) needed: Vec<String>,
    /// DT_RPATH entries, split on `:`.
    pub(crate) rpath: Vec<String>,
    /// DT_RUNPATH entries, split on `:`.
    pub(crate) runpath: Vec<String>,
    /// Versioned symbol requirements: library -> {`GLIBC_2.14`, ...}.
    pub(crate) version_needs: BTreeMap<String, BTreeSet<String>>,
    /// e_machine
    pub(crate) machine: u16,
    /// Undefined dynamic symbols (imports), for the policies' blacklists.
    pub(crate) undefined: BTreeSet<String>,
}

fn split_paths(entries: &[&str]) -> Vec<String> {
    entries
        .iter()
        .flat_map(|e| e.split(':'))
        .map(str::to_string)
        .collect()
}

/// Parses an ELF image held in memory.
pub(crate) fn parse(path: &Path, bytes: &[u8]) -> Result<ElfReport, ReadError> {
    let elf = goblin::elf::Elf::parse(bytes).map_err(|e| ReadError::Malformed {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    let mut version_needs: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    if let Some(verneed) = &elf.verneed {
        for need in verneed.iter() {
            let Some(file) = elf.dynstrtab.get_at(need.vn_file) else {
                continue;
            };
            for aux in need.iter() {
                if let Some(name) = elf.dynstrtab.get_at(aux.vna_name) {
                    version_needs
                        .entry(file.to_string())
                        .or_default()
                        .insert(name.to_string());
                }
            }
        }
    }
    Ok(ElfReport {
        soname: elf.soname.map(str::to_string),
        needed: elf.libraries.iter().map(|s| s.to_string()).collect(),
        rpath: split_paths(&elf.rpaths),
        runpath: split_paths(&elf.runpaths),
        version_needs,
        machine: elf.header.e_machine,
        undefined: elf
            .dynsyms
            .iter()
            .filter(|s| s.st_shndx == 0 && s.st_name != 0)
            .filter_map(|s| elf.dynstrtab.get_at(s.st_name).map(str::to_string))
            .collect(),
    })
}

/// The dynamic symbols a shared library defines (what it exports), without version suffixes.
pub(crate) fn exported(path: &Path) -> Result<BTreeSet<String>, ReadError> {
    let bytes = std::fs::read(path).map_err(|source| ReadError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    exported_in(path, &bytes)
}

/// `exported` of an ELF image held in memory (`path`: for messages).
pub(crate) fn exported_in(path: &Path, bytes: &[u8]) -> Result<BTreeSet<String>, ReadError> {
    let elf = goblin::elf::Elf::parse(bytes).map_err(|e| ReadError::Malformed {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    Ok(elf
        .dynsyms
        .iter()
        .filter(|s| s.st_shndx != 0 && s.st_name != 0)
        .filter_map(|s| elf.dynstrtab.get_at(s.st_name).map(str::to_string))
        .collect())
}

pub(crate) fn read(path: &Path) -> Result<ElfReport, ReadError> {
    let bytes = std::fs::read(path).map_err(|source| ReadError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse(path, &bytes)
}
