//! Wheel variants (PEP 825): which variant a build makes, its properties (derived from the GPU
//! code in the built ELF files, or written by the user), `variant.json`, and the index-level
//! `{name}-{version}-variants.json` merged from finished variant wheels.
//!
//! The PEPs are drafts: the `$schema` URL and the NVIDIA provider's defaults live here and
//! nowhere else. Pure apart from reading wheel files in `index_for_dir`.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

pub(crate) use crate::audit::variant_audit::{
    label_ok, split_wheel_name, DIST_INFO_FILE, NULL_LABEL,
};
use crate::config::{DriverFloor, Origin, Sourced, ToolConfig};
use crate::hint::Hint;

/// `$schema` of the `variant.json` cudawheel writes: the providers-era schema uv 0.13.8
/// recognises (variantlib 0.2.2 writes `https://variants-schema.wheelnext.dev/v0.2.0.json` and
/// reads either).
pub(crate) const SCHEMA_URL: &str = "https://variants-schema.wheelnext.dev/peps/850/v0.2.0.json";
/// The namespace of NVIDIA's provider, and the provider entry written when the project's
/// `[variant]` table declares none.
pub(crate) const NVIDIA_NAMESPACE: &str = "nvidia";
pub(crate) const NVIDIA_PROVIDER_REQUIRES: &str = "nvidia-variant-provider>=0.0.1,<1.0.0";
pub(crate) const NVIDIA_PLUGIN_API: &str = "nvidia_variant_provider.plugin:NvidiaVariantPlugin";
/// NVIDIA's features that cudawheel derives.
pub(crate) const LOWER_BOUND: &str = "cuda_version_lower_bound";
pub(crate) const SM_ARCH: &str = "sm_arch";
#[derive(Debug, thiserror::Error)]
pub(crate) enum VariantError {
    #[error("`{key}` (from {origin}): {text:?} is not a variant property `namespace :: feature :: value`")]
    BadProperty {
        key: String,
        origin: Origin,
        text: String,
    },
    #[error("`{key}` (from {origin}): the variant label {label:?} {why}")]
    BadLabel {
        key: String,
        origin: Origin,
        label: String,
        why: String,
    },
    #[error("`tool.cudawheel.{key}` (from {origin}) is set, but this is not a variant build")]
    NotAVariant { key: String, origin: Origin },
    #[error("`tool.cudawheel.null-variant` and `tool.cudawheel.variant` are both set: the null variant has no properties")]
    NullWithProperties,
    #[error("`tool.cudawheel.name-suffix` (from {origin}) is set, but a variant build keeps the project's own name")]
    SuffixWithVariant { origin: Origin },
    #[error("pyproject.toml's `[variant]` table {why}")]
    BadTable { why: String },
    #[error("the variant properties use the namespace `{namespace}`, which pyproject.toml's `[variant]` table does not declare")]
    UndeclaredNamespace { namespace: String },
    #[error("Cannot read {}: {message}", path.display())]
    Read { path: PathBuf, message: String },
    #[error("the variant wheels in {} disagree: {why}", dir.display())]
    Inconsistent { dir: PathBuf, why: String },
    #[error("{} holds no variant wheel (`*-<label>.whl` with a .dist-info/variant.json)", dir.display())]
    NoVariantWheels { dir: PathBuf },
}

