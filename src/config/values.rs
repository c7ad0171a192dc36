//! The checks of values that need more than a type: one function per kind of value, each
//! taking the present `Field` (the key declarations in `keys` say what an absent key means).

use std::fmt;
use std::str::FromStr;

use super::choices::{CudaChoice, Split, TargetCpu};
use super::error::ConfigError;
use super::field::{split_semicolons, Field};
use super::origin::Origin;

/// `cuda`: 11, 12, 13 (integer or string), "auto", or a list of distinct majors (a TOML array,
/// or `12;13` from `-C`/the environment: `majors`).
pub(super) fn cuda(f: &Field) -> Result<CudaChoice, ConfigError> {
    let value = match &f.value {
        toml::Value::Integer(i) => Some(*i),
        toml::Value::String(s) if s == "auto" => None,
        toml::Value::String(s) if s.contains(';') => return super::majors::parse_semicolons(f, s),
        toml::Value::String(s) => {
            Some(s.trim().parse::<i64>().map_err(|_| {
                f.invalid("expected a CUDA major version (11, 12 or 13) or \"auto\"")
            })?)
        }
        toml::Value::Array(items) => return super::majors::parse_list(f, items),
        _ => return Err(f.wrong_type("an integer (11, 12, 13) or \"auto\"")),
    };
    match value {
        None => Ok(CudaChoice::Auto),
        Some(m @ (11..=13)) => Ok(CudaChoice::Major(m as u32)),
        Some(_) => Err(f.invalid("supported CUDA majors are 11, 12 and 13")),
    }
}

/// `cuda-extra`: an extra name (PEP 685), kept as written (METADATA writes it normalized).
pub(super) fn extra_name(f: &Field) -> Result<String, ConfigError> {
    let s = f.string()?;
    let ok = |c: char| c.is_ascii_alphanumeric();
    if !s.starts_with(ok) || !s.ends_with(ok) || !s.chars().all(|c| ok(c) || "-_.".contains(c)) {
        return Err(f.invalid("an extra name is letters, digits, `-`, `_` and `.`, beginning and ending with a letter or digit (PEP 685), e.g. \"cuda_pip\""));
    }
    Ok(s)
}

/// `name-suffix`: letters, digits, `-`, `_`, `.` and `{major}`.
pub(super) fn name_suffix(f: &Field) -> Result<String, ConfigError> {
    let s = f.string()?;
    let probe = s.replace("{major}", "13");
    if !probe
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    {
        return Err(
            f.invalid("a name suffix may hold only letters, digits, `-`, `_`, `.` and `{major}`")
        );
    }
    Ok(s)
}

/// The top-level `archs`: a non-empty list (or string) of arch specs, parsed by the plan.
pub(super) fn archs(f: &Field) -> Result<Vec<String>, ConfigError> {
    arch_list(f, "[\"80\", \"90\"]")
}

/// A target's own `archs`.
pub(super) fn target_archs(f: &Field) -> Result<Vec<String>, ConfigError> {
    arch_list(f, "[\"90a\"]")
}

fn arch_list(f: &Field, example: &str) -> Result<Vec<String>, ConfigError> {
    let list = f.list_or_string()?;
    if list.is_empty() {
        return Err(f.invalid(format!("give at least one architecture, e.g. {example}")));
    }
    Ok(list)
}

/// `py-limited-api = "cp3N"` -> N.
pub(super) fn py_limited_api(f: &Field) -> Result<u32, ConfigError> {
    let s = f.string()?;
    s.strip_prefix("cp3")
        .and_then(|minor| minor.parse::<u32>().ok())
        .filter(|minor| *minor >= 2)
        .ok_or_else(|| f.invalid("expected a CPython tag such as \"cp39\""))
}

