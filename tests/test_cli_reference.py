"""docs/reference/cli.md against the command line itself (python/cudawheel/__main__.py's argparse
parser): every subcommand has its section, every option a subcommand takes is named in that
section, and the page names no option the subcommand lacks. A control shows a missing option is
caught."""

from __future__ import annotations

import re
import sys

from conftest import REPO

sys.path.insert(0, str(REPO / "python"))
from cudawheel.__main__ import _parser  # noqa: E402

PAGE = REPO / "docs/reference/cli.md"


def commands() -> dict[str, list[tuple[str, ...]]]:
    """subcommand -> each option it takes, as its spellings (`-o`, `--out-dir`); -h left out."""
    (action,) = _parser()._subparsers._group_actions
    return {
        name: [tuple(a.option_strings) for a in sp._actions if a.option_strings and a.dest != "help"]
        for name, sp in action.choices.items()
    }


def sections(text: str) -> dict[str, str]:
    parts = re.split(r"^## `([a-z-]+)`\n", text, flags=re.M)
    return {parts[i]: parts[i + 1].split("\n## ")[0] for i in range(1, len(parts), 2)}


def problems(text: str) -> list[str]:
    out = []
    found = sections(text)
    for name, options in commands().items():
        if name not in found:
            out.append(f"no section for `{name}`")
            continue
        body = found[name]
        for spellings in options:
            if not any(re.search(rf"(?<![\w-]){re.escape(s)}(?![\w-])", body) for s in spellings):
                out.append(f"`{name}`: option {spellings[-1]} not named")
        taken = {s for spellings in options for s in spellings}
        for opt in set(re.findall(r"(?<![\w-])--[a-z][a-z-]+", body)) - taken - {"--help"}:
            out.append(f"`{name}`: names {opt}, which it does not take")
    return out


def test_the_cli_reference_matches_the_parser():
    assert problems(PAGE.read_text()) == []


def test_a_missing_option_is_caught():
    text = PAGE.read_text()
    wheel = sections(text)["wheel"]
    broken = text.replace(wheel, wheel.replace("--cuda", "--cuda-major"))
    found = problems(broken)
    assert "`wheel`: option --cuda not named" in found and "`wheel`: names --cuda-major, which it does not take" in found
