//! Incremental builds: decide whether a step's output from an earlier build in
//! `build-dir` can be used again, and remember what each step read once it has run.
//!
//! A step (compile, device link, link) is reused only when all of these are unchanged:
//! its command (every flag and path; a compiler launcher, its environment and nvcc `--threads`
//! excluded, since they do not change the output; paths of the build environment go through
//! `stable_paths` links, so an isolated build's new folder does not count as a change), the
//! toolchain identity (`toolchain::identity`: versions and content, not paths), every file it read (the compiler's own dependency file for
//! compiles: the source and every header; the inputs for links), and its output itself.
//! Files are compared by size and modification time, and by SHA-256 when those differ, so a
//! `touch` or a checkout that rewrites identical content costs nothing.
//!
//! Safety against interruption and concurrency:
//! - a step's record is deleted before the step runs and written (to a temporary file, then
//!   renamed) only after it succeeded, so a killed build leaves a step without a record, which
//!   the next build runs again;
//! - a file modified while the step ran (modification time after its start) makes the step
//!   unrecorded, so the next build runs it again rather than trusting an object built from
//!   the old content;
//! - `BuildLock` serialises builds sharing one `build-dir` (two `pip wheel .` at once).

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::compile::job::Job;

/// Bumped when the record format or the meaning of a key changes.
const FORMAT: u32 = 2;

/// What a file looked like: enough to notice any change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Stamp {
    size: u64,
    mtime_ns: i128,
    sha256: String,
}

/// The record of one step that ran successfully.
#[derive(Debug, Serialize, Deserialize)]
struct Record {
    format: u32,
    key: String,
    output: Stamp,
    deps: Vec<(PathBuf, Stamp)>,
    /// Run without its depfile (`Job::depfile_lazy`): the headers it read are not known.
    headers_unknown: bool,
    /// How long it took, for scheduling the longest steps first next time.
    secs: f64,
    /// Its peak memory (max RSS in KiB, from `wait4`), for memory-aware admission; 0: unknown.
    #[serde(default)]
    peak_kib: u64,
}

/// Whether a step's earlier output can be used.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Freshness {
    /// Up to date: nothing to run.
    Fresh,
    /// Must run; `why` is for `verbose` output.
    Stale { why: String },
}

fn mtime_ns(meta: &std::fs::Metadata) -> i128 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as i128)
}

fn sha256_file(path: &Path) -> io::Result<String> {
    let mut file = File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(format!("{:x}", hasher.finalize()))
}

/// The records of one `build-dir`, plus a per-build memo of file hashes.
pub(crate) struct Cache {
    dir: PathBuf,
    identity: String,
    /// The identity of `Job::python_free` steps (the compilers only).
    python_free_identity: String,
    memo: Mutex<HashMap<PathBuf, Stamp>>,
}

impl Cache {
    /// The build-dir this cache lives in.
    pub(crate) fn build_dir(&self) -> &Path {
        self.dir.parent().unwrap_or(&self.dir)
    }

    /// `identity`: everything outside the command line that shapes outputs (toolchain versions).
    pub(crate) fn open(build_dir: &Path, identity: String) -> Cache {
        Cache {
            dir: build_dir.join("state"),
            python_free_identity: identity.clone(),
            identity,
            memo: Mutex::new(HashMap::new()),
        }
    }

    /// The identity of steps whose output does not depend on the Python (`Job::python_free`).
    pub(crate) fn with_python_free_identity(self, identity: String) -> Cache {
        Cache {
            python_free_identity: identity,
            ..self
        }
    }

    fn record_path(&self, job: &Job) -> PathBuf {
        let mut h = Sha256::new();
        h.update(job.output.as_os_str().as_encoded_bytes());
        self.dir.join(format!("{:x}.json", h.finalize()))
    }

    /// The cache key: the command (without launcher and thread count) and the toolchain.
    pub(crate) fn key(&self, job: &Job) -> String {
        let mut h = Sha256::new();
        h.update(FORMAT.to_le_bytes());
        let identity = if job.python_free {
            &self.python_free_identity
        } else {
            &self.identity
        };
        h.update(identity.as_bytes());
        for word in std::iter::once(job.program.as_os_str().as_encoded_bytes())
            .chain(job.args.iter().map(|a| a.as_bytes()))
        {
            h.update((word.len() as u64).to_le_bytes());
            h.update(word);
        }
        format!("{:x}", h.finalize())
    }

