//! Scheduling: run the build's steps (compiles, device links, links) as one graph
//! in one pool of workers.
//!
//! - A step starts as soon as the steps it needs have finished (a link right after its
//!   objects, while other compiles still run).
//! - Among ready steps the longest expected one starts first: its duration in the last
//!   build here (remembered by `incremental`), else an estimate.
//! - Steps whose earlier output is still right (`incremental::Cache::check`) are skipped.
//! - Thread budget: `workers` is a number of slots (CPU cores by default). An nvcc compile
//!   gets `--threads N` with N = the free slots shared among the nvcc compiles ready to start
//!   (at least 1, at most its device passes), and holds N slots while it runs: with fewer
//!   compiles than cores each one compiles its architectures in parallel; as the queue grows,
//!   N shrinks to 1. A compile whose expected time is a larger share of the ready compiles'
//!   gets that share of the free slots as threads instead (`time_share`, at most its device
//!   passes), but holds only the even share of the slots (`Pick::slots`): a file that
//!   dominates the build compiles its architectures in parallel from its start, and the short
//!   ones run beside it rather than after it (nvcc runs a compile's front end and host compile
//!   on one thread; its extra threads work only during the device passes). On the first build
//!   the expectation is an estimate (`Job::estimate`), later the time the step took here.
//! - nvcc's `--split-compile` is never added: its output depends on which of its threads
//!   finishes first (the PTX holds the partitions in completion order), so two builds of the
//!   same source would give different wheels. A project that accepts that sets it in
//!   `nvcc-flags` itself.
//! - With a build cluster (`Options::remote`) the slots are the jobs the cluster takes at once.
//!   A compile sent there whose share of the free slots (by expected time) is more than one
//!   gets a thread per device pass (sccache then ships those passes at once), so the longest
//!   chains finish as early as the cluster allows; the others get one slot each.
//! - Memory admission: each step's expected peak memory is its peak (max RSS from `wait4`)
//!   in the last build here, else an estimate, times its `--threads`. A step starts only while
//!   the expected peaks of the running steps stay under the limit (`max-memory`, else
//!   MemAvailable), or when nothing else runs; `--threads` shrinks to what fits.
//! - Under `make -jN` (a GNU make jobserver in `MAKEFLAGS`) every step beyond the first
//!   needs a token from make, so nested builds share N slots.

use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant, SystemTime};

use crate::compile::incremental::{Cache, Freshness};
use crate::compile::job::{CompileError, Job};
use crate::compile::log::BuildLog;
use crate::compile::memory::{human, MemoryLimit};
use crate::ui;

/// A job and the indices of the steps it needs.
pub(crate) struct Step {
    pub(crate) job: Job,
    pub(crate) after: Vec<usize>,
}

pub(crate) struct Options<'a> {
    /// Slots: steps run at once, an nvcc compile with `--threads N` counting N.
    pub(crate) workers: usize,
    pub(crate) verbose: bool,
    pub(crate) cache: &'a Cache,
    pub(crate) jobserver: Option<&'a jobserver::Client>,
    /// The memory the running steps may use together; `None`: no limit.
    pub(crate) memory: Option<MemoryLimit>,
    /// A build cluster (sccache-dist) runs some steps: `workers` is then sized by its cores,
    /// and the other steps share `local_slots`.
    pub(crate) remote: Option<Remote>,
}

/// Which steps a build cluster runs, and the slots of this machine for the rest.
#[derive(Debug, Clone)]
pub(crate) struct Remote {
    /// Per step: whether the cluster runs its compile (sccache ships it).
    pub(crate) steps: Vec<bool>,
    /// Slots for the steps that run here (device links, links, compiles sccache can't ship).
    pub(crate) local_slots: usize,
}

impl Options<'_> {
    fn is_remote(&self, index: usize) -> bool {
        self.remote
            .as_ref()
            .is_some_and(|r| r.steps.get(index).copied().unwrap_or(false))
    }
}

/// Expected peak memory of a step never measured here: nvcc (per thread) and other steps.
pub(crate) const NVCC_ESTIMATE: u64 = 1 << 30;
pub(crate) const OTHER_ESTIMATE: u64 = 256 << 20;

/// nvcc's `--threads` for a compile starting now: the free slots shared among the nvcc
/// compiles ready to start (this one included), at least 1.
pub(crate) fn thread_budget(free_slots: usize, ready_compiles: usize) -> usize {
    (free_slots / ready_compiles.max(1)).max(1)
}

/// The slots a compile's expected time is worth among the ready compiles': `free` shared in
/// proportion to expected seconds (`secs` of `total`), rounded to the nearest. A compile that dominates
/// the ready work (a long templated file beside short ones) gets a thread per device pass at
/// its start, instead of the even share `thread_budget` gives; it cannot get more later, once
/// the short ones have finished, so its share is taken when it starts.
pub(crate) fn time_share(secs: f64, total: f64, free: usize) -> usize {
    if total <= 0.0 || secs <= 0.0 {
        return 0;
    }
    let share = (secs / total * free as f64).round();
    if share >= free as f64 {
        free
    } else {
        share as usize
    }
}

