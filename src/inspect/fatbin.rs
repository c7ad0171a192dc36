//! GPU code inside built ELF files: the `.nv_fatbin` section nvcc puts in an object.
//!
//! A fatbin is a list of containers, each a 16-byte header (magic `0xBA55ED50`, version, header
//! size, size of its entries) and entries: kind (u16 at 0: 1 = PTX, 2 = SASS cubin), header
//! size (u32 at 4), padded payload size (u32 at 8), version (u16 minor at 24, u16 major at 26:
//! for PTX the PTX ISA version, e.g. 9.5 from nvcc 13.5, 8.4 from 12.4), SM number (u32 at 28)
//! and flags (u64 at 40: bit 20 = arch-specific `a`, bit 21 = family `f`, as read from real
//! nvcc 12.4 and 13.5 output). Sizes are of the payload as stored, i.e. after compression.
//!
//! `gpu_code` summarises one ELF: what SASS and PTX it carries and the CUDA version a driver
//! needs to JIT its PTX. The build records it in `_cuda_libs.py`; `audit` prints it.

use std::collections::BTreeSet;

const FATBIN_MAGIC: u32 = 0xBA55_ED50;

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}
fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}
fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// What one fatbin entry holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EntryKind {
    Ptx,
    Sass,
}

/// One entry of a fatbin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    pub(crate) kind: EntryKind,
    /// `90` for sm_90 / compute_90.
    pub(crate) sm: u32,
    /// `""`, `"a"` or `"f"`.
    pub(crate) suffix: &'static str,
    /// PTX: the PTX ISA version (major, minor); SASS: the cubin format version.
    pub(crate) version: (u16, u16),
    /// Payload bytes as stored (compressed).
    pub(crate) size: u64,
    /// How the payload is stored.
    pub(crate) codec: Codec,
}

/// How nvcc stored an entry's payload: measured with nvcc 13.5 (`--compress-mode=speed` sets
/// flag 0x2000 on what it compresses, `balance` and `size` set 0x8000; `balance` leaves SASS
/// as built, `size` compresses it too; `none` sets neither).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Codec {
    Stored,
    Lz4,
    Zstd,
}

const FLAG_LZ4: u64 = 0x2000;
const FLAG_ZSTD: u64 = 0x8000;

impl Entry {
    /// `sm_90a` / `compute_100f`.
    pub(crate) fn name(&self) -> String {
        let prefix = match self.kind {
            EntryKind::Ptx => "compute",
            EntryKind::Sass => "sm",
        };
        format!("{prefix}_{}{}", self.sm, self.suffix)
    }
}

const FLAG_ARCH_SPECIFIC: u64 = 1 << 20;
const FLAG_FAMILY: u64 = 1 << 21;

/// Every entry of one fatbin section, in order. Stops quietly at anything malformed.
pub(crate) fn entries(section: &[u8]) -> Vec<Entry> {
    let mut out = Vec::new();
    let mut pos = 0usize;
    while let (Some(FATBIN_MAGIC), Some(header), Some(size)) = (
        u32_at(section, pos),
        u16_at(section, pos + 6),
        u64_at(section, pos + 8),
    ) {
        let end = match (pos + header as usize).checked_add(size as usize) {
            Some(end) if end > pos => end,
            _ => break,
        };
        let mut e = pos + header as usize;
        while e < end.min(section.len()) {
            let (Some(kind), Some(eh), Some(padded), Some(sm)) = (
                u16_at(section, e),
                u32_at(section, e + 4),
                u32_at(section, e + 8),
                u32_at(section, e + 28),
            ) else {
                return out;
            };
            let minor = u16_at(section, e + 24).unwrap_or(0);
            let major = u16_at(section, e + 26).unwrap_or(0);
            // Headers shorter than 48 bytes carry no flags.
            let flags = if eh >= 48 {
                u64_at(section, e + 40).unwrap_or(0)
            } else {
                0
            };
            out.push(Entry {
                kind: if kind == 1 {
                    EntryKind::Ptx
                } else {
                    EntryKind::Sass
                },
                sm,
                suffix: if flags & FLAG_ARCH_SPECIFIC != 0 {
                    "a"
                } else if flags & FLAG_FAMILY != 0 {
                    "f"
                } else {
                    ""
                },
                version: (major, minor),
                size: u64::from(padded),
                codec: if flags & FLAG_ZSTD != 0 {
                    Codec::Zstd
                } else if flags & FLAG_LZ4 != 0 {
                    Codec::Lz4
                } else {
                    Codec::Stored
                },
            });
            let Some(next) = e.checked_add(eh as usize + padded as usize) else {
                return out;
            };
            if next <= e {
                return out;
            }
            e = next;
        }
        // The next container follows at once or at the next 8-byte boundary.
        pos = if u32_at(section, end) == Some(FATBIN_MAGIC) {
            end
        } else {
            end.next_multiple_of(8)
        };
    }
    out
}

