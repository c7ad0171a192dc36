//! Snapshot of the text users read for one error of every stage, as `render` writes it (the
//! message, its causes, the `hint:` lines): `tests/snapshots/errors.txt`. A change to a message
//! or a hint shows in review as a change to that file; `CUDAWHEEL_BLESS=1 cargo test
//! error_snapshots` rewrites it. Configuration errors come from the real reader on a project
//! written here (its "did you mean" included); the others are built as their stage builds them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::config::{ConfigError, Origin, Overrides};
use crate::error::{render, Error};

fn config_error(pyproject: &str, settings: &[(&str, &str)]) -> ConfigError {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("pyproject.toml"), pyproject).unwrap();
    let overrides = Overrides {
        settings: settings
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        env: BTreeMap::new(),
    };
    crate::config::Config::load(dir.path(), &overrides).expect_err("an error")
}

const PROJECT: &str = "[project]\nname = \"demo\"\nversion = \"0.1\"\n\n[tool.cudawheel]\n";

/// Stages 1 to 7.
fn stage_cases() -> Vec<(&'static str, Error)> {
    use crate::audit::built_archs::ArchsError;
    use crate::audit::elf_rules::ElfError;
    use crate::bindings::BindingsError;
    use crate::compile::job::CompileError;
    use crate::libraries::LibraryError;
    use crate::plan::arch::ArchError;
    use crate::plan::PlanError;
    use crate::toolchain::ToolchainError;
    vec![
        (
            "config: an unknown key",
            config_error(&format!("{PROJECT}cudaa = 13\n"), &[]).into(),
        ),
        (
            "config: a value out of its choices, from -C",
            config_error(PROJECT, &[("bindings", "swig")]).into(),
        ),
        (
            "config: several CUDA majors with what they rule out",
            config_error(
                &format!("{PROJECT}cuda = [\"12\", \"13\"]\nname-suffix = \"-cu{{major}}\"\n"),
                &[],
            )
            .into(),
        ),
        (
            "toolchain: a toolkits entry without nvcc",
            ToolchainError::ToolkitFolder {
                major: 12,
                folder: "/opt/cuda-12.4".into(),
                why: "there is no /opt/cuda-12.4/bin/nvcc".into(),
            }
            .into(),
        ),
        (
            "plan: an arch nvcc has no name for",
            PlanError::Arch(ArchError::BadSpelling {
                key: "tool.cudawheel.archs".into(),
                origin: Origin::Pyproject,
                value: "sm_5x".into(),
            })
            .into(),
        ),
        (
            "toolchain: no nvcc",
            ToolchainError::NvccNotFound {
                wanted: "13".into(),
                probes: vec![
                    "CUDACXX: not set".into(),
                    "/usr/local/cuda/bin/nvcc: not there".into(),
                ],
                pip_possible: true,
            }
            .into(),
        ),
        (
            "libraries: a CUDA library not found",
            LibraryError::NotFound {
                name: "nccl".into(),
                major: 13,
                probes: vec!["NCCL_LIBRARY_PATH: not set".into()],
                env_prefix: "NCCL".into(),
            }
            .into(),
        ),
        (
            "bindings: pybind11 missing",
            BindingsError::NotFound {
                name: "pybind11".into(),
                requirement: "pybind11>=2.12".into(),
                probes: vec!["/venv/lib/python3.11/site-packages: no pybind11".into()],
            }
            .into(),
        ),
        (
            "compile: nvcc failed",
            CompileError::Failed {
                what: "nvcc csrc/k.cu".into(),
                command: "nvcc -c csrc/k.cu -o build/k.o".into(),
                status: "exit status: 1".into(),
                output: "csrc/k.cu(3): error: identifier \"x\" is undefined".into(),
            }
            .into(),
        ),
        (
            "audit: an ELF rule",
            ElfError::Audit {
                wheel_path: "demo/_core.so".into(),
                problem: "has the RPATH entry /opt/cuda/lib64, an absolute path".into(),
                fix: "let cudawheel set the RPATH".into(),
            }
            .into(),
        ),
        (
            "audit: native archs without a GPU",
            ArchsError::NativeWithoutGpu {
                backend: "scikit_build_core.build".into(),
                line: "nvcc warning : Cannot find valid GPU for '-arch=native'".into(),
                asked: "sm_90, compute_90".into(),
            }
            .into(),
        ),
    ]
}

/// The package stage and wrap mode (stage 8 and the composers).
fn package_cases() -> Vec<(&'static str, Error)> {
    use crate::compile::wrapped::WrapError;
    use crate::package::archive::ArchiveError;
    use crate::package::repair::RepairError;
    vec![
        (
            "package: the output folder",
            ArchiveError::Io {
                path: PathBuf::from("/read-only/dist"),
                source: std::io::Error::from(std::io::ErrorKind::PermissionDenied),
            }
            .into(),
        ),
        (
            "package: a repair that has nothing to graft from",
            RepairError::Unprovided {
                member: "demo/_core.so".into(),
                lib: "libfftw3.so.3".into(),
            }
            .into(),
        ),
        (
            "wrap mode: the repair of the wrapped build's wheel (its cause and hints kept)",
            Error::WrappedRepair {
                wheel: PathBuf::from(
                    "build/cudawheel/wrapped/wheel/demo-1.0-cp311-cp311-linux_x86_64.whl",
                ),
                source: crate::package::finish::FinishError::Audit {
                    wheel: "demo_cu13-1.0-cp311-cp311-manylinux_2_28_x86_64.whl".into(),
                    violations: vec![crate::audit::wheel_audit::Violation {
                        file: "demo/_core.so".into(),
                        problem: "links libcudart.so.13 but no Requires-Dist names its wheel"
                            .into(),
                        fix: "add `cudart` to `libraries`".into(),
                    }],
                }
                .into(),
            },
        ),
        (
            "wrap mode: the wrapped backend is not installed",
            WrapError::BackendMissing {
                backend: "scikit_build_core.build".into(),
                module: "scikit_build_core".into(),
                package: "scikit-build-core".into(),
            }
            .into(),
        ),
    ]
}

fn cases() -> Vec<(&'static str, Error)> {
    let mut all = stage_cases();
    all.extend(package_cases());
    all
}

#[test]
fn every_stage_error_renders_as_the_snapshot_says() {
    let mut text = String::new();
    for (name, err) in cases() {
        let rendered = render(&err);
        assert!(rendered.starts_with("cudawheel: error: "), "{rendered}");
        text.push_str(&format!("=== {name}\n{rendered}\n\n"));
    }
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots/errors.txt");
    if std::env::var_os("CUDAWHEEL_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &text).unwrap();
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        expected == text,
        "tests/snapshots/errors.txt differs from what the errors render; if the change is meant, run `CUDAWHEEL_BLESS=1 cargo test error_snapshots` and commit it\n--- rendered now:\n{text}"
    );
}

#[test]
fn every_case_has_a_hint() {
    // Control for the snapshot: a message without a next step would pass a snapshot written
    // after it; every stage's error must tell the user what to do.
    use crate::hint::Hint;
    for (name, err) in cases() {
        assert!(!err.hints().is_empty(), "{name}: no hint");
    }
}
