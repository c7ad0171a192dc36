//! The configuration keys as the config target's dictionary and seeds need them: made from the
//! key tables (`config::TOP_KEYS`, `TARGET_KEYS`, `LIBRARY_KEYS`), so a key added there reaches
//! the fuzzer (tests/fuzz_regressions.rs writes and checks fuzz/config.dict and
//! fuzz/seeds/config-keys/ from `config_keys`).

use crate::config::{KeyDef, Ty, LIBRARY_KEYS, TARGET_KEYS, TOP_KEYS, TORCH_ARCHS_ENV};

/// One key of `[tool.cudawheel]` or of one of its tables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigKey {
    /// The table it is written in: `tool.cudawheel`, `[[tool.cudawheel.extension]]`,
    /// `[[tool.cudawheel.shared-library]]` or `[tool.cudawheel.library.<name>]`, as a TOML
    /// header (`""` for the top level, whose header is `[tool.cudawheel]`).
    pub table: &'static str,
    pub name: &'static str,
    /// Values of its type, as TOML (`"auto"`, `13`, `["80", "90a"]`): a valid one first.
    pub toml_values: Vec<String>,
    /// The same values as a `-C` setting or an environment variable spells them (a top-level
    /// key's; empty for the keys of tables, which only pyproject.toml sets).
    pub raw_values: Vec<String>,
    /// Its environment variables, in precedence order: `CUDAWHEEL_<KEY>`, then those above and
    /// below pyproject.toml (a top-level key's; else empty).
    pub env: Vec<String>,
}

/// Every key, top-level first, then the extension's, the shared library's and the library's;
/// with, last, a pseudo-key for each variable the configuration reads that belongs to no key
/// (`TORCH_CUDA_ARCH_LIST`, `SOURCE_DATE_EPOCH`: `table` and `name` empty).
pub fn config_keys() -> Vec<ConfigKey> {
    let mut out: Vec<ConfigKey> = TOP_KEYS
        .iter()
        .map(|k| {
            let values = values(k);
            ConfigKey {
                table: "",
                name: k.name,
                toml_values: values.iter().map(toml_text).collect(),
                raw_values: values.iter().map(raw_text).collect(),
                env: std::iter::once(k.env_var())
                    .chain(k.env_above.iter().chain(k.env_below).map(|v| v.to_string()))
                    .collect(),
            }
        })
        .collect();
    let tables = [
        (
            "[[tool.cudawheel.extension]]",
            Some("extension"),
            TARGET_KEYS,
        ),
        (
            "[[tool.cudawheel.shared-library]]",
            Some("shared-library"),
            TARGET_KEYS,
        ),
        ("[tool.cudawheel.library.demo]", None, LIBRARY_KEYS),
    ];
    for (table, kind, keys) in tables {
        for k in keys
            .iter()
            .filter(|k| kind.is_none() || k.only_in.is_none_or(|o| Some(o) == kind))
        {
            out.push(ConfigKey {
                table,
                name: k.name,
                toml_values: values(k).iter().map(toml_text).collect(),
                raw_values: Vec::new(),
                env: Vec::new(),
            });
        }
    }
    for (var, raw) in [
        (TORCH_ARCHS_ENV, "8.0 8.6+PTX"),
        ("SOURCE_DATE_EPOCH", "1700000000"),
    ] {
        out.push(ConfigKey {
            table: "",
            name: "",
            toml_values: Vec::new(),
            raw_values: vec![raw.to_string()],
            env: vec![var.to_string()],
        });
    }
    out
}

/// A value of `k`'s type: a valid one first, then others of its type.
#[derive(Debug, Clone)]
enum Example {
    Str(String),
    Int(i64),
    Bool(bool),
    List(Vec<String>),
}

fn toml_text(v: &Example) -> String {
    match v {
        Example::Str(s) => toml::Value::String(s.clone()).to_string(),
        Example::Int(i) => i.to_string(),
        Example::Bool(b) => b.to_string(),
        Example::List(items) => {
            toml::Value::Array(items.iter().cloned().map(toml::Value::String).collect()).to_string()
        }
    }
}

fn raw_text(v: &Example) -> String {
    match v {
        Example::Str(s) => s.clone(),
        Example::Int(i) => i.to_string(),
        Example::Bool(b) => b.to_string(),
        Example::List(items) => items.join(";"),
    }
}

