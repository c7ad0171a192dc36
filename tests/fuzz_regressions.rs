//! Replays every input the fuzzers once crashed on (tests/fuzz-regressions/<target>/), the
//! fuzz seeds and the packed corpora through the fuzz targets' code (`cudawheel::fuzz_entry`):
//! none may panic. Also keeps the generated fuzz inputs current (`generated` below): the config
//! target's dictionary and per-key seeds follow the key table, the wheel target's seeds the ELF
//! seeds. scripts/dev/fuzz.sh says how the inputs were found.

use std::path::{Path, PathBuf};

fn inputs(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.retain(|p| p.is_file() && p.file_name().is_some_and(|n| n != "README.md"));
    files.sort();
    files
}

fn replay(target: &str, run: fn(&[u8]) -> bool) -> (usize, usize) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut accepted = 0;
    let mut total = 0;
    for dir in [
        root.join("tests/fuzz-regressions").join(target),
        root.join("fuzz/seeds").join(target),
        root.join("fuzz/seeds").join(format!("{target}-keys")),
    ] {
        for file in inputs(&dir) {
            let data = std::fs::read(&file).unwrap();
            let ok = std::panic::catch_unwind(|| run(&data))
                .unwrap_or_else(|_| panic!("{} panics", file.display()));
            accepted += usize::from(ok);
            total += 1;
        }
    }
    (accepted, total)
}

#[test]
fn config_inputs_never_panic() {
    let (accepted, total) = replay("config", cudawheel::fuzz_entry::config);
    // Some seeds are valid configurations, the regression inputs are not.
    assert!(accepted >= 1 && total > accepted, "{accepted} of {total}");
}

#[test]
fn elf_inputs_never_panic() {
    let (accepted, total) = replay("elf", cudawheel::fuzz_entry::elf);
    assert!(accepted >= 5, "{accepted} of {total}");
}

#[test]
fn wheel_inputs_never_panic() {
    let (accepted, total) = replay("wheel", cudawheel::fuzz_entry::wheel);
    // The seeds are readable wheels; the regression inputs need not be.
    assert!(accepted >= 4, "{accepted} of {total}");
}

/// Every top-level key, every key of each table, with a valid value: the configuration is
/// accepted, so every key's reader ran on a value (and on the fuzzer's mutations of it).
#[test]
fn the_all_keys_seed_is_a_valid_configuration() {
    let data = fuzz_inputs::config_seeds()
        .into_iter()
        .find(|(name, _)| name == "all-keys.toml")
        .unwrap()
        .1;
    assert!(cudawheel::fuzz_entry::config(&data));
    for key in cudawheel::fuzz_entry::config_keys() {
        let line = format!("\n{} = ", key.name);
        let left_out = key.name.is_empty()
            || fuzz_inputs::FILE_KEYS.contains(&key.name)
            || fuzz_inputs::EXCLUDED_BY_VARIANT.contains(&key.name);
        assert!(
            left_out || String::from_utf8_lossy(&data).contains(&line),
            "{line}"
        );
    }
}

/// fuzz/config.dict, fuzz/seeds/config-keys/ and fuzz/seeds/wheel/ are what
/// `fuzz_inputs` makes of the key table and the ELF seeds. After adding or changing a key:
/// `CUDAWHEEL_BLESS_FUZZ=1 cargo test --test fuzz_regressions generated` rewrites them.
#[test]
fn generated_fuzz_inputs_are_current() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let bless = std::env::var_os("CUDAWHEEL_BLESS_FUZZ").is_some();
    let mut stale = Vec::new();
    let sets = [
        ("fuzz/seeds/config-keys", fuzz_inputs::config_seeds()),
        ("fuzz/seeds/wheel", fuzz_inputs::wheel_seeds(root)),
    ];
    let dict = root.join("fuzz/config.dict");
    let text = fuzz_inputs::config_dictionary().into_bytes();
    if std::fs::read(&dict).ok().as_ref() != Some(&text) {
        stale.push(dict.display().to_string());
        if bless {
            std::fs::write(&dict, &text).unwrap();
        }
    }
    for (dir, files) in sets {
        let dir = root.join(dir);
        let wanted: Vec<PathBuf> = files.iter().map(|(n, _)| dir.join(n)).collect();
        for old in inputs(&dir).into_iter().filter(|p| !wanted.contains(p)) {
            stale.push(old.display().to_string());
            if bless {
                std::fs::remove_file(&old).unwrap();
            }
        }
        for (name, bytes) in files {
            let path = dir.join(name);
            if std::fs::read(&path).ok() != Some(bytes.clone()) {
                stale.push(path.display().to_string());
                if bless {
                    std::fs::create_dir_all(&dir).unwrap();
                    std::fs::write(&path, bytes).unwrap();
                }
            }
        }
    }
    assert!(
        bless || stale.is_empty(),
        "generated fuzz inputs are stale: {stale:?}; rewrite them with `CUDAWHEEL_BLESS_FUZZ=1 cargo test --test fuzz_regressions generated`"
    );
}