pub(super) fn jobs(f: &Field) -> Result<usize, ConfigError> {
    match &f.value {
        toml::Value::Integer(n) if *n >= 1 => Ok(*n as usize),
        toml::Value::Integer(_) => Err(f.invalid("expected a positive number of jobs")),
        _ => Err(f.wrong_type("a positive integer")),
    }
}

/// `max-memory` in bytes.
pub(super) fn max_memory(f: &Field) -> Result<u64, ConfigError> {
    let text = match &f.value {
        toml::Value::Integer(n) => n.to_string(),
        _ => f.string()?,
    };
    parse_memory(&text).ok_or_else(|| {
        f.invalid("expected an amount of memory such as \"8G\", \"512M\" or \"1.5GiB\" (a plain number is MiB)")
    })
}

/// `max-wheel-size` in bytes.
pub(super) fn max_wheel_size(f: &Field) -> Result<u64, ConfigError> {
    let text = match &f.value {
        toml::Value::Integer(n) => n.to_string(),
        _ => f.string()?,
    };
    parse_size(&text).ok_or_else(|| {
        f.invalid("expected a size such as 100000000, \"100MB\" or \"50 MiB\" (at least 1 byte)")
    })
}

/// A string that is not blank.
pub(super) fn non_empty(f: &Field) -> Result<String, ConfigError> {
    let s = f.string()?;
    if s.trim().is_empty() {
        return Err(f.invalid("must not be empty"));
    }
    Ok(s)
}

/// `torch-version`: PEP 440 specifiers, kept trimmed.
pub(super) fn torch_version(f: &Field) -> Result<String, ConfigError> {
    let s = f.string()?;
    let spec = s.trim();
    pep440_rs::VersionSpecifiers::from_str(spec).map_err(|e| {
        f.invalid(format!(
            "expected PEP 440 version specifiers such as \"==2.15.*\" or \">=2.11\" ({e})"
        ))
    })?;
    Ok(spec.to_string())
}

/// `torch-stable-abi`: `"2.10"` -> `(2, 10)`, the oldest torch a stable-ABI extension supports.
/// 2.10 is the first release whose stable ABI is versioned (`TORCH_TARGET_VERSION`).
pub(super) fn torch_stable_abi(f: &Field) -> Result<(u64, u64), ConfigError> {
    let s = f.string()?;
    let parsed = s
        .trim()
        .split_once('.')
        .and_then(|(a, b)| Some((a.parse::<u64>().ok()?, b.parse::<u64>().ok()?)));
    match parsed {
        Some(v) if v >= (2, 10) => Ok(v),
        Some(_) => Err(f.invalid(
            "the stable ABI is versioned from torch 2.10 on: give \"2.10\" or a later release",
        )),
        None => Err(f.invalid(
            "expected the oldest torch release the extension supports, as \"2.10\" (major.minor)",
        )),
    }
}

/// `variant`: `"cuda"` or properties, a list or one `;`-separated string.
pub(super) fn variant(f: &Field) -> Result<Vec<String>, ConfigError> {
    let list = match &f.value {
        toml::Value::String(s) => split_semicolons(s),
        _ => f.list()?,
    };
    if list.is_empty() {
        return Err(
            f.invalid("give \"cuda\" or at least one \"namespace :: feature :: value\" property")
        );
    }
    Ok(list)
}

/// `target`, as its spelling.
pub(super) fn target(f: &Field) -> Result<&'static str, ConfigError> {
    f.choice::<TargetCpu>().map(TargetCpu::name)
}

/// `split`: where `"library"` was set; `None` for `"none"`.
pub(super) fn split(f: &Field) -> Result<Option<Origin>, ConfigError> {
    Ok((f.choice::<Split>()? == Split::Library).then(|| f.origin.clone()))
}

/// A glibc version `2.N`, the target of `manylinux = "2_N"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Glibc {
    pub(crate) major: u32,
    pub(crate) minor: u32,
}

