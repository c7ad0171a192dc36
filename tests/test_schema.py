"""The JSON schema of `[tool.cudawheel]` as validate-pyproject sees it through
cudawheel's `validate_pyproject.tool_schema` entry point: the examples are valid, mistakes are
caught, and without cudawheel installed the same mistakes pass (so it is our schema at work).
That the checked-in schema matches the parser's key table is `cargo test`'s job."""

from __future__ import annotations

import sys

import pytest

from conftest import EXAMPLES, clean_env, run


@pytest.fixture(scope="module")
def cudawheel_site(scratch, wheelhouse):
    """The cudawheel wheel unpacked on its own (its entry points become visible on sys.path)."""
    target = scratch("cudawheel-site")
    (wheel,) = wheelhouse.glob("cudawheel-*.whl")
    run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", target, wheel], env=clean_env())
    return target


def validate(path, site=None):
    env = clean_env(PYTHONPATH=site) if site else clean_env()
    return run([sys.executable, "-m", "validate_pyproject", path], env=env, check=False)


def test_get_schema_is_the_checked_in_file(cudawheel_site):
    code = "import json, cudawheel.schema as s; d = s.get_schema('cudawheel'); print(d['title'], sorted(d['properties'])[:3])"
    out = run([sys.executable, "-c", code], env=clean_env(PYTHONPATH=cudawheel_site)).stdout
    assert out.strip() == "[tool.cudawheel] ['archs', 'bindings', 'build-backend']"


@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.iterdir() if (p / "pyproject.toml").exists()))
def test_examples_are_valid(example, cudawheel_site):
    proc = validate(EXAMPLES / example / "pyproject.toml", cudawheel_site)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Valid file" in proc.stdout + proc.stderr


@pytest.mark.parametrize("snippet, expect", [
    ('cudaa = 12', "cudaa"),
    ('cuda = 14', "tool.cudawheel.cuda"),
    ('bindings = "swig"', "tool.cudawheel.bindings"),
    ('[[tool.cudawheel.extension]]\nname = "x._y"\nsources = ["a.cu"]\nrdc = "yes"', "rdc"),
    ('[[tool.cudawheel.shared-library]]\nname = "calc"\nsources = ["a.cu"]', "destination"),
])
def test_mistakes_are_caught(snippet, expect, cudawheel_site, tmp_path):
    body = snippet if snippet.startswith("[[") else f"[tool.cudawheel]\n{snippet}"
    path = tmp_path / "pyproject.toml"
    path.write_text(f'[project]\nname = "x"\nversion = "1"\n\n{body}\n')
    proc = validate(path, cudawheel_site)
    assert proc.returncode != 0, proc.stdout + proc.stderr
    assert expect in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    # Without cudawheel's plugin validate-pyproject knows nothing of [tool.cudawheel].
    assert validate(path).returncode == 0
