"""Every Python file of the repository passes `ruff check` with the rules in pyproject.toml, and
the check does fail on a lint error (the control)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def ruff(*args, cwd=REPO) -> subprocess.CompletedProcess:
    exe = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    if not Path(exe).exists():
        exe = None
    cmd = [exe] if exe else [sys.executable, "-m", "ruff"]
    return subprocess.run([*cmd, *args], cwd=cwd, capture_output=True, text=True)


def test_the_repository_passes_ruff():
    proc = ruff("check", "--no-cache", ".")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_a_lint_error_fails_the_check(tmp_path):
    (tmp_path / "pyproject.toml").write_text((REPO / "pyproject.toml").read_text())
    bad = tmp_path / "bad.py"
    bad.write_text("import os\n")
    proc = ruff("check", "--no-cache", ".", cwd=tmp_path)
    assert proc.returncode == 1 and "F401" in proc.stdout, proc.stdout + proc.stderr
