//! Stable paths for the folders of the build environment, so that commands (and with them the
//! incremental records and compiler-cache keys) are the same from one build to the next.
//!
//! An isolated build (`pip wheel .`, `pip install .`) gets a new `/tmp/pip-build-env-*` folder
//! each time, holding nvcc, its headers, the CUDA libraries and the binding libraries. Every
//! command naming them would change, and nothing would ever be reused. So before the steps
//! run, each such folder gets a link under `build-dir/env/` (`cuda` for NVIDIA's pip toolkit,
//! `python` for the Python headers, `site/<name>` for each entry of the `sys.path` folders,
//! named by what it holds, not by the folder's place on `sys.path`), and
//! the commands name the links:
//!
//! - nvcc is called through `build-dir/env/cuda/bin/nvcc`: nvcc derives its own include
//!   folders from the path it was called by, so its headers are reached through the link too;
//! - compiles and links run in the project root and name everything under it relatively
//!   (`-c csrc/k.cu`, `-Ibuild/cudawheel/env/site/pybind11/include`), so the project's own
//!   location reaches neither the objects (`__FILE__`) nor the commands — two checkouts in
//!   different folders run the same commands, and ccache (with the root as `CCACHE_BASEDIR`)
//!   gives the same keys;
//! - the files a link reads (libraries) are named through the links too, so their records
//!   stay valid when pip reinstalls them elsewhere with new timestamps (content is compared).
//!
//! The links exist while the build runs (`Links`) and are removed afterwards, so nothing
//! walking the project later (globs, sdists) wanders into the build environment.

use std::io;
use std::path::{Path, PathBuf};

use crate::compile::job::Job;
use crate::config::PythonInfo;
use crate::toolchain::{NvccOrigin, Toolchain};

/// How the build environment's folders are named in commands.
#[derive(Debug, Clone)]
pub(crate) struct StablePaths {
    root: PathBuf,
    /// (real folder, its link), the longest real folder first.
    links: Vec<(PathBuf, PathBuf)>,
}

/// One link per entry of each `sys.path` folder outside the project, named by what it holds:
/// `env/site/torch` -> `<site>/torch`. Named by position (`site5`), a rebuild under another
/// pip or frontend, whose environment has one `sys.path` entry more or less before the folder
/// holding torch, would name every header differently and compile everything again. The first
/// folder holding a name gets `env/site/<name>`, as an import would find it; a later one
/// holding the same name (a namespace package split over two folders) gets `env/site2/<name>`,
/// and so on.
fn site_links(env: &Path, root: &Path, sys_path: &[PathBuf]) -> Vec<(PathBuf, PathBuf)> {
    let mut links = Vec::new();
    let mut taken = std::collections::BTreeSet::new();
    let mut seen_sites = std::collections::BTreeSet::new();
    for site in sys_path {
        // The project itself (or a folder holding it) is named relatively instead.
        let outside = !within(root, site) && !within(site, root);
        if !(outside && site.is_absolute() && site.is_dir() && seen_sites.insert(site.clone())) {
            continue;
        }
        let Ok(entries) = std::fs::read_dir(site) else {
            continue;
        };
        let mut names: Vec<std::ffi::OsString> = entries
            .flatten()
            .map(|e| e.file_name())
            .filter(|n| !n.to_string_lossy().starts_with('.') && n != "__pycache__")
            .collect();
        names.sort();
        for name in names {
            let mut n = 1;
            let mut folder = env.join("site");
            while !taken.insert(folder.join(&name)) {
                n += 1;
                folder = env.join(format!("site{n}"));
            }
            links.push((site.join(&name), folder.join(&name)));
        }
    }
    links
}

/// Whether `a` is `b` or lies inside it.
fn within(a: &Path, b: &Path) -> bool {
    a.starts_with(b)
}

