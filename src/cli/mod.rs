//! `python -m cudawheel`'s commands, decided and rendered here. The Python shim
//! (`python/cudawheel/__main__.py`) only parses the arguments; each command is one function
//! here that takes them and returns an `Output`: the text for stdout, the text for stderr, the
//! exit status. `--json` is rendered here too, as Python's `json.dumps(..., indent=2)` would.
//! A composer: it calls `commands` (the operations), `pep517` (the hooks), `doctor` and the
//! readers of finished wheels; `bridge.rs` exposes each function to Python.
//!
//! `build.rs`: wheel (per CUDA major, per Python), sdist, requires, doctor, env, variants-json,
//! repair. `interpreters.rs`: the facts of another Python (`wheel --python PY`). `audit.rs`:
//! audit and `doctor WHEEL`. `release.rs`: size. `helpers.rs`: the generated `_cuda_libs.py`
//! files of a wheel, read as data. `check.rs`: check's verdicts from the facts the helpers
//! report in the running interpreter. `error.rs`: `CliError`.

mod audit;
mod build;
mod check;
mod error;
mod helpers;
mod interpreters;
mod release;

use std::path::{Component, Path, PathBuf};

// `bridge.rs` (feature `python`) is what calls these.
#[cfg_attr(not(feature = "python"), allow(unused_imports))]
pub(crate) use {
    audit::audit,
    build::{doctor, env, repair, requires, sdist, variants_json, wheel, Project},
    check::check,
    helpers::helper_sources,
    release::size,
};

/// What a command prints and its exit status.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Output {
    pub(crate) stdout: String,
    pub(crate) stderr: String,
    pub(crate) code: i32,
}

impl Output {
    fn text(stdout: String) -> Self {
        Output {
            stdout,
            ..Output::default()
        }
    }

    /// One line per item (files written, requirements).
    fn lines<T: std::fmt::Display>(items: impl IntoIterator<Item = T>) -> Self {
        Output::text(items.into_iter().map(|i| format!("{i}\n")).collect())
    }

    /// An error: its rendered text (message, causes, hints) on stderr, exit status 1.
    fn failed<E: std::error::Error + crate::hint::Hint + ?Sized>(err: &E) -> Self {
        Output {
            stderr: format!("{}\n", crate::render(err)),
            code: 1,
            ..Output::default()
        }
    }

    /// A usage problem the command names itself (`check: ...`, `size: ...`), exit status 2.
    fn usage(line: String) -> Self {
        Output {
            stderr: format!("{line}\n"),
            code: 2,
            ..Output::default()
        }
    }
}

/// `path` made absolute from the working directory, `.` and `..` resolved by name, as Python's
/// `os.path.abspath` does (the paths printed are the ones users gave, made absolute).
fn abspath(path: &str) -> PathBuf {
    let joined = std::env::current_dir()
        .unwrap_or_else(|_| PathBuf::from("/"))
        .join(path);
    let mut out = PathBuf::from("/");
    for part in joined.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(name) => out.push(name),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

/// `value` as Python's `json.dumps(value, indent=2)` writes it: two-space indent, non-ASCII
/// characters as `\uXXXX` escapes.
fn pretty_json(value: &impl serde::Serialize) -> String {
    // Plain data (strings, numbers, maps with string keys): serializing cannot fail.
    let text = serde_json::to_string_pretty(value).unwrap_or_default();
    ascii_only(&text)
}

/// Every non-ASCII character escaped as JSON does it (UTF-16 units): only strings hold them.
fn ascii_only(text: &str) -> String {
    if text.is_ascii() {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }
    out
}

/// Shown as Python's `str(path)` would.
fn shown(path: &Path) -> String {
    path.display().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn abspath_resolves_dots_by_name() {
        assert_eq!(abspath("/a/b/../c/./d"), PathBuf::from("/a/c/d"));
        assert_eq!(abspath("/.."), PathBuf::from("/"));
        assert!(abspath("x").is_absolute());
    }

    #[test]
    fn json_is_pythons() {
        let v = serde_json::json!({"a": ["é", "😀"], "b": {}});
        assert_eq!(
            pretty_json(&v),
            "{\n  \"a\": [\n    \"\\u00e9\",\n    \"\\ud83d\\ude00\"\n  ],\n  \"b\": {}\n}"
        );
    }
}
