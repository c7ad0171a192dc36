//! Stage 4b, scheduling: run the build's steps (compiles, device links, links) as one graph
//! in one pool of workers.
//!
//! - A step starts as soon as the steps it needs have finished (a link right after its
//!   objects, while other compiles still run).
//! - Among ready steps the longest expected one starts first: its duration in the last
//!   build here (remembered by `incremental`), else an estimate.
//! - Steps whose earlier output is still right (`incremental::Cache::check`) are skipped.
//! - An nvcc compile started when no other compile waits (few files, or the tail of a build)
//!   gets `--threads <workers>`, so nvcc compiles its architectures in parallel on the
//!   workers that would otherwise sit idle.
//! - Under `make -jN` (a GNU make jobserver in `MAKEFLAGS`) every step beyond the first
//!   needs a token from make, so nested builds share N slots.

use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant, SystemTime};

use crate::compile::{CompileError, Job};
use crate::incremental::{Cache, Freshness};
use crate::ui;

/// A job and the indices of the steps it needs.
pub struct Step {
    pub job: Job,
    pub after: Vec<usize>,
}

pub struct Options<'a> {
    pub workers: usize,
    pub verbose: bool,
    pub cache: &'a Cache,
    pub jobserver: Option<&'a jobserver::Client>,
}

/// What a run did, for the build summary.
#[derive(Debug, Default, Clone)]
pub struct Stats {
    /// Steps that ran.
    pub ran: usize,
    /// Steps whose earlier output was reused.
    pub reused: usize,
    /// Wall time of the whole graph.
    pub secs: f64,
}

/// The jobserver of a parent `make`, when one is offered in `MAKEFLAGS`.
pub fn jobserver_from_env() -> Option<jobserver::Client> {
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
}

/// A slot to run one step: this process's implicit one, or a token from make.
enum Slot {
    Implicit,
    Token(#[allow(dead_code)] jobserver::Acquired),
    Unlimited,
}

/// Runs every step. Stops starting steps after the first failure and reports it (the
/// earliest in `steps` when several fail).
pub fn run(steps: &[Step], opts: &Options<'_>) -> Result<Stats, CompileError> {
    let start = Instant::now();
    // Arguments nvcc's internal shell would change are refused before anything runs.
    for s in steps {
        crate::compile::check_nvcc_args(&s.job)?;
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
    });
    let wake = Condvar::new();
    let workers = opts.workers.clamp(1, to_run.max(1));
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| worker(steps, opts, &expected, &dependents, &state, &wake));
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

#[allow(clippy::too_many_arguments)]
fn worker(
    steps: &[Step],
    opts: &Options<'_>,
    expected: &[f64],
    dependents: &[Vec<usize>],
    state: &Mutex<State>,
    wake: &Condvar,
) {
    loop {
        // Take the longest ready step and a slot to run it in.
        let mut st = state.lock().expect(LOCKED);
        let (index, slot, threads, verdict) = loop {
            if st.failure.is_some() || st.finished == steps.len() {
                return;
            }
            if let Some(pos) = longest(&st.ready, expected) {
                let slot = match opts.jobserver {
                    None => Some(Slot::Unlimited),
                    Some(_) if st.implicit_free => {
                        st.implicit_free = false;
                        Some(Slot::Implicit)
                    }
                    Some(client) => client.try_acquire().ok().flatten().map(Slot::Token),
                };
                if let Some(slot) = slot {
                    let index = st.ready.swap_remove(pos);
                    let tail = opts.jobserver.is_none()
                        && opts.workers > 1
                        && !st.ready.iter().any(|&r| steps[r].job.threadable);
                    let verdict = st.verdicts[index].take();
                    break (index, slot, tail.then_some(opts.workers), verdict);
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

        let step = &steps[index].job;
        let outcome = run_step(step, opts, threads, verdict);

        let mut st = state.lock().expect(LOCKED);
        if matches!(slot, Slot::Implicit) {
            st.implicit_free = true;
        }
        drop(slot);
        match outcome {
            Ok(Some(secs)) => {
                st.stats.ran += 1;
                st.shown += 1;
                let detail = if step.detail.is_empty() {
                    String::new()
                } else {
                    format!(" {}", step.detail)
                };
                ui::status(&format!(
                    "[{}/{}] {}{detail} {secs:.1} s",
                    st.shown, st.to_run, step.label
                ));
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

fn longest(ready: &[usize], expected: &[f64]) -> Option<usize> {
    (0..ready.len()).max_by(|&a, &b| {
        expected[ready[a]]
            .total_cmp(&expected[ready[b]])
            // Ties: the step that comes first in the plan.
            .then(ready[b].cmp(&ready[a]))
    })
}

/// Runs one step unless its output is up to date (`verdict`, else checked now); `Some(seconds)`
/// when it ran.
fn run_step(
    job: &Job,
    opts: &Options<'_>,
    threads: Option<usize>,
    verdict: Option<Freshness>,
) -> Result<Option<f64>, CompileError> {
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
    let threads = threads.filter(|_| job.threadable);
    if opts.verbose {
        ui::status(&format!("$ {}", job.command_line(threads)));
    }
    let started = SystemTime::now();
    let clock = Instant::now();
    job.run(threads)?;
    let secs = clock.elapsed().as_secs_f64();
    if let Err(e) = opts.cache.remember(job, started, secs) {
        // Not fatal: the step runs again next time.
        ui::warn(&format!(
            "cannot record {} for incremental builds: {e}",
            job.label
        ));
    }
    Ok(Some(secs))
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
        };
        let err = run(&steps, &opts).unwrap_err();
        assert!(err.to_string().contains("cp a.o failed"), "{err}");
        assert!(!d.join("lib.so").exists());
    }
}
