//! The variant a build makes (PEP 825), parsed and cross-checked once from `[tool.cudawheel]`
//! (`variant`, `variant-label`, `null-variant`, `name-suffix`) and pyproject.toml's top-level
//! `[variant]` table (providers and priorities, PEP 817). What a variant wheel holds
//! (`variant.json`, its label, derived properties) is `package::variants`'s.
//!
//! The PEPs are drafts: NVIDIA's provider defaults and the label's spelling live here and
//! nowhere else.

use std::collections::BTreeSet;

use serde_json::{json, Value};

use super::choices::DriverFloor;
pub(crate) use super::error::SpecError;
use super::keys::ToolConfig;
use super::origin::{Origin, Sourced};

/// The namespace of NVIDIA's provider, and the provider entry written when the project's
/// `[variant]` table declares none.
pub(crate) const NVIDIA_NAMESPACE: &str = "nvidia";
pub(crate) const NVIDIA_PROVIDER_REQUIRES: &str = "nvidia-variant-provider>=0.0.1,<1.0.0";
pub(crate) const NVIDIA_PLUGIN_API: &str = "nvidia_variant_provider.plugin:NvidiaVariantPlugin";
/// The label reserved for the zero-property variant.
pub(crate) const NULL_LABEL: &str = "null";

/// Whether `label` is a valid PEP 825 variant label.
pub(crate) fn label_ok(label: &str) -> bool {
    !label.is_empty()
        && label
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'.')
}

/// `namespace :: feature :: value`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Property {
    pub(crate) namespace: String,
    pub(crate) feature: String,
    pub(crate) value: String,
}

impl Property {
    pub(crate) fn parse(text: &str) -> Option<Property> {
        let parts: Vec<&str> = text.split("::").map(str::trim).collect();
        let [ns, feature, value] = parts[..] else {
            return None;
        };
        let name_ok = |s: &str| {
            !s.is_empty()
                && s.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        };
        let value_ok = !value.is_empty()
            && value
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'.');
        (name_ok(ns) && name_ok(feature) && value_ok).then(|| Property {
            namespace: ns.into(),
            feature: feature.into(),
            value: value.into(),
        })
    }
}

/// Where a variant's properties come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Properties {
    /// `variant = "cuda"`: from the toolkit and the GPU code in the built ELF files.
    Derived(DriverFloor),
    /// Written by the user.
    Explicit(Vec<Property>),
    /// `null-variant = true`: none.
    Null,
}

/// The variant a build makes: how its properties are found, its label (default: `cu<major>`
/// when derived), and the providers of the `[variant]` table (or NVIDIA's by default).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Spec {
    pub(crate) properties: Properties,
    pub(crate) label: Option<String>,
    /// `default-priorities` and `providers`, as JSON.
    pub(crate) priorities: Value,
    pub(crate) providers: Value,
}

