//! `build-dir/compile_commands.json`: the build's compiles (nvcc and the host compiler; not
//! device links or links) in the JSON compilation database format that clangd and other tools
//! read: one object per compile with `directory`, `arguments`, `file` and `output`.
//!
//! A step that ran in this build is listed with the compiler's words as it ran them (with
//! `--threads N` and `-MD -MF` when they were given; without a compiler launcher: the command
//! behind it). A step reused from an earlier build keeps that build's entry when it is for the
//! same command; otherwise (no earlier database, or one from another command) it is listed as
//! it would run now. Commands name the build environment's folders through links in build-dir
//! that live only while the build runs (`stable_paths`): the database names the folders
//! themselves, so an entry can be run again after the build, from its `directory` (an isolated
//! build's folders are gone with its environment, though).
//!
//! Written before the steps run (so a build that fails leaves one for the editor too) and again
//! once they have, each time atomically (a temporary file in build-dir, renamed).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::schedule::Step;
use super::stable_paths::StablePaths;

/// The file's name in build-dir.
pub(crate) const FILE: &str = "compile_commands.json";

/// One compile, as the format has it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Entry {
    /// Where it runs; relative paths in `arguments` are relative to it.
    pub(crate) directory: PathBuf,
    /// The compiler and its arguments, one word each.
    pub(crate) arguments: Vec<String>,
    /// The source it compiles.
    pub(crate) file: PathBuf,
    /// The object it writes.
    pub(crate) output: PathBuf,
}

/// The database of one build: where it goes, and how commands name the build environment.
pub(crate) struct CompileDb {
    path: PathBuf,
    /// `StablePaths::real_rewrites`, worked out once (a big build has thousands of words).
    rewrites: Vec<(String, String, String)>,
}

impl CompileDb {
    pub(crate) fn new(build_dir: &Path, stable: &StablePaths) -> CompileDb {
        CompileDb {
            path: build_dir.join(FILE),
            rewrites: stable.real_rewrites(),
        }
    }

    /// Writes the entries of `steps` (the compiles, in graph order): `ran` holds the index and
    /// the compiler's words of each step that ran in this build.
    pub(crate) fn write(
        &self,
        steps: &[Step],
        ran: &[(usize, Vec<String>)],
    ) -> std::io::Result<()> {
        let previous = self.read_previous();
        let list = self.entries(steps, ran, &previous);
        let mut text = serde_json::to_string_pretty(&list).map_err(std::io::Error::other)?;
        text.push('\n');
        let dir = self.path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
        std::io::Write::write_all(&mut tmp, text.as_bytes())?;
        tmp.persist(&self.path).map_err(|e| e.error)?;
        Ok(())
    }

    /// The database written last time here; none when it is missing or not one.
    fn read_previous(&self) -> Vec<Entry> {
        std::fs::read(&self.path)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default()
    }

    fn entries(
        &self,
        steps: &[Step],
        ran: &[(usize, Vec<String>)],
        previous: &[Entry],
    ) -> Vec<Entry> {
        let mut out = Vec::new();
        for (index, step) in steps.iter().enumerate() {
            let job = &step.job;
            let Some(source) = &job.source else {
                continue;
            };
            let directory = job
                .cwd
                .clone()
                .or_else(|| std::env::current_dir().ok())
                .unwrap_or_default();
            let real = |words: Vec<String>| -> Vec<String> {
                words
                    .iter()
                    .map(|w| StablePaths::real_arg_with(&self.rewrites, w))
                    .collect()
            };
            let arguments = match ran.iter().find(|(i, _)| *i == index) {
                Some((_, words)) => real(words.clone()),
                None => {
                    // As the step would run now: with its depfile, or without a lazy one.
                    let now = real(job.compiler_words(None));
                    let lazy = super::job::Job {
                        depfile: None,
                        ..job.clone()
                    };
                    let now_lazy = real(lazy.compiler_words(None));
                    previous
                        .iter()
                        .find(|e| {
                            e.output == job.output && {
                                let earlier = without_threads(&e.arguments);
                                earlier == now || earlier == now_lazy
                            }
                        })
                        .map_or(now, |e| e.arguments.clone())
                }
            };
            out.push(Entry {
                directory,
                arguments,
                file: source.clone(),
                output: job.output.clone(),
            });
        }
        out
    }
}

