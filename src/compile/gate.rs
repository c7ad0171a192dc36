//! Memory admission for the compiles of a build cudawheel does not schedule itself (wrap mode):
//! the compiler launcher each of them goes through (CMake's `CMAKE_<LANG>_COMPILER_LAUNCHER`).
//!
//! The build tool (ninja, make) starts as many compiles as it has slots; each one's launcher
//! waits, first come first served, until its expected peak memory fits beside the expected
//! peaks of the compiles running under the build's limit (`max-memory`, else what the machine
//! and its memory cgroup left when the build started), runs the compiler, and records the
//! compiler's measured peak (max RSS from `wait4`) in the build folder. A compile measured
//! before expects its own peak; one never measured expects the scheduler's estimate, raised to
//! the largest peak of its kind (nvcc, other compilers) measured so far. One compile always
//! runs, whatever it expects.
//!
//! A compile's peak is reserved only while it may still come: the launcher watches the
//! compile's processes, and where the last build recorded how its memory went phase by phase
//! (`phases.rs`: nvcc's cicc, ptxas, host compile, one after another), the reservation falls to
//! what the phases still to come held once the heavier ones have ended (and rises to what the
//! compile holds, should it hold more).
//!
//! Expected peaks added up overstate what the compiles hold together: max RSS counts pages
//! that the kernel charges once, and peaks need not coincide. So where the limit is what the
//! machine and its cgroup left (not `max-memory`), the first in line that does not fit the
//! ledger also starts when it fits in what they leave free now, beside what the running
//! compiles may still grow to (each one's expected peak less what it holds now) and a tenth
//! of the limit kept back.
//!
//! The state lives in one folder (`build-dir/memory`): `queue` (the running compiles with
//! the bytes they reserve, and the waiting ones in order), `peaks` (a compile's kind, its last
//! peak and profile, and its key, the output file), `log` (this build's admissions, for the
//! summary and for reading a build afterwards: `admit`, `wait`, `hold` (a running compile's
//! reservation moved) and `peak` lines, tab-separated, each ending in the
//! Unix time it was written, in seconds) and `launch` (the launcher). One lock file
//! serialises the launchers' reads and writes; a launcher that died is dropped from the queue
//! by the next one that looks.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use std::sync::atomic::{AtomicBool, Ordering};

use super::memory::{human, room_now};
use super::phases::{self, Profile, Watch};
use super::proc_tree::ProcessTree;
use super::schedule::{NVCC_ESTIMATE, OTHER_ESTIMATE};

/// The folder of the gate's state; the launcher reads it from here.
pub(crate) const DIR_VAR: &str = "CUDAWHEEL_GATE";
/// The memory limit in bytes.
pub(crate) const LIMIT_VAR: &str = "CUDAWHEEL_GATE_LIMIT";
/// Set (to `1`) where the limit is what the machine and its cgroup left when the build
/// started: the gate may then also admit on what they leave free now.
pub(crate) const MEASURE_VAR: &str = "CUDAWHEEL_GATE_MEASURE";
/// Set (to `1`) where nvcc takes `-frandom-seed` (`Nvcc::takes_random_seed`): the launcher
/// then gives an nvcc compile that names no seed of its own the object's path as its seed, so
/// that the compile's internal symbol names, and its object, are the same in every build.
pub(crate) const SEED_VAR: &str = "CUDAWHEEL_GATE_SEED";
/// The launcher's first word when another launcher follows it (sccache, ccache): the compiler
/// then runs in that launcher's server, where `wait4` does not see it, so nothing is recorded.
const CHAINED: &str = "--chained";

/// Writes the launcher into `dir` (made if missing), empties this build's log and returns the
/// launcher's path. The launcher is a shell script running `python` (the build's interpreter:
/// the wrapped build and its compiles inherit its environment, pip's build-isolation paths
/// too) into `cudawheel._core.gate_launch`; where cudawheel cannot be imported it runs the
/// compiler itself, unmeasured.
pub(crate) fn install(dir: &Path, python: &Path) -> io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join("log"), "")?;
    // Each build appends its peaks: kept to the last of each compile.
    if let Ok(text) = std::fs::read_to_string(dir.join("peaks")) {
        std::fs::write(dir.join("peaks"), compact_peaks(&text))?;
    }
    let python = shlex::try_quote(&python.to_string_lossy())
        .map_err(io::Error::other)?
        .into_owned();
    let script = format!(
        "#!/bin/sh\n\
         # cudawheel's memory admission for this build's compiles: waits until the compile's\n\
         # expected peak memory fits, runs it, records its peak (written by cudawheel).\n\
         exec {python} -c 'import signal, sys\n\
         signal.signal(signal.SIGINT, signal.SIG_DFL)\n\
         try:\n    from cudawheel._core import gate_launch\n\
         except ImportError:\n    import os; os.execvp(sys.argv[1], sys.argv[1:])\n\
         sys.exit(gate_launch(sys.argv[1:]))' \"$@\"\n"
    );
    let path = dir.join("launch");
    std::fs::write(&path, script)?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
    Ok(path)
}