impl Spec {
    /// The variant the configuration asks for, or `None` for an ordinary wheel. `table` is
    /// pyproject.toml's top-level `[variant]`.
    pub(super) fn parse(
        tool: &ToolConfig,
        table: Option<&toml::Table>,
    ) -> Result<Option<Spec>, SpecError> {
        let null = tool.null_variant.as_ref().filter(|n| n.value);
        let properties = match (&tool.variant, null) {
            (Some(_), Some(_)) => return Err(SpecError::NullWithProperties),
            (None, Some(_)) => Properties::Null,
            (Some(v), None) if v.value.len() == 1 && v.value[0].trim() == "cuda" => {
                Properties::Derived(tool.variant_driver_floor)
            }
            (Some(v), None) => {
                let mut props = Vec::new();
                for text in &v.value {
                    let p = Property::parse(text).ok_or_else(|| SpecError::BadProperty {
                        key: "tool.cudawheel.variant".into(),
                        origin: v.origin.clone(),
                        text: text.clone(),
                    })?;
                    props.push(p);
                }
                props.sort();
                props.dedup();
                Properties::Explicit(props)
            }
            (None, None) => {
                if let Some(l) = &tool.variant_label {
                    return Err(SpecError::NotAVariant {
                        key: "variant-label".into(),
                        origin: l.origin.clone(),
                    });
                }
                return Ok(None);
            }
        };
        if let Some(origin) = &tool.name_suffix_origin {
            if !tool.name_suffix.is_empty() {
                return Err(SpecError::SuffixWithVariant {
                    origin: origin.clone(),
                });
            }
        }
        let label = match &tool.variant_label {
            None => None,
            Some(Sourced { value, origin }) => {
                let bad = |why: &str| SpecError::BadLabel {
                    key: "tool.cudawheel.variant-label".into(),
                    origin: origin.clone(),
                    label: value.clone(),
                    why: why.into(),
                };
                if !label_ok(value) {
                    return Err(bad("must match ^[0-9a-z_.]+$"));
                }
                match (&properties, value == NULL_LABEL) {
                    (Properties::Null, false) => {
                        return Err(bad("cannot name the null variant, whose label is `null`"))
                    }
                    (Properties::Derived(_) | Properties::Explicit(_), true) => return Err(bad(
                        "is reserved for the null variant (no properties, `null-variant = true`)",
                    )),
                    _ => Some(value.clone()),
                }
            }
        };
        if let Properties::Explicit(_) = properties {
            if label.is_none() {
                return Err(SpecError::BadLabel {
                    key: "tool.cudawheel.variant-label".into(),
                    origin: tool
                        .variant
                        .as_ref()
                        .map_or(Origin::Pyproject, |v| v.origin.clone()),
                    label: String::new(),
                    why: "is missing: a wheel with explicit properties needs `variant-label`"
                        .into(),
                });
            }
        }
        let (priorities, providers) = providers(table)?;
        let declared: Vec<&str> = priorities["namespace"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let used: BTreeSet<&str> = match &properties {
            Properties::Derived(_) => [NVIDIA_NAMESPACE].into(),
            Properties::Explicit(p) => p.iter().map(|p| p.namespace.as_str()).collect(),
            Properties::Null => BTreeSet::new(),
        };
        for ns in used {
            if !declared.contains(&ns) {
                return Err(SpecError::UndeclaredNamespace {
                    namespace: ns.into(),
                });
            }
        }
        Ok(Some(Spec {
            properties,
            label,
            priorities,
            providers,
        }))
    }
}

/// `default-priorities` and `providers` from the `[variant]` table, or NVIDIA's when the
/// project has none.
fn providers(table: Option<&toml::Table>) -> Result<(Value, Value), SpecError> {
    let Some(table) = table else {
        return Ok((
            json!({ "namespace": [NVIDIA_NAMESPACE] }),
            json!({ NVIDIA_NAMESPACE: {
                "requires": [NVIDIA_PROVIDER_REQUIRES],
                "plugin-api": NVIDIA_PLUGIN_API,
            }}),
        ));
    };
    let bad = |why: String| SpecError::BadTable { why };
    for key in table.keys() {
        if key != "default-priorities" && key != "providers" {
            return Err(bad(format!(
                "has the key `{key}`; it takes `default-priorities` and `providers` (the variant's properties come from the build settings)"
            )));
        }
    }
    let to_json = |v: &toml::Value| serde_json::to_value(v).expect("TOML values are JSON values");
    let priorities = table
        .get("default-priorities")
        .map(to_json)
        .ok_or_else(|| bad("has no `default-priorities` table".into()))?;
    let namespaces: Vec<String> = priorities
        .get("namespace")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|v| v.as_str().map(str::to_string))
                .collect::<Option<Vec<_>>>()
        })
        .and_then(|x| x)
        .filter(|n| !n.is_empty())
        .ok_or_else(|| {
            bad("needs `default-priorities.namespace`, a non-empty list of strings".into())
        })?;
    let providers = table
        .get("providers")
        .map(to_json)
        .ok_or_else(|| bad("has no `providers` table".into()))?;
    let Some(p) = providers.as_object() else {
        return Err(bad("`providers` must be a table of tables".into()));
    };
    let listed: BTreeSet<&str> = p.keys().map(String::as_str).collect();
    let ordered: BTreeSet<&str> = namespaces.iter().map(String::as_str).collect();
    if listed != ordered {
        return Err(bad(format!(
            "lists the namespaces {namespaces:?} in `default-priorities.namespace` but providers for {:?}; the two must name the same namespaces",
            listed
        )));
    }
    Ok((priorities, providers))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn properties_parse_strictly() {
        assert_eq!(
            Property::parse(" nvidia :: sm_arch :: 90_real "),
            Some(Property {
                namespace: "nvidia".into(),
                feature: "sm_arch".into(),
                value: "90_real".into()
            })
        );
        for bad in [
            "nvidia :: sm_arch",
            "nvidia::sm_arch::90::x",
            "NVIDIA :: sm_arch :: 90",
            "nvidia :: sm-arch :: 90",
            "nvidia :: sm_arch :: ",
        ] {
            assert_eq!(Property::parse(bad), None, "{bad}");
        }
        assert!(label_ok("cu12") && label_ok("x86_64.v3") && !label_ok("CU12") && !label_ok(""));
        assert!(!label_ok("cu-12"));
    }
}
