//! The variant part of the wheel audit (PEP 825): a variant wheel's label, its
//! `.dist-info/variant.json` and RECORD agree; and the naming facts later stages share (where
//! `variant.json` lives, how a file name splits; the label's spelling is `config::variant`'s).

use std::collections::BTreeSet;

use serde_json::Value;

pub(crate) use crate::config::variant::{label_ok, NULL_LABEL};
/// The member name inside `.dist-info`.
pub(crate) const DIST_INFO_FILE: &str = "variant.json";

/// The parts of a wheel file name: `(name, version, label)`; `label` is `None` for an
/// ordinary wheel. A build tag starts with a digit, a python tag never does (PEP 825).
pub(crate) fn split_wheel_name(filename: &str) -> Option<(&str, &str, Option<&str>)> {
    let stem = filename.strip_suffix(".whl")?;
    let parts: Vec<&str> = stem.split('-').collect();
    let label = match parts.len() {
        5 => None,
        6 if parts[2].starts_with(|c: char| c.is_ascii_digit()) => None,
        6 | 7 => Some(parts[parts.len() - 1]),
        _ => return None,
    };
    Some((parts[0], parts[1], label))
}

/// What `python -m cudawheel audit` checks in a variant wheel: the label is valid, the
/// wheel carries exactly one `.dist-info/variant.json` listed in RECORD, and that file
/// describes exactly this label (the null label with no properties, any other with some) and
/// declares a provider for every namespace it uses. `(problem, fix)` pairs.
pub(crate) fn audit(
    filename: &str,
    variant_json: Option<&[u8]>,
    record: &str,
    dist_info: &str,
) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut v = |problem: String, fix: &str| out.push((problem, fix.to_string()));
    let label = split_wheel_name(filename).and_then(|(_, _, l)| l);
    let member = format!("{dist_info}/{DIST_INFO_FILE}");
    let Some(label) = label else {
        if variant_json.is_some() {
            v(
                format!("has {member} but no variant label in its file name"),
                "build it as a variant (the label ends the file name) or without `variant`",
            );
        }
        return out;
    };
    if !label_ok(label) {
        v(
            format!("has the variant label {label:?}, which is not of [0-9a-z_.]"),
            "set a valid `variant-label`",
        );
    }
    let Some(bytes) = variant_json else {
        v(
            format!("is labelled {label:?} but has no {member}"),
            "build variant wheels with cudawheel's `variant` settings; do not rename wheels",
        );
        return out;
    };
    let listed = record
        .lines()
        .any(|l| l.split(',').next() == Some(member.as_str()));
    if !listed {
        v(
            format!("{member} is not listed in RECORD"),
            "let the build write it (do not add files to a finished wheel)",
        );
    }
    let parsed: Value = match serde_json::from_slice(bytes) {
        Ok(p) => p,
        Err(e) => {
            v(
                format!("{member} is not valid JSON: {e}"),
                "rebuild the wheel",
            );
            return out;
        }
    };
    let variants = parsed.get("variants").and_then(Value::as_object);
    let keys: Vec<&String> = variants.map(|m| m.keys().collect()).unwrap_or_default();
    if keys.len() != 1 || keys[0] != label {
        v(
            format!("{member} describes the variants {keys:?}, not exactly the file name's label {label:?}"),
            "do not rename variant wheels; set `variant-label` and rebuild",
        );
        return out;
    }
    let props = &variants.expect("checked above")[label];
    let count: usize = props
        .as_object()
        .map(|ns| {
            ns.values()
                .filter_map(Value::as_object)
                .flat_map(|f| f.values())
                .filter_map(Value::as_array)
                .map(Vec::len)
                .sum()
        })
        .unwrap_or(0);
    if (label == NULL_LABEL) != (count == 0) {
        v(
            format!("the variant {label:?} has {count} properties; the label `null` is for exactly the variant with none"),
            "use `null-variant = true` for a variant without properties, another label otherwise",
        );
    }
    let declared: BTreeSet<&str> = parsed
        .pointer("/default-priorities/namespace")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let providers: BTreeSet<&str> = parsed
        .get("providers")
        .and_then(Value::as_object)
        .map(|p| p.keys().map(String::as_str).collect())
        .unwrap_or_default();
    for ns in props.as_object().into_iter().flat_map(|m| m.keys()) {
        if !declared.contains(ns.as_str()) || !providers.contains(ns.as_str()) {
            v(
                format!("{member} uses the namespace `{ns}` without declaring it in `default-priorities.namespace` and `providers`"),
                "declare it in pyproject.toml's `[variant]` table",
            );
        }
    }
    out
}