/// The launcher's work: `argv` is the compile (the compiler, or a further launcher, and its
/// arguments). Returns the exit status the launcher exits with.
pub(crate) fn launch(argv: &[String]) -> i32 {
    let chained = argv.first().is_some_and(|a| a == CHAINED);
    let argv = &argv[usize::from(chained)..];
    let Some((program, args)) = argv.split_first() else {
        eprintln!("cudawheel gate: no command to run");
        return 2;
    };
    let compile = Compile::of(argv);
    let seed = std::env::var_os(SEED_VAR).is_some_and(|v| v == "1");
    let seeded = seeded(&compile, args, seed);
    let args = seeded.as_deref().unwrap_or(args);
    // CMake's configure probes (`try_compile`: `CMakeFiles/cmTC_<random>.dir/...`) run one at a
    // time under a fresh name each build: nothing to admit, nothing worth remembering.
    let dir = std::env::var_os(DIR_VAR)
        .map(PathBuf::from)
        .filter(|_| !compile.key.contains("cmTC_"));
    let Some(dir) = dir else {
        return run(program, args).map_or_else(|e| spawn_failed(program, &e), |(code, _)| code);
    };
    let limit = std::env::var(LIMIT_VAR)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(u64::MAX);
    let measure = std::env::var_os(MEASURE_VAR).is_some_and(|v| v == "1");
    let gate = Gate {
        dir,
        limit,
        measure,
    };
    // The gate's own failures (an unwritable folder) never fail a compile: it then runs
    // unadmitted and nothing is recorded for it.
    let admitted = gate.admit(&compile).ok();
    let started = Instant::now();
    // Chained, the compile runs in the next launcher's server: nothing of it to watch.
    let result = match &admitted {
        Some(exp) if !chained => run_watched(program, args, &gate, &compile, exp),
        _ => run(program, args).map(|(code, kib)| (code, kib, None)),
    };
    if admitted.is_some() {
        let measured = result
            .as_ref()
            .ok()
            .filter(|_| !chained)
            .map(|(_, kib, profile)| (*kib, profile.clone()));
        let _ = gate.finish(&compile, measured, started.elapsed());
    }
    match result {
        Ok((code, _, _)) => code,
        Err(e) => spawn_failed(program, &e),
    }
}

/// The compile's arguments with `-frandom-seed=<object>` added, where `wanted` (`SEED_VAR`),
/// the compiler is nvcc and the command names no seed; else `None` (run as asked).
fn seeded(compile: &Compile, args: &[String], wanted: bool) -> Option<Vec<String>> {
    let named = args
        .iter()
        .any(|a| a.starts_with("-frandom-seed") || a.starts_with("--frandom-seed"));
    (wanted && compile.nvcc && !named && !compile.key.is_empty()).then(|| {
        let mut out = args.to_vec();
        out.push(format!("-frandom-seed={}", compile.key));
        out
    })
}

fn spawn_failed(program: &str, e: &io::Error) -> i32 {
    eprintln!("cudawheel gate: cannot run {program}: {e}");
    127
}

/// Starts the compile, its address space laid out the same way in every run
/// (`job::fixed_addresses`: cicc's code for some files depends on it).
fn spawn(program: &str, args: &[String]) -> io::Result<std::process::Child> {
    #[allow(clippy::disallowed_methods)] // the launcher runs the compile the build tool asked for
    let mut command = std::process::Command::new(program);
    super::job::fixed_addresses(command.args(args));
    command.spawn()
}

/// The exit status as a shell gives it.
fn exit_code(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(1)
}

/// Runs the compile with the launcher's stdio: (exit status, peak KiB).
fn run(program: &str, args: &[String]) -> io::Result<(i32, u64)> {
    let (status, kib) = super::job::wait_with_peak(&mut spawn(program, args)?)?;
    Ok((exit_code(status), kib))
}

/// Runs the compile as `run` does while a thread watches its processes (`phases::Watch`): the
/// compile's reservation in the queue follows what it may still hold, and its profile comes
/// back with its status and peak, for the next build.
fn run_watched(
    program: &str,
    args: &[String],
    gate: &Gate,
    compile: &Compile,
    expected: &Expected,
) -> io::Result<(i32, u64, Option<Profile>)> {
    let mut child = spawn(program, args)?;
    let root = child.id();
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        let watcher = s.spawn(|| watch(root, gate, compile, expected, &done));
        let waited = super::job::wait_with_peak(&mut child);
        done.store(true, Ordering::Release);
        watcher.thread().unpark();
        let watch = watcher.join().ok();
        let (status, kib) = waited?;
        Ok((exit_code(status), kib, watch.and_then(|w| w.profile(kib))))
    })
}