/// `words` without a `--threads N` pair (the scheduler's choice, not part of the command).
fn without_threads(words: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(words.len());
    let mut skip = false;
    for (i, w) in words.iter().enumerate() {
        if skip {
            skip = false;
            continue;
        }
        if w == "--threads" && i + 1 < words.len() {
            skip = true;
            continue;
        }
        out.push(w.clone());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::job::Job;

    fn compile(dir: &Path, src: &str) -> Step {
        let output = dir.join(format!("obj/{src}.o"));
        Step {
            job: Job {
                source: Some(dir.join(src)),
                depfile: Some(output.with_extension("d")),
                cwd: Some(dir.to_path_buf()),
                launcher: Some("/usr/bin/ccache".into()),
                ..Job::for_tests(
                    "/usr/bin/cc",
                    vec![
                        "-c".into(),
                        src.into(),
                        "-o".into(),
                        output.display().to_string(),
                    ],
                    output,
                )
            },
            after: Vec::new(),
        }
    }

    #[test]
    fn lists_the_compiles_as_they_ran_and_keeps_a_reused_step_s_entry() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        let stable = StablePaths::new_for_tests(d);
        let db = CompileDb::new(&d.join("build"), &stable);
        let a = compile(d, "a.c");
        let b = compile(d, "b.c");
        let link = Step {
            job: Job::for_tests("/usr/bin/cc", vec!["-shared".into()], d.join("x.so")),
            after: vec![0, 1],
        };
        let steps = vec![a, b, link];
        // Before anything ran: each compile as it would run, the link left out.
        db.write(&steps, &[]).unwrap();
        let read = |db: &CompileDb| -> Vec<Entry> {
            serde_json::from_slice(&std::fs::read(&db.path).unwrap()).unwrap()
        };
        let first = read(&db);
        assert_eq!(first.len(), 2);
        assert_eq!(first[0].file, d.join("a.c"));
        assert_eq!(first[0].directory, d);
        assert_eq!(first[0].output, d.join("obj/a.c.o"));
        // The depfile named from the directory the compile runs in, as it ran.
        let depfile = "obj/a.c.d";
        assert_eq!(
            first[0].arguments,
            [
                "/usr/bin/cc",
                "-c",
                "a.c",
                "-o",
                &d.join("obj/a.c.o").display().to_string(),
                "-MD",
                "-MF",
                depfile
            ]
        );
        // Both ran, `a` with `--threads 2`: the words as they ran.
        let ran_a = steps[0].job.compiler_words(Some(2));
        let ran_b = steps[1].job.compiler_words(None);
        db.write(&steps, &[(1, ran_b.clone()), (0, ran_a.clone())])
            .unwrap();
        assert_eq!(read(&db)[0].arguments, ran_a);
        // Nothing ran (both reused): the earlier entries stay, `--threads` and all.
        db.write(&steps, &[]).unwrap();
        let kept = read(&db);
        assert_eq!(kept[0].arguments, ran_a);
        assert_eq!(kept[1].arguments, ran_b);
        // Control: a reused step whose earlier entry is of another command gets today's.
        let mut changed = steps;
        changed[0].job.args.push("-O2".into());
        db.write(&changed, &[]).unwrap();
        let now = read(&db);
        assert_eq!(now[0].arguments, changed[0].job.compiler_words(None));
        assert_eq!(now[1].arguments, ran_b);
        // No temporary file left beside it.
        let names: Vec<_> = std::fs::read_dir(d.join("build"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, [FILE]);
    }

    #[test]
    fn threads_are_not_part_of_the_command() {
        let words: Vec<String> = ["nvcc", "-c", "k.cu", "--threads", "4"]
            .map(String::from)
            .to_vec();
        assert_eq!(without_threads(&words), ["nvcc", "-c", "k.cu"]);
    }
}
