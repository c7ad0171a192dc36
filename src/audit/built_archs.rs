//! What a build cudawheel did not run itself (wrap mode) really compiled for, against `archs`:
//! the GPU code read back from the wheel's ELF files compared with the `-gencode` pairs asked
//! for. A project's own choice (CMake's `CMAKE_CUDA_ARCHITECTURES`, `-gencode` flags in a
//! setup.py) wins over the variables cudawheel hands it; that is said in one status line naming
//! where the difference came from. `native` on a builder with no GPU is an error: nvcc only warns
//! and builds its default arch.

use std::collections::{BTreeMap, BTreeSet};

use crate::hint::Hint;
use crate::inspect::fatbin::GpuCode;
use crate::plan::arch::Gencode;

/// nvcc's warning for `-arch=native` where it sees no GPU (it then builds its default arch).
const NATIVE_WITHOUT_GPU: &str = "Cannot find valid GPU for '-arch=native'";

#[derive(Debug, thiserror::Error)]
pub(crate) enum ArchsError {
    #[error("The wrapped build ({backend}) asked nvcc for `native` archs on a machine with no GPU (\"{line}\"): nvcc built its default arch instead of the ones asked for ({asked})")]
    NativeWithoutGpu {
        backend: String,
        line: String,
        asked: String,
    },
}

impl Hint for ArchsError {
    fn hints(&self) -> Vec<String> {
        vec![
            "the project's build files set `native` (CMake's `CMAKE_CUDA_ARCHITECTURES=native` or nvcc's `-arch=native`): a wheel is built for the GPUs of its users, not of the builder".into(),
            "pass the archs to the build instead, e.g. `-C cmake.define.CMAKE_CUDA_ARCHITECTURES=\"80-real;90\"`, or remove `native` from the build files and let `archs` (CUDAARCHS) decide".into(),
        ]
    }
}

/// An error when the build's output has nvcc's `native`-without-a-GPU warning.
pub(crate) fn check_native(
    backend: &str,
    output: &[String],
    asked: &[Gencode],
) -> Result<(), ArchsError> {
    match output.iter().find(|l| l.contains(NATIVE_WITHOUT_GPU)) {
        Some(line) => Err(ArchsError::NativeWithoutGpu {
            backend: backend.to_string(),
            line: line.trim().to_string(),
            asked: spell(&asked_sets(asked)),
        }),
        None => Ok(()),
    }
}

/// (SASS, PTX) archs.
type Sets = (BTreeSet<String>, BTreeSet<String>);

fn asked_sets(asked: &[Gencode]) -> Sets {
    let mut out: Sets = Default::default();
    for g in asked {
        match g.code.starts_with("sm_") {
            true => out.0.insert(g.code.clone()),
            false => out.1.insert(g.code.clone()),
        };
    }
    out
}

fn spell(sets: &Sets) -> String {
    let part = |set: &BTreeSet<String>, what: &str| {
        (!set.is_empty()).then(|| {
            format!(
                "{what} {}",
                set.iter().cloned().collect::<Vec<_>>().join(", ")
            )
        })
    };
    [part(&sets.0, "SASS"), part(&sets.1, "PTX")]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" and ")
}

/// The status line when the wheel's GPU code differs from what was asked (`None` when it is
/// the same, or when the wheel carries no GPU code at all). `output` is the build's output,
/// read for the `-gencode`/`-arch` flags it passed nvcc itself; `backend` names the build
/// system for the message.
pub(crate) fn compare(
    asked: &[Gencode],
    built: &BTreeMap<String, GpuCode>,
    backend: &str,
    output: &[String],
) -> Option<String> {
    let mut got: Sets = Default::default();
    for code in built.values() {
        got.0.extend(code.sass.iter().cloned());
        got.1.extend(code.ptx.iter().cloned());
    }
    let want = asked_sets(asked);
    if got == want || (got.0.is_empty() && got.1.is_empty()) {
        return None;
    }
    Some(format!(
        "archs: asked for {}, but the wheel carries {}: {} (they win over CUDAARCHS and TORCH_CUDA_ARCH_LIST)",
        spell(&want),
        spell(&got),
        source(backend, output, &want, &got)
    ))
}

/// Where archs other than the ones asked for came from, as far as the output tells.
fn source(backend: &str, output: &[String], want: &Sets, got: &Sets) -> String {
    if want.0 == got.0 && got.1.is_subset(&want.1) {
        let missing: Vec<String> = want.1.difference(&got.1).cloned().collect();
        return format!(
            "the build made no PTX for {} (a device link with LTO, `-dlto`, keeps SASS alone; so does a `-gencode` with `code=sm_XX` only), so GPUs newer than the SASS cannot JIT it",
            missing.join(", ")
        );
    }
    let asked_ids: BTreeSet<&str> = want.0.iter().chain(&want.1).map(|a| arch_id(a)).collect();
    let foreign: BTreeSet<String> = output
        .iter()
        .filter(|l| l.contains("nvcc"))
        .flat_map(|l| flag_archs(l))
        .filter(|a| !asked_ids.contains(arch_id(a)))
        .collect();
    if !foreign.is_empty() {
        return format!(
            "the build passes nvcc its own `-gencode`/`-arch` flags ({}), e.g. in setup.py's `extra_compile_args`",
            foreign.into_iter().collect::<Vec<_>>().join(", ")
        );
    }
    if backend.starts_with("scikit_build_core") || backend.contains("cmake") {
        return "the project's CMake files set `CMAKE_CUDA_ARCHITECTURES` (or a target's `CUDA_ARCHITECTURES`); pass yours with `-C cmake.define.CMAKE_CUDA_ARCHITECTURES=...` if they read it".into();
    }
    "the project's build files chose their own".into()
}