/// How many threads of `per_thread` bytes fit in what `limit` leaves beside `in_use`;
/// `None` when not even one does (and something else runs, so the step must wait).
pub(crate) fn memory_fit(
    threads: usize,
    per_thread: u64,
    in_use: u64,
    limit: u64,
    running: usize,
) -> Option<usize> {
    let room = limit.saturating_sub(in_use);
    let fit = usize::try_from(room / per_thread.max(1)).unwrap_or(usize::MAX);
    match fit.min(threads) {
        0 if running > 0 => None,
        n => Some(n.max(1)),
    }
}

/// What a run did, for the build summary.
#[derive(Debug, Default, Clone)]
pub(crate) struct Stats {
    /// Steps that ran.
    pub(crate) ran: usize,
    /// Steps whose earlier output was reused.
    pub(crate) reused: usize,
    /// Wall time of the whole graph.
    pub(crate) secs: f64,
    /// The most steps that ran at once.
    pub(crate) max_parallel: usize,
    /// Each step that ran: its label and seconds, in the order they finished.
    pub(crate) times: Vec<(String, f64)>,
    /// Each step that ran: its index and the compiler's words as they ran (`--threads`, the
    /// depfile when asked for; no launcher), for the compilation database.
    pub(crate) commands: Vec<(usize, Vec<String>)>,
}

impl Stats {
    /// The closing lines naming the slowest steps (up to three, when two or more ran), with
    /// what shortens a build that one step dominates.
    pub(crate) fn slowest(&self) -> Vec<String> {
        if self.times.len() < 2 {
            return Vec::new();
        }
        let mut times = self.times.clone();
        times.sort_by(|a, b| b.1.total_cmp(&a.1));
        let named: Vec<String> = times
            .iter()
            .take(3)
            .map(|(label, secs)| format!("{label} {secs:.1} s"))
            .collect();
        let mut out = vec![format!("slowest: {}", named.join(", "))];
        // One step taking most of a long build: the user can split its work.
        let (label, secs) = &times[0];
        if *secs >= 60.0 && *secs >= 0.5 * self.secs && label.starts_with("nvcc") {
            out.push(format!(
                "hint: {label} took {secs:.0} s of {:.0} s; it compiles once per arch (its archs already run in parallel where slots are free): the extension's own `archs` (or a separate extension for that file) narrows it, a compiler cache (`compiler-launcher = \"ccache\"`, with remote storage to share it across machines) reuses it (nvcc's `--split-compile` spreads one file over the cores too, but its objects differ from run to run: the wheel is then not reproducible)",
                self.secs
            ));
        }
        out
    }
}

/// The jobserver of a parent `make`, when one is offered in `MAKEFLAGS`.
pub(crate) fn jobserver_from_env() -> Option<jobserver::Client> {
    // SAFETY: called once per build; the descriptors named in MAKEFLAGS are make's, inherited
    // on purpose, and nothing else in this process uses them.
    unsafe { jobserver::Client::from_env() }
}

struct State {
    /// Per step: its freshness as checked before the run, while still current.
    verdicts: Vec<Option<Freshness>>,
    /// Per step: how many of the steps it needs have not finished.
    waiting_on: Vec<usize>,
    ready: Vec<usize>,
    finished: usize,
    /// Whether this process's own implicit jobserver slot is unused.
    implicit_free: bool,
    failure: Option<(usize, CompileError)>,
    stats: Stats,
    /// Progress numbering: steps that ran so far, and steps expected to run.
    shown: usize,
    to_run: usize,
    /// Slots held by running steps (an nvcc compile with `--threads N` holds N, a dominating
    /// one its even share: `Pick::slots`).
    slots_used: usize,
    /// Of those, slots held by steps running on this machine (with a build cluster).
    local_used: usize,
    /// Expected peak memory of the running steps, in bytes.
    mem_used: u64,
    running: usize,
    /// Steps already reported as waiting for memory (verbose).
    told_waiting: Vec<bool>,
}

