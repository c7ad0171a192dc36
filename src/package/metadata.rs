//! Core Metadata 2.4 (METADATA / PKG-INFO), WHEEL and entry_points.txt, rendered from the
//! validated `[project]` and the CUDA runtime requirements the build derived. Pure: no IO.

use crate::inspect::site::portable;
use std::fmt::Write as _;

use pep508_rs::{PackageName, Requirement, VersionOrUrl};
use std::str::FromStr;

use crate::config::{CudaDeps, License, Person, Project};

/// The built distribution's identity: `[project].name` plus the CUDA suffix.
#[derive(Debug, Clone)]
pub(crate) struct DistName {
    /// As it appears in `Name:`: the user's spelling plus the suffix (`saxpy-cu13`).
    pub(crate) display: String,
    pub(crate) normalized: PackageName,
}

impl DistName {
    pub(crate) fn new(project: &Project, suffix: &str) -> DistName {
        let display = format!("{}{suffix}", project.name);
        // The suffix is checked to hold only name characters, so the result stays valid.
        let normalized = display
            .parse()
            .unwrap_or_else(|_| project.normalized_name.clone());
        DistName {
            display,
            normalized,
        }
    }

    /// `saxpy_cu13`: the file-name form (wheel, sdist, .dist-info).
    pub(crate) fn file_stem(&self) -> String {
        self.normalized.as_dist_info_name().into_owned()
    }
}

/// What the CUDA side adds to `Requires-Dist`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CudaRequires {
    /// Known: `nvidia-cuda-runtime>=13.5,<14`, ...
    Known(Vec<String>),
    /// Decided at wheel-build time (sdists): rendered as `Dynamic: Requires-Dist`.
    Dynamic,
    /// One wheel holding several CUDA majors: each major's under its extra (`cu12`:
    /// `nvidia-cuda-runtime-cu12>=12.4,<13; extra == "cu12"`), as `cuda-deps` allows (not with
    /// "none").
    Extras(Vec<(String, Vec<String>)>),
}

fn people(out: &mut String, field: &str, list: &[Person]) {
    let names: Vec<&str> = list
        .iter()
        .filter(|p| p.email.is_none())
        .filter_map(|p| p.name.as_deref())
        .collect();
    if !names.is_empty() {
        let _ = writeln!(out, "{field}: {}", names.join(", "));
    }
    let emails: Vec<String> = list
        .iter()
        .filter_map(|p| {
            p.email.as_ref().map(|e| match &p.name {
                Some(n) => format!("{n} <{e}>"),
                None => e.clone(),
            })
        })
        .collect();
    if !emails.is_empty() {
        let _ = writeln!(out, "{field}-email: {}", emails.join(", "));
    }
}

/// The project's dependencies as `Requires-Dist` values, each joined by the `derived`
/// requirements on the same distribution (`torch` + `torch>=2.15,<2.16` -> one line
/// `torch>=2.15,<2.16`: extras united, the specifiers of both), so a wheel never lists one
/// distribution twice. Only a dependency without marker or URL takes a derived one, and only
/// a derived one without marker. Returns the lines and which of `derived` were taken.
pub(crate) fn merge_requirements(
    deps: &[Requirement],
    derived: &[&String],
) -> (Vec<String>, Vec<bool>) {
    let parsed: Vec<Option<Requirement>> = derived
        .iter()
        .map(|s| Requirement::from_str(s).ok())
        .collect();
    let mut taken = vec![false; derived.len()];
    let mut lines = Vec::new();
    for dep in deps {
        let plain =
            dep.marker.is_true() && !matches!(dep.version_or_url, Some(VersionOrUrl::Url(_)));
        let mut specs: Vec<String> = match &dep.version_or_url {
            Some(VersionOrUrl::VersionSpecifier(s)) => s.iter().map(|s| s.to_string()).collect(),
            _ => Vec::new(),
        };
        let mut extras = dep.extras.clone();
        let mut joined = false;
        for (i, d) in parsed.iter().enumerate() {
            let Some(d) = d
                .as_ref()
                .filter(|d| plain && d.name == dep.name && d.marker.is_true())
            else {
                continue;
            };
            if let Some(VersionOrUrl::VersionSpecifier(s)) = &d.version_or_url {
                for spec in s.iter().map(|s| s.to_string()) {
                    if !specs.contains(&spec) {
                        specs.push(spec);
                    }
                }
            }
            extras.extend(d.extras.iter().filter(|e| !dep.extras.contains(e)).cloned());
            taken[i] = true;
            joined = true;
        }
        if !joined {
            lines.push(dep.to_string());
            continue;
        }
        let extras = if extras.is_empty() {
            String::new()
        } else {
            let names: Vec<String> = extras.iter().map(|e| e.to_string()).collect();
            format!("[{}]", names.join(","))
        };
        lines.push(format!(
            "{}{extras}{}",
            dep.name,
            highest_floor_only(specs).join(",")
        ));
    }
    (lines, taken)
}

