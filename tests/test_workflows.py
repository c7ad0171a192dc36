"""The GitHub Actions workflow files (.github/workflows/) pass actionlint (syntax, expression
types, untrusted input in scripts) and zizmor (security: unpinned actions, excessive
permissions, persisted credentials, template injection), both from requirements-dev.txt. The
release workflow publishes by trusted publishing: its only write permission is the OIDC token,
in the publishing job alone, and every action is pinned by commit. The control: a planted
workflow with an unpinned action and an issue title expanded in a script fails both."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
WORKFLOWS = REPO / ".github/workflows"

BAD = """\
name: bad
on:
  issues:
    types: [opened]
jobs:
  greet:
    runs-on: ubuntu-24.04
    steps:
      - uses: actions/checkout@v4
      - run: echo "${{ github.event.issue.title }}"
      - run: echo "${{ matrix.nope }}"
"""


def tool(name: str, *args, cwd=REPO) -> subprocess.CompletedProcess:
    exe = shutil.which(name) or str(Path(sys.executable).parent / name)
    assert Path(exe).exists(), f"{name} is missing: pip install -r requirements-dev.txt"
    return subprocess.run([exe, *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def workflow_files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in (root / ".github/workflows").glob("*.y*ml"))


def test_the_workflows_pass_actionlint():
    files = workflow_files(REPO)
    assert ".github/workflows/release.yml" in files, files
    proc = tool("actionlint", "-no-color", *files)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_workflows_pass_zizmor():
    # --offline: no GitHub API here (the pins are checked for shape, not looked up).
    proc = tool(
        "zizmor", "--offline", "--persona=pedantic", "--no-progress", "--color=never", ".github/workflows"
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "No findings to report" in proc.stdout + proc.stderr, proc.stdout + proc.stderr


def test_the_release_workflow_publishes_by_trusted_publishing():
    text = (WORKFLOWS / "release.yml").read_text()
    assert "bash scripts/release.sh dist/release" in text
    uses = re.findall(r"^\s*-?\s*uses:\s*(\S+)", text, re.M)
    assert uses and all(re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", u) for u in uses), uses
    assert any(u.startswith("pypa/gh-action-pypi-publish@") for u in uses), uses
    assert re.search(r"^permissions: \{\}$", text, re.M), "the workflow's default must be no permissions"
    writes = re.findall(r"^\s+([\w-]+): write\b", text, re.M)
    assert writes == ["id-token"], writes
    assert "password:" not in text and "secrets." not in text  # no token: OIDC only


def test_a_bad_workflow_fails_both(tmp_path):
    (tmp_path / ".github/workflows").mkdir(parents=True)
    (tmp_path / ".github/workflows/bad.yml").write_text(BAD)
    lint = tool("actionlint", "-no-color", ".github/workflows/bad.yml", cwd=tmp_path)
    assert lint.returncode == 1, lint.stdout + lint.stderr
    assert '"github.event.issue.title" is potentially untrusted' in lint.stdout, lint.stdout
    assert 'property "nope" is not defined' in lint.stdout, lint.stdout
    # JSON, not the rendered report: CI runners force colour (FORCE_COLOR), which put escape
    # codes around the rule names a text match looked for.
    audit = tool("zizmor", "--offline", "--no-progress", "--format=json", ".github/workflows", cwd=tmp_path)
    assert audit.returncode != 0, audit.stdout + audit.stderr
    found = {finding["ident"] for finding in json.loads(audit.stdout)}
    assert {"template-injection", "unpinned-uses", "artipacked"} <= found, audit.stdout
