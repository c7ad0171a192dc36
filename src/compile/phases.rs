//! A compile's memory phase by phase, so that the memory gate can give back what a running
//! compile reserved once the phases that held the most are behind it.
//!
//! nvcc runs its steps one after another as child processes (the host preprocessor, cudafe++,
//! cicc, ptxas, fatbinary, the host compiler): a template-heavy file's cicc may hold 570 MiB
//! for half the compile and its host compile 330 MiB after it. The gate reserves a compile's
//! recorded peak for the whole compile; a `Profile` says, for each *heavy* process of the last
//! build's compile (one that held at least an eighth of the compile's peak, and 32 MiB) in the
//! order they ended, the most the compile's processes held together up to that one's end. A
//! `Watch` samples the running compile's processes (from /proc, every `INTERVAL`); each time
//! one ends that matches the next heavy process of the profile (same name, at least half its
//! size), the compile is one stage further on, and what it may still hold is the largest of
//! the stages to come. A run that does not follow the profile (other processes, other order)
//! never moves on: it keeps its whole reservation. The samples are scaled up to the exact
//! peak (`wait4`'s), since a sample can miss the last moments of a process.
//!
//! Where /proc has no `children` files (a kernel without `CONFIG_PROC_CHILDREN`) nothing is
//! sampled and nothing recorded: each compile keeps its whole peak reserved.

use std::collections::HashMap;
use std::time::Duration;

use super::proc_tree::{self, children, Stat};

/// How often a running compile's processes are read.
pub(crate) const INTERVAL: Duration = Duration::from_millis(100);
/// A heavy process holds at least this (KiB) and an eighth of its compile's peak.
const HEAVY_FLOOR_KIB: u64 = 32 << 10;

/// One stage of a recorded compile: it ends with a heavy process's end (`name`, the most that
/// process held, KiB), and `held` is the most the compile held (KiB) from the previous stage's
/// end to this one's. The last stage may have no name: what ran after the last heavy process.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Stage {
    name: String,
    own: u64,
    held: u64,
}

/// The stages of one compile, in order (see the module's doc).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Profile {
    stages: Vec<Stage>,
}

impl Profile {
    /// From the peaks file's third field: `name:own:held` per stage, comma-separated.
    pub(crate) fn parse(text: &str) -> Option<Profile> {
        let stages = text
            .split(',')
            .map(|s| {
                let mut f = s.rsplitn(3, ':');
                let held = f.next()?.parse().ok()?;
                let own = f.next()?.parse().ok()?;
                let name = f.next()?.to_string();
                Some(Stage { name, own, held })
            })
            .collect::<Option<Vec<_>>>()?;
        (!stages.is_empty()).then_some(Profile { stages })
    }

    pub(crate) fn render(&self) -> String {
        let stages: Vec<String> = self
            .stages
            .iter()
            .map(|s| format!("{}:{}:{}", s.name, s.own, s.held))
            .collect();
        stages.join(",")
    }

    /// What the compile may still hold (KiB) once `done` stages are behind it.
    pub(crate) fn still_to_hold(&self, done: usize) -> u64 {
        self.stages[done.min(self.stages.len())..]
            .iter()
            .map(|s| s.held)
            .max()
            .unwrap_or(0)
    }

    /// The stages behind a compile at `done`, after a process of its ended (`name`, the most it
    /// was seen to hold): one more where it is the next stage's heavy process.
    pub(crate) fn after(&self, done: usize, name: &str, own: u64) -> usize {
        match self.stages.get(done) {
            Some(s) if !s.name.is_empty() && s.name == name && own.saturating_mul(2) >= s.own => {
                done + 1
            }
            _ => done,
        }
    }
}

