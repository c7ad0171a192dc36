"""The JSON schema of `[tool.cudawheel]`, for validate-pyproject (its `tool_schema` plugin entry
point) and editors. The file is generated from the definitions the Rust parser uses
(src/config/tool.rs) and `cargo test` checks that it is up to date.
"""

from __future__ import annotations

import json
from importlib import resources


def get_schema(tool_name: str = "cudawheel") -> dict:
    """The schema of `[tool.<tool_name>]`; cudawheel has only its own table."""
    if tool_name != "cudawheel":
        raise KeyError(f"cudawheel has no schema for [tool.{tool_name}]")
    text = resources.files(__package__).joinpath("resources/cudawheel.schema.json").read_text(encoding="utf-8")
    return json.loads(text)
