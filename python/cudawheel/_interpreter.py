"""The facts about a Python interpreter that a build needs (tags, extension suffix, headers,
sys.path, ...). `cudawheel/__init__.py` imports `_python_info` for the running interpreter;
`python -m cudawheel wheel --python PY` runs this file's text with `PY -c` (the Rust core
includes it), so it imports nothing of cudawheel and prints the facts as one JSON line."""

from __future__ import annotations

import json
import os
import platform
import sys
import sysconfig


def _python_info() -> dict:
    soabi = sysconfig.get_config_var("SOABI") or ""
    impl = sys.implementation.name
    ver = sys.version_info
    if impl == "cpython":
        python_tag = f"cp{ver.major}{ver.minor}"
        parts = soabi.split("-")
        abi_tag = "cp" + parts[1] if len(parts) > 1 else python_tag
    else:
        python_tag = f"{impl[:2]}{ver.major}{ver.minor}"
        abi_tag = soabi.replace("-", "_").replace(".", "_") or "none"
    return {
        "version": [ver.major, ver.minor],
        "implementation": impl,
        "python_tag": python_tag,
        "abi_tag": abi_tag,
        "ext_suffix": sysconfig.get_config_var("EXT_SUFFIX") or ".so",
        "include_dir": sysconfig.get_paths()["include"],
        "sys_path": [p for p in sys.path if p and os.path.isdir(p)],
        "machine": platform.machine(),
        "executable": sys.executable,
        "gil_disabled": sysconfig.get_config_var("Py_GIL_DISABLED") == 1,
    }


if __name__ == "__main__":
    print(json.dumps(_python_info()))
