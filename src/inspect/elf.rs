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

/// One imported (undefined dynamic) symbol and the library its version names, if versioned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Import {
    pub(crate) name: String,
    /// The NEEDED entry of its version (`libc.so.6` for `memcpy@GLIBC_2.14`).
    pub(crate) library: Option<String>,
    /// A weak reference (resolves to null when nothing defines it).
    pub(crate) weak: bool,
}

/// The imports of an ELF image held in memory, each with the library its version names.
pub(crate) fn imports_in(path: &Path, bytes: &[u8]) -> Result<Vec<Import>, ReadError> {
    let elf = goblin::elf::Elf::parse(bytes).map_err(|e| ReadError::Malformed {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    // Version index -> the library that version belongs to.
    let mut version_file: BTreeMap<u16, String> = BTreeMap::new();
    if let Some(verneed) = &elf.verneed {
        for need in verneed.iter() {
            let Some(file) = elf.dynstrtab.get_at(need.vn_file) else {
                continue;
            };
            for aux in need.iter() {
                version_file.insert(aux.vna_other, file.to_string());
            }
        }
    }
    let mut out = Vec::new();
    for (i, s) in elf.dynsyms.iter().enumerate() {
        if s.st_shndx != 0 || s.st_name == 0 {
            continue;
        }
        let Some(name) = elf.dynstrtab.get_at(s.st_name) else {
            continue;
        };
        let library = elf
            .versym
            .as_ref()
            .and_then(|v| v.get_at(i))
            .and_then(|v| version_file.get(&v.version()).cloned());
        out.push(Import {
            name: name.to_string(),
            library,
            weak: s.st_bind() == goblin::elf::sym::STB_WEAK,
        });
    }
    Ok(out)
}

/// The symbols a relocatable object (`.o`) leaves undefined: what it asks the link for.
pub(crate) fn object_undefined(path: &Path) -> Result<BTreeSet<String>, ReadError> {
    let bytes = std::fs::read(path).map_err(|source| ReadError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let elf = goblin::elf::Elf::parse(&bytes).map_err(|e| ReadError::Malformed {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    Ok(elf
        .syms
        .iter()
        .filter(|s| s.st_shndx == 0 && s.st_name != 0)
        .filter_map(|s| elf.strtab.get_at(s.st_name).map(str::to_string))
        .collect())
}
