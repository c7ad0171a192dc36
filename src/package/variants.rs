//! Wheel variants (PEP 825) as files: a variant wheel's label and properties (derived from the
//! GPU code in the built ELF files, or the user's), its `variant.json`, and the index-level
//! `{name}-{version}-variants.json` merged from finished variant wheels. Which variant a build
//! makes is decided once, in `config::variant`.
//!
//! The PEPs are drafts: the `$schema` URL lives here and nowhere else. Pure apart from reading
//! wheel files in `index_for_dir`.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

pub(crate) use crate::audit::variant_audit::{split_wheel_name, DIST_INFO_FILE};
pub(crate) use crate::config::variant::{Properties, Property, Spec, NULL_LABEL, NVIDIA_NAMESPACE};
use crate::config::DriverFloor;
use crate::hint::Hint;

/// `$schema` of the `variant.json` cudawheel writes: the providers-era schema uv 0.13.8
/// recognises (variantlib 0.2.2 writes `https://variants-schema.wheelnext.dev/v0.2.0.json` and
/// reads either).
pub(crate) const SCHEMA_URL: &str = "https://variants-schema.wheelnext.dev/peps/850/v0.2.0.json";
/// NVIDIA's features that cudawheel derives.
pub(crate) const LOWER_BOUND: &str = "cuda_version_lower_bound";
pub(crate) const SM_ARCH: &str = "sm_arch";
/// A variants index that cannot be written.
#[derive(Debug, thiserror::Error)]
pub(crate) enum VariantError {
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

/// What a build writes of the variant the configuration chose.
impl Spec {
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
