//! GPU code inside built ELF files: the `.nv_fatbin` section nvcc puts in an object.
//!
//! A fatbin is a list of containers, each a 16-byte header (magic `0xBA55ED50`, version, header
//! size, size of its entries) and entries (kind 1 = PTX, 2 = SASS cubin; header size, padded
//! payload size, ..., SM version at byte 28). Sizes are of the payload as stored, i.e. after
//! compression.

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

/// GPU code by architecture in one fatbin section: (`sm_90` / `compute_90`, bytes), in order.
/// Stops quietly at anything malformed.
pub fn fatbin_entries(section: &[u8]) -> Vec<(String, u64)> {
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
            let name = match kind {
                1 => format!("compute_{sm}"),
                _ => format!("sm_{sm}"),
            };
            out.push((name, u64::from(padded)));
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

/// The `.nv_fatbin` section of an ELF file's bytes, if any.
pub fn fatbin_section(elf: &[u8]) -> Option<&[u8]> {
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

    fn container(entries: &[(u16, u32, u32)]) -> Vec<u8> {
        let mut body = Vec::new();
        for &(kind, sm, payload) in entries {
            let mut h = vec![0u8; 64];
            h[0..2].copy_from_slice(&kind.to_le_bytes());
            h[4..8].copy_from_slice(&64u32.to_le_bytes());
            h[8..12].copy_from_slice(&payload.to_le_bytes());
            h[28..32].copy_from_slice(&sm.to_le_bytes());
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