/// The watching thread: samples the compile's processes until `done`, and moves its
/// reservation to what it may still hold: the stages of its recorded profile still to come
/// (no more than it expected), or what it holds now where that is more. Small moves are not
/// worth the lock: 16 MiB or a twentieth.
fn watch(
    root: u32,
    gate: &Gate,
    compile: &Compile,
    expected: &Expected,
    done: &AtomicBool,
) -> Watch {
    let mut watch = Watch::new(root);
    let (mut stage, mut held) = (0, expected.bytes);
    while !done.load(Ordering::Acquire) {
        let (ended, now_kib) = watch.sample();
        let mut want = expected.bytes;
        if let Some(profile) = &expected.profile {
            for (name, own) in &ended {
                stage = profile.after(stage, name, *own);
            }
            want = want.min(profile.still_to_hold(stage) * 1024);
        }
        let want = want.max(now_kib * 1024);
        if want.abs_diff(held) >= (16 << 20).max(held / 20) && gate.hold(compile, want).is_ok() {
            held = want;
        }
        std::thread::park_timeout(phases::INTERVAL);
    }
    watch
}

/// One compile as the gate sees it.
#[derive(Debug, Clone, PartialEq)]
struct Compile {
    /// Its output file as the command names it (`-o`): the same across builds in one tree.
    key: String,
    /// nvcc (and its estimate), or another compiler.
    nvcc: bool,
}

impl Compile {
    fn of(argv: &[String]) -> Compile {
        let nvcc = argv.iter().any(|a| {
            Path::new(a)
                .file_name()
                .is_some_and(|n| n == "nvcc" || n == "nvcc.exe")
        });
        let mut key = None;
        let mut words = argv.iter();
        while let Some(w) = words.next() {
            if w == "-o" || w == "--output-file" {
                key = words.next().cloned();
            } else if let Some(rest) = w.strip_prefix("-o").filter(|r| !r.is_empty()) {
                key = Some(rest.to_string());
            }
        }
        let key = key.unwrap_or_else(|| argv.last().cloned().unwrap_or_default());
        Compile { key, nvcc }
    }

    fn kind(&self) -> &'static str {
        if self.nvcc {
            "nvcc"
        } else {
            "other"
        }
    }
}

/// The queue: who runs (pid, expected bytes) and who waits, in order.
#[derive(Debug, Default, PartialEq)]
struct Queue {
    running: Vec<(u32, u64)>,
    waiting: Vec<u32>,
}

impl Queue {
    fn parse(text: &str) -> Queue {
        let mut q = Queue::default();
        for line in text.lines() {
            let mut w = line.split_whitespace();
            match (w.next(), w.next().and_then(|p| p.parse().ok()), w.next()) {
                (Some("R"), Some(pid), Some(b)) => q.running.push((pid, b.parse().unwrap_or(0))),
                (Some("W"), Some(pid), None) => q.waiting.push(pid),
                _ => {}
            }
        }
        q
    }

    fn render(&self) -> String {
        let run = self.running.iter().map(|(p, b)| format!("R {p} {b}\n"));
        let wait = self.waiting.iter().map(|p| format!("W {p}\n"));
        run.chain(wait).collect()
    }

    fn retain_alive(&mut self, alive: impl Fn(u32) -> bool) {
        self.running.retain(|&(p, _)| alive(p));
        self.waiting.retain(|&p| alive(p));
    }

    fn used(&self) -> u64 {
        self.running.iter().map(|&(_, b)| b).sum()
    }

    /// Whether `pid` (queued) starts now: first in line, and its expected peak fits beside the
    /// running ones (or nothing runs).
    fn may_start(&self, pid: u32, expected: u64, limit: u64) -> bool {
        self.waiting.first() == Some(&pid)
            && (self.running.is_empty() || self.used().saturating_add(expected) <= limit)
    }

    /// Whether `expected` fits in `room` (free now) beside what the running compiles may still
    /// grow to (each one's expected bytes less what `holds` says its compile holds now), with a
    /// tenth of `limit` kept back.
    fn fits_now(&self, room: u64, expected: u64, limit: u64, holds: impl Fn(u32) -> u64) -> bool {
        let growth: u64 = self
            .running
            .iter()
            .map(|&(p, b)| b.saturating_sub(holds(p)))
            .sum();
        growth.saturating_add(expected).saturating_add(limit / 10) <= room
    }
}

