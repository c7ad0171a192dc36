//! sccache-dist: whether the sccache in front of the compiles sends them to a build cluster.
//!
//! The cluster is sccache's own business: its client configuration (`SCCACHE_CONF`, else
//! `$XDG_CONFIG_HOME/sccache/config` or `~/.config/sccache/config`) names the scheduler in a
//! `[dist]` section with its token. cudawheel adds no keys of its own; it reads that file to
//! know a scheduler is configured, asks sccache (`sccache --dist-status`, which starts its
//! server with the build's environment) whether the scheduler answers and how many cores its
//! build servers offer, and sizes the build's queue by them. sccache itself compiles locally
//! whatever it cannot ship (and when the scheduler does not answer).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The oldest sccache whose `sccache-dist` runs nvcc's steps (cicc, ptxas, the host compile)
/// on build servers (mozilla/sccache#2247, released in 0.9.0).
pub(crate) const DIST_NVCC_MIN: (u32, u32) = (0, 9);

/// What the build cluster offers this build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Dist {
    /// sccache's configuration names no scheduler.
    Off,
    /// The scheduler answered and has build servers.
    Ready {
        scheduler: String,
        servers: u64,
        cpus: u64,
    },
    /// A scheduler is configured but does not answer, or has no build server.
    Unreachable { scheduler: String, why: String },
}

/// sccache's client configuration file, as sccache finds it.
pub(crate) fn config_path(env: &BTreeMap<String, String>) -> Option<PathBuf> {
    if let Some(p) = env.get("SCCACHE_CONF") {
        return Some(PathBuf::from(p));
    }
    let base = match env.get("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
        Some(x) => PathBuf::from(x),
        None => PathBuf::from(env.get("HOME")?).join(".config"),
    };
    Some(base.join("sccache").join("config"))
}

/// The scheduler URL of the `[dist]` section of sccache's configuration, if there is one.
pub(crate) fn configured_scheduler(env: &BTreeMap<String, String>) -> Option<String> {
    let text = std::fs::read_to_string(config_path(env)?).ok()?;
    let doc: toml::Table = text.parse().ok()?;
    doc.get("dist")?
        .get("scheduler_url")?
        .as_str()
        .map(str::to_string)
}

/// The answer of `sccache --dist-status` (JSON: `{"SchedulerStatus":[url,{"num_servers":..,
/// "num_cpus":..}]}`, `{"NotConnected":[url,why]}`, `{"Disabled":why}`).
pub(crate) fn parse_status(json: &str, configured: &str) -> Dist {
    let value: serde_json::Value = match serde_json::from_str(json.trim()) {
        Ok(v) => v,
        Err(_) => {
            return Dist::Unreachable {
                scheduler: configured.to_string(),
                why: format!("sccache answered {:?}", json.trim()),
            }
        }
    };
    let url = |v: &serde_json::Value| {
        v.as_str().map_or(configured.to_string(), |s| {
            s.trim_end_matches('/').to_string()
        })
    };
    if let Some(s) = value.get("SchedulerStatus") {
        let servers = s[1]["num_servers"].as_u64().unwrap_or(0);
        let cpus = s[1]["num_cpus"].as_u64().unwrap_or(0);
        if servers == 0 || cpus == 0 {
            return Dist::Unreachable {
                scheduler: url(&s[0]),
                why: "the scheduler has no build server".into(),
            };
        }
        return Dist::Ready {
            scheduler: url(&s[0]),
            servers,
            cpus,
        };
    }
    if let Some(n) = value.get("NotConnected") {
        return Dist::Unreachable {
            scheduler: url(&n[0]),
            why: n[1].as_str().unwrap_or("not connected").to_string(),
        };
    }
    Dist::Unreachable {
        scheduler: configured.to_string(),
        why: format!(
            "sccache's server has distribution switched off ({}); it reads its configuration when it starts: `sccache --stop-server` and build again",
            value.get("Disabled").and_then(|d| d.as_str()).unwrap_or("disabled")
        ),
    }
}

/// Asks the sccache at `sccache` (with the build's environment) about its cluster; `Off` when
/// no scheduler is configured.
pub(crate) fn ask(sccache: &Path, env: &BTreeMap<String, String>) -> Dist {
    let Some(configured) = configured_scheduler(env) else {
        return Dist::Off;
    };
    #[allow(clippy::disallowed_methods)] // asking the launcher about its build cluster
    let out = Command::new(sccache)
        .arg("--dist-status")
        .stdin(std::process::Stdio::null())
        .output();
    match out {
        Ok(o) if o.status.success() => {
            parse_status(&String::from_utf8_lossy(&o.stdout), &configured)
        }
        Ok(o) => Dist::Unreachable {
            scheduler: configured,
            why: String::from_utf8_lossy(&o.stderr).trim().to_string(),
        },
        Err(e) => Dist::Unreachable {
            scheduler: configured,
            why: e.to_string(),
        },
    }
}

/// A tiny host compile through sccache with a unique constant (always a miss, so it is sent
/// to the cluster): the scheduler's status page needs no token, so a refused token shows only
/// when a job is sent, and sccache then fails the compile (HTTP 401) instead of compiling
/// locally. `Err`: what sccache said.
pub(crate) fn probe(sccache: &Path, host: &Path, dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let nonce = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let src = dir.join("probe.cpp");
    std::fs::write(
        &src,
        format!(
            "extern const char cudawheel_dist_probe[] = \"{}-{nonce}\";\n",
            std::process::id()
        ),
    )
    .map_err(|e| format!("{}: {e}", src.display()))?;
    #[allow(clippy::disallowed_methods)] // one compile through sccache, to test the cluster
    let out = Command::new(sccache)
        .arg(host)
        .args(["-c", "probe.cpp", "-o", "probe.o"])
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| e.to_string())?;
    let _ = std::fs::remove_dir_all(dir);
    if out.status.success() {
        Ok(())
    } else {
        let text = String::from_utf8_lossy(&out.stderr);
        Err(text.trim().lines().last().unwrap_or("failed").to_string())
    }
}