/// The documented default, when it is a quoted string (`"auto"`, `"-cu{major}"`).
fn quoted_default(k: &KeyDef) -> Option<String> {
    let inner = k.default.strip_prefix('"')?.strip_suffix('"')?;
    (!inner.contains('"')).then(|| inner.to_string())
}

/// Values of a string key whose default is not one: what users write (a key missing here gets
/// `"demo"`, and tests/fuzz_regressions.rs's all-keys seed then fails when that is invalid).
fn string_examples(name: &str) -> &'static [&'static str] {
    match name {
        "torch-version" => &[">=2.11", "==2.15.*", ">=2.6,<2.11"],
        "torch-stable-abi" => &["2.10", "2.15"],
        "version-file" => &["pkg/__init__.py"],
        "host-compiler" => &["g++", "clang++ -fno-plt"],
        "compiler-launcher" => &["ccache", "sccache"],
        "py-limited-api" => &["cp39", "cp312"],
        "max-memory" => &["8G", "512M", "1.5 GiB", "4096"],
        "variant-label" => &["cu13", "null"],
        "manylinux" => &["2_28", "2_17"],
        "name" => &["demo._core", "calc"],
        "destination" => &["demo/lib"],
        "pip-package" => &["nvidia-nvshmem-cu{major}"],
        "env-prefix" => &["NVSHMEM"],
        _ => &["demo"],
    }
}

/// Values of a list key.
fn list_examples(name: &str) -> Vec<Vec<String>> {
    let lists: &[&[&str]] = match name {
        "archs" => &[
            &["80", "90a"],
            &["8.6+PTX", "9.0a"],
            &["86-real", "90-virtual", "100f", "120a"],
            &["all-major"],
            &["native"],
            &["Ampere", "Hopper"],
        ],
        "variant" => &[
            &["cuda"],
            &[
                "nvidia :: sm_arch :: 90_real",
                "nvidia :: cuda_version_lower_bound :: 12.8",
            ],
        ],
        "sources" => &[&["csrc/*.cu", "csrc/bind.cpp"]],
        "cuda-libraries" => &[&["cublas", "demo"]],
        "link-with" => &[&["calc"]],
        "defines" => &[&["N=1", "DEBUG"]],
        "packages" => &[&["demo", "demo.sub"]],
        "headers" => &[&["nvshmem.h"]],
        "include-dirs" => &[&["include", "csrc/common"]],
        "shared" | "static" => &[&["nvshmem_host"]],
        "search" => &[&["/opt/nvshmem", "{major}"]],
        _ => &[&["-O3", "-lineinfo"]],
    };
    lists
        .iter()
        .map(|l| l.iter().map(|s| s.to_string()).collect())
        .collect()
}

/// Valid values of `k` first, then others of its type.
fn values(k: &KeyDef) -> Vec<Example> {
    let strings = |list: &[&str]| list.iter().map(|s| Example::Str(s.to_string())).collect();
    let mut out: Vec<Example> = match k.ty {
        Ty::Choice(names) => strings(names),
        Ty::Str | Ty::Pattern(_) => match quoted_default(k) {
            Some(d) => vec![Example::Str(d)],
            None => strings(string_examples(k.name)),
        },
        Ty::PositiveInt => vec![Example::Int(4), Example::Int(1)],
        Ty::Size => vec![
            Example::Int(100_000_000),
            Example::Str("100MB".into()),
            Example::Str("50 MiB".into()),
            Example::Str("1.5GB".into()),
        ],
        Ty::Bool => vec![Example::Bool(true), Example::Bool(false)],
        Ty::CudaMajor => vec![
            Example::Int(13),
            Example::Int(12),
            Example::Int(11),
            Example::Str("13".into()),
            Example::Str("auto".into()),
            Example::List(vec!["12".into(), "13".into()]),
        ],
        Ty::List | Ty::ListOrStr | Ty::SemicolonList => list_examples(k.name)
            .into_iter()
            .map(Example::List)
            .collect(),
    };
    if matches!(k.ty, Ty::ListOrStr | Ty::SemicolonList) {
        let joined: Vec<Example> = list_examples(k.name)
            .into_iter()
            .map(|l| Example::Str(l.join(if k.ty == Ty::SemicolonList { ";" } else { " " })))
            .collect();
        out.extend(joined);
    }
    out
}