/// A slot to run one step: this process's implicit one, or a token from make.
enum Slot {
    Implicit,
    Token(#[allow(dead_code)] jobserver::Acquired),
    Unlimited,
}

/// Runs every step. Stops starting steps after the first failure and reports it (the
/// earliest in `steps` when several fail).
pub(crate) fn run(steps: &[Step], opts: &Options<'_>) -> Result<Stats, CompileError> {
    let start = Instant::now();
    // Arguments nvcc's internal shell would change are refused before anything runs.
    for s in steps {
        crate::compile::job::check_nvcc_args(&s.job)?;
    }
    let n = steps.len();
    let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, s) in steps.iter().enumerate() {
        for &d in &s.after {
            dependents[d].push(i);
        }
    }
    // Steps up to date before anything runs (in order: a step comes after what it needs).
    // A step checked here and found stale has only fresh predecessors, so it is ready at once
    // and its verdict still holds when it runs; other steps are checked after what they need.
    let mut verdicts: Vec<Option<Freshness>> = vec![None; n];
    let mut fresh = vec![false; n];
    for (i, s) in steps.iter().enumerate() {
        if s.after.iter().all(|&d| fresh[d]) {
            let verdict = opts.cache.check(&s.job);
            fresh[i] = verdict == Freshness::Fresh;
            verdicts[i] = Some(verdict);
        }
    }
    let expected: Vec<f64> = steps
        .iter()
        .map(|s| opts.cache.last_secs(&s.job).unwrap_or(s.job.estimate))
        .collect();
    // Expected peak memory per thread, and whether it was measured here before.
    let peaks: Vec<(u64, bool)> = steps
        .iter()
        .enumerate()
        .map(|(i, s)| match opts.cache.last_peak_kib(&s.job) {
            Some(kib) => (kib * 1024, true),
            // Compiled on a build server: here only sccache's client and preprocessing run.
            None if opts.is_remote(i) => (OTHER_ESTIMATE, false),
            None if s.job.threadable => (NVCC_ESTIMATE, false),
            None => (OTHER_ESTIMATE, false),
        })
        .collect();
    if opts.verbose {
        let memory = match &opts.memory {
            Some(m) => format!("{} ({})", human(m.bytes), m.source),
            None => "no limit".into(),
        };
        ui::status(&format!(
            "scheduler: {} slots{}, memory for parallel steps: {memory}",
            opts.workers.max(1),
            opts.remote.as_ref().map_or(String::new(), |r| format!(
                " ({} of them for steps that run on this machine)",
                r.local_slots
            ))
        ));
    }
    let mut waiting_on: Vec<usize> = steps.iter().map(|s| s.after.len()).collect();
    let mut ready = Vec::new();
    let mut finished = 0;
    for i in 0..n {
        if fresh[i] {
            finished += 1;
            for &d in &dependents[i] {
                waiting_on[d] -= 1;
            }
        }
    }
    for i in 0..n {
        if !fresh[i] && waiting_on[i] == 0 {
            ready.push(i);
        }
    }
    let to_run = n - finished;
    let state = Mutex::new(State {
        verdicts,
        waiting_on,
        ready,
        finished,
        implicit_free: true,
        failure: None,
        stats: Stats {
            reused: finished,
            ..Stats::default()
        },
        shown: 0,
        to_run,
        slots_used: 0,
        local_used: 0,
        mem_used: 0,
        running: 0,
        told_waiting: vec![false; n],
    });
    let wake = Condvar::new();
    let log = BuildLog::new(opts.cache.build_dir());
    let workers = opts.workers.clamp(1, to_run.max(1));
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                worker(
                    steps,
                    opts,
                    &expected,
                    &peaks,
                    &dependents,
                    &state,
                    &wake,
                    &log,
                )
            });
        }
    });
    let state = state.into_inner().expect("workers have finished");
    if let Some((_, e)) = state.failure {
        return Err(e);
    }
    let mut stats = state.stats;
    stats.secs = start.elapsed().as_secs_f64();
    Ok(stats)
}

const LOCKED: &str = "no worker panics holding the lock";

/// A step chosen to start: its place in `ready`, its `--threads` (1 for other steps) and the
/// slots it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Pick {
    pos: usize,
    threads: usize,
    /// `threads`, except for a compile that dominates the ready work: it runs a thread per
    /// device pass but holds only the even share of the slots (its front end and host compile
    /// are one thread, and the short compiles run beside them instead of after the whole file).
    slots: usize,
}

