//! The floors a framework caps. A torch extension runs beside the torch it was built with, and
//! that torch pins NVIDIA's `cuda-toolkit` at one release (`==13.2.2`), which pins each NVIDIA
//! wheel (`nvidia-cuda-runtime==13.2.86.*`). A floor read from a newer wheel that happened to be
//! installed where the repair runs (`nvidia-cuda-runtime>=13.5` beside a torch that pins 13.2)
//! would make the wheel and its torch unresolvable together: each NVIDIA floor is capped at the
//! release torch's pinned toolkit names for that distribution.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::bindings::torch;
use crate::inspect::site::{installed_metadata, name_and_version};
use crate::libraries::toolkit_components::META;
use crate::libraries::Provider;

/// Distribution -> the `(major, minor)` its floor may not exceed, from the `cuda-toolkit` the
/// torch installed on `sys_path` pins: that release's METADATA when it is installed, else the
/// pin itself for the CUDA runtime (whose version is the toolkit's). Empty without torch or
/// without a pin.
pub(super) fn torch_caps(sys_path: &[PathBuf]) -> BTreeMap<String, (u64, u64)> {
    let Some(pin) = torch::toolkit_pin(sys_path) else {
        return BTreeMap::new();
    };
    let release = pin.trim_start_matches("==").to_string();
    let mut caps = BTreeMap::new();
    let metadata = installed_metadata(sys_path, META)
        .filter(|m| name_and_version(m).is_some_and(|(_, v)| v.to_string() == release));
    if let Some(metadata) = metadata {
        for line in metadata.lines() {
            if let Some((dist, cap)) = pinned(line) {
                caps.entry(dist).or_insert(cap);
            }
        }
    }
    if let Some(cap) = major_minor(&release) {
        caps.entry("nvidia-cuda-runtime".to_string()).or_insert(cap);
    }
    caps
}

/// `Requires-Dist: nvidia-cuda-runtime==13.2.86.*; ...` -> (`nvidia-cuda-runtime`, (13, 2)).
fn pinned(line: &str) -> Option<(String, (u64, u64))> {
    let req = line
        .strip_prefix("Requires-Dist:")?
        .split(';')
        .next()?
        .trim();
    let (dist, version) = req.split_once("==")?;
    Some((dist.trim().to_ascii_lowercase(), major_minor(version)?))
}

fn major_minor(version: &str) -> Option<(u64, u64)> {
    let mut parts = version.trim().split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    Some((major, minor))
}

/// Each NVIDIA floor lowered to its framework's cap (`floors::torch_caps`), with a status line
/// for each one lowered.
pub(super) fn cap<'a>(
    providers: impl Iterator<Item = (&'a String, &'a mut Provider)>,
    caps: &BTreeMap<String, (u64, u64)>,
    status: &mut Vec<String>,
) {
    for (soname, provider) in providers {
        let Some(&cap) = caps.get(&provider.dist) else {
            continue;
        };
        if provider.floor > cap {
            status.push(format!(
                "{soname}: the floor of {} is {}.{}, the release torch's pinned toolkit ships, not the {}.{} installed here",
                provider.dist, cap.0, cap.1, provider.floor.0, provider.floor.1
            ));
            provider.floor = cap;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn site_with_torch(site: &std::path::Path, with_toolkit_metadata: bool) {
        for f in ["torch/include/torch/library.h", "torch/lib/libc10.so"] {
            let f = site.join(f);
            fs::create_dir_all(f.parent().unwrap()).unwrap();
            fs::write(f, "").unwrap();
        }
        let dist = site.join("torch-2.15.0.dist-info");
        fs::create_dir_all(&dist).unwrap();
        fs::write(
            dist.join("METADATA"),
            "Name: torch\nVersion: 2.15.0\nRequires-Dist: cuda-toolkit[cublas,cudart]==13.2.2; platform_system == \"Linux\"\n",
        )
        .unwrap();
        if with_toolkit_metadata {
            let ctk = site.join("cuda_toolkit-13.2.2.dist-info");
            fs::create_dir_all(&ctk).unwrap();
            fs::write(
                ctk.join("METADATA"),
                "Metadata-Version: 2.1\nName: cuda-toolkit\nVersion: 13.2.2\n\
                 Requires-Dist: nvidia-cublas==13.4.1.3.*; extra == 'cublas'\n\
                 Requires-Dist: nvidia-cuda-runtime==13.2.86.*; extra == 'cudart'\n\n",
            )
            .unwrap();
        }
    }

    #[test]
    fn a_floor_above_the_cap_is_lowered_and_said_and_one_below_stays() {
        let n = |dist: &str, floor| Provider {
            dist: dist.into(),
            floor,
            span: crate::libraries::Span::Major,
        };
        let mut nvidia = BTreeMap::from([
            (
                "libcudart.so.13".to_string(),
                n("nvidia-cuda-runtime", (13, 5)),
            ),
            ("libcublas.so.13".to_string(), n("nvidia-cublas", (13, 1))),
        ]);
        let caps = BTreeMap::from([
            ("nvidia-cuda-runtime".to_string(), (13, 2)),
            ("nvidia-cublas".to_string(), (13, 4)),
        ]);
        let mut status = Vec::new();
        cap(nvidia.iter_mut(), &caps, &mut status);
        assert_eq!(nvidia["libcudart.so.13"].floor, (13, 2));
        assert_eq!(nvidia["libcublas.so.13"].floor, (13, 1));
        assert_eq!(status.len(), 1, "{status:?}");
        assert!(status[0].contains("13.2, the release torch's pinned toolkit ships, not the 13.5"));
    }

    #[test]
    fn torch_pinned_toolkit_caps_each_wheel_at_its_release() {
        let tmp = tempfile::tempdir().unwrap();
        site_with_torch(tmp.path(), true);
        let caps = torch_caps(&[tmp.path().to_path_buf()]);
        assert_eq!(caps.get("nvidia-cublas"), Some(&(13, 4)));
        assert_eq!(caps.get("nvidia-cuda-runtime"), Some(&(13, 2)));
    }

    #[test]
    fn without_the_toolkit_metadata_the_runtime_is_capped_by_the_pin_and_without_torch_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let sys_path = vec![tmp.path().to_path_buf()];
        assert!(torch_caps(&sys_path).is_empty(), "control: no torch");
        site_with_torch(tmp.path(), false);
        let caps = torch_caps(&sys_path);
        assert_eq!(
            caps,
            BTreeMap::from([("nvidia-cuda-runtime".into(), (13, 2))])
        );
    }
}
