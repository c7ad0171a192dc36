//! The commands that run the backend on a project (wheel, sdist, requires, doctor, env) and
//! the ones that write wheels from wheels (variants-json, repair). Each prints the files it
//! wrote, one per line, or what it reports; an error is its rendered text and exit status 1.

use std::path::{Path, PathBuf};

use super::error::CliError;
use super::{abspath, ascii_only, interpreters, shown, Output};
use crate::commands;
use crate::config::{Overrides, PythonInfo};
use crate::pep517::{self, Request};

/// A command's project as given (`PROJECT`, default `.`), its settings (`-C`, and this
/// process's environment) and the running interpreter's facts.
pub(crate) struct Project<'a> {
    pub(crate) path: &'a str,
    pub(crate) overrides: Overrides,
    pub(crate) python: PythonInfo,
}

/// The absolute project and output folders; then the project folder becomes the working
/// directory (the hooks run there, as under a frontend).
fn in_project(project: &str, out_dir: &str) -> Result<(PathBuf, PathBuf), CliError> {
    let (project, out_dir) = (abspath(project), abspath(out_dir));
    std::env::set_current_dir(&project).map_err(|source| CliError::Folder {
        what: "the project folder",
        path: shown(&project),
        source,
    })?;
    Ok((project, out_dir))
}

/// `wheel`: the wheels of each `--cuda` major (none: the configured major); with `--python PY`
/// (repeated) the same for each of those interpreters, one after the other (the binding
/// libraries come from each interpreter's `sys.path`, the CUDA toolkit also from this
/// environment's: `toolkit_path`). With `split = "library"` the library wheel is made once,
/// with the first interpreter.
pub(crate) fn wheel(p: &Project<'_>, out_dir: &str, majors: &[u32], pythons: &[String]) -> Output {
    // A relative interpreter path names a file from here, not from the project (a bare name: PATH).
    let pythons: Vec<String> = pythons
        .iter()
        .map(|py| match py.contains('/') {
            true => shown(&abspath(py)),
            false => py.clone(),
        })
        .collect();
    let (project, out_dir) = match in_project(p.path, out_dir) {
        Ok(paths) => paths,
        Err(e) => return Output::failed(&e),
    };
    if pythons.is_empty() {
        return wheels(&project, &out_dir, majors, &p.overrides, &p.python, true);
    }
    let mut infos = Vec::new();
    let mut out = Output::default();
    for py in &pythons {
        match interpreters::facts(py) {
            Ok(info) => infos.push(info),
            Err(e) => {
                let failed = Output::failed(&e);
                out.stderr.push_str(&failed.stderr);
                out.code = failed.code;
            }
        }
    }
    if out.code != 0 {
        return out;
    }
    for (i, mut info) in infos.into_iter().enumerate() {
        info.toolkit_path = p.python.sys_path.clone();
        let one = wheels(&project, &out_dir, majors, &p.overrides, &info, i == 0);
        out.stdout.push_str(&one.stdout);
        out.stderr.push_str(&one.stderr);
        if one.code != 0 {
            out.code = one.code;
            return out;
        }
    }
    out
}

/// One interpreter's wheels (`commands::matrix`) into `out_dir`, made first.
fn wheels(
    project: &Path,
    out_dir: &Path,
    majors: &[u32],
    overrides: &Overrides,
    python: &PythonInfo,
    library: bool,
) -> Output {
    if let Err(source) = std::fs::create_dir_all(out_dir) {
        return Output::failed(&CliError::Folder {
            what: "the output folder",
            path: shown(out_dir),
            source,
        });
    }
    let req = Request {
        source_tree: project,
        overrides,
        python,
    };
    match commands::matrix(&req, out_dir, majors, library) {
        Ok(written) => Output::lines(written.iter().map(|w| w.display())),
        Err(e) => Output::failed(&e),
    }
}

/// `sdist`: the sdist's path.
pub(crate) fn sdist(p: &Project<'_>, out_dir: &str) -> Output {
    let (project, out_dir) = match in_project(p.path, out_dir) {
        Ok(paths) => paths,
        Err(e) => return Output::failed(&e),
    };
    match pep517::build_sdist(&request(&project, p), &out_dir) {
        Ok(name) => Output::lines([out_dir.join(name).display()]),
        Err(e) => Output::failed(&e),
    }
}

