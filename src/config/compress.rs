//! Fatbin compression, `compress`: the modes nvcc offers per version, the flag each takes, and
//! the oldest CUDA driver that loads what each makes (the driver floor a mode adds to a wheel).
//!
//! | mode | nvcc >= 12.8 | nvcc < 12.8 | loads on (CUDA 11) | (CUDA 12) | (CUDA 13) |
//! | --- | --- | --- | --- | --- | --- |
//! | `none` | `--compress-mode=none` | `--no-compress` | 11.0 | 12.0 | 13.0 |
//! | `speed` | `--compress-mode=speed` | `-Xfatbin=-compress-all` (LZ4) | 11.0 | 12.0 | 13.0 |
//! | `balance` | `--compress-mode=balance` | - | - | 12.4 (550.54.14) | 13.0 |
//! | `size` | `--compress-mode=size` | - | - | 12.4 (550.54.14) | 13.0 |
//!
//! Sources: nvcc 13.5's `--help` lists `--compress-mode [default,size,speed,balance,none]`;
//! nvcc 11.8's and 12.4's list `--no-compress` and no `--compress-mode`;
//! the option appeared in nvcc 12.8 (12.6's documentation has only `--no-compress`); the
//! zstd-based modes need a driver of CUDA 12.4 (550.54.14) or newer, LZ4 (`speed`, the old
//! `-compress-all`) loads on every driver of the major (RAPIDS' `rapids_cuda_enable_fatbin_compression`
//! documents 525.60.13+ for CUDA 12 and 580+ for CUDA 13, for every mode on 13).

use super::choices::{choice_enum, Choice};

choice_enum! {
    /// A `compress` mode; declared smallest output first (`default_for` relies on the order).
    #[derive(PartialOrd, Ord)]
    pub(crate) enum Compress {
        /// Smallest fatbins (zstd), slowest to load.
        Size = "size",
        /// Between `size` and `speed`.
        Balance = "balance",
        /// LZ4: fast to load, larger.
        Speed = "speed",
        /// Stored as built.
        None = "none",
    }
}

/// The spellings `compress` accepts, smallest output first.
pub(crate) const CHOICES: &[(&str, Compress)] = Compress::SPELLINGS;

/// The nvcc that introduced `--compress-mode`.
const COMPRESS_MODE_SINCE: (u32, u32) = (12, 8);

/// The Linux driver release that first supports a CUDA version (`12.4` -> `550.54.14`).
pub(crate) fn linux_driver(cuda: (u32, u32)) -> Option<&'static str> {
    match cuda {
        (11, 0) => Some("450.36.06"),
        (12, 0) => Some("525.60.13"),
        (12, 4) => Some("550.54.14"),
        (13, 0) => Some("580.65.06"),
        _ => None,
    }
}

impl Compress {
    /// The spellings `compress` accepts, smallest output first.
    pub(crate) const CHOICES: &'static [(&'static str, Compress)] = CHOICES;

    /// The nvcc flags for this mode with an nvcc of `nvcc` (major, minor), or why that nvcc
    /// cannot make it.
    pub(crate) fn flags(self, nvcc: (u32, u32)) -> Result<Vec<String>, String> {
        if nvcc >= COMPRESS_MODE_SINCE {
            return Ok(vec![format!("--compress-mode={}", self.name())]);
        }
        match self {
            Compress::Speed => Ok(vec!["-Xfatbin=-compress-all".into()]),
            Compress::None => Ok(vec!["--no-compress".into()]),
            Compress::Size | Compress::Balance => Err(format!(
                "compress = \"{}\" needs nvcc 12.8 or newer (`--compress-mode`); this nvcc is {}.{}",
                self.name(),
                nvcc.0,
                nvcc.1
            )),
        }
    }

    /// The oldest CUDA driver (as the CUDA version it supports) that loads a fatbin a CUDA
    /// `major` toolkit compressed this way.
    pub(crate) fn driver_floor(self, major: u32) -> (u32, u32) {
        match (self, major) {
            (Compress::Size | Compress::Balance, 12) => (12, 4),
            _ => (major, 0),
        }
    }
}

/// The default: the smallest mode this nvcc makes whose driver floor stays at or below the
/// floor the wheel promises (`promised`: its CUDA major's `.0`, or a variant's lower bound).
pub(crate) fn default_for(nvcc: (u32, u32), promised: (u32, u32)) -> Compress {
    CHOICES
        .iter()
        .map(|(_, m)| *m)
        .find(|m| m.flags(nvcc).is_ok() && m.driver_floor(nvcc.0) <= promised)
        .unwrap_or(Compress::None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_per_nvcc_version() {
        assert_eq!(
            Compress::Size.flags((13, 5)).unwrap(),
            ["--compress-mode=size"]
        );
        assert_eq!(
            Compress::None.flags((12, 8)).unwrap(),
            ["--compress-mode=none"]
        );
        assert_eq!(
            Compress::Speed.flags((12, 4)).unwrap(),
            ["-Xfatbin=-compress-all"]
        );
        assert_eq!(Compress::None.flags((11, 8)).unwrap(), ["--no-compress"]);
        let err = Compress::Balance.flags((12, 4)).unwrap_err();
        assert!(
            err.contains("needs nvcc 12.8") && err.contains("12.4"),
            "{err}"
        );
    }

    #[test]
    fn default_never_raises_the_promised_floor() {
        // CUDA 13: every mode loads on 13.0 -> the smallest.
        assert_eq!(default_for((13, 5), (13, 0)), Compress::Size);
        // CUDA 12 promising 12.0: zstd would need 12.4 -> LZ4.
        assert_eq!(default_for((12, 9), (12, 0)), Compress::Speed);
        // A variant whose lower bound is the toolkit's 12.9: zstd is fine.
        assert_eq!(default_for((12, 9), (12, 9)), Compress::Size);
        // nvcc 12.4 has no --compress-mode: LZ4 through -compress-all.
        assert_eq!(default_for((12, 4), (12, 4)), Compress::Speed);
        assert_eq!(default_for((11, 8), (11, 0)), Compress::Speed);
        for nvcc in [(11, 8), (12, 4), (12, 8), (12, 9), (13, 0), (13, 5)] {
            for promised in [(nvcc.0, 0), nvcc] {
                let m = default_for(nvcc, promised);
                assert!(
                    m.driver_floor(nvcc.0) <= promised,
                    "{nvcc:?} {promised:?} {m:?}"
                );
            }
        }
    }

    #[test]
    fn driver_floors() {
        assert_eq!(Compress::Size.driver_floor(12), (12, 4));
        assert_eq!(Compress::Speed.driver_floor(12), (12, 0));
        assert_eq!(Compress::Size.driver_floor(13), (13, 0));
        assert_eq!(
            linux_driver(Compress::Size.driver_floor(12)),
            Some("550.54.14")
        );
    }
}
