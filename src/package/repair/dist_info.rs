//! The repaired wheel's METADATA: the input's, with `Name` suffixed and a `Requires-Dist` for
//! each NVIDIA wheel linked (plain, or under the `cuda-extra` extra with `cuda-deps = "extra"`,
//! as a cudawheel build writes them), and the binding library's pin (torch's when torch's
//! libraries are linked, jax's when an XLA FFI handler is inside). A requirement on an NVIDIA
//! distribution the METADATA already names is left as the project wrote it; a pin joins the
//! project's own requirement on that library into one line.

use super::needs::Needs;
use super::RepairSettings;
use crate::config::CudaDeps;
use crate::package::metadata::{merge_requirements, normalize_extra};
use pep508_rs::Requirement;
use std::str::FromStr;

/// The distribution a `Requires-Dist` value names, normalized. Read by hand on purpose: the
/// input is a foreign wheel's METADATA, and pep508_rs 0.9 panics on some of it (a name ending
/// in `-`, non-ASCII bytes in a marker: `tests/fuzz-regressions/wheel/`).
fn dist_of(requirement: &str) -> String {
    let end = requirement
        .find(|c: char| !(c.is_ascii_alphanumeric() || "-_.".contains(c)))
        .unwrap_or(requirement.len());
    requirement[..end]
        .to_ascii_lowercase()
        .replace(['_', '.'], "-")
}

pub(super) fn metadata(
    input: &str,
    name: &str,
    needs: &Needs,
    settings: &RepairSettings,
) -> String {
    let (headers, body) = match input.find("\n\n") {
        Some(i) => (&input[..i + 1], &input[i + 1..]),
        None => (input, ""),
    };
    let declared: Vec<String> = headers
        .lines()
        .filter_map(|l| l.strip_prefix("Requires-Dist: "))
        .map(dist_of)
        .collect();
    let mut derived: Vec<String> = match settings.cuda_deps {
        CudaDeps::None => Vec::new(),
        _ => needs.requirements(),
    };
    derived.retain(|r| !declared.contains(&dist_of(r)));
    let extra = normalize_extra(&settings.cuda_extra);
    let mut added = String::new();
    for r in &derived {
        match settings.cuda_deps {
            CudaDeps::Extra => {
                added.push_str(&format!("Requires-Dist: {r}; extra == \"{extra}\"\n"))
            }
            _ => added.push_str(&format!("Requires-Dist: {r}\n")),
        }
    }
    for pin in needs.pins.iter().filter(|p| !declared.contains(&p.dist)) {
        added.push_str(&format!("Requires-Dist: {}\n", pin.requirement));
    }
    if settings.cuda_deps == CudaDeps::Extra
        && !derived.is_empty()
        && !headers
            .lines()
            .any(|l| l == format!("Provides-Extra: {extra}"))
    {
        added.push_str(&format!("Provides-Extra: {extra}\n"));
    }
    let mut out = String::new();
    let mut placed = false;
    for line in headers.lines() {
        if let Some(joined) = needs
            .pins
            .iter()
            .find_map(|p| join_pin(line, &p.dist, &p.requirement))
        {
            out.push_str(&format!("Requires-Dist: {joined}\n"));
            continue;
        }
        if line.starts_with("Name: ") {
            out.push_str(&format!("Name: {name}\n"));
            continue;
        }
        // After the existing requirements (or before the first header that follows them).
        let later = [
            "Provides-Extra:",
            "Project-URL:",
            "Description-Content-Type:",
        ];
        if !placed && later.iter().any(|h| line.starts_with(h)) {
            out.push_str(&added);
            placed = true;
        }
        out.push_str(line);
        out.push('\n');
    }
    if !placed {
        out.push_str(&added);
    }
    out.push_str(body);
    out
}

/// A `Requires-Dist` line on `dist` joined with `pin` (`torch` + `torch>=2.15,<2.16` ->
/// `torch>=2.15,<2.16`); `None` for any other line, or one that cannot take it (a marker, a URL).
fn join_pin(line: &str, dist: &str, pin: &str) -> Option<String> {
    let value = line.strip_prefix("Requires-Dist: ")?;
    // pep508_rs panics on some invalid requirements (non-ASCII in a marker): those stay as
    // they are, as the audit reads them.
    if dist_of(value) != dist || crate::config::requirement_problem(value).is_some() {
        return None;
    }
    let dep = Requirement::from_str(value).ok()?;
    let pin = pin.to_string();
    let (lines, taken) = merge_requirements(&[dep], &[&pin]);
    taken[0].then(|| lines.into_iter().next()).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_torch_line_pep508_cannot_read_is_left_alone() {
        // pep508_rs 0.9 panics on these (tests/fuzz-regressions/wheel/): never handed to it.
        for line in [
            "Requires-Dist: torch[all]; extra == \"cuda\"\u{fffd}\u{fffd}\u{fffd}\u{fffd}\u{fffd}\u{fffd}\u{fffd}\u{fffd}ription.",
            "Requires-Dist: torch; extra == \"cuda\"\u{fffd}\u{fffd}\u{fffd}\u{fffd}\u{fffd}\u{fffd}\u{fffd}\u{fffd}ription.",
            "Requires-Dist: torch==2.*.*",
        ] {
            assert_eq!(join_pin(line, "torch", "torch>=2.15,<2.16"), None, "{line}");
        }
    }

    #[test]
    fn names_of_requirements() {
        assert_eq!(dist_of("nvidia-cufft>=12.0,<13"), "nvidia-cufft");
        assert_eq!(dist_of("Foo_Bar[x]; python_version>'3'"), "foo-bar");
    }

    #[test]
    fn torch_pin_joins_the_projects_torch() {
        let pin = "torch>=2.15,<2.16";
        assert_eq!(
            join_pin("Requires-Dist: torch", "torch", pin).as_deref(),
            Some("torch>=2.15,<2.16")
        );
        assert_eq!(
            join_pin("Requires-Dist: torch>=2.0", "torch", pin).as_deref(),
            Some("torch>=2.15,<2.16")
        );
        assert_eq!(join_pin("Requires-Dist: numpy", "torch", pin), None);
        assert_eq!(
            join_pin("Requires-Dist: jax", "jax", "jax>=0.10.2").as_deref(),
            Some("jax>=0.10.2")
        );
    }
}
