//! `cuda = ["12", "13"]`: one wheel holding one build per CUDA major. The list (`Majors`, read
//! by `values::cuda`), the `[tool.cudawheel.toolkits]` table (a toolkit folder per major), what
//! a list rules out for now (`check`), and each major's own configuration (`Config::parts`: the
//! build composes one build per part, then one wheel).

use std::collections::BTreeMap;

use super::choices::{CudaChoice, Majors};
use super::error::ConfigError;
use super::field::{split_semicolons, Field};
use super::origin::Origin;
use super::Config;

/// One CUDA major: an integer or a string of one (`12`, `"12"`).
fn one_major(f: &Field, value: &toml::Value) -> Result<u32, ConfigError> {
    let m = match value {
        toml::Value::Integer(i) => *i,
        toml::Value::String(s) => s.trim().parse::<i64>().map_err(|_| {
            f.invalid("each item of a list is a CUDA major (11, 12 or 13); \"auto\" is a single value, not a list item")
        })?,
        _ => return Err(f.wrong_type("a list of CUDA majors (integers or strings)")),
    };
    match m {
        11..=13 => Ok(m as u32),
        _ => Err(f.invalid("supported CUDA majors are 11, 12 and 13")),
    }
}

/// `cuda` as a list (`["12", "13"]`, or `12;13` from `-C`/the environment): distinct majors;
/// a list of one is that major.
pub(super) fn parse_list(f: &Field, items: &[toml::Value]) -> Result<CudaChoice, ConfigError> {
    let mut majors = Vec::new();
    for item in items {
        let m = one_major(f, item)?;
        if majors.contains(&m) {
            return Err(f.invalid(format!("CUDA {m} is listed twice")));
        }
        majors.push(m);
    }
    Ok(match majors[..] {
        [] => return Err(f.invalid("the list names no CUDA major")),
        [one] => CudaChoice::Major(one),
        _ => CudaChoice::Several(Majors::of(&majors)),
    })
}

/// `12;13` (a `-C` setting or `CUDAWHEEL_CUDA`) as the list it spells.
pub(super) fn parse_semicolons(f: &Field, s: &str) -> Result<CudaChoice, ConfigError> {
    let items: Vec<toml::Value> = split_semicolons(s)
        .into_iter()
        .map(toml::Value::String)
        .collect();
    parse_list(f, &items)
}

/// `[tool.cudawheel.toolkits]`: CUDA major -> the toolkit folder for that major (absolute; its
/// `bin/nvcc` is that major's nvcc, checked by the toolchain stage when the major is built).
pub(super) fn toolkits(table: &toml::Table) -> Result<BTreeMap<u32, String>, ConfigError> {
    let mut out = BTreeMap::new();
    let Some(value) = table.get("toolkits") else {
        return Ok(out);
    };
    let field = |key: String, value: &toml::Value| Field {
        key,
        value: value.clone(),
        origin: Origin::Pyproject,
    };
    let Some(entries) = value.as_table() else {
        return Err(field("tool.cudawheel.toolkits".into(), value)
            .wrong_type("a table of CUDA major = toolkit folder (`\"12\" = \"/opt/cuda-12.4\"`)"));
    };
    for (major, folder) in entries {
        let f = field(format!("tool.cudawheel.toolkits.\"{major}\""), folder);
        let m = one_major(&f, &toml::Value::String(major.clone()))?;
        let path = f.string()?;
        if !path.starts_with('/') {
            return Err(f.invalid("a toolkit folder is an absolute path (the folder holding bin/nvcc, as CUDA_HOME names it)"));
        }
        out.insert(m, path);
    }
    Ok(out)
}

/// One major's build of a `cuda` list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Part {
    pub(crate) major: u32,
    /// Every major of the list.
    pub(crate) majors: Majors,
}

impl Config {
    /// With `cuda` listing several majors, each major's configuration (lowest first): `cuda`
    /// that major (where the list came from kept), `build-dir` `<build-dir>/cu<major>`, and
    /// `part` set. `None` for one major.
    pub(crate) fn parts(&self) -> Option<Vec<Config>> {
        let CudaChoice::Several(majors) = self.tool.cuda.value else {
            return None;
        };
        let parts = majors
            .iter()
            .map(|major| {
                let mut c = self.clone();
                c.tool = self.tool.for_major(major);
                c.tool.build_dir = format!("{}/cu{major}", c.tool.build_dir.trim_end_matches('/'));
                c.part = Some(Part { major, majors });
                c
            })
            .collect();
        Some(parts)
    }