/// The ready step to start now, or `None` when no slot or not enough memory is free.
/// Longest expected first; a step that does not fit in memory lets a shorter one that fits
/// go first.
fn pick(
    st: &mut State,
    steps: &[Step],
    opts: &Options<'_>,
    expected: &[f64],
    peaks: &[(u64, bool)],
) -> Option<Pick> {
    let slots = opts.workers.max(1);
    let free = slots.saturating_sub(st.slots_used);
    if free == 0 {
        return None;
    }
    let mut order: Vec<usize> = (0..st.ready.len()).collect();
    order.sort_by(|&a, &b| {
        expected[st.ready[b]]
            .total_cmp(&expected[st.ready[a]])
            // Ties: the step that comes first in the plan.
            .then(st.ready[a].cmp(&st.ready[b]))
    });
    let ready_compiles = st
        .ready
        .iter()
        .filter(|&&r| steps[r].job.threadable)
        .count();
    // The expected seconds of the ready compiles the cluster runs.
    let remote_ready: f64 = st
        .ready
        .iter()
        .filter(|&&r| steps[r].job.threadable && opts.is_remote(r))
        .map(|&r| expected[r])
        .sum();
    // The expected seconds of the ready compiles that run here.
    let local_ready: f64 = st
        .ready
        .iter()
        .filter(|&&r| steps[r].job.threadable && !opts.is_remote(r))
        .map(|&r| expected[r])
        .sum();
    for pos in order {
        let index = st.ready[pos];
        let job = &steps[index].job;
        let remote = opts.is_remote(index);
        // With a build cluster, a step that runs here also needs a local slot.
        let local_free = match &opts.remote {
            Some(r) if !remote => r.local_slots.max(1).saturating_sub(st.local_used),
            _ => free,
        };
        if local_free == 0 {
            continue;
        }
        // A compile the cluster runs: sccache runs nvcc's steps one after another (front end,
        // then the device passes `--threads` at a time, then the host compile), so it never
        // has more jobs on the build servers than its threads, and it holds that many slots:
        // the jobs sent stay within what the cluster takes (its scheduler refuses more, and
        // sccache then compiles locally). A compile whose share of the free slots (by expected
        // time among the ready ones) is more than one gets a thread per device pass: the long
        // chains, the build's critical path, start whole. The others get one slot, and a thread
        // more for each slot to spare beyond one per ready compile (longest first).
        // Slots held: the threads, except for a dominating compile here (`Pick::slots`).
        let (mut threads, mut held) = if !job.threadable || opts.jobserver.is_some() {
            (1, 1)
        } else if remote {
            let spare = free.saturating_sub(ready_compiles);
            let threads = if expected[index] * free as f64 > remote_ready {
                job.passes.clamp(1, free)
            } else {
                job.passes.clamp(1, 1 + spare)
            };
            (threads, threads)
        } else {
            let here = free.min(local_free);
            let share = if super::job::even_share() {
                0
            } else {
                time_share(expected[index], local_ready, here)
            };
            let even = thread_budget(here, ready_compiles).min(job.passes.max(1));
            (even.max(share).min(job.passes.max(1)), even)
        };
        if let Some(limit) = &opts.memory {
            let per = peaks[index].0;
            match memory_fit(threads, per, st.mem_used, limit.bytes, st.running) {
                Some(n) => {
                    threads = n;
                    held = held.min(n);
                }
                None => {
                    if opts.verbose && !st.told_waiting[index] {
                        st.told_waiting[index] = true;
                        ui::status(&format!(
                            "{} waits for memory: expected peak {}, {} of {} in use by {} running steps",
                            job.label,
                            human(per),
                            human(st.mem_used),
                            human(limit.bytes),
                            st.running
                        ));
                    }
                    continue;
                }
            }
        }
        return Some(Pick {
            pos,
            threads,
            slots: held,
        });
    }
    None
}

/// A step started by a worker: what it holds until it ends.
struct Running {
    index: usize,
    threads: usize,
    /// Slots held (`Pick::slots`).
    slots: usize,
    /// Expected peak memory, held in `State::mem_used`.
    need: u64,
}

/// Takes the chosen step out of `ready` and books its slots and memory.
fn admit(
    st: &mut State,
    chosen: Pick,
    steps: &[Step],
    opts: &Options<'_>,
    peaks: &[(u64, bool)],
) -> (Running, Option<Freshness>) {
    let index = st.ready.swap_remove(chosen.pos);
    let verdict = st.verdicts[index].take();
    let threads = chosen.threads;
    let need = peaks[index].0 * threads as u64;
    st.slots_used += chosen.slots;
    if !opts.is_remote(index) {
        st.local_used += chosen.slots;
    }
    st.mem_used += need;
    st.running += 1;
    st.stats.max_parallel = st.stats.max_parallel.max(st.running);
    if opts.verbose {
        ui::status(&format!(
            "admit {}: {} running, threads {threads} in {} slot(s), expected peak {} ({}), memory {} of {}",
            steps[index].job.label,
            st.running,
            chosen.slots,
            human(need),
            if peaks[index].1 { "measured" } else { "estimate" },
            human(st.mem_used),
            opts.memory.as_ref().map_or("no limit".into(), |m| human(m.bytes)),
        ));
    }
    let run = Running {
        index,
        threads,
        slots: chosen.slots,
        need,
    };
    (run, verdict)
}