    /// The stamp of `path` now; hashes only when size or time differ from `known`.
    fn stamp(&self, path: &Path, known: Option<&Stamp>) -> io::Result<Stamp> {
        let meta = std::fs::metadata(path)?;
        let (size, mtime_ns) = (meta.len(), mtime_ns(&meta));
        if let Some(k) = known {
            if k.size == size && k.mtime_ns == mtime_ns {
                return Ok(k.clone());
            }
        }
        let memo = self.memo.lock().expect("no panics while holding the memo");
        if let Some(m) = memo.get(path) {
            if m.size == size && m.mtime_ns == mtime_ns {
                return Ok(m.clone());
            }
        }
        drop(memo);
        let stamp = Stamp {
            size,
            mtime_ns,
            sha256: sha256_file(path)?,
        };
        self.memo
            .lock()
            .expect("no panics while holding the memo")
            .insert(path.to_path_buf(), stamp.clone());
        Ok(stamp)
    }

    fn read_record(&self, job: &Job) -> Option<Record> {
        let text = std::fs::read(self.record_path(job)).ok()?;
        serde_json::from_slice::<Record>(&text)
            .ok()
            .filter(|r| r.format == FORMAT)
    }

    /// How long the step took last time, if it ever ran here.
    pub(crate) fn last_secs(&self, job: &Job) -> Option<f64> {
        self.read_record(job).map(|r| r.secs)
    }

    /// The step's peak memory (KiB) last time, if it ever ran here and it was measured.
    pub(crate) fn last_peak_kib(&self, job: &Job) -> Option<u64> {
        self.read_record(job).map(|r| r.peak_kib).filter(|&k| k > 0)
    }

    /// Whether `job`'s output from an earlier build is still right.
    pub(crate) fn check(&self, job: &Job) -> Freshness {
        let stale = |why: String| Freshness::Stale { why };
        let Some(record) = self.read_record(job) else {
            return stale("never built here".into());
        };
        if record.key != self.key(job) {
            return stale("its command or the toolchain changed".into());
        }
        if record.headers_unknown {
            return stale(
                "the headers it includes are not known yet (its first build here went \
                 through sccache without nvcc's dependency pass)"
                    .into(),
            );
        }
        match self.stamp(&job.output, Some(&record.output)) {
            Ok(s) if s.sha256 == record.output.sha256 => {}
            _ => return stale(format!("{} changed or is missing", job.output.display())),
        }
        for (path, known) in &record.deps {
            match self.stamp(path, Some(known)) {
                Ok(s) if s.sha256 == known.sha256 => {}
                _ => return stale(format!("{} changed", path.display())),
            }
        }
        Freshness::Fresh
    }

    /// Whether `job` has run successfully in this `build-dir` before.
    pub(crate) fn has_record(&self, job: &Job) -> bool {
        self.read_record(job).is_some()
    }

    /// Forgets `job` before it runs, so an interrupted run is never taken for a finished one.
    pub(crate) fn forget(&self, job: &Job) {
        let _ = std::fs::remove_file(self.record_path(job));
    }

    /// Records a successful run of `job`, started at `started`. Skipped (the step will run
    /// again next time) when a file it read changed while it ran.
    #[cfg(test)]
    pub(crate) fn remember(&self, job: &Job, started: SystemTime, secs: f64) -> io::Result<()> {
        self.remember_usage(job, started, secs, 0)
    }

    /// `remember`, with the step's measured peak memory (KiB).
    pub(crate) fn remember_usage(
        &self,
        job: &Job,
        started: SystemTime,
        secs: f64,
        peak_kib: u64,
    ) -> io::Result<()> {
        let mut dep_paths: Vec<PathBuf> = job.inputs.clone();
        if let Some(depfile) = &job.depfile {
            let text = std::fs::read(depfile)?;
            let cwd = match &job.cwd {
                Some(cwd) => cwd.clone(),
                None => std::env::current_dir()?,
            };
            for dep in parse_depfile(&String::from_utf8_lossy(&text)) {
                let path = cwd.join(dep);
                if !dep_paths.contains(&path) {
                    dep_paths.push(path);
                }
            }
        }
        let started_ns = started
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as i128);
        let mut deps = Vec::with_capacity(dep_paths.len());
        for path in dep_paths {
            let stamp = self.stamp(&path, None)?;
            if stamp.mtime_ns >= started_ns {
                return Ok(());
            }
            deps.push((path, stamp));
        }
        let record = Record {
            format: FORMAT,
            key: self.key(job),
            output: self.stamp(&job.output, None)?,
            deps,
            headers_unknown: job.depfile_lazy && job.depfile.is_none(),
            secs,
            peak_kib,
        };
        std::fs::create_dir_all(&self.dir)?;
        let path = self.record_path(job);
        let mut tmp = tempfile::NamedTempFile::new_in(&self.dir)?;
        serde_json::to_writer(&mut tmp, &record)?;
        tmp.persist(path).map_err(|e| e.error)?;
        Ok(())
    }
}

