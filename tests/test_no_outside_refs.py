"""No comment, test, script or doc refers to a document outside the repository (the tracker's
issue numbers, a contract's sections, this workplace's paths): a reader of the repository has
only the repository. The markdown side (with links) is checked by test_docs_site.py; this one
reads the code, the tests and the scripts."""

from __future__ import annotations

from conftest import REPO
from test_docs_site import OUTSIDE, SECTION, TRACKER

SELF = {"test_docs_site.py", "test_no_outside_refs.py"}
SUFFIXES = {".rs", ".py", ".sh", ".toml", ".txt", ".yml", ".yaml", ".md"}


def files():
    for top in ("src", "python", "tests", "scripts", "examples", "fuzz", ".ci"):
        for path in sorted((REPO / top).rglob("*")):
            if path.is_file() and path.suffix in SUFFIXES and path.name not in SELF and "corpus" not in path.parts:
                yield path
    for path in sorted(REPO.glob("*")):
        if path.is_file() and path.suffix in SUFFIXES:
            yield path


def test_code_tests_and_scripts_refer_only_to_the_repository():
    problems = []
    for path in files():
        text = path.read_text(errors="replace")
        for m in OUTSIDE.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            problems.append(f"{path.relative_to(REPO)}:{line}: {m.group(0)!r}")
    assert not problems, "\n".join(problems)


def test_a_planted_reference_is_found():
    assert OUTSIDE.search(f"// as {SECTION}4 says") and OUTSIDE.search(f"# see {TRACKER}13")