/// The GPU code one ELF file carries. Field names are stable (other stages and the generated
/// `_cuda_libs.py` use them).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub(crate) struct GpuCode {
    /// SASS archs, sorted by number: `sm_80`, `sm_90a`, `sm_100f`.
    pub(crate) sass: Vec<String>,
    /// PTX archs, sorted by number: `compute_90`.
    pub(crate) ptx: Vec<String>,
    /// The newest PTX ISA version of its PTX (`"9.5"`), if it has PTX.
    pub(crate) ptx_isa: Option<String>,
    /// The CUDA version (major, minor) a driver must support to JIT that PTX: the toolkit
    /// release that introduced the ISA (PTX ISA 9.5 -> CUDA 13.5, 8.4 -> 12.4).
    pub(crate) ptx_toolkit: Option<(u32, u32)>,
}

impl GpuCode {
    pub(crate) fn is_empty(&self) -> bool {
        self.sass.is_empty() && self.ptx.is_empty()
    }
}

/// The CUDA release that introduced a PTX ISA version (the driver that JITs it must support
/// at least this CUDA version). `None` before PTX ISA 7.0 (CUDA 11.0).
pub(crate) fn ptx_isa_toolkit(major: u16, minor: u16) -> Option<(u32, u32)> {
    let minor = u32::from(minor);
    match major {
        7 => Some((11, minor.min(8))),
        8 => Some(match minor {
            0..=5 => (12, minor),
            6 => (12, 7),
            7 => (12, 8),
            _ => (12, 9),
        }),
        9 => Some((13, minor)),
        m if m > 9 => Some((u32::from(m) + 4, minor)),
        _ => None,
    }
}

/// What GPU code the ELF file `elf` carries (empty without a `.nv_fatbin`).
pub(crate) fn gpu_code(elf: &[u8]) -> GpuCode {
    let Some(section) = fatbin_section(elf) else {
        return GpuCode::default();
    };
    let mut sass = BTreeSet::new();
    let mut ptx = BTreeSet::new();
    let mut isa: Option<(u16, u16)> = None;
    for e in entries(section) {
        let key = (e.sm, e.suffix, e.name());
        match e.kind {
            EntryKind::Sass => {
                sass.insert(key);
            }
            EntryKind::Ptx => {
                ptx.insert(key);
                isa = isa.max(Some(e.version));
            }
        }
    }
    GpuCode {
        sass: sass.into_iter().map(|(_, _, n)| n).collect(),
        ptx: ptx.into_iter().map(|(_, _, n)| n).collect(),
        ptx_isa: isa.map(|(a, b)| format!("{a}.{b}")),
        ptx_toolkit: isa.and_then(|(a, b)| ptx_isa_toolkit(a, b)),
    }
}