/// `requires`: what `get_requires_for_build_wheel` returns, one per line.
pub(crate) fn requires(p: &Project<'_>) -> Output {
    let (project, _) = match in_project(p.path, ".") {
        Ok(paths) => paths,
        Err(e) => return Output::failed(&e),
    };
    match pep517::get_requires_for_build_wheel(&request(&project, p)) {
        Ok(reqs) => Output::lines(reqs),
        Err(e) => Output::failed(&e),
    }
}

/// `doctor`: the report (never fails on the project); given a wheel, its GPU code as `audit`
/// prints it (an alias kept for older scripts).
pub(crate) fn doctor(p: &Project<'_>) -> Output {
    if p.path.ends_with(".whl") {
        return super::audit::gpu_code_only(p.path);
    }
    let report = crate::doctor::report(&abspath(p.path), &p.overrides, &p.python);
    Output::text(format!("{report}\n"))
}

/// `env`: the variables of a build cudawheel does not run, as `export NAME=VALUE` lines (for
/// `eval`) or, with `--json`, one JSON object.
pub(crate) fn env(p: &Project<'_>, json: bool) -> Output {
    let project = abspath(p.path);
    let pairs = match commands::env(&request(&project, p)) {
        Ok(pairs) => pairs,
        Err(e) => return Output::failed(&e),
    };
    if json {
        return Output::text(format!("{}\n", json_object(&pairs)));
    }
    Output::lines(
        pairs
            .iter()
            .map(|(name, value)| format!("export {name}={}", shell_quote(value))),
    )
}

/// `variants-json`: the index files (re)written from the variant wheels in `folder`.
pub(crate) fn variants_json(folder: &str) -> Output {
    match commands::variants_json(&abspath(folder)) {
        Ok(written) => Output::lines(written.iter().map(|w| w.display())),
        Err(e) => Output::failed(&e),
    }
}

/// `repair`: each wheel repaired into `wheel_dir` for the running interpreter, with its
/// environment (`SOURCE_DATE_EPOCH`).
pub(crate) fn repair(
    wheels: &[String],
    wheel_dir: &str,
    p: &Project<'_>,
    cuda: Option<u32>,
    name_suffix: Option<String>,
) -> Output {
    let wheels: Vec<PathBuf> = wheels.iter().map(|w| abspath(w)).collect();
    let out = abspath(wheel_dir);
    match commands::repair(
        &wheels,
        &out,
        &p.python,
        &p.overrides.env,
        cuda,
        name_suffix,
    ) {
        Ok(written) => Output::lines(written.iter().map(|w| w.display())),
        Err(e) => Output::failed(&e),
    }
}

fn request<'a>(project: &'a Path, p: &'a Project<'_>) -> Request<'a> {
    Request {
        source_tree: project,
        overrides: &p.overrides,
        python: &p.python,
    }
}

/// `pairs` as one JSON object in their order, a repeated name keeping its first place and its
/// last value (Python's `json.dumps(dict(pairs), indent=2)`).
fn json_object(pairs: &[(String, String)]) -> String {
    let mut merged: Vec<(&str, &str)> = Vec::new();
    for (name, value) in pairs {
        match merged.iter_mut().find(|(n, _)| n == name) {
            Some(slot) => slot.1 = value,
            None => merged.push((name, value)),
        }
    }
    if merged.is_empty() {
        return "{}".into();
    }
    let quoted = |s: &str| serde_json::to_string(s).unwrap_or_default();
    let body: Vec<String> = merged
        .iter()
        .map(|(n, v)| format!("  {}: {}", quoted(n), quoted(v)))
        .collect();
    ascii_only(&format!("{{\n{}\n}}", body.join(",\n")))
}

/// `value` as one shell word, as Python's `shlex.quote` writes it.
fn shell_quote(value: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c);
    match value {
        "" => "''".into(),
        v if v.chars().all(safe) => v.into(),
        v => format!("'{}'", v.replace('\'', "'\"'\"'")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_quoted_as_shlex_does() {
        assert_eq!(shell_quote(""), "''");
        assert_eq!(
            shell_quote("/usr/local/cuda-13.0/bin/nvcc"),
            "/usr/local/cuda-13.0/bin/nvcc"
        );
        assert_eq!(shell_quote("80;90"), "'80;90'");
        assert_eq!(shell_quote("it's"), "'it'\"'\"'s'");
    }

    #[test]
    fn env_json_keeps_the_order_and_the_last_value() {
        let pairs =
            [("B", "1"), ("A", "2"), ("B", "3")].map(|(n, v)| (n.to_string(), v.to_string()));
        assert_eq!(json_object(&pairs), "{\n  \"B\": \"3\",\n  \"A\": \"2\"\n}");
        assert_eq!(json_object(&[]), "{}");
    }
}
