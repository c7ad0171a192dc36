//! Driver floors: every reason a wheel needs an NVIDIA driver newer than "any driver of its
//! CUDA major", each as (reason, the CUDA version the driver must support). The list goes into
//! the generated `_cuda_libs.py` (`DRIVER_FLOORS`, checked at import), into the derived variant's
//! `nvidia :: cuda_version_lower_bound`, and a floor above `<major>.0` is a build warning.
//!
//! Rules (docs/explanations/architectures.md "Driver floors" cites the sources):
//! - the CUDA major: under minor-version compatibility a wheel built by CUDA X.Y runs on any
//!   driver for CUDA X.0 or newer (the PTX JIT floor is per GPU: the import verdict handles it);
//! - fatbin compression: the `--compress-mode` the CUDA compiles get, floored by
//!   `config::compress::Compress::driver_floor` (the one table of those facts, with its sources).

use crate::config::compress::{linux_driver, Compress};

/// One reason for a minimum driver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Floor {
    pub(crate) reason: String,
    /// (major, minor) of the CUDA version the driver must support.
    pub(crate) cuda: (u32, u32),
}

/// The `--compress-mode` value in nvcc arguments (the last one wins, as nvcc reads them).
fn compress_mode<'a>(args: &[&'a str]) -> Option<&'a str> {
    let mut mode = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let a = a.trim_start_matches('-');
        if let Some(v) = a.strip_prefix("compress-mode=") {
            mode = Some(v);
        } else if a == "compress-mode" {
            mode = it.next().copied();
        }
    }
    mode
}

/// The floors of a build by nvcc `major.minor` whose CUDA compiles got `nvcc_args` (every `.cu`
/// compile's arguments that are not per file: the compression flag and each target's
/// `nvcc-flags`).
pub(crate) fn floors(major: u32, minor: u32, nvcc_args: &[Vec<&str>]) -> Vec<Floor> {
    let mut out = vec![Floor {
        reason: format!(
            "built with CUDA {major}.{minor}, which runs on any driver for CUDA {major}.0 or newer (minor-version compatibility)"
        ),
        cuda: (major, 0),
    }];
    for args in nvcc_args {
        let Some(mode) = compress_mode(args) else {
            continue;
        };
        let Some(compress) = Compress::CHOICES
            .iter()
            .find(|(name, _)| *name == mode)
            .map(|(_, m)| *m)
        else {
            continue;
        };
        let cuda = compress.driver_floor(major);
        if cuda <= (major, 0) {
            continue;
        }
        let release = linux_driver(cuda).map_or(String::new(), |r| format!("release {r}, "));
        let floor = Floor {
            reason: format!(
                "its GPU code is compressed with --compress-mode={mode}, which a CUDA {major} driver reads from {release}CUDA {}.{} on",
                cuda.0, cuda.1
            ),
            cuda,
        };
        if !out.contains(&floor) {
            out.push(floor);
        }
    }
    out
}

/// The highest floor.
pub(crate) fn highest(floors: &[Floor]) -> (u32, u32) {
    floors.iter().map(|f| f.cuda).max().unwrap_or((0, 0))
}

/// The warning for floors above `<major>.0`: what a `-cu<major>` name promises.
pub(crate) fn warning(major: u32, floors: &[Floor]) -> Option<String> {
    let over: Vec<&Floor> = floors.iter().filter(|f| f.cuda > (major, 0)).collect();
    if over.is_empty() {
        return None;
    }
    let (a, b) = highest(floors);
    let reasons: Vec<&str> = over.iter().map(|f| f.reason.as_str()).collect();
    Some(format!(
        "this wheel needs a driver for CUDA {a}.{b} or newer, not just any CUDA {major} driver as its name promises: {}; set `compress = \"speed\"` (and no --compress-mode in `nvcc-flags`) to keep the CUDA {major}.0 floor",
        reasons.join("; ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_major_is_always_a_floor() {
        let f = floors(13, 5, &[]);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].cuda, (13, 0));
        assert!(f[0].reason.contains("minor-version compatibility"));
        assert_eq!(warning(13, &f), None);
    }

    #[test]
    fn compress_mode_size_in_a_cuda_12_build_needs_12_4() {
        for args in [
            vec!["--compress-mode=size"],
            vec!["-compress-mode", "balance"],
        ] {
            let f = floors(12, 9, &[args]);
            assert_eq!(highest(&f), (12, 4), "{f:?}");
            assert!(f[1].reason.contains("550.54.14"));
            let w = warning(12, &f).expect("a cu12 wheel above 12.0 warns");
            assert!(
                w.contains("CUDA 12.4") && w.contains("compress = \"speed\""),
                "{w}"
            );
        }
        // speed, the last one winning, and CUDA 13 (every mode needs the 13.0 driver) keep the floor.
        assert_eq!(
            highest(&floors(12, 9, &[vec!["--compress-mode=speed"]])),
            (12, 0)
        );
        assert_eq!(
            highest(&floors(
                12,
                9,
                &[vec!["--compress-mode=size", "--compress-mode=speed"]]
            )),
            (12, 0)
        );
        assert_eq!(
            highest(&floors(13, 5, &[vec!["--compress-mode=size"]])),
            (13, 0)
        );
    }
}