/// One line of the peaks file: `<kind> <kib>[ <profile>]\t<key>` (the profile: `phases.rs`).
struct Record<'a> {
    kind: &'a str,
    kib: u64,
    profile: Option<&'a str>,
    key: &'a str,
}

/// The records of the peaks file, in order.
fn records(text: &str) -> impl Iterator<Item = Record<'_>> {
    text.lines().filter_map(|l| {
        let (fields, key) = l.split_once('\t')?;
        let mut f = fields.split(' ');
        let kind = f.next()?;
        let kib = f.next()?.parse().ok()?;
        Some(Record {
            kind,
            kib,
            profile: f.next(),
            key,
        })
    })
}

/// The recorded peaks: key -> KiB (the last line of a key wins).
#[cfg(test)]
fn read_peaks(text: &str) -> BTreeMap<String, u64> {
    records(text).map(|r| (r.key.to_string(), r.kib)).collect()
}

/// A line of the peaks file.
fn peak_line(kind: &str, kib: u64, profile: Option<&str>, key: &str) -> String {
    match profile {
        Some(p) => format!("{kind} {kib} {p}\t{key}"),
        None => format!("{kind} {kib}\t{key}"),
    }
}

/// The peaks file with one line per compile, its last, in the order first seen.
fn compact_peaks(text: &str) -> String {
    let mut last: BTreeMap<&str, Record> = BTreeMap::new();
    let mut order = Vec::new();
    for r in records(text) {
        let key = r.key;
        if last.insert(key, r).is_none() {
            order.push(key);
        }
    }
    order
        .iter()
        .map(|k| {
            let r = &last[k];
            peak_line(r.kind, r.kib, r.profile, k) + "\n"
        })
        .collect()
}

/// What a compile expects.
#[derive(Debug, PartialEq)]
struct Expected {
    bytes: u64,
    /// Its own peak, recorded by an earlier build (else an estimate).
    measured: bool,
    /// How its memory went phase by phase in that build, where it was recorded.
    profile: Option<Profile>,
}

/// What a compile expects: its own last peak (and profile), else the estimate of its kind
/// raised to the largest peak of that kind recorded.
fn expected(compile: &Compile, peaks_text: &str) -> Expected {
    let (mut own, mut largest) = (None, 0);
    for r in records(peaks_text) {
        if r.key == compile.key {
            own = Some((r.kib, r.profile));
        }
        if r.kind == compile.kind() {
            largest = largest.max(r.kib);
        }
    }
    if let Some((kib, profile)) = own {
        return Expected {
            bytes: kib * 1024,
            measured: true,
            profile: profile.and_then(Profile::parse),
        };
    }
    let base = if compile.nvcc {
        NVCC_ESTIMATE
    } else {
        OTHER_ESTIMATE
    };
    Expected {
        bytes: base.max(largest * 1024),
        measured: false,
        profile: None,
    }
}

fn alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: signal 0 only checks that the process exists.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

struct Gate {
    dir: PathBuf,
    limit: u64,
    /// Whether the memory free now may admit a compile the ledger does not (`MEASURE_VAR`).
    measure: bool,
}

impl Gate {
    fn locked(&self) -> io::Result<File> {
        let f = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(self.dir.join("lock"))?;
        f.lock()?;
        Ok(f)
    }

    fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.join(name)).unwrap_or_default()
    }

    fn append(&self, name: &str, line: &str) -> io::Result<()> {
        let mut f = File::options()
            .create(true)
            .append(true)
            .open(self.dir.join(name))?;
        writeln!(f, "{line}")
    }

    /// A line of `log`, with the time it happened: how long a compile waited and how many ran
    /// at each moment can be read from the log afterwards.
    fn log(&self, line: &str) -> io::Result<()> {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        self.append("log", &format!("{line}\t{:.3}", now.as_secs_f64()))
    }

    /// Queues this process and waits until it may start; returns what it expects.
    fn admit(&self, compile: &Compile) -> io::Result<Expected> {
        let pid = std::process::id();
        let exp = expected(compile, &self.read("peaks"));
        let (bytes, measured) = (exp.bytes, exp.measured);
        let mut pause = Duration::from_millis(5);
        let mut said_wait = false;
        loop {
            let lock = self.locked()?;
            let mut q = Queue::parse(&self.read("queue"));
            q.retain_alive(alive);
            if !q.waiting.contains(&pid) {
                q.waiting.push(pid);
            }
            let by = self.admission(&q, pid, bytes);
            let start = by.is_some();
            if let Some(by) = by {
                let running = q.running.len();
                q.waiting.retain(|&p| p != pid);
                q.running.push((pid, bytes));
                let how = if measured { "measured" } else { "estimate" };
                self.log(&format!(
                    "admit\t{}\t{running}\t{bytes}\t{how}\t{}\t{by}",
                    compile.key,
                    q.used()
                ))?;
            } else if !said_wait {
                said_wait = true;
                self.log(&format!("wait\t{}\t{bytes}", compile.key))?;
            }
            std::fs::write(self.dir.join("queue"), q.render())?;
            drop(lock);
            if start {
                return Ok(exp);
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(100));
        }
    }

    /// Why `pid` (queued) starts now, if it does: `ledger` (first in line, and its expected
    /// peak fits beside the running ones' under the limit, or nothing runs) or `room` (first in
    /// line, and it fits in what the machine and its cgroup leave free now).
    fn admission(&self, q: &Queue, pid: u32, bytes: u64) -> Option<&'static str> {
        if q.may_start(pid, bytes, self.limit) {
            return Some("ledger");
        }
        if !self.measure || q.waiting.first() != Some(&pid) {
            return None;
        }
        let room = room_now()?;
        let tree = ProcessTree::read();
        q.fits_now(room, bytes, self.limit, |p| tree.rss_below(p))
            .then_some("room")
    }

    /// Sets this process's reservation in the queue to `bytes`, while its compile runs.
    fn hold(&self, compile: &Compile, bytes: u64) -> io::Result<()> {
        let pid = std::process::id();
        let _lock = self.locked()?;
        let mut q = Queue::parse(&self.read("queue"));
        let Some(entry) = q.running.iter_mut().find(|(p, _)| *p == pid) else {
            return Ok(());
        };
        entry.1 = bytes;
        std::fs::write(self.dir.join("queue"), q.render())?;
        self.log(&format!("hold\t{}\t{bytes}", compile.key))
    }

    /// Leaves the queue; records the peak (and the profile) when it was measured.
    fn finish(
        &self,
        compile: &Compile,
        measured: Option<(u64, Option<Profile>)>,
        took: Duration,
    ) -> io::Result<()> {
        let pid = std::process::id();
        let _lock = self.locked()?;
        let mut q = Queue::parse(&self.read("queue"));
        q.running.retain(|&(p, _)| p != pid);
        std::fs::write(self.dir.join("queue"), q.render())?;
        if let Some((kib, profile)) = measured.filter(|m| m.0 > 0) {
            let profile = profile.map(|p| p.render());
            self.append(
                "peaks",
                &peak_line(compile.kind(), kib, profile.as_deref(), &compile.key),
            )?;
            self.log(&format!(
                "peak\t{}\t{kib}\t{:.1}",
                compile.key,
                took.as_secs_f64()
            ))?;
        }
        Ok(())
    }
}