#[allow(clippy::too_many_arguments)]
fn worker(
    steps: &[Step],
    opts: &Options<'_>,
    expected: &[f64],
    peaks: &[(u64, bool)],
    dependents: &[Vec<usize>],
    state: &Mutex<State>,
    wake: &Condvar,
    log: &BuildLog,
) {
    loop {
        // Take the longest ready step that fits, and a slot to run it in.
        let mut st = state.lock().expect(LOCKED);
        let (run, slot, verdict) = loop {
            if st.failure.is_some() || st.finished == steps.len() {
                return;
            }
            if let Some(chosen) = pick(&mut st, steps, opts, expected, peaks) {
                let slot = match opts.jobserver {
                    None => Some(Slot::Unlimited),
                    Some(_) if st.implicit_free => {
                        st.implicit_free = false;
                        Some(Slot::Implicit)
                    }
                    Some(client) => client.try_acquire().ok().flatten().map(Slot::Token),
                };
                if let Some(slot) = slot {
                    let (run, verdict) = admit(&mut st, chosen, steps, opts, peaks);
                    break (run, slot, verdict);
                }
                // No slot free: make's tokens come back when other jobs end; look again soon.
                st = wake
                    .wait_timeout(st, Duration::from_millis(20))
                    .expect(LOCKED)
                    .0;
                continue;
            }
            st = wake.wait(st).expect(LOCKED);
        };
        drop(st);

        let Running {
            index,
            threads,
            slots,
            need,
        } = run;
        let step = &steps[index].job;
        // `--threads` only above nvcc's default of 1 (launchers hash the command line).
        let outcome = run_step(step, opts, log, Some(threads).filter(|&t| t > 1), verdict);

        let mut st = state.lock().expect(LOCKED);
        if matches!(slot, Slot::Implicit) {
            st.implicit_free = true;
        }
        drop(slot);
        st.slots_used -= slots;
        if !opts.is_remote(index) {
            st.local_used -= slots;
        }
        st.mem_used -= need;
        st.running -= 1;
        match outcome {
            Ok(Some((secs, peak_kib, words))) => {
                st.stats.ran += 1;
                st.stats.commands.push((index, words));
                st.shown += 1;
                let mut detail = if step.detail.is_empty() {
                    String::new()
                } else {
                    format!(" {}", step.detail)
                };
                if opts.verbose {
                    detail.push_str(&format!(" (peak {})", human(peak_kib * 1024)));
                }
                ui::status(&format!(
                    "[{}/{}] {}{detail} {secs:.1} s",
                    st.shown, st.to_run, step.label
                ));
                st.stats.times.push((step.label.clone(), secs));
            }
            Ok(None) => {
                st.stats.reused += 1;
                st.to_run -= 1;
            }
            Err(e) => {
                if st.failure.as_ref().is_none_or(|(i, _)| index < *i) {
                    st.failure = Some((index, e));
                }
            }
        }
        st.finished += 1;
        for &d in &dependents[index] {
            st.waiting_on[d] -= 1;
            if st.waiting_on[d] == 0 {
                st.ready.push(d);
            }
        }
        wake.notify_all();
    }
}

