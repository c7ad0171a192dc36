//! The CUDA toolkit's components by name, when NVIDIA's `cuda-toolkit` meta package is already
//! installed where the build requirements are asked for (a framework in `[build-system]
//! requires` pins it: torch's `cuda-toolkit[...]==13.2.2`). A frontend takes an installed
//! distribution as satisfying `cuda-toolkit[nvcc,...]` whatever its extras (pip 23 to 26), so
//! the extras' distributions would never arrive: each extra asked for is also asked for as the
//! distributions it names, pinned as that installed release pins them (its METADATA).

use std::path::PathBuf;
use std::str::FromStr;

use pep508_rs::{Requirement, VerbatimUrl, VersionOrUrl};

use crate::inspect::site::{installed_metadata, name_and_version};

/// NVIDIA's meta package.
pub(crate) const META: &str = "cuda-toolkit";

/// For every `cuda-toolkit[<extras>]<pin>` among `reqs` that an installed `cuda-toolkit`
/// satisfies, the requirements its METADATA lists under those extras (platform markers kept,
/// the extra's clause dropped), in its order, without repeats. Empty when none is installed,
/// or the installed one does not satisfy the pin (the frontend then installs another release,
/// extras included).
pub(crate) fn by_name(reqs: &[String], sys_path: &[PathBuf]) -> Vec<String> {
    let Some(metadata) = installed_metadata(sys_path, META) else {
        return Vec::new();
    };
    let Some((_, installed)) = name_and_version(&metadata) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for line in reqs {
        let Ok(req) = Requirement::<VerbatimUrl>::from_str(line) else {
            continue;
        };
        if req.name.as_ref() != META {
            continue;
        }
        let satisfied = match &req.version_or_url {
            Some(VersionOrUrl::VersionSpecifier(specs)) => specs.contains(&installed),
            Some(VersionOrUrl::Url(_)) => false,
            None => true,
        };
        if !satisfied {
            continue;
        }
        let extras: Vec<String> = req.extras.iter().map(|e| e.to_string()).collect();
        for r in components(&metadata, &extras) {
            // A component already installed (the framework's own, maybe newer: torch's
            // nvshmem brings the newest CCCL) stays as it is: asking for the pin's version
            // would conflict with what put it there.
            if installed_metadata(sys_path, &dist_of(&r)).is_none() && !out.contains(&r) {
                out.push(r);
            }
        }
    }
    out
}

/// `nvidia-cuda-nvcc==13.2.86.*; ...` -> `nvidia-cuda-nvcc`.
fn dist_of(requirement: &str) -> String {
    Requirement::<VerbatimUrl>::from_str(requirement)
        .map(|r| r.name.to_string())
        .unwrap_or_default()
}

/// The `Requires-Dist` lines of a `cuda-toolkit` METADATA under any of `extras`, each without
/// its `extra == '...'` clause (`nvidia-cuda-nvcc==13.2.86.*; (sys_platform == 'linux' ...)`).
fn components(metadata: &str, extras: &[String]) -> Vec<String> {
    metadata
        .lines()
        .filter_map(|l| l.strip_prefix("Requires-Dist:"))
        .filter_map(|l| without_extra(l.trim(), extras))
        .filter(|r| Requirement::<VerbatimUrl>::from_str(r).is_ok())
        .collect()
}