impl StablePaths {
    /// The links a build in `root` uses: the pip toolkit, the Python headers, and the
    /// `sys.path` entries outside the project.
    pub(crate) fn new(
        root: &Path,
        build_dir: &Path,
        tc: &Toolchain,
        python: &PythonInfo,
    ) -> StablePaths {
        let env = build_dir.join("env");
        let mut links: Vec<(PathBuf, PathBuf)> = Vec::new();
        if matches!(tc.nvcc.origin, NvccOrigin::Pip(_)) {
            links.push((tc.nvcc.root.clone(), env.join("cuda")));
        }
        links.push((python.include_dir.clone(), env.join("python")));
        links.extend(site_links(&env, root, &python.sys_path));
        links.retain(|(real, _)| real.is_absolute() && real.parent().is_some());
        // The most specific folder wins (the toolkit inside a site-packages folder).
        links.sort_by_key(|(real, _)| std::cmp::Reverse(real.as_os_str().len()));
        let mut seen = std::collections::BTreeSet::new();
        links.retain(|(real, _)| seen.insert(real.clone()));
        StablePaths {
            root: root.to_path_buf(),
            links,
        }
    }

    /// `path` through a link, when it lies in one of the linked folders.
    pub(crate) fn map_path(&self, path: &Path) -> PathBuf {
        for (real, link) in &self.links {
            if let Ok(rest) = path.strip_prefix(real) {
                return if rest.as_os_str().is_empty() {
                    link.clone()
                } else {
                    link.join(rest)
                };
            }
        }
        path.to_path_buf()
    }

    /// One argument: linked folders replaced, then the project root taken off paths under it.
    pub(crate) fn map_arg(&self, arg: &str) -> String {
        let mut out = arg.to_string();
        for (real, link) in &self.links {
            out = replace_prefix(&out, &real.to_string_lossy(), &link.to_string_lossy());
        }
        let root = self.root.to_string_lossy();
        let out = replace_prefix(&out, &format!("{root}/"), "");
        replace_prefix(&out, &root, ".")
    }

    /// One word of a command that ran: each link (as `apply` names it: absolute for the
    /// program, relative to the root in arguments) replaced by the folder it points at, so the
    /// command still runs once the links are gone (the compilation database).
    #[cfg(test)]
    pub(crate) fn real_arg(&self, word: &str) -> String {
        Self::real_arg_with(&self.real_rewrites(), word)
    }

    /// What `real_arg` replaces, worked out once for a whole database: per link, its absolute
    /// and its root-relative spelling, and the folder it points at.
    pub(crate) fn real_rewrites(&self) -> Vec<(String, String, String)> {
        self.links
            .iter()
            .map(|(real, link)| {
                let link = link.to_string_lossy();
                (
                    link.to_string(),
                    self.map_arg(&link),
                    real.to_string_lossy().into_owned(),
                )
            })
            .collect()
    }

    /// `real_arg` with the rewrites `real_rewrites` gave.
    pub(crate) fn real_arg_with(rewrites: &[(String, String, String)], word: &str) -> String {
        let mut out = word.to_string();
        for (link, mapped, real) in rewrites {
            out = replace_prefix(&out, link, real);
            out = replace_prefix(&out, mapped, real);
        }
        out
    }

    /// Rewrites a job to name the links and to run in the project root. The compiler program
    /// keeps an absolute path; the files the job reads or writes as cudawheel sees them
    /// (`output`, `depfile`) are unchanged, `inputs` go through the links.
    pub(crate) fn apply(&self, job: &mut Job) {
        job.program = self.map_path(&job.program);
        job.args = job.args.iter().map(|a| self.map_arg(a)).collect();
        job.inputs = job.inputs.iter().map(|p| self.map_path(p)).collect();
        job.cwd = Some(self.root.clone());
    }

    /// Points every link at its folder (replacing a link from an earlier build); the links are
    /// removed when the returned guard is dropped.
    pub(crate) fn create(&self) -> io::Result<Links> {
        let mut made = Vec::new();
        for (real, link) in &self.links {
            let dir = link.parent().expect("links live in build-dir/env");
            std::fs::create_dir_all(dir)?;
            let tmp = dir.join(format!(
                ".{}.tmp",
                link.file_name().expect("named").to_string_lossy()
            ));
            let _ = std::fs::remove_file(&tmp);
            std::os::unix::fs::symlink(real, &tmp)?;
            std::fs::rename(&tmp, link)?;
            made.push(link.clone());
        }
        Ok(Links { made })
    }
}

