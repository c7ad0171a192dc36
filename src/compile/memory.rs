//! How much memory the build's parallel steps may use together: `max-memory` when set, else
//! what this machine and this process's cgroups leave free when the build starts.
//!
//! MemAvailable (from /proc/meminfo) is the machine's. Inside a container or a CI job with a
//! memory limit (a cgroup: `docker --memory`, Kubernetes limits, systemd's `MemoryMax`) the
//! kernel kills the build long before MemAvailable runs out, so the limit is the least of
//! MemAvailable and, for each level of the process's memory cgroup (v2 or v1) that sets a
//! limit, that limit less what the cgroup uses (page cache it can drop, counted as free: file
//! pages that are neither shared memory nor mapped by a running program).
//!
//! `room_now` reads the same again: wrap mode's memory gate asks it at each admission.

use std::path::{Path, PathBuf};

/// A memory limit for admission, and where it came from (for verbose output).
#[derive(Debug, Clone)]
pub(crate) struct MemoryLimit {
    pub(crate) bytes: u64,
    /// `max-memory`, `MemAvailable` or the cgroup that sets it.
    pub(crate) source: String,
}

impl MemoryLimit {
    /// `max-memory` when set, else the least of MemAvailable and the cgroups' room (none when
    /// neither can be read).
    pub(crate) fn new(max_memory: Option<u64>) -> Option<MemoryLimit> {
        if let Some(bytes) = max_memory {
            return Some(MemoryLimit {
                bytes,
                source: MAX_MEMORY.into(),
            });
        }
        let machine = mem_available().map(|bytes| MemoryLimit {
            bytes,
            source: "MemAvailable".into(),
        });
        let cgroup = cgroup_room().map(|room| MemoryLimit {
            bytes: room.bytes,
            source: format!(
                "the memory cgroup {} (limit {}, {} in use)",
                room.dir.display(),
                human(room.limit),
                human(room.limit.saturating_sub(room.bytes)),
            ),
        });
        match (machine, cgroup) {
            (Some(m), Some(c)) => Some(if c.bytes < m.bytes { c } else { m }),
            (m, c) => m.or(c),
        }
    }

    /// Whether the limit is what the machine and its cgroups left (so what they leave later
    /// may be measured again), not the user's `max-memory`.
    pub(crate) fn is_measured(&self) -> bool {
        self.source != MAX_MEMORY
    }
}

const MAX_MEMORY: &str = "max-memory";

/// What this machine and this process's memory cgroups leave free now: the limit
/// `MemoryLimit::new` gives without `max-memory`, read again.
pub(crate) fn room_now() -> Option<u64> {
    MemoryLimit::new(None).map(|l| l.bytes)
}

/// `1.2 GiB`, `300 MiB`.
pub(crate) fn human(bytes: u64) -> String {
    if bytes >= 1 << 30 {
        format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
    } else {
        format!("{} MiB", bytes >> 20)
    }
}

/// MemAvailable from /proc/meminfo, in bytes.
fn mem_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The tightest level of this process's memory cgroup: its folder, its limit, and the bytes
/// left under it.
#[derive(Debug, Clone, PartialEq)]
struct CgroupRoom {
    pub(crate) dir: PathBuf,
    pub(crate) limit: u64,
    pub(crate) bytes: u64,
}

/// The room this process's memory cgroups leave (the least over every level that sets a
/// limit), `None` when none does or nothing can be read.
fn cgroup_room() -> Option<CgroupRoom> {
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let (v2, path) = memory_cgroup(&cgroups, &mounts)?;
    let (root, mount) = cgroup_mount(&mounts, v2)?;
    let mount = PathBuf::from(mount);
    let leaf = match Path::new(&path).strip_prefix(&root) {
        Ok(rel) if mount.join(rel).is_dir() => mount.join(rel),
        // A container that sees its own cgroup as the mount's root.
        _ => mount.clone(),
    };
    leaf.ancestors()
        .take_while(|d| d.starts_with(&mount))
        .filter_map(|d| level_room(d, v2))
        .min_by_key(|r| r.bytes)
}

/// Whether the memory controller is on cgroup v2, and this process's path in that hierarchy.
fn memory_cgroup(cgroups: &str, mounts: &str) -> Option<(bool, String)> {
    let mut unified = None;
    for line in cgroups.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        if controllers.split(',').any(|c| c == "memory") {
            return Some((false, path.to_string()));
        }
        if controllers.is_empty() {
            unified = Some(path.to_string());
        }
    }
    // v2 only where its mount offers the memory controller (a hybrid system keeps memory on v1).
    let (_, mount) = cgroup_mount(mounts, true)?;
    let controllers =
        std::fs::read_to_string(Path::new(&mount).join("cgroup.controllers")).unwrap_or_default();
    controllers
        .split_whitespace()
        .any(|c| c == "memory")
        .then_some(())?;
    unified.map(|p| (true, p))
}

