//! The memory a running process's descendants hold now, from /proc: what a compile the memory
//! gate admitted (its launcher's child, and that child's own children: nvcc's cicc, ptxas, the
//! host compiler) has resident at this moment. Also the two readings `phases` samples with: a
//! process's `stat` line and its children.

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

/// A /proc/<pid>/stat line (`pid (comm) state ppid ...`): the command name, between the first
/// `(` and the last `)` (it may hold spaces and parentheses), and the fields after it, counted
/// from the state (0): the parent is `PARENT`, the start time `START`, the resident pages `RSS`.
pub(crate) struct Stat<'a> {
    pub(crate) name: &'a str,
    fields: Vec<&'a str>,
}

/// Fields of a `Stat`, by proc(5)'s numbering less 3.
pub(crate) const PARENT: usize = 1;
pub(crate) const START: usize = 19;
pub(crate) const RSS: usize = 21;

impl<'a> Stat<'a> {
    pub(crate) fn parse(line: &'a str) -> Option<Stat<'a>> {
        let close = line.rfind(')')?;
        let name = line.get(line.find('(')? + 1..close)?;
        let fields = line.get(close + 1..)?.split_whitespace().collect();
        Some(Stat { name, fields })
    }

    pub(crate) fn field(&self, index: usize) -> Option<u64> {
        self.fields.get(index)?.parse().ok()
    }
}

/// The parent pid from a /proc/<pid>/stat line.
fn parent_of(stat: &str) -> Option<u32> {
    u32::try_from(Stat::parse(stat)?.field(PARENT)?).ok()
}

/// The children of `pid` (every thread's), from its `/proc/<pid>/task/<tid>/children` files:
/// without reading all of /proc, as `ProcessTree::read` does. `None` where the kernel has no
/// such files (`CONFIG_PROC_CHILDREN`).
pub(crate) fn children(pid: u32) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut any = false;
    for task in tasks.flatten() {
        if let Ok(text) = std::fs::read_to_string(task.path().join("children")) {
            any = true;
            out.extend(
                text.split_whitespace()
                    .filter_map(|p| p.parse::<u32>().ok()),
            );
        }
    }
    any.then_some(out)
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