/// `req; (marker) and extra == 'x'` -> `req; (marker)` when `x` is one of `extras` (`req` alone
/// when the extra is the whole marker); `None` for another extra or a shape not understood.
fn without_extra(line: &str, extras: &[String]) -> Option<String> {
    let (req, marker) = line.split_once(';')?;
    let marker = marker.trim();
    extras.iter().find_map(|x| {
        [format!("extra == '{x}'"), format!("extra == \"{x}\"")]
            .iter()
            .find_map(|clause| {
                if marker == clause {
                    return Some(req.trim().to_string());
                }
                let rest = marker.strip_suffix(clause.as_str())?.trim_end();
                let rest = rest.strip_suffix("and")?.trim_end();
                Some(format!("{}; {rest}", req.trim()))
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLATFORMS: &str = "(sys_platform == 'linux' and platform_machine == 'x86_64' or sys_platform == 'win32' and platform_machine == 'AMD64')";

    /// A `cuda-toolkit` installed in `site` as torch's pin leaves it: no extras' distributions.
    fn installed(site: &std::path::Path, version: &str) {
        let dir = site.join(format!("cuda_toolkit-{version}.dist-info"));
        std::fs::create_dir_all(&dir).unwrap();
        let mut text = format!("Metadata-Version: 2.1\nName: cuda-toolkit\nVersion: {version}\n");
        for (req, extra) in [
            ("nvidia-cublas==13.4.1.3.*", "all"),
            ("nvidia-cuda-cccl==13.2.86.*", "cccl"),
            ("nvidia-cuda-runtime==13.2.86.*", "cudart"),
            ("nvidia-cuda-crt==13.2.86.*", "nvcc"),
            ("nvidia-cuda-nvcc==13.2.86.*", "nvcc"),
            ("nvidia-cuda-runtime==13.2.86.*", "nvcc"),
            ("nvidia-nvvm==13.2.86.*", "nvcc"),
            ("nvidia-cufft==12.2.0.37.*", "cufft"),
        ] {
            text.push_str(&format!(
                "Requires-Dist: {req}; {PLATFORMS} and extra == '{extra}'\n"
            ));
        }
        text.push_str("Provides-Extra: nvcc\n\n");
        std::fs::write(dir.join("METADATA"), text).unwrap();
    }

    #[test]
    fn an_installed_toolkit_gives_its_extras_by_name_at_its_release() {
        let tmp = tempfile::tempdir().unwrap();
        installed(tmp.path(), "13.2.2");
        let sys_path = vec![tmp.path().join("empty"), tmp.path().to_path_buf()];
        let reqs = vec![
            "torch>=2.11".to_string(),
            "cuda-toolkit[cccl,cudart,nvcc]==13.2.2".to_string(),
        ];
        let got = by_name(&reqs, &sys_path);
        let names: Vec<&str> = got.iter().map(|r| r.split(';').next().unwrap()).collect();
        assert_eq!(
            names,
            [
                "nvidia-cuda-cccl==13.2.86.*",
                "nvidia-cuda-runtime==13.2.86.*",
                "nvidia-cuda-crt==13.2.86.*",
                "nvidia-cuda-nvcc==13.2.86.*",
                "nvidia-nvvm==13.2.86.*",
            ]
        );
        assert!(
            got.iter().all(|r| r.ends_with(&format!("; {PLATFORMS}"))),
            "{got:?}"
        );
        // A range the installed release satisfies: the same.
        let open = vec!["cuda-toolkit[nvcc]>=13,<14".to_string()];
        assert_eq!(
            by_name(&open, &sys_path).len(),
            4,
            "crt, nvcc, runtime, nvvm"
        );
    }

    #[test]
    fn a_component_already_installed_is_not_asked_for_again() {
        let tmp = tempfile::tempdir().unwrap();
        installed(tmp.path(), "13.2.2");
        // torch's environment brought the newest CCCL (through nvshmem): left as it is.
        let cccl = tmp.path().join("nvidia_cuda_cccl-13.3.5.0.6.dist-info");
        std::fs::create_dir_all(&cccl).unwrap();
        std::fs::write(
            cccl.join("METADATA"),
            "Metadata-Version: 2.1\nName: nvidia-cuda-cccl\nVersion: 13.3.5.0.6\n\n",
        )
        .unwrap();
        let reqs = vec!["cuda-toolkit[cccl,nvcc]==13.2.2".to_string()];
        let got = by_name(&reqs, &[tmp.path().to_path_buf()]);
        assert!(
            !got.iter().any(|r| r.starts_with("nvidia-cuda-cccl")),
            "{got:?}"
        );
        assert!(
            got.iter()
                .any(|r| r.starts_with("nvidia-cuda-nvcc==13.2.86.*")),
            "{got:?}"
        );
    }

    #[test]
    fn nothing_by_name_without_an_installed_toolkit_or_outside_its_pin() {
        let tmp = tempfile::tempdir().unwrap();
        let reqs = vec!["cuda-toolkit[cccl,cudart,nvcc]>=13,<14".to_string()];
        // Control: nothing installed, the extras are honoured by a fresh resolution.
        assert!(by_name(&reqs, &[tmp.path().to_path_buf()]).is_empty());
        installed(tmp.path(), "13.2.2");
        // The pin wants another release: the frontend installs that one, extras and all.
        let other = vec!["cuda-toolkit[nvcc]==13.5.*".to_string()];
        assert!(by_name(&other, &[tmp.path().to_path_buf()]).is_empty());
    }

    #[test]
    fn the_extra_clause_goes_and_the_platforms_stay() {
        let x = vec!["nvcc".to_string()];
        assert_eq!(
            without_extra("a==1; extra == 'nvcc'", &x).as_deref(),
            Some("a==1")
        );
        assert_eq!(
            without_extra("a==1; (p == 'l') and extra == \"nvcc\"", &x).as_deref(),
            Some("a==1; (p == 'l')")
        );
        assert_eq!(without_extra("a==1; extra == 'cublas'", &x), None);
        assert_eq!(without_extra("a==1", &x), None);
    }
}
