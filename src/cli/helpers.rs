//! The generated helpers (`_cuda_libs.py`) a wheel holds, read as data: which members they are
//! and the module name each has once installed (`pkg._cuda_libs`, or `_<module>_cuda_libs`
//! beside a top-level module), what their messages name (`_OWNER`), and the driver floors
//! they recorded (`DRIVER_FLOORS`, written by `package::import_helper`: one
//! `(<reason>, (<major>, <minor>)),` line each, the reason quoted as Rust's `{:?}` writes it).

use std::io::Read;
use std::path::Path;

use super::error::CliError;

/// One helper of a wheel.
pub(crate) struct HelperFile {
    /// The module name it has once installed.
    pub(crate) name: String,
    /// Its member path in the wheel.
    pub(crate) member: String,
    pub(crate) text: String,
}

impl HelperFile {
    /// What the helper's messages name: its package, or for `_<module>_cuda_libs` the module
    /// (the helper's own `_OWNER`); a helper older than `_OWNER`: its module name.
    pub(crate) fn owner(&self) -> String {
        if !self.text.lines().any(|l| l.starts_with("_OWNER = ")) {
            return self.name.clone();
        }
        match self.name.rsplit_once('.') {
            Some((package, _)) => package.to_string(),
            None => self
                .name
                .strip_prefix('_')
                .and_then(|n| n.strip_suffix("_cuda_libs"))
                .unwrap_or(&self.name)
                .to_string(),
        }
    }

    /// `DRIVER_FLOORS`: (reason, (major, minor)) each; lines it cannot read are left out.
    pub(crate) fn floors(&self) -> Vec<(String, (u32, u32))> {
        let mut lines = self.text.lines().skip_while(|l| *l != "DRIVER_FLOORS = [");
        lines.next();
        lines
            .take_while(|l| *l != "]")
            .filter_map(floor_line)
            .collect()
    }
}

/// `    ("reason", (13, 0)),` -> ("reason", (13, 0)).
fn floor_line(line: &str) -> Option<(String, (u32, u32))> {
    let inner = line.trim().strip_prefix('(')?.strip_suffix("),")?;
    let (quoted, version) = inner.rsplit_once(", (")?;
    let (major, minor) = version.strip_suffix(')')?.split_once(", ")?;
    Some((unquote(quoted)?, (major.parse().ok()?, minor.parse().ok()?)))
}

/// A string literal as Rust's `{:?}` writes it, read back.
fn unquote(quoted: &str) -> Option<String> {
    let body = quoted.strip_prefix('"')?.strip_suffix('"')?;
    let mut out = String::with_capacity(body.len());
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next()? {
            'n' => out.push('\n'),
            't' => out.push('\t'),
            'r' => out.push('\r'),
            '0' => out.push('\0'),
            'u' => {
                let hex: String = chars.by_ref().skip(1).take_while(|c| *c != '}').collect();
                out.push(char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?);
            }
            other => out.push(other),
        }
    }
    Some(out)
}

/// The helpers in `wheel`, by member name.
pub(crate) fn of_wheel(wheel: &Path) -> Result<Vec<HelperFile>, CliError> {
    let bad = |reason: String| CliError::Wheel {
        wheel: wheel.display().to_string(),
        reason,
    };
    let file = std::fs::File::open(wheel).map_err(|e| bad(e.to_string()))?;
    let mut zip = zip::ZipArchive::new(file).map_err(|e| bad(e.to_string()))?;
    let mut names: Vec<String> = zip.file_names().map(String::from).collect();
    names.sort();
    let mut out = Vec::new();
    for member in names {
        let Some(name) = helper_name(&member) else {
            continue;
        };
        let mut text = String::new();
        zip.by_name(&member)
            .map_err(|e| bad(e.to_string()))?
            .read_to_string(&mut text)
            .map_err(|e| bad(format!("{member}: {e}")))?;
        // A wheel holding several majors: `_cuda_libs.py` stands for the chosen major's.
        if text.contains(SEVERAL_MARKER) {
            continue;
        }
        out.push(HelperFile { name, member, text });
    }
    Ok(out)
}

/// The line `package::several`'s `_cuda_libs.py` (the chosen major's helper) holds.
const SEVERAL_MARKER: &str = "\n# cudawheel: several CUDA majors\n";