impl fmt::Display for Glibc {
    /// `2.28`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// The oldest glibc a CUDA wheel can target: NVIDIA's runtime wheels are manylinux_2_17.
pub(crate) const OLDEST_MANYLINUX: u32 = 17;

/// The glibc `target = "aarch64"` builds for when `manylinux` is unset: NVIDIA's aarch64 wheels
/// of cuBLAS and friends are manylinux_2_27/2_28.
pub(crate) const AARCH64_MANYLINUX: u32 = 28;

/// `manylinux = "2_N"`.
pub(super) fn manylinux(f: &Field) -> Result<Glibc, ConfigError> {
    let text = f.string()?;
    let minor = text
        .strip_prefix("2_")
        .and_then(|m| m.parse::<u32>().ok())
        .ok_or_else(|| {
            let hint = match text.strip_prefix("manylinux") {
                Some(rest) if rest.trim_start_matches('_').starts_with("2_") => {
                    format!(" (write {:?})", rest.trim_start_matches('_'))
                }
                Some("2014") => " (manylinux2014 is \"2_17\")".to_string(),
                _ => String::new(),
            };
            f.invalid(format!(
                "expected a glibc version as \"2_N\", e.g. \"2_28\" or \"2_17\"{hint}"
            ))
        })?;
    if minor < OLDEST_MANYLINUX {
        return Err(f.invalid(format!(
            "the oldest glibc a CUDA wheel can target is 2.{OLDEST_MANYLINUX} (NVIDIA's runtime wheels are manylinux_2_{OLDEST_MANYLINUX}): use \"2_{OLDEST_MANYLINUX}\" or newer"
        )));
    }
    Ok(Glibc { major: 2, minor })
}

/// `"8G"`, `"512M"`, `"1.5GiB"`, `"2048"` (MiB) -> bytes.
pub(crate) fn parse_memory(text: &str) -> Option<u64> {
    let t = text.trim();
    let digits = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let number: f64 = t[..digits].parse().ok()?;
    let unit = t[digits..]
        .trim()
        .trim_end_matches('B')
        .trim_end_matches('i');
    let scale: f64 = match unit.to_ascii_uppercase().as_str() {
        "" | "M" => 1024.0 * 1024.0,
        "K" => 1024.0,
        "G" => 1024.0 * 1024.0 * 1024.0,
        "T" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    let bytes = number * scale;
    (bytes >= 1.0 && bytes.is_finite()).then_some(bytes as u64)
}

/// PyPI's default upload limit per file, the default `max-wheel-size`.
pub(crate) const MAX_WHEEL_SIZE: u64 = 100_000_000;

/// `100000000`, `"100MB"`, `"50 MiB"`, `"1.5GB"`, `"500kB"` -> bytes (k/M/G decimal as PyPI
/// counts, KiB/MiB/GiB binary). `None` for anything else or zero.
pub(crate) fn parse_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let digits = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let number: f64 = t[..digits].parse().ok()?;
    let scale: f64 = match t[digits..].trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kb" => 1e3,
        "m" | "mb" => 1e6,
        "g" | "gb" => 1e9,
        "kib" => 1024.0,
        "mib" => 1024.0 * 1024.0,
        "gib" => 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    let bytes = (number * scale).round();
    (1.0..1e19).contains(&bytes).then_some(bytes as u64)
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn max_wheel_size_spellings() {
        assert_eq!(parse_size("100000000"), Some(100_000_000));
        assert_eq!(parse_size("100MB"), Some(100_000_000));
        assert_eq!(parse_size("110 MB"), Some(110_000_000));
        assert_eq!(parse_size("50 MiB"), Some(50 << 20));
        assert_eq!(parse_size("1.5GB"), Some(1_500_000_000));
        assert_eq!(parse_size("5kB"), Some(5_000));
        assert_eq!(parse_size("0"), None);
        assert_eq!(parse_size("huge"), None);
        assert_eq!(parse_size("10 parsecs"), None);
    }
}
