"""The documentation as a whole: the mkdocs site builds with --strict (a missing page, a missing
#anchor, a page left out of the navigation fail it), the README stays short, no doc points at
documents outside the repository, the README's own links resolve, and every environment
variable the code reads is in docs/reference/environment.md. Each check has a control that
plants the fault and shows the check catches it."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import REPO

README_MAX_LINES = 250
ENV_DOC = REPO / "docs/reference/environment.md"


def mkdocs_build(root, site):
    """`mkdocs build --strict` of the site whose mkdocs.yml is in `root`, into `site`."""
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(root / "mkdocs.yml"),
                           "-d", str(site)], capture_output=True, text=True, env=env, cwd=root)


def site_copy(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    shutil.copy(REPO / "mkdocs.yml", root)
    shutil.copytree(REPO / "docs", root / "docs")
    return root


def test_site_builds_strict(tmp_path):
    proc = mkdocs_build(REPO, tmp_path / "site")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "site/reference/environment/index.html").is_file()


@pytest.mark.parametrize("link, says", [
    ("[gone](how-to/no-such-page.md)", "not found among documentation files"),
    ("[gone](explanations/discovery.md#no-such-section)", "does not contain an anchor '#no-such-section'"),
])
def test_control_strict_build_fails_on_a_broken_link(tmp_path, link, says):
    root = site_copy(tmp_path)
    page = root / "docs/getting-started.md"
    page.write_text(page.read_text() + f"\nSee {link}.\n")
    proc = mkdocs_build(root, tmp_path / "site")
    assert proc.returncode != 0, proc.stdout + proc.stderr
    assert says in proc.stderr, proc.stderr


def test_control_anchors_are_checked_because_of_the_validation_setting(tmp_path):
    """Without `validation: anchors: warn`, mkdocs 1.6 reports a missing anchor only as INFO and
    --strict passes: the setting in mkdocs.yml is what makes the anchor check above work."""
    root = site_copy(tmp_path)
    config = (root / "mkdocs.yml").read_text()
    assert "  anchors: warn\n" in config
    (root / "mkdocs.yml").write_text(config.replace("  anchors: warn\n", ""))
    page = root / "docs/getting-started.md"
    page.write_text(page.read_text() + "\nSee [gone](explanations/discovery.md#no-such-section).\n")
    proc = mkdocs_build(root, tmp_path / "site")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_readme_is_short():
    lines = (REPO / "README.md").read_text().count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; move detail into docs/"


# References to documents that are not in the repository.
OUTSIDE = re.compile(r"contract\s*§|\bissues?\s+#?\d+|/work/|contract\.md|NOTES-issue", re.I)
LINK = re.compile(r"\]\(([^)\s]+)\)")


def markdown_files():
    return [REPO / "README.md", REPO / "CONTRIBUTING.md", REPO / "CHANGELOG.md",
            *sorted((REPO / "docs").rglob("*.md"))]


def outside_references(path, text):
    problems = [f"{path.name}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0)!r}" for m in OUTSIDE.finditer(text)]
    for m in LINK.finditer(text):
        target = m.group(1).split("#")[0]
        if not target or re.match(r"[a-z]+:", target):
            continue
        resolved = (path.parent / target).resolve()
        if REPO.resolve() not in resolved.parents and resolved != REPO.resolve():
            problems.append(f"{path.name}: link {m.group(1)} leaves the repository")
    return problems


def test_docs_refer_only_to_the_repository():
    problems = [p for path in markdown_files() for p in outside_references(path, path.read_text())]
    assert not problems, "\n".join(problems)


# The planted references are assembled from parts, so this file itself cites nothing.
SECTION, TRACKER = "contract " + "§", "issue "


@pytest.mark.parametrize("planted", [f"as {SECTION}4 says", f"see {TRACKER}13", f"({TRACKER}#7)",
                                     "/work/shared/" + "contract.md", "[x](../../outside.md)"])
def test_control_outside_references_are_found(planted):
    assert outside_references(REPO / "docs/index.md", f"text {planted} text")


def slugs(path):
    """The #anchors of a markdown file's headings, as mkdocs (and GitHub, for these) make them."""
    from markdown.extensions.toc import slugify

    text = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.M | re.S)
    return {slugify(re.sub(r"[`*]", "", h), "-") for h in re.findall(r"^#+ (.+)$", text, re.M)}