/// The module name of the helper at `member`: `pkg/_cuda_libs.py`, `pkg/_cuda_libs_cu12.py`
/// (one major's, in a wheel holding several) and `_<module>_cuda_libs.py`; `None` for others.
fn helper_name(member: &str) -> Option<String> {
    match member.split_once('/') {
        Some((top, "_cuda_libs.py")) => Some(format!("{top}._cuda_libs")),
        Some((top, file)) => {
            let major = file.strip_prefix("_cuda_libs_cu")?.strip_suffix(".py")?;
            major
                .parse::<u32>()
                .ok()
                .map(|_| format!("{top}.{}", file.trim_end_matches(".py")))
        }
        None if member.starts_with('_') && member.ends_with("_cuda_libs.py") => {
            Some(member.trim_end_matches(".py").to_string())
        }
        None => None,
    }
}

/// `check WHEEL`: (module name, text, origin) of each helper in `wheel` (the path as given),
/// for the running interpreter to execute (`cudawheel/_check.py`).
pub(crate) fn helper_sources(wheel: &str) -> Result<Vec<(String, String, String)>, CliError> {
    let mut out: Vec<(String, String, String)> = of_wheel(Path::new(wheel))?
        .into_iter()
        .map(|h| (h.name, h.text, format!("{wheel}/{}", h.member)))
        .collect();
    out.extend(
        selectors(Path::new(wheel))?
            .into_iter()
            .map(|(member, text)| {
                let name = member.trim_end_matches(".py").replace('/', ".");
                (name, text, format!("{wheel}/{member}"))
            }),
    );
    Ok(out)
}

/// A wheel holding several CUDA majors: each package's `_cuda_select.py` (member, text).
fn selectors(wheel: &Path) -> Result<Vec<(String, String)>, CliError> {
    let bad = |reason: String| CliError::Wheel {
        wheel: wheel.display().to_string(),
        reason,
    };
    let file = std::fs::File::open(wheel).map_err(|e| bad(e.to_string()))?;
    let mut zip = zip::ZipArchive::new(file).map_err(|e| bad(e.to_string()))?;
    let mut members: Vec<String> = zip
        .file_names()
        .filter(|m| {
            m.split_once('/')
                .is_some_and(|(_, f)| f == "_cuda_select.py")
        })
        .map(String::from)
        .collect();
    members.sort();
    let mut out = Vec::new();
    for member in members {
        let mut text = String::new();
        zip.by_name(&member)
            .map_err(|e| bad(e.to_string()))?
            .read_to_string(&mut text)
            .map_err(|e| bad(format!("{member}: {e}")))?;
        out.push((member, text));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn helper(name: &str, text: &str) -> HelperFile {
        HelperFile {
            name: name.into(),
            member: String::new(),
            text: text.into(),
        }
    }

    #[test]
    fn floors_are_read_back_as_written() {
        let reason = "built with CUDA 13.5, which runs on \"any\" driver\\ for CUDA 13.0 or newer";
        let text = format!("x = 1\nDRIVER_FLOORS = [\n    ({reason:?}, (13, 0)),\n    (\"b\", (12, 8)),\n]\nY = [\n    (\"c\", (1, 1)),\n]\n");
        let h = helper("saxpy._cuda_libs", &text);
        assert_eq!(
            h.floors(),
            vec![(reason.to_string(), (13, 0)), ("b".into(), (12, 8))]
        );
        assert_eq!(
            unquote(&format!("{:?}", "tab\t\u{1b}é")),
            Some("tab\t\u{1b}é".into())
        );
    }

    #[test]
    fn one_major_s_helper_is_a_helper_and_the_alias_is_not_read_by_name() {
        assert_eq!(
            helper_name("saxpy/_cuda_libs_cu12.py").as_deref(),
            Some("saxpy._cuda_libs_cu12")
        );
        assert_eq!(
            helper_name("saxpy/_cuda_libs.py").as_deref(),
            Some("saxpy._cuda_libs")
        );
        assert_eq!(
            helper_name("_top_cuda_libs.py").as_deref(),
            Some("_top_cuda_libs")
        );
        assert_eq!(helper_name("saxpy/_cuda_libs_cux.py"), None);
        assert_eq!(helper_name("saxpy/_cuda_select.py"), None);
        assert_eq!(
            helper("saxpy._cuda_libs_cu12", "_OWNER = 1\n").owner(),
            "saxpy"
        );
    }

    #[test]
    fn owner_is_the_package_or_the_module() {
        let text = "_OWNER = __package__ or __name__[1:-len(\"_cuda_libs\")]\n";
        assert_eq!(helper("saxpy._cuda_libs", text).owner(), "saxpy");
        assert_eq!(helper("_topmod_cuda_libs", text).owner(), "topmod");
        assert_eq!(helper("_topmod_cuda_libs", "").owner(), "_topmod_cuda_libs");
    }
}