/// Every input of a packed corpus (fuzz/corpus/<target>.tar.gz) through the target's code.
fn replay_corpus(target: &str, run: fn(&[u8]) -> bool) -> usize {
    use std::io::Read;
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(format!("{target}.tar.gz"));
    let file = std::fs::File::open(&path).unwrap();
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(file));
    let mut n = 0;
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        let name = entry.path().unwrap().display().to_string();
        let mut data = Vec::new();
        entry.read_to_end(&mut data).unwrap();
        std::panic::catch_unwind(|| run(&data))
            .unwrap_or_else(|_| panic!("{target} corpus input {name} panics"));
        n += 1;
    }
    n
}

#[test]
fn config_corpus_never_panics() {
    assert!(replay_corpus("config", cudawheel::fuzz_entry::config) > 100);
}

#[test]
fn elf_corpus_never_panics() {
    assert!(replay_corpus("elf", cudawheel::fuzz_entry::elf) > 100);
}

#[test]
fn wheel_corpus_never_panics() {
    assert!(replay_corpus("wheel", cudawheel::fuzz_entry::wheel) > 100);
}

/// The generated fuzz inputs: the config target's dictionary and per-key seeds (from
/// `fuzz_entry::config_keys`, the key table) and the wheel target's seeds.
mod fuzz_inputs {
    use std::io::Write;
    use std::path::Path;

    use cudawheel::fuzz_entry::{config_keys, wheel_text, ConfigKey};

    const PROJECT: &str = "[project]\nname = \"demo\"\nversion = \"1.0\"\n";
    const DYNAMIC_PROJECT: &str = "[project]\nname = \"demo\"\ndynamic = [\"version\"]\n";

    /// Keys whose value names a file of the project (which the fuzz target's project folder
    /// lacks): each in its own seed, left out of the all-keys seed, which must be valid.
    pub(crate) const FILE_KEYS: &[&str] = &["version-file"];
    /// Keys the all-keys seed's `variant` excludes (a variant build is not the null variant
    /// and keeps the project's name): each in its own seed, left out of the all-keys seed.
    pub(crate) const EXCLUDED_BY_VARIANT: &[&str] = &["null-variant", "name-suffix"];

    /// `[project]` keys (not in the key table: serde reads them).
    const PROJECT_KEYS: &[&str] = &[
        "name",
        "version",
        "description",
        "readme",
        "requires-python",
        "license",
        "license-files",
        "authors",
        "maintainers",
        "keywords",
        "classifiers",
        "urls",
        "scripts",
        "gui-scripts",
        "entry-points",
        "dependencies",
        "optional-dependencies",
        "dynamic",
        "import-names",
        "import-namespaces",
    ];

