//! Stage 7, package: what goes into a wheel or sdist and how it is written. `metadata` renders
//! Core Metadata and WHEEL; `import_helper` generates `<package>/_cuda_libs.py`; `variants`
//! makes wheel variants (PEP 825); `archive` writes deterministic, atomic zip/tar.gz files.

pub mod archive;
pub mod import_helper;
pub mod metadata;
pub mod variants;