/// The build's admissions in one line (from `log`), `None` when no compile went through the
/// gate (a project that sets its own launcher).
pub(crate) fn summary(dir: &Path, limit: Option<(u64, &str)>) -> Option<String> {
    let log = std::fs::read_to_string(dir.join("log")).ok()?;
    let (mut admits, mut measured, mut waited, mut by_room) = (0, 0, 0, 0);
    let mut largest = (0u64, String::new());
    // Each compile's admitted bytes, and whether it held less than that before it ended.
    let mut admitted: BTreeMap<&str, (u64, bool)> = BTreeMap::new();
    for line in log.lines() {
        let f: Vec<&str> = line.split('\t').collect();
        match f.as_slice() {
            ["admit", key, _, bytes, how, _, by, ..] => {
                admits += 1;
                measured += usize::from(*how == "measured");
                by_room += usize::from(*by == "room");
                admitted.insert(key, (bytes.parse().unwrap_or(0), false));
            }
            ["hold", key, bytes, ..] => {
                if let Some(a) = admitted.get_mut(key) {
                    a.1 |= bytes.parse::<u64>().is_ok_and(|b| b < a.0);
                }
            }
            ["wait", ..] => waited += 1,
            ["peak", key, kib, ..] => {
                let kib: u64 = kib.parse().unwrap_or(0);
                if kib > largest.0 {
                    largest = (kib, (*key).to_string());
                }
            }
            _ => {}
        }
    }
    if admits == 0 {
        return None;
    }
    let limit = limit.map_or(String::new(), |(b, from)| {
        format!(" under {} ({from})", human(b))
    });
    let peak = if largest.0 > 0 {
        format!(
            "; largest peak {} ({}); peaks kept in {}",
            human(largest.0 * 1024),
            largest.1,
            dir.join("peaks").display()
        )
    } else {
        String::new()
    };
    let gave_back = admitted.values().filter(|a| a.1).count();
    let gave_back = if gave_back > 0 {
        format!("; {gave_back} gave back memory as their heaviest phases ended")
    } else {
        String::new()
    };
    Some(format!(
        "memory admission: {admits} compiles{limit}, {measured} expecting the peak measured in an earlier build, {waited} waited for memory, {by_room} started on the memory free then{peak}{gave_back}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A gate in `dir` (its launcher written) under `limit`, on the ledger alone.
    fn installed(dir: &Path, limit: u64) -> Gate {
        install(dir, Path::new("python3")).unwrap();
        Gate {
            dir: dir.into(),
            limit,
            measure: false,
        }
    }

    fn argv(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn a_compile_is_known_by_its_output_and_its_compiler() {
        let c = Compile::of(&argv("/t/bin/nvcc -x cu -c a.cu -o obj/a.cu.o"));
        assert_eq!((c.key.as_str(), c.nvcc), ("obj/a.cu.o", true));
        let c = Compile::of(&argv("/usr/bin/sccache /usr/bin/c++ -c b.cpp -oobj/b.o"));
        assert_eq!((c.key.as_str(), c.nvcc), ("obj/b.o", false));
        // No -o: the last word.
        assert_eq!(Compile::of(&argv("cc -c x.c")).key, "x.c");
    }

    #[test]
    fn the_first_in_line_starts_when_its_peak_fits() {
        let q = Queue {
            running: vec![(1, 3 << 30)],
            waiting: vec![7, 8],
        };
        assert!(q.may_start(7, 1 << 30, 4 << 30));
        // Over the limit: waits; not first in line: waits even when it would fit.
        assert!(!q.may_start(7, 2 << 30, 4 << 30));
        assert!(!q.may_start(8, 1, 4 << 30));
        // Nothing running: the first starts whatever it expects.
        let q = Queue {
            running: vec![],
            waiting: vec![7],
        };
        assert!(q.may_start(7, 64 << 30, 1 << 30));
        assert_eq!(Queue::parse(&q.render()), q);
    }

    #[test]
    fn what_is_free_now_admits_beside_what_the_running_may_still_grow_to() {
        const G: u64 = 1 << 30;
        let q = Queue {
            running: vec![(1, 3 * G), (2, 2 * G)],
            waiting: vec![7],
        };
        // 1 holds 2 GiB of its 3 (1 to come), 2 holds all its 2 (none to come): 1 GiB + the
        // 1 GiB expected + a tenth of the 10 GiB limit kept back fit in 3 GiB free.
        let holds = |_| 2 * G;
        assert!(q.fits_now(3 * G, G, 10 * G, holds));
        // Control: less free, or the running ones holding nothing yet (their whole peaks to come).
        assert!(!q.fits_now(3 * G - 1, G, 10 * G, holds));
        assert!(!q.fits_now(3 * G, G, 10 * G, |_| 0));
        // A compile over its expected peak is not counted below zero.
        assert!(q.fits_now(3 * G, G, 10 * G, |_| 4 * G));
    }

    #[test]
    fn the_dead_leave_the_queue() {
        let mut q = Queue::parse("R 1 100\nR 2 200\nW 3\nW 4\ngarbage\n");
        assert_eq!(q.used(), 300);
        q.retain_alive(|p| p % 2 == 0);
        assert_eq!((q.running, q.waiting), (vec![(2, 200)], vec![4]));
    }

    #[test]
    fn a_measured_compile_expects_its_peak_and_others_the_largest_of_their_kind() {
        let peaks = "nvcc 2000000\ta.o\nother 100000\tc.o\nnvcc 600000\ta.o\n";
        let a = Compile::of(&argv("nvcc -c a.cu -o a.o"));
        let e = |c: &Compile, peaks: &str| {
            let e = expected(c, peaks);
            (e.bytes, e.measured)
        };
        assert_eq!(e(&a, peaks), (600_000 * 1024, true)); // the last record wins
        let b = Compile::of(&argv("nvcc -c b.cu -o b.o"));
        assert_eq!(e(&b, peaks), (2_000_000 * 1024, false));
        // Below the estimate, the estimate stays; nothing recorded: the estimate.
        let d = Compile::of(&argv("c++ -c d.cpp -o d.o"));
        assert_eq!(e(&d, peaks), (OTHER_ESTIMATE, false));
        assert_eq!(e(&b, ""), (NVCC_ESTIMATE, false));
        // A line with a profile: the same peak, and the profile.
        let peaks = "nvcc 600000 cicc:590000:600000,cc1plus:330000:340000\ta.o\n";
        assert_eq!(e(&a, peaks), (600_000 * 1024, true));
        let p = expected(&a, peaks).profile.unwrap();
        assert_eq!((p.still_to_hold(0), p.still_to_hold(1)), (600_000, 340_000));
        assert_eq!(compact_peaks(peaks), peaks);
    }

    #[test]
    fn compiles_through_the_gate_record_their_peaks_and_wait_their_turn() {
        let dir = tempfile::tempdir().unwrap();
        let gate = installed(dir.path(), 1 << 30);
        let a = Compile::of(&argv("nvcc -c a.cu -o a.o"));
        gate.admit(&a).unwrap();
        gate.finish(&a, Some((300_000, None)), Duration::from_secs(1))
            .unwrap();
        gate.admit(&a).unwrap();
        gate.finish(&a, Some((400_000, None)), Duration::from_secs(1))
            .unwrap();
        assert_eq!(read_peaks(&gate.read("peaks"))["a.o"], 400_000);
        assert_eq!(gate.read("peaks").lines().count(), 2);
        assert_eq!(gate.read("queue"), "");
        let line = summary(dir.path(), Some((1 << 30, "max-memory"))).unwrap();
        assert!(
            line.starts_with("memory admission: 2 compiles under 1.0 GiB (max-memory), 1 expecting the peak measured in an earlier build, 0 waited for memory, 0 started on the memory free then"),
            "{line}"
        );
        assert!(line.contains("largest peak 390 MiB (a.o)"), "{line}");
        // Each line of the log ends in the Unix time it was written.
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        let log = gate.read("log");
        assert_eq!(log.lines().count(), 4, "{log}"); // two admissions, two peaks
        for l in log.lines() {
            let t: f64 = l.rsplit('\t').next().unwrap().parse().unwrap_or(0.0);
            // Written to the millisecond, rounded: up to half of one past the time read after.
            assert!(now - 60.0 < t && t <= now + 0.001, "{l}");
        }
        // The launcher runs the compile it is handed and exits with its status (here with no
        // gate folder in the environment, or no cudawheel where `python3` looks: the same).
        #[allow(clippy::disallowed_methods)] // runs the launcher as a build tool would
        let status = std::process::Command::new(dir.path().join("launch"))
            .args(["sh", "-c", "exit 3"])
            .env_remove(DIR_VAR)
            .status()
            .unwrap();
        assert_eq!(status.code(), Some(3));
        // The next build starts with an empty log and one record per compile, its last.
        install(dir.path(), Path::new("python3")).unwrap();
        assert_eq!(summary(dir.path(), None), None);
        assert_eq!(gate.read("peaks"), "nvcc 400000\ta.o\n");
    }

    #[test]
    fn a_watched_shell_is_profiled_by_the_processes_it_ran_in_order() {
        if phases::tests::no_children_files() {
            return;
        }
        // Two heavy steps one after the other, as nvcc runs cicc then the host compiler: a
        // python holding 96 MiB for 0.6 s, then one holding 48 MiB.
        #[allow(clippy::disallowed_methods)] // a compile-like child to watch
        let mut child = std::process::Command::new("sh")
            .args([
                "-c",
                &format!(
                    "{}; {}",
                    phases::tests::holding(96),
                    phases::tests::holding(48)
                ),
            ])
            .spawn()
            .unwrap();
        let mut watch = Watch::new(child.id());
        let mut ended = Vec::new();
        let mut most = 0;
        while child.try_wait().unwrap().is_none() {
            let (gone, now) = watch.sample();
            ended.extend(gone);
            most = most.max(now);
            std::thread::sleep(Duration::from_millis(50));
        }
        let p = watch.profile(0).expect("a profile");
        // The interpreter's name (a launcher script may exec it): the same twice, not the shell's.
        let text = p.render();
        let stages: Vec<Vec<&str>> = text.split(',').map(|s| s.split(':').collect()).collect();
        let heavy: Vec<&str> = stages.iter().map(|s| s[0]).collect();
        assert!(
            heavy.len() >= 2 && heavy[0] == heavy[1] && heavy[0] != "sh",
            "{text}"
        );
        let own = |i: usize| stages[i][1].parse::<u64>().unwrap();
        assert!(own(0) > 96 << 10 && own(1) < 80 << 10, "{text}");
        // Once the first has ended, what is still to come is the second's, not the first's.
        assert!(p.still_to_hold(0) > 96 << 10, "{text}");
        assert!(p.still_to_hold(1) < 90 << 10, "{text}");
        assert!(most > 96 << 10 && ended.iter().any(|(n, _)| n == heavy[0]));
    }

    #[test]
    fn a_compile_gives_back_what_its_finished_phases_held_once_its_profile_is_known() {
        if phases::tests::no_children_files() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let gate = installed(dir.path(), 8 << 30);
        let c = Compile {
            key: "x.o".into(),
            nvcc: false,
        };
        // Two heavy phases, as nvcc's cicc and then its host compile: 160 MiB, then 48 MiB.
        let script = format!(
            "{}; {}",
            phases::tests::holding(160),
            phases::tests::holding(48)
        );
        let args = ["-c".to_string(), script];
        let compile = |gate: &Gate| {
            let exp = gate.admit(&c).unwrap();
            let (code, kib, profile) = run_watched("sh", &args, gate, &c, &exp).unwrap();
            assert_eq!(code, 0);
            gate.finish(&c, Some((kib, profile)), Duration::from_secs(1))
                .unwrap();
            exp.bytes
        };
        let holds = |log: &str| -> Vec<u64> {
            log.lines()
                .filter_map(|l| l.strip_prefix("hold\tx.o\t"))
                .filter_map(|l| l.split('\t').next()?.parse().ok())
                .collect()
        };
        // The first build knows no profile: the compile keeps what it expected (the estimate).
        compile(&gate);
        assert_eq!(holds(&gate.read("log")), Vec::<u64>::new());
        let peaks = gate.read("peaks");
        assert!(peaks.starts_with("other "), "{peaks}");
        let profile = expected(&c, &peaks).profile.expect("a profile recorded");
        assert!(profile.still_to_hold(0) > 160 << 10, "{peaks}");
        // The next build: it expects its peak, and gives most of it back once the first phase
        // has ended; the second phase's 48 MiB stays reserved (with the shell and the rest).
        install(dir.path(), Path::new("python3")).unwrap();
        let expected_bytes = compile(&gate);
        assert!(expected_bytes > 160 << 20, "{expected_bytes}");
        // The first give-back follows the first phase: the second's 48 MiB stays held. A later
        // one may follow the second phase too, when the sampler sees the shell alone (a slow
        // machine); none goes back up to the first phase's 160 MiB.
        let h = holds(&gate.read("log"));
        let first = h.first().copied().unwrap_or(u64::MAX);
        assert!(first > 48 << 20 && first < 120 << 20, "{h:?}");
        assert!(h.iter().all(|&b| b < 120 << 20), "{h:?}");
        assert_eq!(gate.read("queue"), "");
        let line = summary(dir.path(), None).unwrap();
        assert!(
            line.ends_with("; 1 gave back memory as their heaviest phases ended"),
            "{line}"
        );
    }

    #[test]
    fn compiles_run_without_address_randomisation() {
        // A shell that fails unless its personality has ADDR_NO_RANDOMIZE (0x0040000), which
        // exec kept from the launcher's spawn, as nvcc's cicc keeps it.
        let check = "p=$(cat /proc/self/personality); [ $(( 0x$p & 0x40000 )) -ne 0 ]".to_string();
        let args = ["-c".to_string(), check];
        assert_eq!(run("sh", &args).unwrap().0, 0);
        // Control: the same shell started as usual has the machine's randomised addresses.
        #[allow(clippy::disallowed_methods)] // the control
        let plain = std::process::Command::new("sh")
            .args(&args)
            .status()
            .unwrap();
        assert_eq!(plain.code(), Some(1));
    }

    #[test]
    fn an_nvcc_compile_gets_its_object_as_seed_unless_it_names_one() {
        let seeded = |cmd: &str, wanted: bool| {
            let words = argv(cmd);
            seeded(&Compile::of(&words), &words[1..], wanted).map(|a| a.join(" "))
        };
        assert_eq!(
            seeded("/t/bin/nvcc -x cu -c a.cu -o obj/a.cu.o", true).as_deref(),
            Some("-x cu -c a.cu -o obj/a.cu.o -frandom-seed=obj/a.cu.o")
        );
        assert_eq!(seeded("/t/bin/nvcc -c a.cu -o obj/a.cu.o", false), None);
        assert_eq!(seeded("/usr/bin/g++ -c b.cpp -o obj/b.o", true), None);
        assert_eq!(
            seeded("/t/bin/nvcc -frandom-seed=mine -c a.cu -o a.o", true),
            None
        );
    }

    #[test]
    fn a_running_compile_holds_what_its_processes_hold() {
        // A shell that runs a sleep and waits for it, as nvcc runs its phases (proc_tree).
        #[allow(clippy::disallowed_methods)] // a child to measure
        let mut child = std::process::Command::new("sh")
            .args(["-c", "sleep 5 & wait"])
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(300));
        let tree = ProcessTree::read();
        assert!(tree.below(std::process::id()).contains(&child.id()));
        let below = tree.below(child.id());
        let rss = tree.rss_below(child.id());
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(below.len(), 1, "the shell's sleep: {below:?}");
        assert!(rss > 100 << 10, "{rss}");
        // Control: the sleep has nothing below it.
        assert_eq!(tree.rss_below(below[0]), 0);
    }
}
