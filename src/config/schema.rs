//! The JSON schema of `[tool.cudawheel]` and the configuration reference (Markdown), both made
//! from the key tables the parser uses (`keys::TOP_KEYS`, `TARGET_KEYS`, `LIBRARY_KEYS`, each
//! key declared once in src/config/keys.rs). Checked-in copies
//! (`python/cudawheel/resources/cudawheel.schema.json`, `docs/reference/configuration.md`)
//! are compared with these by `cargo test`; regenerate them with
//! `CUDAWHEEL_BLESS=1 cargo test schema`.

use serde_json::{json, Map, Value};

use super::keydef::{KeyDef, Ty};
use super::keys::{target_keys, LIBRARY_KEYS, TOP_KEYS};

fn ty_schema(ty: Ty) -> Value {
    let strings = json!({"type": "array", "items": {"type": "string"}});
    match ty {
        Ty::Str => json!({"type": "string"}),
        Ty::Pattern(p) => json!({"type": "string", "pattern": p}),
        Ty::Choice(c) => json!({"type": "string", "enum": c}),
        Ty::PositiveInt => json!({"type": "integer", "minimum": 1}),
        Ty::Size => json!({"oneOf": [
            {"type": "integer", "minimum": 1},
            {"type": "string", "pattern": "^ *[0-9]+(\\.[0-9]+)? *([kKmMgG]i?[bB]|[kKmMgGbB])? *$"}
        ]}),
        Ty::Bool => json!({"type": "boolean"}),
        Ty::List => strings,
        Ty::ListOrStr | Ty::SemicolonList => json!({"oneOf": [{"type": "string"}, strings]}),
        Ty::CudaMajor => json!({"oneOf": [
            {"type": "integer", "enum": [11, 12, 13]},
            {"type": "string", "pattern": "^(auto|1[1-3]( *; *1[1-3])*)$"},
            {"type": "array", "minItems": 1, "uniqueItems": true, "items": {"oneOf": [
                {"type": "integer", "enum": [11, 12, 13]},
                {"type": "string", "enum": ["11", "12", "13"]}
            ]}}
        ]}),
    }
}

fn properties<'a>(keys: impl Iterator<Item = &'a KeyDef>) -> Map<String, Value> {
    keys.map(|k| {
        let mut s = ty_schema(k.ty);
        let obj = s.as_object_mut().expect("schemas are objects");
        obj.insert(
            "description".into(),
            Value::String(format!("{} Default: {}.", k.doc, k.default)),
        );
        (k.name.to_string(), s)
    })
    .collect()
}

fn target(kind: &str) -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": target_keys(kind).filter(|k| k.required).map(|k| k.name).collect::<Vec<_>>(),
        "properties": properties(target_keys(kind)),
    })
}

/// The JSON schema (draft 7, as validate-pyproject uses) of `[tool.cudawheel]`.
pub(crate) fn schema() -> Value {
    let mut props = properties(TOP_KEYS.iter());
    props.insert(
        "extension".into(),
        json!({
            "type": "array",
            "description": "[[tool.cudawheel.extension]]: CPython extension modules to build.",
            "items": {"$ref": "#/definitions/extension"},
        }),
    );
    props.insert(
        "shared-library".into(),
        json!({
            "type": "array",
            "description": "[[tool.cudawheel.shared-library]]: plain shared libraries shipped in the wheel.",
            "items": {"$ref": "#/definitions/shared-library"},
        }),
    );
    props.insert(
        "toolkits".into(),
        json!({
            "type": "object",
            "description": "[tool.cudawheel.toolkits]: CUDA major -> the toolkit folder (absolute) that major builds with.",
            "propertyNames": {"enum": ["11", "12", "13"]},
            "additionalProperties": {"type": "string", "pattern": "^/"},
        }),
    );
    props.insert(
        "library".into(),
        json!({
            "type": "object",
            "description": "[tool.cudawheel.library.<name>]: a library outside the catalogue, or an override.",
            "additionalProperties": {"$ref": "#/definitions/library"},
        }),
    );
    json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "$id": "https://github.com/cudawheel/cudawheel/cudawheel.schema.json",
        "title": "[tool.cudawheel]",
        "description": "Configuration of the cudawheel build backend (CUDA extension wheels).",
        "type": "object",
        "additionalProperties": false,
        "properties": props,
        "definitions": {
            "extension": target("extension"),
            "shared-library": target("shared-library"),
            "library": {
                "type": "object",
                "additionalProperties": false,
                "properties": properties(LIBRARY_KEYS.iter()),
            },
        },
    })
}

/// `schema()` as the checked-in file holds it (pretty, trailing newline).
pub(crate) fn schema_text() -> String {
    let mut s = serde_json::to_string_pretty(&schema()).expect("a JSON value serializes");
    s.push('\n');
    s
}