/// The prerequisites of a Makefile rule as gcc and nvcc write them with `-MD -MF`
/// (`obj.o : a\ b.cu /usr/include/x.h \`), unescaped. The target is skipped.
pub(crate) fn parse_depfile(text: &str) -> Vec<String> {
    let joined = text.replace("\\\r\n", " ").replace("\\\n", " ");
    // The target ends at the first colon followed by white space (nvcc writes `obj.o : ...`
    // with spaces in the target unescaped).
    let body = match joined.find(": ").or_else(|| joined.find(":\t")) {
        Some(i) => &joined[i + 1..],
        None => return Vec::new(),
    };
    let mut deps = Vec::new();
    let mut cur = String::new();
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if matches!(chars.peek(), Some(' ' | '#' | '\\')) => {
                cur.push(chars.next().expect("peeked"));
            }
            '$' if chars.peek() == Some(&'$') => {
                chars.next();
                cur.push('$');
            }
            c if c.is_whitespace() => {
                if !cur.is_empty() {
                    deps.push(std::mem::take(&mut cur));
                }
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        deps.push(cur);
    }
    deps
}

/// An exclusive lock on a `build-dir`, held for a whole build and released when dropped
/// (also when the process dies: the kernel drops `flock` locks with the file descriptor).
pub(crate) struct BuildLock {
    _file: File,
}

impl BuildLock {
    /// Takes the lock, waiting (and saying so through `waiting`) while another build holds it.
    pub(crate) fn acquire(build_dir: &Path, waiting: impl FnOnce()) -> io::Result<BuildLock> {
        std::fs::create_dir_all(build_dir)?;
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(build_dir.join(".lock"))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                waiting();
                file.lock()?;
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(e),
        }
        Ok(BuildLock { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depfiles_of_gcc_and_nvcc() {
        let gcc = "x.o: a\\ b.cu /usr/include/stdc-predef.h \\\n ä\\ b/h\\ x.h c$$d.h\n";
        assert_eq!(
            parse_depfile(gcc),
            ["a b.cu", "/usr/include/stdc-predef.h", "ä b/h x.h", "c$d.h"]
        );
        let nvcc = "a b.o : a\\ b.cu \\\n    /usr/include/stdc-predef.h \\\n    /opt/x.h\n";
        assert_eq!(
            parse_depfile(nvcc),
            ["a b.cu", "/usr/include/stdc-predef.h", "/opt/x.h"]
        );
        assert!(parse_depfile("garbage").is_empty());
    }

    fn job(dir: &Path, args: &[&str]) -> Job {
        Job {
            inputs: vec![dir.join("in.c")],
            ..Job::for_tests(
                "/bin/cc",
                args.iter().map(|s| s.to_string()).collect(),
                dir.join("out.o"),
            )
        }
    }

    #[test]
    fn a_python_free_step_is_reused_for_another_python() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        std::fs::write(d.join("in.c"), "int x;").unwrap();
        std::fs::write(d.join("out.o"), "obj").unwrap();
        let open = |python: &str| {
            Cache::open(d, format!("nvcc 13.0\npython {python}"))
                .with_python_free_identity("nvcc 13.0".into())
        };
        let free = Job {
            python_free: true,
            ..job(d, &["-O3"])
        };
        let started = SystemTime::now() + std::time::Duration::from_secs(1);
        open("3.9").remember(&free, started, 1.0).unwrap();
        assert_eq!(open("3.12").check(&free), Freshness::Fresh);
        // Control: the same step keyed with the Python is stale for another one.
        let bound = job(d, &["-O3"]);
        open("3.9").remember(&bound, started, 1.0).unwrap();
        assert_eq!(open("3.9").check(&bound), Freshness::Fresh);
        assert!(matches!(
            open("3.12").check(&bound),
            Freshness::Stale { .. }
        ));
    }

    #[test]
    fn reuse_needs_same_command_inputs_and_output() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        std::fs::write(d.join("in.c"), "int x;").unwrap();
        std::fs::write(d.join("out.o"), "obj").unwrap();
        let cache = Cache::open(d, "nvcc 13.0".into());
        let j = job(d, &["-O3"]);
        assert!(matches!(cache.check(&j), Freshness::Stale { .. }));
        // Started "now": the files above are older, so the run is recorded.
        let started = SystemTime::now() + std::time::Duration::from_secs(1);
        cache.remember(&j, started, 1.5).unwrap();
        assert_eq!(cache.check(&j), Freshness::Fresh);
        assert_eq!(cache.last_secs(&j), Some(1.5));
        // Another flag, another toolchain: stale.
        assert!(matches!(
            cache.check(&job(d, &["-O2"])),
            Freshness::Stale { .. }
        ));
        assert!(matches!(
            Cache::open(d, "nvcc 13.1".into()).check(&j),
            Freshness::Stale { .. }
        ));
        // Same content rewritten later: still fresh (hash fallback); new content: stale.
        std::thread::sleep(std::time::Duration::from_millis(10));
        std::fs::write(d.join("in.c"), "int x;").unwrap();
        assert_eq!(
            Cache::open(d, "nvcc 13.0".into()).check(&j),
            Freshness::Fresh
        );
        std::fs::write(d.join("in.c"), "int y;").unwrap();
        assert!(matches!(
            Cache::open(d, "nvcc 13.0".into()).check(&j),
            Freshness::Stale { .. }
        ));
        // A damaged output is never trusted.
        std::fs::write(d.join("in.c"), "int x;").unwrap();
        std::fs::write(d.join("out.o"), "ob").unwrap();
        assert!(matches!(
            Cache::open(d, "nvcc 13.0".into()).check(&j),
            Freshness::Stale { .. }
        ));
    }