def broken_links(path, text):
    problems = []
    for m in LINK.finditer(text):
        target, _, anchor = m.group(1).partition("#")
        if re.match(r"[a-z]+:", target):
            continue
        file = (path.parent / target) if target else path
        if not file.exists():
            problems.append(f"{path.name}: {m.group(1)}: no such file")
        elif anchor and file.suffix == ".md" and anchor not in slugs(file):
            problems.append(f"{path.name}: {m.group(1)}: no such section")
    return problems


def test_links_outside_the_site_resolve():
    """README, CONTRIBUTING and CHANGELOG are not part of the site: their links are checked here."""
    problems = [p for name in ["README.md", "CONTRIBUTING.md", "CHANGELOG.md", "scripts/gpu-checks/README.md"]
                for p in broken_links(REPO / name, (REPO / name).read_text())]
    assert not problems, "\n".join(problems)


def test_control_broken_readme_links_are_found():
    readme = REPO / "README.md"
    assert broken_links(readme, "[a](docs/no-such-page.md)")
    assert broken_links(readme, "[a](docs/getting-started.md#no-such-section)")
    assert not broken_links(readme, "[a](docs/getting-started.md#getting-the-backend)")


# How the code reads environment variables: the Rust stages read one map of the process
# environment (`Overrides::env`, handed on as `env`), through `env.get(...)`, `env_path(env, ...)`
# and `env_list(env, ...)`; the generated import helper and the Python hooks use `os.environ`.
READ = re.compile(r"\benv::var(?:_os)?\(|\benv\s*\.get\(|\.env_set\(|\benv_path\(\s*env\s*,|\benv_list\(\s*env\s*,"
                  r"|os\.environ\.get\(|os\.environ\[|os\.getenv\(|jobserver::Client::from_env\(")
NAME = re.compile(r'"([A-Z][A-Z0-9_]{2,})"')
PREFIXED = re.compile(r'"\{\w*\}(_[A-Z][A-Z0-9_]*)"')  # format!("{p}_LIBRARY_PATH"): a library's variables
WINDOW = 6  # lines around a read whose name is not a literal (a loop over names, a constant)


def code_only(text, rust):
    if rust:
        test_module = re.search(r"^#\[cfg\(test\)\]\s*\n\s*mod \w+\s*\{", text, re.M)
        if test_module:
            text = text[:test_module.start()]
        text = re.sub(r"^\s*//.*$", "", text, flags=re.M)
    return text


def env_reads(text, rust=True):
    """The environment variables a source file reads: the literal name at each read, else the
    names (string literals, constants) within WINDOW lines of it."""
    text = code_only(text, rust)
    consts = {m.group(1): NAME.findall(m.group(2))
              for m in re.finditer(r"const ([A-Z][A-Z0-9_]*): &(?:\[&)?(?:'static )?str\]? = ([^;]*);", text)}
    lines = text.split("\n")
    names = set()
    for m in READ.finditer(text):
        if m.group(0).startswith("jobserver"):
            names.add("MAKEFLAGS")
            continue
        literal = re.match(r'\s*"([A-Z][A-Z0-9_]*)"', text[m.end():])
        if literal:
            names.add(literal.group(1))
            continue
        line = text.count("\n", 0, m.start())
        near = "\n".join(lines[max(0, line - WINDOW):line + WINDOW + 1])
        names.update(NAME.findall(near))
        names.update("<PREFIX>" + s for s in PREFIXED.findall(near))
        names.update(v for c, vals in consts.items() if re.search(rf"\b{c}\b", near) for v in vals)
    return names


