"""cudawheel: a PEP 517 build backend for projects with CUDA sources.

`build-backend = "cudawheel"`: this module is the backend. Each hook collects facts about the
running interpreter, hands them with the config settings to the Rust core, and turns a
`BuildError` into one message on stderr and exit status 1 (no traceback; set
CUDAWHEEL_DEBUG=1 to see one).
"""

from __future__ import annotations

import json
import os
import sys

from ._interpreter import _python_info

__all__ = [
    "build_editable",
    "build_sdist",
    "build_wheel",
    "get_requires_for_build_editable",
    "get_requires_for_build_sdist",
    "get_requires_for_build_wheel",
    "prepare_metadata_for_build_editable",
    "prepare_metadata_for_build_wheel",
]


def _settings(config_settings) -> dict[str, str]:
    """PEP 517's config settings as `dict[str, str]` (a list joined with `;`)."""
    out = {}
    for key, value in (config_settings or {}).items():
        if isinstance(value, (list, tuple)):
            value = ";".join(str(v) for v in value)
        out[str(key)] = "" if value is None else str(value)
    return out


def _call(name, *args, config_settings=None):
    """`_core.<name>(cwd, *args, settings, python facts)`; a `BuildError` becomes one message on
    stderr and exit status 1."""
    from . import _core

    try:
        return getattr(_core, name)(os.getcwd(), *args, _settings(config_settings), json.dumps(_python_info()))
    except _core.BuildError as err:
        if os.environ.get("CUDAWHEEL_DEBUG"):
            raise
        sys.stderr.write(f"{err}\n")
        sys.stderr.flush()
        raise SystemExit(1) from None


def _abs(path):
    return None if path is None else os.path.abspath(path)


def get_requires_for_build_wheel(config_settings=None):
    return _call("get_requires_for_build_wheel", config_settings=config_settings)


def get_requires_for_build_sdist(config_settings=None):
    return _call("get_requires_for_build_sdist", config_settings=config_settings)


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    return _call("prepare_metadata_for_build_wheel", _abs(metadata_directory), config_settings=config_settings)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _call("build_wheel", _abs(wheel_directory), _abs(metadata_directory), config_settings=config_settings)


def build_sdist(sdist_directory, config_settings=None):
    return _call("build_sdist", _abs(sdist_directory), config_settings=config_settings)


def get_requires_for_build_editable(config_settings=None):
    return _call("get_requires_for_build_editable", config_settings=config_settings)


def prepare_metadata_for_build_editable(metadata_directory, config_settings=None):
    return _call("prepare_metadata_for_build_editable", _abs(metadata_directory), config_settings=config_settings)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    return _call("build_editable", _abs(wheel_directory), _abs(metadata_directory), config_settings=config_settings)