/// The `.nv_fatbin` section of an ELF file's bytes, if any.
pub(crate) fn fatbin_section(elf: &[u8]) -> Option<&[u8]> {
    let parsed = goblin::elf::Elf::parse(elf).ok()?;
    let sh = parsed
        .section_headers
        .iter()
        .find(|s| parsed.shdr_strtab.get_at(s.sh_name) == Some(".nv_fatbin"))?;
    let start = usize::try_from(sh.sh_offset).ok()?;
    let len = usize::try_from(sh.sh_size).ok()?;
    elf.get(start..start.checked_add(len)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (`sm_90` / `compute_90a`, bytes) of each entry, in order.
    fn fatbin_entries(section: &[u8]) -> Vec<(String, u64)> {
        entries(section)
            .into_iter()
            .map(|e| (e.name(), e.size))
            .collect()
    }

    fn container(entries: &[(u16, u32, u32)]) -> Vec<u8> {
        container_with(
            &entries
                .iter()
                .map(|&(k, sm, p)| (k, sm, p, 0, (9, 5)))
                .collect::<Vec<_>>(),
        )
    }

    /// (kind, sm, payload bytes, flags, version)
    type Spec = (u16, u32, u32, u64, (u16, u16));

    fn container_with(entries: &[Spec]) -> Vec<u8> {
        let mut body = Vec::new();
        for &(kind, sm, payload, flags, (major, minor)) in entries {
            let mut h = vec![0u8; 64];
            h[0..2].copy_from_slice(&kind.to_le_bytes());
            h[4..8].copy_from_slice(&64u32.to_le_bytes());
            h[8..12].copy_from_slice(&payload.to_le_bytes());
            h[24..26].copy_from_slice(&minor.to_le_bytes());
            h[26..28].copy_from_slice(&major.to_le_bytes());
            h[28..32].copy_from_slice(&sm.to_le_bytes());
            h[40..48].copy_from_slice(&flags.to_le_bytes());
            body.extend(h);
            body.extend(vec![0u8; payload as usize]);
        }
        let mut out = Vec::new();
        out.extend(FATBIN_MAGIC.to_le_bytes());
        out.extend(1u16.to_le_bytes());
        out.extend(16u16.to_le_bytes());
        out.extend((body.len() as u64).to_le_bytes());
        out.extend(body);
        out
    }

    #[test]
    fn reads_entries_of_consecutive_containers() {
        let mut section = container(&[(2, 80, 100), (1, 90, 40)]);
        section.extend(container(&[(2, 90, 8)]));
        assert_eq!(
            fatbin_entries(&section),
            [
                ("sm_80".to_string(), 100),
                ("compute_90".to_string(), 40),
                ("sm_90".to_string(), 8)
            ]
        );
    }

    #[test]
    fn reads_arch_specific_and_family_flags_and_the_ptx_isa() {
        // Flags as nvcc 13.5 writes them (0x8011 = compressed; bit 20 `a`, bit 21 `f`).
        let section = container_with(&[
            (1, 80, 8, 0x8011, (8, 4)),
            (2, 80, 8, 0x8011, (1, 8)),
            (2, 90, 8, 0x10_8011, (1, 8)),
            (1, 100, 8, 0x20_8011, (9, 5)),
            (2, 100, 8, 0x120_8011, (1, 8)),
        ]);
        let names: Vec<String> = entries(&section).iter().map(Entry::name).collect();
        assert_eq!(
            names,
            ["compute_80", "sm_80", "sm_90a", "compute_100f", "sm_100f"]
        );
        assert_eq!(ptx_isa_toolkit(9, 5), Some((13, 5)));
        assert_eq!(ptx_isa_toolkit(8, 4), Some((12, 4)));
        assert_eq!(ptx_isa_toolkit(8, 7), Some((12, 8)));
        assert_eq!(ptx_isa_toolkit(7, 8), Some((11, 8)));
        assert_eq!(ptx_isa_toolkit(6, 4), None);
    }

    #[test]
    fn reads_how_each_entry_is_stored() {
        // The flags nvcc 13.5 wrote for one kernel (sm_90 SASS, compute_90 PTX) per
        // `--compress-mode`: none 0x11/0x11, speed 0x11/0x2011, balance 0x11/0x8011, size
        // 0x8011/0x8011.
        let codecs = |sass: u64, ptx: u64| -> Vec<Codec> {
            entries(&container_with(&[
                (2, 90, 8, sass, (1, 8)),
                (1, 90, 8, ptx, (9, 5)),
            ]))
            .iter()
            .map(|e| e.codec)
            .collect()
        };
        assert_eq!(codecs(0x11, 0x11), [Codec::Stored, Codec::Stored]);
        assert_eq!(codecs(0x11, 0x2011), [Codec::Stored, Codec::Lz4]);
        assert_eq!(codecs(0x11, 0x8011), [Codec::Stored, Codec::Zstd]);
        assert_eq!(codecs(0x8011, 0x8011), [Codec::Zstd, Codec::Zstd]);
    }

    #[test]
    fn malformed_sections_end_quietly() {
        let whole = container(&[(2, 80, 100)]);
        for cut in 0..whole.len() {
            let _ = fatbin_entries(&whole[..cut]);
        }
        let mut huge = container(&[(2, 80, 4)]);
        huge[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
        let _ = fatbin_entries(&huge);
        assert!(fatbin_entries(b"not a fatbin").is_empty());
    }
}