    /// What the required keys of a table need for one of its keys to be read.
    fn required(table: &str) -> &'static str {
        match table {
            "[[tool.cudawheel.extension]]" => "name = \"demo._core\"\nsources = [\"csrc/*.cu\"]\n",
            "[[tool.cudawheel.shared-library]]" => {
                "name = \"calc\"\nsources = [\"csrc/*.cu\"]\ndestination = \"demo/lib\"\n"
            }
            _ => "",
        }
    }

    fn slug(table: &str) -> &str {
        table
            .trim_matches(['[', ']'])
            .trim_start_matches("tool.cudawheel.")
            .split('.')
            .next()
            .unwrap_or("")
    }

    /// One seed per key and origin (pyproject.toml, `-C`, each environment variable), one
    /// per key of each table, one with every key at once, and the settings and variables of
    /// every top-level key at once.
    pub(crate) fn config_seeds() -> Vec<(String, Vec<u8>)> {
        let keys = config_keys();
        let mut out = Vec::new();
        let mut all = format!("{PROJECT}\n[tool.cudawheel]\n");
        let (mut settings, mut env) = (String::new(), String::new());
        for k in keys.iter().filter(|k| k.table.is_empty()) {
            if let Some(v) = k.toml_values.first() {
                let project = match FILE_KEYS.contains(&k.name) {
                    true => DYNAMIC_PROJECT,
                    false => {
                        if !EXCLUDED_BY_VARIANT.contains(&k.name) {
                            all.push_str(&format!("{} = {v}\n", k.name));
                        }
                        PROJECT
                    }
                };
                let seed = format!("{project}\n[tool.cudawheel]\n{} = {v}\n", k.name);
                out.push((format!("pyproject-{}.toml", k.name), seed.into_bytes()));
            }
            let raw = k.raw_values.last().cloned().unwrap_or_default();
            if !k.name.is_empty() {
                let line = format!("cudawheel.{}={raw}\n", k.name);
                settings.push_str(&line);
                out.push((
                    format!("setting-{}", k.name),
                    format!("{PROJECT}\0{line}").into_bytes(),
                ));
            }
            for var in &k.env {
                let line = format!("env:{var}={raw}\n");
                env.push_str(&line);
                out.push((
                    format!("env-{var}"),
                    format!("{PROJECT}\0{line}").into_bytes(),
                ));
            }
        }
        let mut tables = String::new();
        let mut last_table = "";
        for k in keys.iter().filter(|k| !k.table.is_empty()) {
            let Some(v) = k.toml_values.first() else {
                continue;
            };
            let body = required(k.table);
            let line = format!("{} = {v}\n", k.name);
            if k.table != last_table {
                tables.push_str(&format!("\n{}\n{body}", k.table));
                last_table = k.table;
            }
            // A required key is in `body` already, with a value.
            let prefix = format!("{} = ", k.name);
            let line = match body.lines().any(|l| l.starts_with(&prefix)) {
                true => String::new(),
                false => line,
            };
            tables.push_str(&line);
            let seed = format!("{PROJECT}\n{}\n{body}{line}", k.table);
            out.push((
                format!("{}-{}.toml", slug(k.table), k.name),
                seed.into_bytes(),
            ));
        }
        all.push_str(&tables);
        out.push(("all-keys.toml".into(), all.into_bytes()));
        out.push((
            "all-settings".into(),
            format!("{PROJECT}\0{settings}").into_bytes(),
        ));
        out.push(("all-env".into(), format!("{PROJECT}\0{env}").into_bytes()));
        out.sort();
        out
    }

    /// libFuzzer's dictionary syntax: one quoted entry per line.
    fn entry(token: &str) -> String {
        let mut out = String::from("\"");
        for b in token.bytes() {
            match b {
                b'"' | b'\\' => out.push_str(&format!("\\{}", b as char)),
                0x20..=0x7e => out.push(b as char),
                _ => out.push_str(&format!("\\x{b:02X}")),
            }
        }
        out.push('"');
        out
    }

    /// The config target's dictionary: headers, every key name (as written in pyproject.toml
    /// and as a `-C` setting), every example value (as TOML and as a string), every variable.
    pub(crate) fn config_dictionary() -> String {
        let mut tokens: Vec<String> = ["[project]", "[tool.cudawheel]", "[variant]", "\0", "env:"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        tokens.extend(PROJECT_KEYS.iter().map(|k| format!("\n{k} = ")));
        let keys: Vec<ConfigKey> = config_keys();
        for k in &keys {
            if !k.table.is_empty() {
                tokens.push(format!("\n{}\n", k.table));
            }
            if !k.name.is_empty() {
                tokens.push(format!("\n{} = ", k.name));
            }
            if k.table.is_empty() && !k.name.is_empty() {
                tokens.push(format!("\n{}=", k.name));
                tokens.push(format!("\ncudawheel.{}=", k.name));
            }
            tokens.extend(k.toml_values.iter().cloned());
            tokens.extend(k.raw_values.iter().cloned());
            tokens.extend(k.env.iter().map(|v| format!("\nenv:{v}=")));
        }
        let mut seen = std::collections::BTreeSet::new();
        tokens.retain(|t| !t.is_empty() && seen.insert(t.clone()));
        let mut out = String::from(
            "# The config target's dictionary, made from the key table by tests/fuzz_regressions.rs\n# (`CUDAWHEEL_BLESS_FUZZ=1 cargo test --test fuzz_regressions generated`): do not edit.\n",
        );
        for t in tokens {
            out.push_str(&entry(&t));
            out.push('\n');
        }
        out
    }

    const METADATA: &str = "Metadata-Version: 2.4\nName: demo\nVersion: 1.0\nRequires-Dist: numpy>=1.22; python_version > \"3.8\"\nRequires-Dist: nvidia-cuda-runtime==13.*\nRequires-Dist: torch>=2.11\nRequires-Dist: demo-lib-cu13==1.0\nRequires-Dist: cupy[all]; extra == \"cuda\"\n\nA description.\n";
    const WHEEL: &str = "Wheel-Version: 1.0\nGenerator: cudawheel\nRoot-Is-Purelib: false\nTag: cp311-cp311-manylinux_2_17_x86_64\n";
    const VARIANT_JSON: &str = r#"{"$schema": "https://variants-schema.wheelnext.dev/v0.0.3.json", "default-priorities": {"namespace": ["nvidia"]}, "providers": {"nvidia": {"requires": ["nvidia-variant-provider"], "plugin-api": "nvidia_variant_provider.plugin:NvidiaVariantPlugin"}}, "variants": {"cu13": {"nvidia": {"cuda_version_lower_bound": ["13.0"], "sm_arch": ["90_real"]}}}}"#;

    /// A wheel's members: its ELF files (from fuzz/seeds/elf), `__init__.py`, METADATA, WHEEL,
    /// RECORD (and `variant.json`).
    fn members(root: &Path, elfs: &[(&str, &str)], variant: bool) -> Vec<(String, Vec<u8>)> {
        let mut out: Vec<(String, Vec<u8>)> = elfs
            .iter()
            .map(|(member, seed)| {
                let bytes = std::fs::read(root.join("fuzz/seeds/elf").join(seed)).unwrap();
                (member.to_string(), bytes)
            })
            .collect();
        out.push((
            "demo/__init__.py".into(),
            b"from ._core import *\n".to_vec(),
        ));
        out.push(("demo-1.0.dist-info/METADATA".into(), METADATA.into()));
        out.push(("demo-1.0.dist-info/WHEEL".into(), WHEEL.into()));
        if variant {
            out.push((
                "demo-1.0.dist-info/variant.json".into(),
                VARIANT_JSON.into(),
            ));
        }
        let mut record: String = out
            .iter()
            .map(|(n, b)| format!("{n},sha256=x,{}\n", b.len()))
            .collect();
        record.push_str("demo-1.0.dist-info/RECORD,,\n");
        out.push(("demo-1.0.dist-info/RECORD".into(), record.into_bytes()));
        out
    }

    fn text(name: &str, members: &[(String, Vec<u8>)]) -> Vec<u8> {
        let refs: Vec<(&str, &[u8])> = members
            .iter()
            .map(|(n, b)| (n.as_str(), b.as_slice()))
            .collect();
        wheel_text(name, &refs)
    }

    /// The same members as a zip file (stored, 1980 timestamps: the same bytes every time).
    fn zip(members: &[(String, Vec<u8>)]) -> Vec<u8> {
        let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored);
        for (name, bytes) in members {
            zip.start_file(name.as_str(), options).unwrap();
            zip.write_all(bytes).unwrap();
        }
        zip.finish().unwrap().into_inner()
    }

    /// Wheels described as text (an ordinary, a variant, a `linux_*` one with a RUNPATH and a
    /// C++ module, one with a fatbin) and one as a zip file.
    pub(crate) fn wheel_seeds(root: &Path) -> Vec<(String, Vec<u8>)> {
        let ext = "demo/_core.cpython-311-x86_64-linux-gnu.so";
        let plain = members(root, &[(ext, "rpath_so.elf")], false);
        let gpu = members(
            root,
            &[(ext, "fatbin_so.elf"), ("demo/lib/libcalc.so", "obj_o.elf")],
            false,
        );
        let linux = members(
            root,
            &[(ext, "runpath_so.elf"), ("demo/_cxx.abi3.so", "cxx_so.elf")],
            false,
        );
        let variant = members(root, &[(ext, "rpath_so.elf")], true);
        let mut out = vec![
            (
                "manylinux.txt".into(),
                text("demo-1.0-cp311-cp311-manylinux_2_17_x86_64.whl", &plain),
            ),
            (
                "fatbin.txt".into(),
                text("demo-1.0-cp311-cp311-manylinux_2_28_x86_64.whl", &gpu),
            ),
            (
                "linux.txt".into(),
                text("demo-1.0-1-cp311-cp311-linux_x86_64.whl", &linux),
            ),
            (
                "variant.txt".into(),
                text(
                    "demo-1.0-cp311-cp311-manylinux_2_17_x86_64-cu13.whl",
                    &variant,
                ),
            ),
            (
                "aarch64.txt".into(),
                text("demo-1.0-cp312-abi3-manylinux_2_28_aarch64.whl", &plain),
            ),
            ("manylinux.whl".into(), zip(&plain)),
        ];
        out.sort();
        out
    }
}