fn table(out: &mut String, keys: &[&KeyDef], env: bool) {
    if env {
        out.push_str("| key | type | default | `-C` / environment | meaning |\n| --- | --- | --- | --- | --- |\n");
    } else {
        out.push_str("| key | type | default | meaning |\n| --- | --- | --- | --- |\n");
    }
    for k in keys {
        let ty = match k.ty {
            Ty::Str => "string".to_string(),
            Ty::Pattern(_) => "string".to_string(),
            Ty::Choice(c) => c
                .iter()
                .map(|v| format!("`\"{v}\"`"))
                .collect::<Vec<_>>()
                .join(" \\| "),
            Ty::PositiveInt => "integer ≥ 1".to_string(),
            Ty::Size => "integer (bytes) or string (`\"100MB\"`, `\"50 MiB\"`)".to_string(),
            Ty::Bool => "boolean".to_string(),
            Ty::List => "list of strings".to_string(),
            Ty::ListOrStr => "list of strings or `;`-separated string".to_string(),
            Ty::SemicolonList => "list of strings or `;`-separated string".to_string(),
            Ty::CudaMajor => "`11` \\| `12` \\| `13` \\| `\"auto\"` \\| list of majors".to_string(),
        };
        let default = k.default.replace('|', "\\|");
        let doc = k.doc.replace('|', "\\|");
        if env {
            let var = k.env_var();
            out.push_str(&format!(
                "| `{}` | {ty} | {default} | `-C {}=…`, `{var}` | {doc} |\n",
                k.name, k.name
            ));
        } else {
            out.push_str(&format!("| `{}` | {ty} | {default} | {doc} |\n", k.name));
        }
    }
}

/// docs/reference/configuration.md.
pub(crate) fn reference_markdown() -> String {
    let mut out = String::from(
        "<!-- Generated from src/config/keys.rs by `CUDAWHEEL_BLESS=1 cargo test schema`; do not edit. -->\n\
         # `[tool.cudawheel]` reference\n\n\
         Every top-level key can also be given as a PEP 517 config setting (`-C key=value` or\n\
         `-C cudawheel.key=value`) or an environment variable `CUDAWHEEL_<KEY>`. Precedence: config\n\
         setting > environment > pyproject.toml; list values from `-C`/environment are `;`-separated.\n\
         Unknown keys are an error with a \"did you mean\" suggestion. The same definitions give the\n\
         JSON schema `python/cudawheel/resources/cudawheel.schema.json`, which validate-pyproject\n\
         picks up when cudawheel is installed.\n\n\
         ## `[tool.cudawheel]`\n\n",
    );
    table(&mut out, &TOP_KEYS.iter().collect::<Vec<_>>(), true);
    out.push_str("\n## `[[tool.cudawheel.extension]]`\n\nA CPython extension module.\n\n");
    table(
        &mut out,
        &target_keys("extension").collect::<Vec<_>>(),
        false,
    );
    out.push_str(
        "\n## `[[tool.cudawheel.shared-library]]`\n\nA plain shared library (`lib<name>.so`, SONAME `lib<name>.so`) shipped in the wheel.\n\n",
    );
    table(
        &mut out,
        &target_keys("shared-library").collect::<Vec<_>>(),
        false,
    );
    out.push_str(
        "\n## `[tool.cudawheel.library.<name>]`\n\nA library outside the built-in catalogue, or an override of a catalogued one (field by field).\n\n",
    );
    table(&mut out, &LIBRARY_KEYS.iter().collect::<Vec<_>>(), false);
    out.push_str(
        "\n## `[tool.cudawheel.toolkits]`\n\nWith `cuda` listing several majors: the CUDA toolkit folder of a major (`\"12\" = \"/opt/cuda-12.4\"`, an absolute path, the folder holding `bin/nvcc` as `CUDA_HOME` names it). That major's build takes this folder's nvcc first; a major without an entry is found by discovery as for `cuda = <major>`. A single `cuda` major takes its entry too. Only in pyproject.toml.\n",
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// Compares a checked-in generated file with its generator; `CUDAWHEEL_BLESS=1` rewrites it.
    fn check_generated(rel: &str, expected: &str) {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
        if std::env::var_os("CUDAWHEEL_BLESS").is_some() {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, expected).unwrap();
        }
        let actual = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            actual == expected,
            "{rel} is out of date with src/config/keys.rs; run `CUDAWHEEL_BLESS=1 cargo test schema` and commit it"
        );
    }

    #[test]
    fn schema_file_is_in_sync() {
        check_generated(
            "python/cudawheel/resources/cudawheel.schema.json",
            &schema_text(),
        );
    }

    #[test]
    fn configuration_reference_is_in_sync() {
        check_generated("docs/reference/configuration.md", &reference_markdown());
    }

    #[test]
    fn schema_covers_every_key_the_parser_accepts() {
        let s = schema();
        for k in TOP_KEYS {
            assert!(s["properties"][k.name].is_object(), "{}", k.name);
        }
        for k in ["extension", "shared-library", "library"] {
            assert!(s["properties"][k].is_object(), "{k}");
        }
        assert!(s["definitions"]["extension"]["properties"]["bindings"].is_object());
        assert!(s["definitions"]["shared-library"]["properties"]["bindings"].is_null());
        assert!(s["definitions"]["shared-library"]["properties"]["destination"].is_object());
    }
}