/// A name as the peaks file keeps it: no separators.
fn clean(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "_.+-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// One process of a compile as the samples saw it.
#[derive(Debug)]
struct Seen {
    name: String,
    /// The most it was seen to hold, KiB.
    own: u64,
    /// The sample it was last seen in.
    last: usize,
    /// Ended (not in the latest sample).
    ended: bool,
}

/// What a process's `stat` line says: (name, start time in ticks, resident KiB).
fn stat_fields(stat: &str, page_kib: u64) -> Option<(String, u64, u64)> {
    let stat = Stat::parse(stat)?;
    let start = stat.field(proc_tree::START)?;
    let pages = stat.field(proc_tree::RSS)?;
    Some((clean(stat.name), start, pages * page_kib))
}

fn page_kib() -> u64 {
    // SAFETY: sysconf only reads a constant.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(size).map_or(4, |b| (b / 1024).max(1))
}

/// The samples of one running compile: `root` (the compiler the launcher started) and the
/// processes below it.
pub(crate) struct Watch {
    root: u32,
    page_kib: u64,
    /// By (pid, start time): a pid the kernel reuses is another process.
    seen: HashMap<(u32, u64), Seen>,
    /// What the compile's processes held together in each sample, KiB.
    held: Vec<u64>,
    /// The processes that ended, in the order the samples found them gone.
    ended: Vec<(u32, u64)>,
    /// Whether /proc could be read as this needs.
    readable: bool,
}

impl Watch {
    pub(crate) fn new(root: u32) -> Watch {
        Watch {
            root,
            page_kib: page_kib(),
            seen: HashMap::new(),
            held: Vec::new(),
            ended: Vec::new(),
            readable: true,
        }
    }

    /// Reads the compile's processes once. Returns the processes that ended since the last
    /// sample (name, the most each was seen to hold) and what the compile holds now (KiB).
    pub(crate) fn sample(&mut self) -> (Vec<(String, u64)>, u64) {
        let n = self.held.len();
        let mut now = 0;
        let mut next = vec![self.root];
        let mut visited = std::collections::HashSet::new();
        while let Some(pid) = next.pop() {
            if !visited.insert(pid) {
                continue;
            }
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue;
            };
            let Some((name, start, kib)) = stat_fields(&stat, self.page_kib) else {
                continue;
            };
            now += kib;
            let s = self.seen.entry((pid, start)).or_insert_with(|| Seen {
                name: name.clone(),
                own: 0,
                last: n,
                ended: false,
            });
            // A process that execs keeps its pid and start time, and takes the new name.
            if s.name != name {
                s.name = name;
            }
            s.own = s.own.max(kib);
            s.last = n;
            match children(pid) {
                Some(c) => next.extend(c),
                None => self.readable = false,
            }
        }
        self.held.push(now);
        let mut gone: Vec<((u32, u64), &mut Seen)> = self
            .seen
            .iter_mut()
            .filter(|(_, s)| !s.ended && s.last < n)
            .map(|(k, s)| (*k, s))
            .collect();
        // Several gone in one sample: in the order they were last seen, then started.
        gone.sort_by_key(|(k, s)| (s.last, k.1, k.0));
        let mut out = Vec::new();
        for (key, s) in gone {
            s.ended = true;
            self.ended.push(key);
            out.push((s.name.clone(), s.own));
        }
        (out, now)
    }

    /// The compile's profile, once it has ended (`peak_kib`: its exact peak, from `wait4`);
    /// `None` where nothing useful was seen.
    pub(crate) fn profile(mut self, peak_kib: u64) -> Option<Profile> {
        self.sample(); // the last processes, now gone
        if !self.readable || self.seen.is_empty() {
            return None;
        }
        let largest = self.seen.values().map(|s| s.own).max().unwrap_or(0);
        let floor = HEAVY_FLOOR_KIB.max(largest / 8);
        let root = self.seen.keys().find(|k| k.0 == self.root).copied();
        let mut stages = Vec::new();
        let mut from = 0;
        for key in &self.ended {
            let s = &self.seen[key];
            if Some(*key) == root || s.own < floor {
                continue;
            }
            let to = (s.last + 1).min(self.held.len());
            let held = self.held[from.min(to)..to]
                .iter()
                .copied()
                .max()
                .unwrap_or(0);
            stages.push(Stage {
                name: s.name.clone(),
                own: s.own,
                held,
            });
            from = to;
        }
        if stages.is_empty() {
            return None;
        }
        let tail = self.held[from.min(self.held.len())..].iter().copied().max();
        if let Some(held) = tail.filter(|&h| h > 0) {
            stages.push(Stage {
                name: String::new(),
                own: 0,
                held,
            });
        }
        // A sample misses a process's last moments: scaled so that the largest process reaches
        // the exact peak.
        if largest > 0 && peak_kib > largest {
            for s in &mut stages {
                s.held = s.held.saturating_mul(peak_kib).div_ceil(largest);
            }
        }
        Some(Profile { stages })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Where the kernel has no `children` files, there is nothing to watch (said once).
    pub(crate) fn no_children_files() -> bool {
        let none = children(std::process::id()).is_none();
        if none {
            eprintln!("no /proc/<pid>/task/<tid>/children here: nothing to watch");
        }
        none
    }

    /// A shell command holding `mib` MiB for 0.6 s, as one of nvcc's phases does.
    pub(crate) fn holding(mib: u32) -> String {
        format!("python3 -c 'b = bytearray({mib} << 20); b[::4096] = b\"x\" * len(b[::4096]); import time; time.sleep(0.6)'")
    }

    fn nvcc_like() -> Profile {
        Profile::parse("cudafe++:261000:270000,cicc:587000:600000,ptxas:167000:180000,cc1plus:333000:345000,:0:20000")
            .unwrap()
    }

    #[test]
    fn a_profile_reads_back_what_it_wrote() {
        let p = nvcc_like();
        assert_eq!(Profile::parse(&p.render()), Some(p));
        assert_eq!(Profile::parse(""), None);
        assert_eq!(Profile::parse("cicc:1"), None);
        assert_eq!(Profile::parse("cicc:x:1"), None);
    }

    #[test]
    fn what_a_compile_may_still_hold_falls_as_its_heavy_phases_end_in_order() {
        let p = nvcc_like();
        assert_eq!(p.still_to_hold(0), 600_000);
        // cicc must end before the stages after it count: cudafe++ first.
        let d = p.after(0, "cicc", 587_000);
        assert_eq!(d, 0, "out of order: nothing moves");
        let d = p.after(0, "cudafe++", 250_000);
        assert_eq!((d, p.still_to_hold(d)), (1, 600_000));
        // A light process of the same name (a preprocessor) is not the heavy one.
        assert_eq!(p.after(1, "cicc", 100_000), 1);
        let d = p.after(1, "cicc", 580_000);
        assert_eq!((d, p.still_to_hold(d)), (2, 345_000));
        let d = p.after(p.after(d, "ptxas", 160_000), "cc1plus", 300_000);
        assert_eq!((d, p.still_to_hold(d)), (4, 20_000));
        // The unnamed tail never ends early.
        assert_eq!(p.after(4, "", 0), 4);
        assert_eq!(p.still_to_hold(9), 0);
    }

    #[test]
    fn a_stat_line_gives_name_start_and_resident_memory() {
        let line = "42 (cc1 plus) R 41 42 1 0 -1 0 0 0 0 0 5 1 0 0 20 0 1 0 777 123456 300 18446744073709551615";
        assert_eq!(
            stat_fields(line, 4),
            Some(("cc1_plus".to_string(), 777, 1200))
        );
        assert_eq!(stat_fields("42 (x) R", 4), None);
    }
}