    #[test]
    fn an_input_changed_during_the_run_is_not_recorded() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        let started = SystemTime::now() - std::time::Duration::from_secs(5);
        std::fs::write(d.join("in.c"), "int x;").unwrap();
        std::fs::write(d.join("out.o"), "obj").unwrap();
        let cache = Cache::open(d, String::new());
        let j = job(d, &[]);
        cache.remember(&j, started, 1.0).unwrap();
        assert!(matches!(cache.check(&j), Freshness::Stale { .. }));
    }

    #[test]
    fn forget_makes_a_step_stale() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        std::fs::write(d.join("in.c"), "int x;").unwrap();
        std::fs::write(d.join("out.o"), "obj").unwrap();
        let cache = Cache::open(d, String::new());
        let j = job(d, &[]);
        cache
            .remember(
                &j,
                SystemTime::now() + std::time::Duration::from_secs(1),
                1.0,
            )
            .unwrap();
        cache.forget(&j);
        assert!(matches!(cache.check(&j), Freshness::Stale { .. }));
    }

    #[test]
    fn a_lazy_depfile_left_out_makes_the_step_run_once_more_with_it() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        std::fs::write(d.join("in.c"), "int x;").unwrap();
        std::fs::write(d.join("out.o"), "obj").unwrap();
        let rule = format!(
            "out.o: {} {}\n",
            d.join("in.c").display(),
            d.join("h.h").display()
        );
        std::fs::write(d.join("out.d"), rule).unwrap();
        std::fs::write(d.join("h.h"), "int h;").unwrap();
        let cache = Cache::open(d, String::new());
        let later = SystemTime::now() + std::time::Duration::from_secs(1);
        let lazy = Job {
            depfile_lazy: true,
            ..job(d, &[])
        };
        assert!(!cache.has_record(&lazy));
        // First run without the depfile: recorded (and the same key), but never fresh.
        cache.remember(&lazy, later, 1.0).unwrap();
        assert!(cache.has_record(&lazy));
        match cache.check(&lazy) {
            Freshness::Stale { why } => assert!(why.contains("not known yet"), "{why}"),
            other => panic!("{other:?}"),
        }
        // Run again with it: fresh, and a header change is seen.
        let with_depfile = Job {
            depfile: Some(d.join("out.d")),
            ..lazy
        };
        cache.remember(&with_depfile, later, 1.0).unwrap();
        assert_eq!(cache.check(&with_depfile), Freshness::Fresh);
        std::fs::write(d.join("h.h"), "int h2;").unwrap();
        assert!(matches!(
            Cache::open(d, String::new()).check(&with_depfile),
            Freshness::Stale { .. }
        ));
    }
}