/// Whether sccache-dist can package `host` for a build server: it ships a compiler by reading
/// the ELF file's shared libraries (ldd), so a wrapper script (e.g. a `g++` that execs the real
/// one) cannot travel, and every host compile, nvcc's host step among them, falls back to this
/// machine. `None`: it can; `Some(path)`: the file that is not a compiler binary.
pub(crate) fn unshippable_host(host: &Path) -> Option<PathBuf> {
    let real = std::fs::canonicalize(host).ok()?;
    let mut magic = [0u8; 4];
    let mut f = std::fs::File::open(&real).ok()?;
    std::io::Read::read_exact(&mut f, &mut magic).ok()?;
    (magic != *b"\x7fELF").then_some(real)
}

impl Dist {
    /// One line for the build output and `doctor`.
    pub(crate) fn describe(&self) -> String {
        match self {
            Dist::Off => "no sccache-dist scheduler configured (a `[dist]` section in sccache's configuration file, `SCCACHE_CONF`)".into(),
            Dist::Ready {
                scheduler,
                servers,
                cpus,
            } => format!(
                "sccache-dist scheduler {scheduler}: {servers} build server{}, {cpus} cores",
                if *servers == 1 { "" } else { "s" }
            ),
            Dist::Unreachable { scheduler, why } => {
                format!("sccache-dist scheduler {scheduler} cannot be reached: {why}")
            }
        }
    }

    /// The cores the cluster offers, when it is usable.
    pub(crate) fn cpus(&self) -> Option<usize> {
        match self {
            Dist::Ready { cpus, .. } => usize::try_from(*cpus).ok(),
            _ => None,
        }
    }

    /// The jobs the cluster takes at once without refusing any: sccache-dist's scheduler gives
    /// each build server up to its cores + 1 + cores/8 jobs; cores + 1 per server stays under
    /// that however the cores are spread over the servers.
    pub(crate) fn slots(&self) -> Option<usize> {
        match self {
            Dist::Ready { cpus, servers, .. } => usize::try_from(cpus + servers).ok(),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_answers() {
        let ready = parse_status(
            r#"{"SchedulerStatus":["http://127.0.0.1:10600/",{"num_servers":1,"num_cpus":14,"in_progress":0}]}"#,
            "x",
        );
        assert_eq!(
            ready,
            Dist::Ready {
                scheduler: "http://127.0.0.1:10600".into(),
                servers: 1,
                cpus: 14
            }
        );
        assert_eq!((ready.cpus(), ready.slots()), (Some(14), Some(15)));
        assert!(ready.describe().contains("1 build server, 14 cores"));
        let down = parse_status(
            r#"{"NotConnected":["http://127.0.0.1:10600/","could not communicate with scheduler"]}"#,
            "x",
        );
        assert!(
            matches!(&down, Dist::Unreachable { why, .. } if why.contains("could not communicate"))
        );
        assert_eq!((down.cpus(), down.slots()), (None, None));
        let empty = parse_status(
            r#"{"SchedulerStatus":["http://h/",{"num_servers":0,"num_cpus":0,"in_progress":0}]}"#,
            "x",
        );
        assert!(matches!(&empty, Dist::Unreachable { why, .. } if why.contains("no build server")));
        assert!(
            matches!(parse_status(r#"{"Disabled":"disabled"}"#, "u"), Dist::Unreachable { scheduler, .. } if scheduler == "u")
        );
    }

    #[test]
    fn a_wrapper_script_cannot_travel() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("g++");
        std::fs::write(&script, "#!/bin/sh\nexec /usr/bin/g++ \"$@\"\n").unwrap();
        assert_eq!(
            unshippable_host(&script),
            Some(std::fs::canonicalize(&script).unwrap())
        );
        // Control: a compiler binary (gcc is on every machine the tests run on) travels.
        assert_eq!(unshippable_host(Path::new("/usr/bin/gcc")), None);
    }

    #[test]
    fn configuration_file() {
        let dir = std::env::temp_dir().join(format!("cudawheel-dist-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let conf = dir.join("client.conf");
        std::fs::write(
            &conf,
            "[dist]\nscheduler_url = \"http://127.0.0.1:1\"\n[dist.auth]\ntype = \"token\"\ntoken = \"t\"\n",
        )
        .unwrap();
        let mut env = BTreeMap::new();
        env.insert("SCCACHE_CONF".to_string(), conf.display().to_string());
        assert_eq!(
            configured_scheduler(&env).as_deref(),
            Some("http://127.0.0.1:1")
        );
        std::fs::write(&conf, "[cache.disk]\ndir = \"/tmp\"\n").unwrap();
        assert_eq!(configured_scheduler(&env), None);
        assert_eq!(ask(Path::new("/nonexistent/sccache"), &env), Dist::Off);
        let mut home = BTreeMap::new();
        home.insert("HOME".to_string(), "/h".to_string());
        assert_eq!(
            config_path(&home),
            Some(PathBuf::from("/h/.config/sccache/config"))
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