/// Runs one step unless its output is up to date (`verdict`, else checked now);
/// `Some((seconds, peak KiB, the compiler's words))` when it ran.
fn run_step(
    job: &Job,
    opts: &Options<'_>,
    log: &BuildLog,
    threads: Option<usize>,
    verdict: Option<Freshness>,
) -> Result<Option<(f64, u64, Vec<String>)>, CompileError> {
    match verdict.unwrap_or_else(|| opts.cache.check(job)) {
        Freshness::Fresh => return Ok(None),
        Freshness::Stale { why } if opts.verbose => {
            ui::status(&format!("{}: runs because {why}", job.label))
        }
        Freshness::Stale { .. } => {}
    }
    // A lazy depfile is left out when the step never ran here (see `Job::depfile_lazy`).
    let without_depfile;
    let job = if job.depfile_lazy && job.depfile.is_some() && !opts.cache.has_record(job) {
        without_depfile = Job {
            depfile: None,
            ..job.clone()
        };
        &without_depfile
    } else {
        job
    };
    opts.cache.forget(job);
    if opts.verbose {
        ui::status(&format!("$ {}", job.command_line(threads)));
    }
    let started = SystemTime::now();
    let clock = Instant::now();
    let (peak_kib, output) = job.run(threads)?;
    let secs = clock.elapsed().as_secs_f64();
    log.step(&job.label, &job.command_line(threads), secs, &output);
    if let Some(w) = crate::compile::log::warnings(&output) {
        ui::warn(&format!(
            "{}:\n{}\n(all of its output: {})",
            job.label,
            crate::compile::job::indent(&w),
            log.path().display()
        ));
    } else if opts.verbose && !output.trim().is_empty() {
        // `verbose`: the statistics and notes too, as output rather than warnings.
        ui::status(&format!(
            "{} printed:\n{}",
            job.label,
            crate::compile::job::indent(&output)
        ));
    }
    if let Err(e) = opts.cache.remember_usage(job, started, secs, peak_kib) {
        // Not fatal: the step runs again next time.
        ui::warn(&format!(
            "cannot record {} for incremental builds: {e}",
            job.label
        ));
    }
    Ok(Some((secs, peak_kib, job.compiler_words(threads))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn touch_job(dir: &Path, name: &str, inputs: &[&str], estimate: f64) -> Job {
        // `cp` copies the first input to the output: a real process with a real output.
        let out = dir.join(name);
        let mut args: Vec<String> = inputs
            .iter()
            .map(|i| dir.join(i).display().to_string())
            .collect();
        args.truncate(1);
        args.push(out.display().to_string());
        Job {
            inputs: inputs.iter().map(|i| dir.join(i)).collect(),
            label: format!("cp {name}"),
            estimate,
            ..Job::for_tests("/bin/cp", args, out)
        }
    }

    #[test]
    fn graph_runs_in_dependency_order_and_reuses_outputs() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        std::fs::write(d.join("src"), "x").unwrap();
        let steps = vec![
            Step {
                job: touch_job(d, "a.o", &["src"], 1.0),
                after: vec![],
            },
            Step {
                job: touch_job(d, "b.o", &["src"], 5.0),
                after: vec![],
            },
            Step {
                job: touch_job(d, "lib.so", &["a.o", "b.o"], 0.5),
                after: vec![0, 1],
            },
        ];
        let cache = Cache::open(d, "t".into());
        let opts = Options {
            workers: 2,
            verbose: false,
            cache: &cache,
            jobserver: None,
            memory: None,
            remote: None,
        };
        let first = run(&steps, &opts).unwrap();
        assert_eq!((first.ran, first.reused), (3, 0));
        assert!(d.join("lib.so").is_file());
        // A no-op rebuild runs nothing.
        let again = run(&steps, &opts).unwrap();
        assert_eq!((again.ran, again.reused), (0, 3));
        // New content in the source: both copies run again, but they produce the same
        // objects, so the link is reused.
        std::thread::sleep(Duration::from_millis(10));
        std::fs::write(d.join("src"), "x").unwrap();
        let cache = Cache::open(d, "t".into());
        let opts = Options {
            cache: &cache,
            ..opts
        };
        let same = run(&steps, &opts).unwrap();
        assert_eq!(
            (same.ran, same.reused),
            (0, 3),
            "same content: nothing runs"
        );
        std::fs::write(d.join("src"), "y").unwrap();
        let changed = run(&steps, &opts).unwrap();
        assert_eq!((changed.ran, changed.reused), (3, 0));
        assert_eq!(std::fs::read(d.join("lib.so")).unwrap(), b"y");
    }

    #[test]
    fn the_first_failure_is_reported_and_nothing_after_it_runs() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        let steps = vec![
            Step {
                job: touch_job(d, "a.o", &["missing"], 1.0),
                after: vec![],
            },
            Step {
                job: touch_job(d, "lib.so", &["a.o"], 0.5),
                after: vec![0],
            },
        ];
        let cache = Cache::open(d, "t".into());
        let opts = Options {
            workers: 2,
            verbose: false,
            cache: &cache,
            jobserver: None,
            memory: None,
            remote: None,
        };
        let err = run(&steps, &opts).unwrap_err();
        assert!(err.to_string().contains("cp a.o failed"), "{err}");
        assert!(!d.join("lib.so").exists());
    }

    /// A threadable step (of 8 device passes) that sleeps, then writes the `--threads` it got
    /// ("" for none).
    fn sleeper(dir: &Path, name: &str, secs: f64) -> Job {
        let out = dir.join(name);
        Job {
            label: format!("sh {name}"),
            threadable: true,
            passes: 8,
            ..Job::for_tests(
                "/bin/sh",
                vec![
                    "-c".into(),
                    format!("sleep {secs}; printf '%s' \"$2\" > {}", out.display()),
                    "sh".into(),
                ],
                out,
            )
        }
    }

    fn threads_given(d: &Path, names: &[String]) -> Vec<String> {
        names
            .iter()
            .map(|n| std::fs::read_to_string(d.join(n)).unwrap())
            .collect()
    }

    #[test]
    fn thread_budget_fills_the_slots_and_shrinks_as_the_queue_grows() {
        assert_eq!(thread_budget(16, 8), 2);
        assert_eq!(thread_budget(16, 3), 5);
        assert_eq!(thread_budget(6, 1), 6);
        assert_eq!(thread_budget(2, 100), 1);
        assert_eq!(thread_budget(1, 0), 1);
        // Memory: threads shrink to what fits; nothing fits -> wait, unless nothing runs.
        assert_eq!(memory_fit(8, 1 << 30, 0, 4 << 30, 0), Some(4));
        assert_eq!(memory_fit(8, 1 << 30, 4 << 30, 4 << 30, 2), None);
        assert_eq!(memory_fit(8, 1 << 30, 4 << 30, 4 << 30, 0), Some(1));
    }

    #[test]
    fn more_slots_than_compiles_gives_nvcc_threads_and_fewer_gives_none() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        let cache = Cache::open(d, "t".into());
        // `k` independent compiles named `prefix0`, `prefix1`, ..., each long enough (0.5 s)
        // that the others are picked while it runs, however loaded the machine: a step that
        // ended before the next was picked would hand its slots on (more threads than asserted).
        let independent = |prefix: &str, k: usize| -> (Vec<String>, Vec<Step>) {
            let names: Vec<String> = (0..k).map(|i| format!("{prefix}{i}")).collect();
            let steps = names
                .iter()
                .map(|n| Step {
                    job: sleeper(d, n, 0.5),
                    after: vec![],
                })
                .collect();
            (names, steps)
        };
        let (names, steps) = independent("two", 2);
        let opts = Options {
            workers: 8,
            verbose: false,
            cache: &cache,
            jobserver: None,
            memory: None,
            remote: None,
        };
        run(&steps, &opts).unwrap();
        assert_eq!(threads_given(d, &names), ["4", "4"]);
        // No more threads than the compile has device passes (nvcc has nothing else to run
        // in parallel): the rest of the slots stay free.
        let (names, mut steps) = independent("passes", 2);
        for s in &mut steps {
            s.job.passes = 3;
        }
        run(&steps, &opts).unwrap();
        assert_eq!(threads_given(d, &names), ["3", "3"]);
        let (names, steps) = independent("four", 4);
        run(&steps, &Options { workers: 2, ..opts }).unwrap();
        assert_eq!(threads_given(d, &names), ["", "", "", ""]);
    }

    #[test]
    fn a_dominating_compile_gets_its_share_of_the_slots_and_an_even_build_is_unchanged() {
        assert_eq!(time_share(360.0, 400.0, 2), 2);
        assert_eq!(time_share(10.0, 40.0, 2), 1);
        assert_eq!(time_share(360.0, 380.0, 16), 15);
        assert_eq!(time_share(10.0, 10.0, 4), 4);
        assert_eq!(time_share(1.0, 0.0, 4), 0);
        assert_eq!(time_share(0.0, 4.0, 4), 0);
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        // On 2 slots: one 2-pass compile expected 40 s beside three expected 2 s (a long
        // templated file next to small ones). It is picked first, and its share (40 of 46 s)
        // is worth both slots: `--threads 2`, holding one slot (the even share of 2 slots among
        // 4 ready compiles); the short ones run one at a time beside it and end before it.
        let shaped = |prefix: &str, estimates: &[f64]| -> (Vec<String>, Vec<Step>) {
            let names: Vec<String> = (0..estimates.len())
                .map(|i| format!("{prefix}{i}"))
                .collect();
            let steps = names
                .iter()
                .zip(estimates)
                .enumerate()
                .map(|(i, (n, &estimate))| {
                    // The first (the dominating one, where one dominates) outlasts the three
                    // others run one after another.
                    let secs = if i == 0 { 1.5 } else { 0.3 };
                    Step {
                        job: Job {
                            passes: 2,
                            estimate,
                            ..sleeper(d, n, secs)
                        },
                        after: vec![],
                    }
                })
                .collect();
            (names, steps)
        };
        let (names, steps) = shaped("dom", &[40.0, 2.0, 2.0, 2.0]);
        let cache = Cache::open(&d.join("dom"), "t".into());
        let opts = Options {
            workers: 2,
            verbose: false,
            cache: &cache,
            jobserver: None,
            memory: None,
            remote: None,
        };
        let finished = |stats: &Stats| -> Vec<String> {
            stats.times.iter().map(|(label, _)| label.clone()).collect()
        };
        let stats = run(&steps, &opts).unwrap();
        assert_eq!(threads_given(d, &names), ["2", "", "", ""]);
        assert_eq!(
            stats.max_parallel, 2,
            "one short one at a time beside the long one"
        );
        assert_eq!(
            finished(&stats).last().map(String::as_str),
            Some("sh dom0"),
            "the short ones ran beside the long one, not after it: {:?}",
            finished(&stats)
        );
        // Control: four equal compiles on 2 slots get no `--threads`, as before.
        let (names, steps) = shaped("even", &[10.0, 10.0, 10.0, 10.0]);
        let cache = Cache::open(&d.join("even"), "t".into());
        run(
            &steps,
            &Options {
                cache: &cache,
                memory: None,
                remote: None,
                ..opts
            },
        )
        .unwrap();
        assert_eq!(threads_given(d, &names), ["", "", "", ""]);
        // A build that timed the steps: the recorded time decides, not the estimate (the
        // estimates say the first is short; the records say it dominates).
        let (names, steps) = shaped("timed", &[1.0, 9.0, 9.0, 9.0]);
        let cache = Cache::open(&d.join("timed"), "t".into());
        for (i, s) in steps.iter().enumerate() {
            std::fs::write(&s.job.output, "x").unwrap();
            let secs = if i == 0 { 300.0 } else { 5.0 };
            cache
                .remember_usage(&s.job, SystemTime::now(), secs, 1024)
                .unwrap();
            std::fs::remove_file(&s.job.output).unwrap();
        }
        let stats = run(
            &steps,
            &Options {
                cache: &cache,
                memory: None,
                remote: None,
                ..opts
            },
        )
        .unwrap();
        assert_eq!(threads_given(d, &names), ["2", "", "", ""]);
        assert_eq!(
            finished(&stats).last().map(String::as_str),
            Some("sh timed0")
        );
    }

    #[test]
    fn memory_admission_runs_fewer_steps_at_once() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        let names: Vec<String> = (0..4).map(|i| format!("m{i}")).collect();
        let steps: Vec<Step> = names
            .iter()
            .map(|n| Step {
                job: Job {
                    threadable: false,
                    ..sleeper(d, n, 0.3)
                },
                after: vec![],
            })
            .collect();
        let cache = Cache::open(d, "t".into());
        let opts = Options {
            workers: 4,
            verbose: false,
            cache: &cache,
            jobserver: None,
            memory: None,
            remote: None,
        };
        let free = run(&steps, &opts).unwrap();
        assert_eq!(free.max_parallel, 4);
        for n in &names {
            std::fs::remove_file(d.join(n)).unwrap();
        }
        // Recorded peaks (a few MiB each) and a limit below two of them: one at a time.
        let peak = cache.last_peak_kib(&steps[0].job).unwrap();
        let limited = run(
            &steps,
            &Options {
                memory: Some(MemoryLimit {
                    bytes: peak * 1024 * 3 / 2,
                    source: "max-memory".into(),
                }),
                ..opts
            },
        )
        .unwrap();
        assert_eq!((limited.ran, limited.max_parallel), (4, 1));
    }

    #[test]
    fn a_build_cluster_widens_the_queue_but_local_steps_keep_their_slots() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        // Four compiles the cluster runs, two steps that run here: a local step fails when the
        // other local one is running (a lock folder), so they must not overlap.
        let mut steps: Vec<Step> = (0..4)
            .map(|i| Step {
                job: Job {
                    passes: 1,
                    ..sleeper(d, &format!("r{i}"), 0.4)
                },
                after: vec![],
            })
            .collect();
        for i in 0..2 {
            let out = d.join(format!("l{i}"));
            let lock = d.join("lock");
            let script = format!(
                "mkdir {lock} || exit 1; sleep 0.4; rmdir {lock}; touch {out}",
                lock = lock.display(),
                out = out.display()
            );
            steps.push(Step {
                job: Job::for_tests("/bin/sh", vec!["-c".into(), script], out),
                after: vec![],
            });
        }
        let remote = |local_slots| Remote {
            steps: vec![true, true, true, true, false, false],
            local_slots,
        };
        let cache = Cache::open(d, "t".into());
        let opts = Options {
            workers: 6,
            verbose: false,
            cache: &cache,
            jobserver: None,
            memory: None,
            remote: Some(remote(1)),
        };
        let stats = run(&steps, &opts).unwrap();
        assert_eq!(stats.ran, 6);
        assert!(stats.max_parallel >= 3, "{}", stats.max_parallel);
        // A compile sent to the cluster holds as many slots as it has threads. One whose share
        // of the free slots (by expected time) is more than one gets a thread per device pass,
        // even with more compiles ready than slots (the longest chain starts whole); the others
        // get a slot each: on 4 slots, five 2-pass compiles expected 4, 1, 1, 1, 1 s run as
        // `--threads 2` for the first and one thread for each of the others.
        let cache = Cache::open(&d.join("narrow"), "t".into());
        let names: Vec<String> = (0..5).map(|i| format!("n{i}")).collect();
        let remote_only: Vec<Step> = names
            .iter()
            .enumerate()
            .map(|(i, n)| Step {
                job: Job {
                    passes: 2,
                    estimate: if i == 0 { 4.0 } else { 1.0 },
                    // The long one runs while the four short ones run two by two.
                    ..sleeper(d, n, if i == 0 { 1.5 } else { 0.3 })
                },
                after: vec![],
            })
            .collect();
        let narrow = Options {
            workers: 4,
            cache: &cache,
            remote: Some(Remote {
                steps: vec![true; 5],
                local_slots: 2,
            }),
            ..opts
        };
        assert_eq!(run(&remote_only, &narrow).unwrap().max_parallel, 3);
        assert_eq!(threads_given(d, &names), ["2", "", "", "", ""]);
        // The same 4 slots on this machine: the long one's share of the ready work (4 of 8
        // expected seconds) is worth 2 slots, so it starts with a thread per device pass too,
        // but holds only the even share (one slot of four for five ready compiles): the short
        // ones share the 3 slots left, one thread each.
        let cache = Cache::open(&d.join("narrow-local"), "t".into());
        let local = Options {
            cache: &cache,
            remote: None,
            memory: None,
            ..narrow
        };
        assert_eq!(run(&remote_only, &local).unwrap().max_parallel, 4);
        assert_eq!(threads_given(d, &names), ["2", "", "", "", ""]);
        // Control: with two local slots the two local steps overlap, and one fails.
        let cache = Cache::open(&d.join("again"), "t".into());
        let two = Options {
            cache: &cache,
            workers: 6,
            remote: Some(remote(2)),
            memory: None,
            ..narrow
        };
        assert!(run(&steps, &two).is_err());
    }
}