def top_level_key_variables():
    """`CUDAWHEEL_<KEY>` of every top-level key (config/keydef.rs `env_var`), the keys read from
    the generated JSON schema (`cargo test` keeps it equal to the code's key table)."""
    keydef = (REPO / "src/config/keydef.rs").read_text()
    assert "\"CUDAWHEEL_{}\",\n            self.name.to_ascii_uppercase().replace('-', \"_\")" in keydef
    schema = json.loads((REPO / "python/cudawheel/resources/cudawheel.schema.json").read_text())

    def is_table(spec):
        return spec.get("type") == "object" or "$ref" in spec.get("items", {})

    keys = [k for k, spec in schema["properties"].items() if not is_table(spec)]
    assert len(keys) > 20, keys
    return {"CUDAWHEEL_" + k.upper().replace("-", "_") for k in keys}


def declared_key_variables():
    """The other variables a key's declaration names (config/keys.rs `env_above` / `env_below`:
    `CUDAARCHS`, `CUDAHOSTCXX`, `CXX`), which config/layered.rs reads for it."""
    keys = (REPO / "src/config/keys.rs").read_text()
    consts = dict(re.findall(r"const ([A-Z][A-Z0-9_]*): &\[&str\] = &\[([^\]]*)\];", keys))
    lists = re.findall(r"env_(?:above|below):\s*(?:&\[([^\]]*)\]|([A-Z][A-Z0-9_]*))", keys)
    assert lists, "no env_above/env_below in config/keys.rs: the scan is broken"
    return {name for items, const in lists for name in NAME.findall(items or consts.get(const, ""))}


def variables_read_by_the_code():
    names = set(top_level_key_variables()) | declared_key_variables()
    sources = [*(REPO / "src").rglob("*.rs"), *(REPO / "src").rglob("*.py"), *(REPO / "python").rglob("*.py")]
    for path in sources:
        names |= env_reads(path.read_text(), rust=path.suffix == ".rs")
    return names


def test_every_environment_variable_read_is_documented():
    names = variables_read_by_the_code()
    # The ones the brief of this page names must be found by the scan, or the scan is broken.
    assert {"CUDA_HOME", "CUDACXX", "CUDAARCHS", "TORCH_CUDA_ARCH_LIST", "SOURCE_DATE_EPOCH",
            "CUDAWHEEL_DEBUG", "CUDAWHEEL_SKIP_GPU_CHECK", "CUDAWHEEL_ARCHS", "<PREFIX>_LIBRARY_PATH"} <= names
    doc = ENV_DOC.read_text()
    missing = sorted(n for n in names if f"`{n}`" not in doc)
    assert not missing, f"read by the code but not in {ENV_DOC.relative_to(REPO)}: {missing}"


def test_control_the_scan_finds_reads():
    rust = '''
const THING_ENV: &str = "CUDAWHEEL_FROM_A_CONST";
fn f(env: &Env, overrides: &Overrides) {
    let a = env.get("CUDAWHEEL_LITERAL");
    for var in ["CUDAWHEEL_LOOP_A", "CUDAWHEEL_LOOP_B"] {
        if let Some(p) = env_path(env, var) {}
    }
    let b = overrides
        .env
        .get(THING_ENV);
    let c = env_list(env, &format!("{p}_SEARCH_PATH"));
    let d = std::env::var("CUDAWHEEL_STD");
}
#[cfg(test)]
mod tests {
    fn t() { env.get("CUDAWHEEL_ONLY_IN_TESTS"); }
}
'''
    assert env_reads(rust) == {"CUDAWHEEL_LITERAL", "CUDAWHEEL_LOOP_A", "CUDAWHEEL_LOOP_B", "CUDAWHEEL_FROM_A_CONST",
                               "<PREFIX>_SEARCH_PATH", "CUDAWHEEL_STD"}
    python = 'x = os.environ.get("CUDAWHEEL_PY")\ny = os.environ["CUDAWHEEL_PY2"]\n'
    assert env_reads(python, rust=False) == {"CUDAWHEEL_PY", "CUDAWHEEL_PY2"}
