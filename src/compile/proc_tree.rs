//! The memory a running process's descendants hold now, from /proc: what a compile the memory
//! gate admitted (its launcher's child, and that child's own children: nvcc's cicc, ptxas, the
//! host compiler) has resident at this moment.

use std::collections::HashMap;

/// Each process's children, read once from /proc (a snapshot).
pub(crate) struct ProcessTree {
    children: HashMap<u32, Vec<u32>>,
}

impl ProcessTree {
    /// The snapshot; empty where /proc cannot be read (every process then holds nothing below
    /// it, so the gate counts each compile's whole expected peak as still to come).
    pub(crate) fn read() -> ProcessTree {
        let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
        for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
                continue;
            };
            let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
            if let Some(ppid) = parent_of(&stat) {
                children.entry(ppid).or_default().push(pid);
            }
        }
        ProcessTree { children }
    }

    /// The resident bytes of every process below `pid` (not `pid` itself).
    pub(crate) fn rss_below(&self, pid: u32) -> u64 {
        self.below(pid)
            .into_iter()
            .filter_map(|p| std::fs::read_to_string(format!("/proc/{p}/status")).ok())
            .filter_map(|s| vm_rss(&s))
            .sum()
    }

    /// Every process below `pid`. Each once: the snapshot is read file by file while processes
    /// come and go, so a reused pid could close a loop.
    pub(crate) fn below(&self, pid: u32) -> Vec<u32> {
        let mut found = Vec::new();
        let mut seen = std::collections::HashSet::from([pid]);
        let mut next = vec![pid];
        while let Some(p) = next.pop() {
            for &c in self.children.get(&p).into_iter().flatten() {
                if seen.insert(c) {
                    found.push(c);
                    next.push(c);
                }
            }
        }
        found
    }
}

/// The parent pid from a /proc/<pid>/stat line (`pid (comm) state ppid ...`; the command name
/// may hold spaces and parentheses, so the fields start after the last `)`).
fn parent_of(stat: &str) -> Option<u32> {
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// VmRSS from /proc/<pid>/status, in bytes (none for a kernel thread or a zombie).
fn vm_rss(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loop_in_the_snapshot_ends() {
        let tree = ProcessTree {
            children: HashMap::from([(1, vec![2]), (2, vec![3]), (3, vec![1, 2])]),
        };
        assert_eq!(tree.below(1), vec![2, 3]);
    }

    #[test]
    fn a_stat_line_gives_its_parent_whatever_the_command_name() {
        assert_eq!(parent_of("42 (cicc) R 41 42 1 0"), Some(41));
        assert_eq!(parent_of("42 (a ) b (c)) S 7 1"), Some(7));
        assert_eq!(parent_of("garbage"), None);
        assert_eq!(vm_rss("Name:\tcicc\nVmRSS:\t  2048 kB\n"), Some(2 << 20));
        assert_eq!(vm_rss("Name:\tkthreadd\n"), None);
    }
}