#[cfg(test)]
impl StablePaths {
    /// Commands run in `root`, with no build-environment folder linked.
    pub(crate) fn new_for_tests(root: &Path) -> StablePaths {
        StablePaths {
            root: root.to_path_buf(),
            links: Vec::new(),
        }
    }
}

/// The links of one build, removed when dropped.
pub(crate) struct Links {
    made: Vec<PathBuf>,
}

impl Drop for Links {
    fn drop(&mut self) {
        for link in &self.made {
            let _ = std::fs::remove_file(link);
        }
    }
}

/// `text` with each occurrence of the folder `prefix` that starts a path replaced by `with`:
/// at the start of the text or after `=`, `,`, `:` or a quote (`-Dx=/p`, `-Wl,-L/p`,
/// `"-ffile-prefix-map=/p/=..."`), or after a one-letter option (`-I/p`, `-L/p`); and followed
/// by `/`, the end, or a quote (`/p2` is another folder).
fn replace_prefix(text: &str, prefix: &str, with: &str) -> String {
    if prefix.is_empty() || !text.contains(prefix) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut consumed = 0;
    while let Some(i) = rest.find(prefix) {
        let at = consumed + i;
        let before = &text[..at];
        let starts = before.is_empty()
            || before.ends_with(['=', ',', ':', '"', '\''])
            || (before.len() == 2 && before.starts_with('-'));
        let after = &text[at + prefix.len()..];
        let ends =
            prefix.ends_with('/') || after.is_empty() || after.starts_with(['/', '"', '\'', ',']);
        out.push_str(&rest[..i]);
        if starts && ends {
            out.push_str(with);
        } else {
            out.push_str(prefix);
        }
        rest = &rest[i + prefix.len()..];
        consumed = at + prefix.len();
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths() -> StablePaths {
        StablePaths {
            root: "/w/proj".into(),
            links: vec![
                (
                    "/tmp/pip-env-x/site/nvidia/cu13".into(),
                    "/w/proj/build/cudawheel/env/cuda".into(),
                ),
                (
                    "/tmp/pip-env-x/site".into(),
                    "/w/proj/build/cudawheel/env/site3".into(),
                ),
            ],
        }
    }

    #[test]
    fn real_arg_undoes_the_links_and_keeps_the_project_relative() {
        let p = paths();
        for real in [
            "-I/tmp/pip-env-x/site/nvidia/cu13/include",
            "-I/tmp/pip-env-x/site/pybind11/include",
            "/tmp/pip-env-x/site/nvidia/cu13/bin/nvcc",
            "-ffile-prefix-map=/tmp/pip-env-x/site/pybind11/=pybind11/",
            "-Wl,-rpath,$ORIGIN/../nvidia",
        ] {
            assert_eq!(p.real_arg(&p.map_arg(real)), real);
        }
        // The program is named through the absolute link.
        let program = p.map_path(Path::new("/tmp/pip-env-x/site/nvidia/cu13/bin/nvcc"));
        assert_eq!(
            p.real_arg(&program.to_string_lossy()),
            "/tmp/pip-env-x/site/nvidia/cu13/bin/nvcc"
        );
        // The project's own files stay relative to the root the command runs in.
        assert_eq!(p.real_arg("csrc/k.cu"), "csrc/k.cu");
        assert_eq!(p.real_arg("-Icsrc"), "-Icsrc");
    }

    #[test]
    fn arguments_name_the_links_and_the_project_relatively() {
        let p = paths();
        let cases = [
            (
                "-I/tmp/pip-env-x/site/nvidia/cu13/include",
                "-Ibuild/cudawheel/env/cuda/include",
            ),
            (
                "-I/tmp/pip-env-x/site/pybind11/include",
                "-Ibuild/cudawheel/env/site3/pybind11/include",
            ),
            ("-I/tmp/pip-env-x/site2/x", "-I/tmp/pip-env-x/site2/x"),
            ("/w/proj/csrc/k.cu", "csrc/k.cu"),
            ("-I/w/proj/csrc", "-Icsrc"),
            ("-I/w/proj", "-I."),
            ("/w/proj2/x.cu", "/w/proj2/x.cu"),
            ("/a/w/proj/x.cu", "/a/w/proj/x.cu"),
            (
                "-ffile-prefix-map=/tmp/pip-env-x/site/pybind11/=pybind11/",
                "-ffile-prefix-map=build/cudawheel/env/site3/pybind11/=pybind11/",
            ),
            (
                "\"-ffile-prefix-map=/w/proj/a b/=x\"",
                "\"-ffile-prefix-map=a b/=x\"",
            ),
            (
                "-Wl,-rpath,$ORIGIN/../nvidia",
                "-Wl,-rpath,$ORIGIN/../nvidia",
            ),
            (
                "-L/tmp/pip-env-x/site/nvidia/cu13/lib",
                "-Lbuild/cudawheel/env/cuda/lib",
            ),
        ];
        for (arg, want) in cases {
            assert_eq!(p.map_arg(arg), want, "{arg}");
        }
        assert_eq!(
            p.map_path(Path::new("/tmp/pip-env-x/site/nvidia/cu13/bin/nvcc")),
            Path::new("/w/proj/build/cudawheel/env/cuda/bin/nvcc")
        );
        assert_eq!(
            p.map_path(Path::new("/usr/bin/c++")),
            Path::new("/usr/bin/c++")
        );
    }

    #[test]
    fn site_links_are_named_by_what_they_hold_not_by_position() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        for dir in [
            "a/torch/include",
            "a/nvidia/cu13",
            "b/nvidia/cublas",
            "empty",
            "proj/pkg",
        ] {
            std::fs::create_dir_all(d.join(dir)).unwrap();
        }
        std::fs::write(d.join("a/six.py"), "").unwrap();
        let env = d.join("proj/build/env");
        let links = |sys_path: &[&str]| -> Vec<(PathBuf, PathBuf)> {
            let sys_path: Vec<PathBuf> = sys_path.iter().map(|s| d.join(s)).collect();
            site_links(&env, &d.join("proj"), &sys_path)
        };
        let pip23 = links(&["proj", "empty", "empty2-missing", "a", "b"]);
        let pip26 = links(&["a", "b", "proj"]);
        assert_eq!(pip23, pip26);
        assert!(
            pip23.contains(&(d.join("a/torch"), env.join("site/torch"))),
            "{pip23:?}"
        );
        assert!(pip23.contains(&(d.join("a/six.py"), env.join("site/six.py"))));
        // A name in two folders: the first on sys.path gets `site/`, the next `site2/`.
        assert!(pip23.contains(&(d.join("a/nvidia"), env.join("site/nvidia"))));
        assert!(pip23.contains(&(d.join("b/nvidia"), env.join("site2/nvidia"))));
        // Control: another order of the two folders holding `nvidia` swaps them.
        let swapped = links(&["b", "a"]);
        assert!(swapped.contains(&(d.join("b/nvidia"), env.join("site/nvidia"))));
        let paths = StablePaths {
            root: d.join("proj"),
            links: pip23,
        };
        assert_eq!(
            paths.map_arg(&format!("-I{}", d.join("a/torch/include").display())),
            "-Ibuild/env/site/torch/include"
        );
    }

    #[test]
    fn links_are_made_replaced_and_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        std::fs::create_dir_all(d.join("env1/inc")).unwrap();
        std::fs::create_dir_all(d.join("env2/inc")).unwrap();
        let make = |env: &str| StablePaths {
            root: d.join("proj"),
            links: vec![(d.join(env), d.join("proj/build/env/site0"))],
        };
        let link = d.join("proj/build/env/site0");
        let first = make("env1").create().unwrap();
        assert_eq!(std::fs::read_link(&link).unwrap(), d.join("env1"));
        drop(first);
        assert!(link.symlink_metadata().is_err());
        std::os::unix::fs::symlink(d.join("env1"), &link).unwrap();
        let _second = make("env2").create().unwrap();
        assert_eq!(std::fs::read_link(&link).unwrap(), d.join("env2"));
    }
}
