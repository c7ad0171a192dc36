//! The repaired wheel's METADATA: the input's, with `Name` suffixed and a `Requires-Dist` for
//! each NVIDIA wheel linked (plain, or under the `cuda-extra` extra with `cuda-deps = "extra"`,
//! as a cudawheel build writes them), and torch's pin when torch's libraries are linked. A
//! requirement on a distribution the METADATA already names is left as the project wrote it.

use super::needs::Needs;
use super::RepairSettings;
use crate::config::CudaDeps;
use crate::package::metadata::normalize_extra;

/// The distribution a `Requires-Dist` value names, normalized.
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
    if let Some(torch) = needs.torch.as_ref().filter(|t| !declared.contains(&t.dist)) {
        added.push_str(&format!("Requires-Dist: {}\n", torch.requirement()));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_of_requirements() {
        assert_eq!(dist_of("nvidia-cufft>=12.0,<13"), "nvidia-cufft");
        assert_eq!(dist_of("Foo_Bar[x]; python_version>'3'"), "foo-bar");
    }
}