impl Hint for VariantError {
    fn hints(&self) -> Vec<String> {
        match self {
            VariantError::BadProperty { .. } => vec![
                "write properties as `nvidia :: cuda_version_lower_bound :: 12.8`: namespace and feature of [a-z0-9_], value of [a-z0-9_.]; separate several with `;` in -C or the environment".into(),
                "or set `variant = \"cuda\"` to derive them from what was built".into(),
            ],
            VariantError::BadLabel { .. } => vec![
                "a label holds only lower-case letters, digits, `_` and `.`; `null` is kept for the zero-property variant (`null-variant = true`)".into(),
            ],
            VariantError::NotAVariant { .. } => vec![
                "add `-C variant=cuda` (or explicit properties, or `-C null-variant=true`), or drop the setting".into(),
            ],
            VariantError::NullWithProperties => {
                vec!["drop `variant` for the null variant, or `null-variant` for one with properties".into()]
            }
            VariantError::SuffixWithVariant { .. } => vec![
                "remove `name-suffix`: variant wheels of every CUDA major share one name and differ by their label (`variant-label`)".into(),
            ],
            VariantError::BadTable { .. } | VariantError::UndeclaredNamespace { .. } => vec![
                "declare each namespace in `[variant.default-priorities] namespace = [...]` and give it a `[variant.providers.<namespace>]` entry (`requires`, `plugin-api`)".into(),
            ],
            VariantError::Read { .. } => {
                vec!["pass a folder of wheels that a build finished writing".into()]
            }
            VariantError::Inconsistent { .. } => vec![
                "rebuild the disagreeing wheels from one source tree and one pyproject.toml, or move stale wheels out of the folder".into(),
            ],
            VariantError::NoVariantWheels { .. } => vec![
                "build them with `-C variant=cuda` (e.g. `python -m cudawheel wheel . -o OUT --cuda 12 --cuda 13 -C variant=cuda`)".into(),
            ],
        }
    }
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
    pub(crate) fn from_config(
        tool: &ToolConfig,
        table: Option<&toml::Table>,
    ) -> Result<Option<Spec>, VariantError> {
        let null = tool.null_variant.as_ref().filter(|n| n.value);
        let properties = match (&tool.variant, null) {
            (Some(_), Some(_)) => return Err(VariantError::NullWithProperties),
            (None, Some(_)) => Properties::Null,
            (Some(v), None) if v.value.len() == 1 && v.value[0].trim() == "cuda" => {
                Properties::Derived(tool.variant_driver_floor)
            }
            (Some(v), None) => {
                let mut props = Vec::new();
                for text in &v.value {
                    let p = Property::parse(text).ok_or_else(|| VariantError::BadProperty {
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
                    return Err(VariantError::NotAVariant {
                        key: "variant-label".into(),
                        origin: l.origin.clone(),
                    });
                }
                return Ok(None);
            }
        };
        if let Some(origin) = &tool.name_suffix_origin {
            if !tool.name_suffix.is_empty() {
                return Err(VariantError::SuffixWithVariant {
                    origin: origin.clone(),
                });
            }
        }
        let label = match &tool.variant_label {
            None => None,
            Some(Sourced { value, origin }) => {
                let bad = |why: &str| VariantError::BadLabel {
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
                return Err(VariantError::BadLabel {
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
                return Err(VariantError::UndeclaredNamespace {
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

    /// The label of the wheel built for CUDA `major`.
    pub(crate) fn label_for(&self, major: u32) -> String {
        match (&self.label, &self.properties) {
            (Some(l), _) => l.clone(),
            (None, Properties::Null) => NULL_LABEL.into(),
            (None, _) => format!("cu{major}"),
        }
    }

    /// The properties of the wheel: explicit ones, or derived from the toolkit (`major`,
    /// `minor`), the GPU code found in the wheel's ELF files and the highest driver floor the
    /// build recorded (`plan::driver_floors`).
    pub(crate) fn properties_for(
        &self,
        (major, minor): (u32, u32),
        code: &GpuCode,
        recorded: (u32, u32),
    ) -> Vec<Property> {
        match &self.properties {
            Properties::Null => Vec::new(),
            Properties::Explicit(p) => p.clone(),
            Properties::Derived(floor) => derive((major, minor), *floor, code, recorded),
        }
    }

    /// `variant.json` for the wheel labelled `label` with `properties`.
    pub(crate) fn variant_json(&self, label: &str, properties: &[Property]) -> String {
        let mut variants = serde_json::Map::new();
        variants.insert(label.into(), properties_json(properties));
        render(&json!({
            "$schema": SCHEMA_URL,
            "default-priorities": self.priorities,
            "providers": self.providers,
            "variants": variants,
        }))
    }
}

/// `{"nvidia": {"sm_arch": ["80_real", ...]}}`: values of one feature sorted, as PEP 825 asks.
fn properties_json(properties: &[Property]) -> Value {
    let mut out: BTreeMap<&str, BTreeMap<&str, BTreeSet<&str>>> = BTreeMap::new();
    for p in properties {
        out.entry(&p.namespace)
            .or_default()
            .entry(&p.feature)
            .or_default()
            .insert(&p.value);
    }
    json!(out)
}

fn render(v: &Value) -> String {
    let mut text = serde_json::to_string_pretty(v).expect("JSON values serialise");
    text.push('\n');
    text
}

/// `default-priorities` and `providers` from the `[variant]` table, or NVIDIA's when the
/// project has none.
fn providers(table: Option<&toml::Table>) -> Result<(Value, Value), VariantError> {
    let Some(table) = table else {
        return Ok((
            json!({ "namespace": [NVIDIA_NAMESPACE] }),
            json!({ NVIDIA_NAMESPACE: {
                "requires": [NVIDIA_PROVIDER_REQUIRES],
                "plugin-api": NVIDIA_PLUGIN_API,
            }}),
        ));
    };
    let bad = |why: String| VariantError::BadTable { why };
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

/// GPU code found in a wheel's ELF files: compute capabilities as `major * 10 + minor`
/// (`90`, `100`, `120`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct GpuCode {
    pub(crate) sass: BTreeSet<u32>,
    pub(crate) ptx: BTreeSet<u32>,
}

impl GpuCode {
    /// Adds the GPU code read back from one ELF file (`inspect::fatbin::gpu_code`): SASS
    /// `sm_XY` and PTX `compute_XY`, an arch-specific suffix (`sm_90a`, `sm_100f`) counting
    /// as its base arch (NVIDIA's provider knows `<XY>_real` / `<XY>_virtual` only).
    pub(crate) fn add(&mut self, code: &crate::inspect::fatbin::GpuCode) {
        for (names, set, prefix) in [
            (&code.sass, &mut self.sass, "sm_"),
            (&code.ptx, &mut self.ptx, "compute_"),
        ] {
            for name in names {
                let rest = name.strip_prefix(prefix).unwrap_or(name);
                let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
                if let Ok(cc) = digits.parse() {
                    set.insert(cc);
                }
            }
        }
    }
}

/// `variant = "cuda"`: the oldest driver (`<major>.0` under minor-version compatibility, or
/// the toolkit's `major.minor`; raised to `recorded`, the highest floor the build recorded)
/// and `<XY>_real` / `<XY>_virtual` for every SASS / PTX arch.
/// Never an upper bound: newer drivers run older CUDA code, and the provider refuses wheels
/// whose upper bound is at or below the driver's version.
pub(crate) fn derive(
    (major, minor): (u32, u32),
    floor: DriverFloor,
    code: &GpuCode,
    recorded: (u32, u32),
) -> Vec<Property> {
    let p = |feature: &str, value: String| Property {
        namespace: NVIDIA_NAMESPACE.into(),
        feature: feature.into(),
        value,
    };
    let policy = match floor {
        DriverFloor::Mvc => (major, 0),
        DriverFloor::Toolkit => (major, minor),
    };
    let (a, b) = policy.max(recorded);
    let mut out = vec![p(LOWER_BOUND, format!("{a}.{b}"))];
    out.extend(code.sass.iter().map(|cc| p(SM_ARCH, format!("{cc}_real"))));
    out.extend(
        code.ptx
            .iter()
            .map(|cc| p(SM_ARCH, format!("{cc}_virtual"))),
    );
    out.sort();
    out
}

/// A variant build's label and `variant.json`, its properties derived from the GPU code read
/// back from the built ELF files.
pub(crate) fn label_and_json(
    spec: &Spec,
    (major, minor): (u32, u32),
    gpu_code: &[crate::inspect::fatbin::GpuCode],
    recorded: (u32, u32),
) -> (String, String) {
    let mut code = GpuCode::default();
    for gpu in gpu_code {
        code.add(gpu);
    }
    let label = spec.label_for(major);
    let properties = spec.properties_for((major, minor), &code, recorded);
    let json = spec.variant_json(&label, &properties);
    (label, json)
}

/// The `variant.json` of a wheel, and its `.dist-info` folder name.
fn read_variant_json(path: &Path) -> Result<Option<(String, Value)>, VariantError> {
    let bad = |message: String| VariantError::Read {
        path: path.to_path_buf(),
        message,
    };
    let file = std::fs::File::open(path).map_err(|e| bad(e.to_string()))?;
    let mut zip = zip::ZipArchive::new(file).map_err(|e| bad(e.to_string()))?;
    let Some(name) = zip
        .file_names()
        .find(|n| {
            n.split_once('/')
                .is_some_and(|(top, rest)| top.ends_with(".dist-info") && rest == DIST_INFO_FILE)
        })
        .map(str::to_string)
    else {
        return Ok(None);
    };
    let mut text = String::new();
    zip.by_name(&name)
        .map_err(|e| bad(e.to_string()))?
        .read_to_string(&mut text)
        .map_err(|e| bad(e.to_string()))?;
    let v = serde_json::from_str(&text).map_err(|e| bad(format!("{name}: {e}")))?;
    Ok(Some((name, v)))
}

/// (Re)writes `{name}-{version}-variants.json` in `dir` for every name and version of the
/// variant wheels there: the union of their labels, with their shared priorities and providers.
/// Refuses wheels that disagree (one label with two property sets, different providers or
/// namespace orders). Returns the files written.
pub(crate) fn index_for_dir(dir: &Path) -> Result<Vec<PathBuf>, VariantError> {
    let read_dir = std::fs::read_dir(dir).map_err(|e| VariantError::Read {
        path: dir.to_path_buf(),
        message: e.to_string(),
    })?;
    let mut wheels: Vec<PathBuf> = read_dir
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "whl"))
        .collect();
    wheels.sort();
    // (name-version) -> (merged index, which wheel set each part)
    let mut groups: BTreeMap<String, (Value, BTreeMap<String, String>)> = BTreeMap::new();
    for path in wheels {
        let filename = path
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        let Some((name, version, Some(label))) = split_wheel_name(&filename) else {
            continue;
        };
        let Some((_, vj)) = read_variant_json(&path)? else {
            continue;
        };
        let inconsistent = |why: String| VariantError::Inconsistent {
            dir: dir.to_path_buf(),
            why,
        };
        let Some(props) = vj.pointer(&format!("/variants/{label}")).cloned() else {
            return Err(inconsistent(format!(
                "{filename} is labelled {label:?} but its variant.json does not describe that label"
            )));
        };
        let key = format!("{name}-{version}");
        let (index, from) = groups.entry(key).or_insert_with(|| {
            let mut first = vj.clone();
            first["variants"] = json!({});
            (first, BTreeMap::new())
        });
        for part in ["default-priorities", "providers"] {
            if index[part] != vj[part] {
                return Err(inconsistent(format!(
                    "{filename} has `{part}` {}, {} has {}",
                    vj[part], from["providers"], index[part]
                )));
            }
        }
        from.entry("providers".into()).or_insert(filename.clone());
        match index["variants"].get(label) {
            Some(old) if *old != props => {
                return Err(inconsistent(format!(
                    "the label {label:?} has the properties {props} in {filename} but {old} in {}",
                    from[label]
                )))
            }
            _ => {
                index["variants"][label] = props;
                from.entry(label.to_string()).or_insert(filename.clone());
            }
        }
    }
    if groups.is_empty() {
        return Err(VariantError::NoVariantWheels {
            dir: dir.to_path_buf(),
        });
    }
    let mut written = Vec::new();
    for (key, (mut index, _)) in groups {
        index["$schema"] = json!(SCHEMA_URL);
        let path = dir.join(format!("{key}-variants.json"));
        let tmp = dir.join(format!(".{key}-variants.json.tmp"));
        let io = |e: std::io::Error| VariantError::Read {
            path: path.clone(),
            message: e.to_string(),
        };
        std::fs::write(&tmp, render(&index)).map_err(io)?;
        std::fs::rename(&tmp, &path).map_err(io)?;
        written.push(path);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::variant_audit::audit;

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

    #[test]
    fn derived_properties_follow_the_gpu_code() {
        let code = GpuCode {
            sass: [80, 90, 120].into(),
            ptx: [120].into(),
        };
        let values = |props: Vec<Property>| -> Vec<String> {
            props
                .into_iter()
                .map(|p| format!("{}={}", p.feature, p.value))
                .collect()
        };
        assert_eq!(
            values(derive((13, 5), DriverFloor::Mvc, &code, (13, 0))),
            [
                "cuda_version_lower_bound=13.0",
                "sm_arch=120_real",
                "sm_arch=120_virtual",
                "sm_arch=80_real",
                "sm_arch=90_real"
            ]
        );
        assert_eq!(
            values(derive(
                (12, 4),
                DriverFloor::Toolkit,
                &GpuCode::default(),
                (12, 0)
            )),
            ["cuda_version_lower_bound=12.4"]
        );
        // A recorded floor above the policy's raises the bound (a CUDA 12 fatbin compressed
        // with --compress-mode=size needs a 12.4 driver).
        assert_eq!(
            values(derive(
                (12, 9),
                DriverFloor::Mvc,
                &GpuCode::default(),
                (12, 4)
            )),
            ["cuda_version_lower_bound=12.4"]
        );
    }

    #[test]
    fn wheel_names_split_into_label() {
        assert_eq!(
            split_wheel_name("saxpy-0.1.0-cp311-cp311-manylinux_2_17_x86_64-cu12.whl"),
            Some(("saxpy", "0.1.0", Some("cu12")))
        );
        assert_eq!(
            split_wheel_name("saxpy-0.1.0-1-cp311-cp311-linux_x86_64.whl"),
            Some(("saxpy", "0.1.0", None))
        );
        assert_eq!(
            split_wheel_name("saxpy-0.1.0-1-cp311-cp311-linux_x86_64-null.whl"),
            Some(("saxpy", "0.1.0", Some("null")))
        );
        assert_eq!(
            split_wheel_name("saxpy-0.1.0-py3-none-any.whl"),
            Some(("saxpy", "0.1.0", None))
        );
    }

    #[test]
    fn audit_checks_label_json_and_record() {
        let spec = Spec {
            properties: Properties::Derived(DriverFloor::Mvc),
            label: None,
            priorities: json!({"namespace": ["nvidia"]}),
            providers: json!({"nvidia": {"requires": ["x"]}}),
        };
        let props = derive((12, 4), DriverFloor::Mvc, &GpuCode::default(), (12, 0));
        let text = spec.variant_json("cu12", &props);
        let record = "a-1.dist-info/variant.json,sha256=x,1\n";
        let name = "a-1-cp311-cp311-linux_x86_64-cu12.whl";
        assert!(audit(name, Some(text.as_bytes()), record, "a-1.dist-info").is_empty());
        // Renamed, unlisted, missing.
        let renamed = audit(
            "a-1-cp311-cp311-linux_x86_64-cu13.whl",
            Some(text.as_bytes()),
            record,
            "a-1.dist-info",
        );
        assert_eq!(renamed.len(), 1, "{renamed:?}");
        assert_eq!(
            audit(name, Some(text.as_bytes()), "", "a-1.dist-info").len(),
            1
        );
        assert_eq!(audit(name, None, record, "a-1.dist-info").len(), 1);
        let null = spec.variant_json("null", &props);
        let n = audit(
            "a-1-cp311-cp311-linux_x86_64-null.whl",
            Some(null.as_bytes()),
            record,
            "a-1.dist-info",
        );
        assert_eq!(n.len(), 1, "{n:?}");
    }
}
