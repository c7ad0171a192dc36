"""`python -m cudawheel check`: what a package's or a wheel's generated helpers (`_cuda_libs.py`)
report in this interpreter, as JSON for the Rust core, which decides and renders the verdict. A
package holding a build per CUDA major: its `_cuda_select.py` says which major this interpreter
would load and why, and that major's helper (`_cuda_libs_cu<major>.py`) is the one asked.

This part stays in Python: the helpers are Python modules, and their checks (libcuda's driver
version, NVML's GPUs, the verdict per GPU) run in the interpreter that would import the package.
The package itself is not imported (its import runs the check, which may fail); a wheel's
helpers come from the Rust core, which reads them out of the zip."""

from __future__ import annotations

import importlib.util
import json
import os
import types


def facts(what: str) -> str:
    """`{"helpers": [each helper's facts]}`, or `{"error": why none could be found}`."""
    from . import _core

    try:
        if what.endswith(".whl"):
            helpers = _chosen(_core.check_helpers(what))
        else:
            helpers = _installed(what)
    except (LookupError, OSError, ImportError) as err:
        return json.dumps({"error": str(err)})
    return json.dumps({"helpers": [dict(_facts(owner, m), **extra) for owner, m, extra in helpers]})


def _chosen(sources):
    """(owner, helper module, extra facts) of each helper among `sources` ((name, text, origin)
    each). A package holding a build per CUDA major (`_cuda_select`, `_cuda_libs_cu<major>`):
    only the helper of the major its `_cuda_select` chooses in this interpreter, with that
    choice and why."""
    selects = {name.rpartition(".")[0]: (name, text, origin) for name, text, origin in sources
               if name.endswith("._cuda_select")}
    choices = {}
    for package, (name, text, origin) in selects.items():
        # torch's import stays: a package of torch extensions loads the build of torch's CUDA.
        _, select = _load(name, text, origin, package, keep_torch=True)
        major, reason = select.choice()
        choices[package] = {"cuda_choice": {"majors": list(select.MAJORS), "major": major, "reason": reason}}
    out = []
    for name, text, origin in sources:
        package, _, leaf = name.rpartition(".")
        if leaf == "_cuda_select":
            continue
        if package in choices:
            if leaf != f"_cuda_libs_cu{choices[package]['cuda_choice']['major']}":
                continue
            owner, module = _load(name, text, origin, name)
            out.append((owner, module, choices[package]))
            continue
        owner, module = _load(name, text, origin, name)
        out.append((owner, module, {}))
    return out


def _load(name, text, origin, owner, keep_torch=False):
    """(what its messages name, the helper `text` as module `name`). torch's import, there to
    load torch's libraries, is left out of a helper (the check needs none), kept in
    `_cuda_select` (`keep_torch`: torch's CUDA is what it chooses by)."""
    module = types.ModuleType(name)
    module.__package__ = name.rpartition(".")[0]
    module.__file__ = origin
    if not keep_torch:
        text = text.replace("\nimport torch  # noqa: F401\n", "\n")
    exec(compile(text, origin, "exec"), module.__dict__)
    return getattr(module, "_OWNER", owner), module


def _installed(what):
    """The helper of an installed package or top-level module (none: [])."""
    top = what.split(".")[0]
    spec = importlib.util.find_spec(top)
    if spec is None:
        raise LookupError(f"no package or module {top!r} on sys.path")
    if spec.submodule_search_locations:
        candidates = [(f"{top}._cuda_libs", os.path.join(d, "_cuda_libs.py")) for d in spec.submodule_search_locations]
    else:
        folder = os.path.dirname(spec.origin or "")
        candidates = [(f"_{top}_cuda_libs", os.path.join(folder, f"_{top}_cuda_libs.py"))]
    for name, path in candidates:
        select = os.path.join(os.path.dirname(path), "_cuda_select.py")
        if os.path.isfile(select):
            # A build per CUDA major: `_cuda_libs.py` stands for the chosen major's helper.
            sources = [(f"{top}._cuda_select", _read(select), select)]
            for file in sorted(os.listdir(os.path.dirname(path))):
                if file.startswith("_cuda_libs_cu") and file.endswith(".py"):
                    helper = os.path.join(os.path.dirname(path), file)
                    sources.append((f"{top}.{file[:-3]}", _read(helper), helper))
            return _chosen(sources)
        if os.path.isfile(path):
            owner, module = _load(name, _read(path), path, top)
            return [(owner, module, {})]
    return []


def _read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def _facts(owner, m) -> dict:
    """The answers of one helper, asked in the order its import asks them (a driver below a
    floor: nothing more)."""
    out = {"package": owner, "cuda": list(m.CUDA_VERSION), "floors": [[r, list(c)] for r, c in m.DRIVER_FLOORS],
           "driver_status": m.driver_status(), "driver_problem": m.driver_problem() or None}
    if out["driver_problem"] is None:
        out["other_copies"] = list(getattr(m, "other_copies", lambda: [])())
        verdicts = m.gpu_verdicts()
        out["driver_version"] = m.driver_version()
        out["gpus"] = [{"index": v.index, "name": v.name, "sm": v.sm, "verdict": v.verdict, "message": v.message}
                       for v in verdicts]
    return out