/// The (root, mount point) of the cgroup v2 mount, or of the v1 mount with the memory
/// controller, from /proc/self/mountinfo.
fn cgroup_mount(mounts: &str, v2: bool) -> Option<(String, String)> {
    mounts.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        let fields: Vec<&str> = left.split(' ').collect();
        let theirs: Vec<&str> = right.split(' ').collect();
        let (fstype, options) = (*theirs.first()?, theirs.get(2).copied().unwrap_or(""));
        let wanted = if v2 {
            fstype == "cgroup2"
        } else {
            fstype == "cgroup" && options.split(',').any(|o| o == "memory")
        };
        if !wanted {
            return None;
        }
        Some((fields.get(3)?.to_string(), fields.get(4)?.to_string()))
    })
}

/// The room under one cgroup folder's limit: limit − (usage − page cache it can drop). The
/// kernel drops file pages before it kills: those neither shared memory (tmpfs) nor mapped by a
/// running program (a compiler's own code) count as free.
fn level_room(dir: &Path, v2: bool) -> Option<CgroupRoom> {
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).ok();
    let (limit, usage, [file, shmem, mapped]) = if v2 {
        (
            read("memory.max")?,
            read("memory.current")?,
            ["file", "shmem", "file_mapped"],
        )
    } else {
        (
            read("memory.limit_in_bytes")?,
            read("memory.usage_in_bytes")?,
            ["total_cache", "total_shmem", "total_mapped_file"],
        )
    };
    let limit: u64 = limit.trim().parse().ok()?; // "max" (v2): no limit
    if limit >= 1 << 60 {
        return None; // v1's "no limit" is a number near 2^63
    }
    let usage: u64 = usage.trim().parse().ok()?;
    let stat = read("memory.stat").unwrap_or_default();
    let value = |k| stat_value(&stat, k).unwrap_or(0);
    let droppable = value(file)
        .saturating_sub(value(shmem))
        .saturating_sub(value(mapped));
    Some(CgroupRoom {
        dir: dir.to_path_buf(),
        limit,
        bytes: limit.saturating_sub(usage.saturating_sub(droppable)),
    })
}

/// A `key value` line of memory.stat.
fn stat_value(stat: &str, key: &str) -> Option<u64> {
    stat.lines().find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        (k == key).then(|| v.trim().parse().ok())?
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTS: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
36 31 0:33 / /sys/fs/cgroup/devices rw,relatime - cgroup cgroup rw,devices
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

    #[test]
    fn the_memory_controller_is_found_on_v1_and_its_mount_read() {
        let cgroups = "4:memory:/ci/job7\n1:cpu:/\n0::/\n";
        assert_eq!(
            memory_cgroup(cgroups, MOUNTS),
            Some((false, "/ci/job7".into()))
        );
        assert_eq!(
            cgroup_mount(MOUNTS, false),
            Some(("/".into(), "/sys/fs/cgroup/memory".into()))
        );
        assert_eq!(
            cgroup_mount(MOUNTS, true),
            Some(("/".into(), "/sys/fs/cgroup/unified".into()))
        );
        // No memory line and a v2 mount without the memory controller: no cgroup to read.
        assert_eq!(memory_cgroup("1:cpu:/\n", MOUNTS), None);
    }

    #[test]
    fn a_level_room_counts_droppable_page_cache_as_free_and_ignores_no_limit() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        std::fs::write(d.join("memory.max"), "3221225472\n").unwrap();
        std::fs::write(d.join("memory.current"), "1073741824\n").unwrap();
        std::fs::write(
            d.join("memory.stat"),
            "anon 1\nfile 805306368\nfile_mapped 134217728\nshmem 134217728\ninactive_file 1\n",
        )
        .unwrap();
        // 768 MiB of file pages, 128 MiB of them mapped and 128 MiB tmpfs: 512 MiB droppable.
        let room = level_room(d, true).unwrap();
        assert_eq!((room.limit, room.bytes), (3 << 30, (3 << 30) - (512 << 20)));
        std::fs::write(d.join("memory.max"), "max\n").unwrap();
        assert_eq!(level_room(d, true), None);
        std::fs::write(d.join("memory.limit_in_bytes"), "9223372036854771712\n").unwrap();
        std::fs::write(d.join("memory.usage_in_bytes"), "1000\n").unwrap();
        assert_eq!(level_room(d, false), None);
        std::fs::write(d.join("memory.limit_in_bytes"), "2147483648\n").unwrap();
        std::fs::write(d.join("memory.stat"), "total_cache 0\n").unwrap();
        assert_eq!(level_room(d, false).unwrap().bytes, (2 << 30) - 1000);
    }
}