/// Of several `>=` floors only the highest says anything (`>=2.0,>=2.11` -> `>=2.11`).
fn highest_floor_only(specs: Vec<String>) -> Vec<String> {
    let floor = |s: &String| {
        pep440_rs::VersionSpecifier::from_str(s)
            .ok()
            .filter(|v| *v.operator() == pep440_rs::Operator::GreaterThanEqual)
            .map(|v| v.version().clone())
    };
    let highest = specs.iter().filter_map(floor).max();
    let mut kept_floor = false;
    specs
        .into_iter()
        .filter(|s| match floor(s) {
            Some(v) if Some(&v) == highest.as_ref() && !kept_floor => {
                kept_floor = true;
                true
            }
            Some(_) => false,
            None => true,
        })
        .collect()
}

/// METADATA (wheel) or PKG-INFO (sdist).
pub(crate) fn core_metadata(
    project: &Project,
    name: &DistName,
    cuda: &CudaRequires,
    mode: (CudaDeps, &str),
) -> String {
    core_metadata_with(project, name, &[], cuda, mode)
}

/// An extra's name as METADATA writes it (PEP 685): lower case, runs of `-_.` as one `-`
/// (`cuda_pip` -> `cuda-pip`). pip 23.3+ and uv match `pkg[cuda_pip]` to it; pip 23.2 (CPython
/// 3.11's) matches literally, so messages and docs spell the normalized name.
pub(crate) fn normalize_extra(name: &str) -> String {
    let mut out = String::new();
    for c in name.to_ascii_lowercase().chars() {
        if "-_.".contains(c) {
            if !out.ends_with('-') {
                out.push('-');
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The extra a major's NVIDIA wheels are under in a wheel holding several majors: `cu12`.
pub(crate) fn major_extra(major: u32) -> String {
    format!("cu{major}")
}

/// METADATA with `required` (derived requirements that `cuda-deps` never moves or drops, such
/// as `torch>=2.15,<2.16` of a torch extension) after the project's own dependencies.
pub(crate) fn core_metadata_with(
    project: &Project,
    name: &DistName,
    required: &[String],
    cuda: &CudaRequires,
    (mode, extra): (CudaDeps, &str),
) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "Metadata-Version: 2.4");
    let _ = writeln!(out, "Name: {}", name.display);
    let _ = writeln!(out, "Version: {}", project.version);
    if let Some(d) = &project.description {
        let _ = writeln!(out, "Summary: {d}");
    }
    if !project.keywords.is_empty() {
        let _ = writeln!(out, "Keywords: {}", project.keywords.join(","));
    }
    people(&mut out, "Author", &project.authors);
    people(&mut out, "Maintainer", &project.maintainers);
    match &project.license {
        Some(License::Expression(e)) => {
            let _ = writeln!(out, "License-Expression: {e}");
        }
        Some(License::Text(t)) => {
            let _ = writeln!(out, "License: {}", t.trim_end().replace('\n', "\n        "));
        }
        None => {}
    }
    for f in &project.license_files {
        let _ = writeln!(out, "License-File: {}", portable(f));
    }
    for c in &project.classifiers {
        let _ = writeln!(out, "Classifier: {c}");
    }
    if let Some(rp) = &project.requires_python {
        let _ = writeln!(out, "Requires-Python: {rp}");
    }
    let cuda_required: &[String] = match (cuda, mode) {
        (CudaRequires::Known(reqs), CudaDeps::Required) => reqs,
        _ => &[],
    };
    let derived: Vec<&String> = required.iter().chain(cuda_required).collect();
    let (lines, merged) = merge_requirements(&project.dependencies, &derived);
    for line in lines {
        let _ = writeln!(out, "Requires-Dist: {line}");
    }
    for (r, _) in required.iter().zip(&merged).filter(|(_, m)| !**m) {
        let _ = writeln!(out, "Requires-Dist: {r}");
    }
    let merged_cuda = &merged[required.len()..];
    let mut extras: Vec<String> = Vec::new();
    for (extra, reqs) in &project.optional_dependencies {
        for r in reqs {
            let _ = writeln!(out, "Requires-Dist: {}", r.clone().with_extra_marker(extra));
        }
        extras.push(extra.to_string());
    }
    match cuda {
        CudaRequires::Known(reqs) => match mode {
            CudaDeps::Required => {
                for (r, _) in reqs.iter().zip(merged_cuda).filter(|(_, m)| !**m) {
                    let _ = writeln!(out, "Requires-Dist: {r}");
                }
            }
            CudaDeps::Extra => {
                let extra = normalize_extra(extra);
                reqs.iter().for_each(|r| {
                    let _ = writeln!(out, "Requires-Dist: {r}; extra == \"{extra}\"");
                });
                if !extras.contains(&extra) {
                    extras.push(extra);
                }
            }
            CudaDeps::None => {}
        },
        CudaRequires::Dynamic => {
            let _ = writeln!(out, "Dynamic: Requires-Dist");
        }
        CudaRequires::Extras(_) if mode == CudaDeps::None => {}
        CudaRequires::Extras(by_extra) => {
            for (extra, reqs) in by_extra {
                for r in reqs {
                    let _ = writeln!(out, "Requires-Dist: {r}; extra == \"{extra}\"");
                }
                if !extras.contains(extra) {
                    extras.push(extra.clone());
                }
            }
        }
    }
    for e in &extras {
        let _ = writeln!(out, "Provides-Extra: {e}");
    }
    for (label, url) in &project.urls {
        let _ = writeln!(out, "Project-URL: {label}, {url}");
    }
    if let Some(readme) = &project.readme {
        let _ = writeln!(out, "Description-Content-Type: {}", readme.content_type);
        let _ = write!(out, "\n{}", readme.text);
        if !readme.text.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

/// The `.dist-info/WHEEL` file.
pub(crate) fn wheel_file(tag: &str) -> String {
    // A compressed tag set (`cp39-abi3-manylinux2014_x86_64.manylinux_2_17_x86_64`) is one
    // `Tag:` line per expanded tag.
    let mut parts = tag.splitn(3, '-');
    let (py, abi, plat) = (
        parts.next().unwrap_or(""),
        parts.next().unwrap_or(""),
        parts.next().unwrap_or(""),
    );
    let mut tags = String::new();
    for p in py.split('.') {
        for a in abi.split('.') {
            for pl in plat.split('.') {
                tags.push_str(&format!("Tag: {p}-{a}-{pl}\n"));
            }
        }
    }
    format!(
        "Wheel-Version: 1.0\nGenerator: cudawheel {}\nRoot-Is-Purelib: false\n{tags}",
        env!("CARGO_PKG_VERSION")
    )
}

/// `entry_points.txt`, or `None` when the project declares none.
pub(crate) fn entry_points(project: &Project) -> Option<String> {
    if project.entry_points.is_empty() {
        return None;
    }
    let mut out = String::new();
    for (group, items) in &project.entry_points {
        let _ = writeln!(out, "[{group}]");
        for (name, value) in items {
            let _ = writeln!(out, "{name} = {value}");
        }
        out.push('\n');
    }
    Some(out)
}
#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::config::{Config, Overrides};

    #[test]
    fn a_derived_requirement_joins_the_projects_own_line() {
        let deps: Vec<Requirement> = [
            "torch",
            "nvidia-cuda-runtime[extra1]>=13.0",
            "numpy; python_version > '3.9'",
            "jax>=0.4",
        ]
        .iter()
        .map(|s| Requirement::from_str(s).unwrap())
        .collect();
        let derived: Vec<String> = [
            "torch>=2.15,<2.16",
            "nvidia-cuda-runtime>=13.2,<14",
            "numpy>=2",
            "nvidia-cublas>=13.1,<14",
        ]
        .map(String::from)
        .to_vec();
        let refs: Vec<&String> = derived.iter().collect();
        let (lines, taken) = merge_requirements(&deps, &refs);
        assert_eq!(
            lines,
            [
                "torch>=2.15,<2.16",
                "nvidia-cuda-runtime[extra1]>=13.2,<14",
                // Control: a dependency with a marker keeps its line; the derived one stays apart.
                "numpy ; python_full_version >= '3.10'",
                "jax>=0.4",
            ]
        );
        assert_eq!(taken, [true, true, false, false]);
    }

    #[test]
    fn metadata_snapshot() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("README.md"), "# Demo\n\nText.\n").unwrap();
        std::fs::write(dir.path().join("LICENSE"), "MIT\n").unwrap();
        std::fs::write(
            dir.path().join("pyproject.toml"),
            r#"
[project]
name = "Demo.Pkg"
version = "1.2.0rc1"
description = "A demo"
readme = "README.md"
requires-python = ">=3.9"
license = "MIT"
license-files = ["LICEN[CS]E*"]
authors = [{ name = "Ada", email = "ada@example.org" }, { name = "Bob" }]
keywords = ["cuda", "gpu"]
classifiers = ["Programming Language :: Python :: 3"]
dependencies = ["numpy>=1.22", "typing-extensions; python_version < '3.11'"]
urls = { Homepage = "https://example.org" }
scripts = { demo = "demo_pkg.cli:main" }

[project.optional-dependencies]
test = ["pytest>=8"]
"#,
        )
        .unwrap();
        let config = Config::load(
            dir.path(),
            &Overrides {
                settings: BTreeMap::new(),
                env: BTreeMap::new(),
            },
        )
        .unwrap();
        let name = DistName::new(&config.project, "-cu13");
        assert_eq!(name.file_stem(), "demo_pkg_cu13");
        let cuda = CudaRequires::Known(vec!["nvidia-cuda-runtime>=13.5,<14".into()]);
        let text = core_metadata(&config.project, &name, &cuda, (CudaDeps::Required, "cuda"));
        assert_eq!(
            text,
            "Metadata-Version: 2.4
Name: Demo.Pkg-cu13
Version: 1.2.0rc1
Summary: A demo
Keywords: cuda,gpu
Author: Bob
Author-email: Ada <ada@example.org>
License-Expression: MIT
License-File: LICENSE
Classifier: Programming Language :: Python :: 3
Requires-Python: >=3.9
Requires-Dist: numpy>=1.22
Requires-Dist: typing-extensions ; python_full_version < '3.11'
Requires-Dist: pytest>=8 ; extra == 'test'
Requires-Dist: nvidia-cuda-runtime>=13.5,<14
Provides-Extra: test
Project-URL: Homepage, https://example.org
Description-Content-Type: text/markdown

# Demo

Text.
"
        );
        assert_eq!(
            entry_points(&config.project).unwrap(),
            "[console_scripts]\ndemo = demo_pkg.cli:main\n\n"
        );
        let sdist = core_metadata(
            &config.project,
            &name,
            &CudaRequires::Dynamic,
            (CudaDeps::Required, "cuda"),
        );
        assert!(
            sdist.contains("Dynamic: Requires-Dist\n") && !sdist.contains("nvidia-cuda-runtime")
        );
        // `cuda-deps = "extra"` with `cuda-extra = "cuda_pip"`: under that extra, normalized.
        let text = core_metadata(&config.project, &name, &cuda, (CudaDeps::Extra, "cuda_pip"));
        assert!(
            text.contains("Requires-Dist: nvidia-cuda-runtime>=13.5,<14; extra == \"cuda-pip\"\n")
                && text.contains("Provides-Extra: test\nProvides-Extra: cuda-pip\n"),
            "{text}"
        );
    }

    #[test]
    fn several_majors_put_each_major_s_wheels_under_its_extra() {
        let dir = tempfile::tempdir().unwrap();
        let text = "[project]\nname = \"demo\"\nversion = \"1\"\ndependencies = [\"numpy\"]\n";
        let config = Config::from_text(dir.path(), text.into(), &Overrides::default()).unwrap();
        let name = DistName::new(&config.project, "");
        let cuda = CudaRequires::Extras(vec![
            (
                major_extra(12),
                vec!["nvidia-cuda-runtime-cu12>=12.4,<13".into()],
            ),
            (
                major_extra(13),
                vec!["nvidia-cuda-runtime>=13.2,<14".into()],
            ),
        ]);
        let text = core_metadata(&config.project, &name, &cuda, (CudaDeps::Required, "cuda"));
        assert!(
            text.contains("Name: demo\nVersion: 1\nRequires-Dist: numpy\nRequires-Dist: nvidia-cuda-runtime-cu12>=12.4,<13; extra == \"cu12\"\nRequires-Dist: nvidia-cuda-runtime>=13.2,<14; extra == \"cu13\"\nProvides-Extra: cu12\nProvides-Extra: cu13\n"),
            "{text}"
        );
        // `cuda-deps = "none"`: neither.
        let none = core_metadata(&config.project, &name, &cuda, (CudaDeps::None, "cuda"));
        assert!(
            !none.contains("nvidia") && !none.contains("Provides-Extra"),
            "{none}"
        );
    }

    #[test]
    fn extras_are_written_normalized() {
        assert_eq!(normalize_extra("cuda_pip"), "cuda-pip");
        assert_eq!(normalize_extra("Cuda__Pip.x"), "cuda-pip-x");
        assert_eq!(normalize_extra("cuda"), "cuda");
    }
}