/// `sm_90a` / `compute_90a` -> `90a`.
fn arch_id(name: &str) -> &str {
    name.trim_start_matches("sm_")
        .trim_start_matches("compute_")
}

/// The `sm_NN`/`compute_NN` names of the `-gencode`/`--generate-code`/`-arch` flags in one
/// command line.
fn flag_archs(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut words = line.split_whitespace().peekable();
    while let Some(w) = words.next() {
        let value = match w {
            "-gencode" | "--generate-code" | "-arch" | "--gpu-architecture" => {
                words.next().unwrap_or_default()
            }
            _ => match w.split_once('=') {
                Some(("-gencode" | "--generate-code" | "-arch" | "--gpu-architecture", v)) => v,
                _ => continue,
            },
        };
        for part in value.split([',', '=', '[', ']', '"', '\'']) {
            if part.starts_with("sm_") || part.starts_with("compute_") {
                out.push(part.to_string());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(arch: &str, code: &str) -> Gencode {
        Gencode {
            arch: arch.into(),
            code: code.into(),
        }
    }

    fn built(sass: &[&str], ptx: &[&str]) -> BTreeMap<String, GpuCode> {
        let code = GpuCode {
            sass: sass.iter().map(|s| s.to_string()).collect(),
            ptx: ptx.iter().map(|s| s.to_string()).collect(),
            ptx_isa: None,
            ptx_toolkit: None,
        };
        BTreeMap::from([("pkg/_k.so".to_string(), code)])
    }

    #[test]
    fn the_same_archs_say_nothing_and_a_cpu_wheel_neither() {
        let asked = [g("compute_90", "sm_90"), g("compute_90", "compute_90")];
        let none: Vec<String> = Vec::new();
        assert_eq!(
            compare(&asked, &built(&["sm_90"], &["compute_90"]), "x", &none),
            None
        );
        assert_eq!(compare(&asked, &BTreeMap::new(), "x", &none), None);
    }

    #[test]
    fn a_setup_py_gencode_is_named_as_the_source() {
        let asked = [g("compute_90", "sm_90")];
        let output = vec![
            "/tk/bin/nvcc -c k.cu -gencode arch=compute_80,code=sm_80 -gencode=arch=compute_90,code=sm_90".to_string(),
        ];
        let line = compare(
            &asked,
            &built(&["sm_80", "sm_90"], &[]),
            "setuptools.build_meta",
            &output,
        )
        .unwrap();
        assert!(
            line.starts_with("archs: asked for SASS sm_90, but the wheel carries SASS sm_80, sm_90: the build passes nvcc its own `-gencode`/`-arch` flags (compute_80, sm_80)"),
            "{line}"
        );
    }

    #[test]
    fn cmake_is_named_when_no_flag_shows() {
        let asked = [g("compute_90", "sm_90")];
        let line = compare(
            &asked,
            &built(&["sm_75"], &["compute_75"]),
            "scikit_build_core.build",
            &[],
        )
        .unwrap();
        assert!(line.contains("CMAKE_CUDA_ARCHITECTURES"), "{line}");
        assert!(
            line.contains("carries SASS sm_75 and PTX compute_75"),
            "{line}"
        );
    }

    #[test]
    fn only_the_ptx_missing_is_put_down_to_the_device_link() {
        let asked = [g("compute_90", "sm_90"), g("compute_90", "compute_90")];
        let line = compare(
            &asked,
            &built(&["sm_90"], &[]),
            "scikit_build_core.build",
            &[],
        )
        .unwrap();
        assert!(
            line.contains("but the wheel carries SASS sm_90: the build made no PTX for compute_90 (a device link with LTO"),
            "{line}"
        );
    }

    #[test]
    fn native_without_a_gpu_is_an_error_and_its_absence_is_not() {
        let asked = [g("compute_90", "sm_90")];
        let out = vec![
            "nvcc warning : Cannot find valid GPU for '-arch=native', default arch is used"
                .to_string(),
        ];
        let e = check_native("scikit_build_core.build", &out, &asked).unwrap_err();
        assert!(e.to_string().contains("SASS sm_90"), "{e}");
        assert!(e.hints()[1].contains("CMAKE_CUDA_ARCHITECTURES"));
        assert!(check_native("scikit_build_core.build", &[], &asked).is_ok());
    }
}