    /// The majors of a `cuda` list (one build each), or `None` for one major.
    pub(crate) fn several(&self) -> Option<Majors> {
        match self.tool.cuda.value {
            CudaChoice::Several(m) => Some(m),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::config::Overrides;
    use crate::hint::Hint;

    const EXT: &str = "[[tool.cudawheel.extension]]\nname = \"pkg._core\"\nsources = [\"k.cu\"]\n";

    fn load(tool: &str, settings: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let dir = tempfile::tempdir().unwrap();
        let text = format!(
            "[project]\nname = \"demo\"\nversion = \"1.0\"\n\n[tool.cudawheel]\n{tool}\n{EXT}"
        );
        let overrides = Overrides {
            settings: settings
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            env: BTreeMap::new(),
        };
        Config::from_text(dir.path(), text, &overrides)
    }

    fn error(tool: &str, settings: &[(&str, &str)]) -> String {
        let e = load(tool, settings).unwrap_err();
        assert!(!e.hints().is_empty(), "{e}: no hint");
        format!("{e}\nhint: {}", e.hints().join("\nhint: "))
    }

    #[test]
    fn a_list_of_majors_parses_from_toml_and_from_settings() {
        let c = load("cuda = [\"12\", 13]", &[]).unwrap();
        assert_eq!(c.several().map(|m| m.list()), Some("12, 13".into()));
        let c = load("", &[("cuda", "13;12")]).unwrap();
        assert_eq!(c.several().map(|m| m.list()), Some("12, 13".into()));
        // A list of one is that major, as today.
        let c = load("cuda = [\"12\"]", &[]).unwrap();
        assert_eq!(c.tool.cuda.value, CudaChoice::Major(12));
        assert!(c.parts().is_none());
        // Each major's build: that major, its own build-dir, the part set; the name unsuffixed.
        let c = load(
            "cuda = [12, 13]\nbuild-dir = \"b/\"\n[tool.cudawheel.toolkits]\n\"12\" = \"/opt/cuda-12.4\"",
            &[],
        )
        .unwrap();
        assert_eq!(
            c.tool.toolkits.get(&12).map(String::as_str),
            Some("/opt/cuda-12.4")
        );
        let parts = c.parts().unwrap();
        let seen: Vec<_> = parts
            .iter()
            .map(|p| (p.tool.cuda.value, p.tool.build_dir.as_str(), p.part.clone()))
            .collect();
        let majors = Majors::of(&[12, 13]);
        assert_eq!(
            seen,
            vec![
                (
                    CudaChoice::Major(12),
                    "b/cu12",
                    Some(Part { major: 12, majors })
                ),
                (
                    CudaChoice::Major(13),
                    "b/cu13",
                    Some(Part { major: 13, majors })
                ),
            ]
        );
        assert_eq!(
            crate::package::dist_name(&parts[0], None, 12).display,
            "demo"
        );
        assert_eq!(crate::package::dist_name(&c, None, 13).display, "demo");
        // An explicit suffix without {major} is kept.
        let c = load("cuda = [12, 13]\nname-suffix = \"-gpu\"", &[]).unwrap();
        assert_eq!(crate::package::dist_name(&c, None, 13).display, "demo-gpu");
    }

    #[test]
    fn bad_lists_and_what_a_list_rules_out_name_the_key() {
        type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a str);
        let cases: &[Case] = &[
            ("cuda = [12, 12]", &[], "`tool.cudawheel.cuda` (from pyproject.toml) has an invalid value array [12, 12]: CUDA 12 is listed twice"),
            ("cuda = []", &[], "the list names no CUDA major"),
            ("cuda = [12, 10]", &[], "supported CUDA majors are 11, 12 and 13"),
            ("", &[("cuda", "12;auto")], "\"auto\" is a single value, not a list item"),
            ("cuda = [12, 13]\nname-suffix = \"-cu{major}\"", &[], "`tool.cudawheel.name-suffix`: `{major}` in the distribution name with several CUDA majors (`cuda` = [12, 13]) is not supported by this version of cudawheel\nhint: one wheel holds every major under one name"),
            ("cuda = [12, 13]\nvariant = \"cuda\"", &[], "`tool.cudawheel.variant`: a wheel variant with several CUDA majors"),
            ("cuda = [12, 13]\nsplit = \"library\"", &[], "`tool.cudawheel.split`: `split = \"library\"` with several CUDA majors"),
            ("cuda = [12, 13]\n[tool.cudawheel.toolkits]\n\"11\" = \"/opt/cuda-11.8\"", &[], "`tool.cudawheel.toolkits.\"11\"` (from pyproject.toml) has an invalid value \"/opt/cuda-11.8\": CUDA 11 is not among several CUDA majors (`cuda` = [12, 13])"),
            ("cuda = [12, 13]\n[tool.cudawheel.toolkits]\n\"12\" = \"opt/cuda\"", &[], "a toolkit folder is an absolute path"),
            ("[tool.cudawheel.toolkits]\n\"x\" = \"/opt\"", &[], "`tool.cudawheel.toolkits.\"x\"`"),
            ("toolkits = 3", &[], "`tool.cudawheel.toolkits` (from pyproject.toml) must be a table of CUDA major = toolkit folder"),
        ];
        for (tool, settings, want) in cases {
            let got = error(tool, settings);
            assert!(got.contains(want), "{tool:?}:\n{got}\nwanted: {want}");
        }
    }

    #[test]
    fn shared_libraries_and_top_level_modules_are_refused_with_several_majors() {
        let lib = "cuda = [12, 13]\n[[tool.cudawheel.shared-library]]\nname = \"calc\"\nsources = [\"c.cu\"]\ndestination = \"pkg\"";
        assert!(error(lib, &[])
            .contains("a shared-library target (not supported yet) with several CUDA majors"));
        let dir = tempfile::tempdir().unwrap();
        let text = "[project]\nname = \"demo\"\nversion = \"1.0\"\n[tool.cudawheel]\ncuda = [12, 13]\n[[tool.cudawheel.extension]]\nname = \"top\"\nsources = [\"k.cu\"]\n";
        let e = Config::from_text(dir.path(), text.into(), &Overrides::default()).unwrap_err();
        assert!(
            e.to_string()
                .contains(".name`: an extension module outside a package (not supported yet)"),
            "{e}"
        );
        // The same project with one major is fine.
        let one = text.replace("cuda = [12, 13]", "cuda = 12");
        assert!(Config::from_text(dir.path(), one, &Overrides::default()).is_ok());
    }
}
