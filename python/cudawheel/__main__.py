"""`python -m cudawheel wheel|sdist|requires|doctor [PROJECT] [-o OUT] [-C KEY=VALUE ...]`
`python -m cudawheel wheel PROJECT -o OUT --cuda 12 --cuda 13 [-C variant=cuda]`
`python -m cudawheel audit [--json] WHEEL [WHEEL ...]`, `python -m cudawheel variants-json DIR`
`python -m cudawheel doctor WHEEL.whl`, `python -m cudawheel size [--json] DIR`,
`python -m cudawheel check [PACKAGE | WHEEL]`

wheel/sdist/requires run the backend's hooks on a project without a frontend (no build
isolation: the toolkit must already be findable). audit checks finished wheels against the
rules every cudawheel build enforces (NEEDED, RPATH, Requires-Dist, platform tag) and prints the
GPU code (SASS, PTX, the CUDA version its PTX needs) each ELF carries and the driver floors the
wheel recorded (`_cuda_libs.DRIVER_FLOORS`). doctor
reports what discovery finds (nvcc, host compiler, CUDA libraries, binding libraries) and what a
wheel built now would be named and declare; it works outside a project too.
With `split = "library"` wheel writes the library wheel `<name>-lib-cu<major>` (the GPU code,
py3-none) and the binding wheel; with `--python PY ...` the library once and a binding wheel per
interpreter (a PEP 517 frontend gets one ordinary wheel instead). With `variant` too, both are
variant wheels of one label: `<name>-lib` and `<name>`, each with its -variants.json.
`wheel --python PY` (repeated; an interpreter path) builds the wheel for each of those Pythons
(its tags, extension suffix, headers and binding libraries), one after the other in the same
build-dir; combinable with `--cuda`. The interpreters need no cudawheel, only what the build finds
on their sys.path (e.g. pybind11). `wheel --cuda N` (repeated) builds one wheel per CUDA major, each with the toolkit discovery finds
for it and its own build-dir; with `variant` set it also writes OUT/<name>-<version>-variants.json,
which `variants-json DIR` (re)writes from the variant wheels in DIR.
size prints each wheel's bytes and GPU code, each project's total, and what one library wheel
holding the GPU code once would save where wheels of one project carry the same GPU code (exit 1: a file above PyPI's 100 MB).
check prints, for an installed package (its generated `_cuda_libs.py`, read without importing
the package) or a wheel (the same file inside it), whether the NVIDIA driver and each visible GPU
can run it: the verdicts its import would reach; exit status 1 on a mismatch.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from . import _python_info, build_sdist, get_requires_for_build_wheel


def _gpu_code(wheel):
    """{ELF path in the wheel: {"sass": [...], "ptx": [...], "ptx_isa": "9.5", "ptx_toolkit": [13, 5]}}"""
    from . import _core

    return json.loads(_core.hook("gpu_code", os.path.abspath(wheel), None, None, "{}", json.dumps(_python_info())))


def _describe_gpu_code(path, code) -> str:
    parts = [f"SASS {' '.join(code['sass']) or '-'}", f"PTX {' '.join(code['ptx']) or '-'}"]
    if code["ptx_toolkit"]:
        major, minor = code["ptx_toolkit"]
        parts.append(f"PTX ISA {code['ptx_isa']}: JIT needs a driver for CUDA {major}.{minor}+")
    return f"  GPU code {path}: " + " | ".join(parts)


def _audit(wheels, as_json=False) -> int:
    from . import _core

    failed = 0
    report = []
    for wheel in wheels:
        try:
            result = json.loads(_core.hook("audit", os.path.abspath(wheel), None, None, "{}", json.dumps(_python_info())))
            gpu = _gpu_code(wheel)
        except _core.BuildError as err:
            sys.stderr.write(f"{err}\n")
            failed += 1
            continue
        failed += bool(result)
        floors = [{"package": package, "reason": reason, "cuda": list(cuda)}
                  for package, m in _helpers(wheel) for reason, cuda in getattr(m, "DRIVER_FLOORS", [])]
        report.append({"wheel": wheel, "ok": not result, "violations": result, "gpu_code": gpu,
                       "driver_floors": floors})
        if as_json:
            continue
        print(f"{'FAIL' if result else 'OK  '} {wheel}")
        for violation in result:
            print(f"  {violation}")
        for path, code in gpu.items():
            print(_describe_gpu_code(path, code))
        for f in floors:
            print(f"  driver floor CUDA {f['cuda'][0]}.{f['cuda'][1]}+ ({f['package']}): {f['reason']}")
    if as_json:
        print(json.dumps(report, indent=2))
    return 1 if failed else 0


def _doctor(project, settings) -> int:
    from . import _core, _settings

    if project.endswith(".whl"):
        # A built wheel: what GPU code it carries, per ELF file.
        print(f"GPU code of {project}:")
        for path, code in _gpu_code(project).items():
            print(_describe_gpu_code(path, code))
        return 0

    print(json.loads(_core.hook("doctor", os.path.abspath(project), None, None,
                                _settings(settings), json.dumps(_python_info()))))
    return 0


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
        verdicts = m.gpu_verdicts()
        if m.driver_version() is not None and not verdicts:
            print("  GPUs: none visible through NVML (nothing checked)")
        for v in verdicts:
            fail = v.verdict in ("no-code", "ptx-driver-too-old")
            bad = bad or fail
            print(f"  GPU {v.index} ({v.name}, {v.sm}): {v.verdict}" + (f": {v.message.splitlines()[0]}" if v.message else ""))
    return 1 if bad else 0


def _print_written(call) -> int:
    """Runs a backend call that returns the files it wrote: prints them, or the error."""
    from . import _core

    try:
        written = call()
    except _core.BuildError as err:
        sys.stderr.write(f"{err}\n")
        return 1
    for path in written:
        print(path)
    return 0


def _variants_json(folder) -> int:
    from . import _core

    return _print_written(lambda: _core.variants_json(os.path.abspath(folder)))


def _size(folder, as_json=False) -> int:
    from . import _size

    if not os.path.isdir(folder):
        sys.stderr.write(f"size: {folder} is not a folder of wheels\n")
        return 2
    rep = _size.report(folder)
    if as_json:
        print(json.dumps(rep, indent=2))
        return 0
    return _size.print_report(rep)


def _matrix(out_dir, majors, settings, info=None, library=True) -> int:
    """The wheels of each `--cuda` major (none: the configured major); with `split = "library"`
    the binding wheel and, when `library`, the library wheel."""
    from . import _core, _settings

    os.makedirs(out_dir, exist_ok=True)
    return _print_written(lambda: _core.build_matrix(os.getcwd(), out_dir, majors, _settings(settings),
                                                     json.dumps(info or _python_info()), library))


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


def _for_pythons(out_dir, pythons, majors, settings) -> int:
    """`wheel --python PY ...`: the wheel (or one per `--cuda` major) for each interpreter."""
    infos = [_interpreter_info(p) for p in pythons]
    if None in infos:
        return 1
    os.makedirs(out_dir, exist_ok=True)
    for i, info in enumerate(infos):
        # split = "library": the library wheel (Python-independent) once, with the first.
        if _matrix(out_dir, majors, settings, info, library=i == 0):
            return 1
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cudawheel", description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["wheel", "sdist", "requires", "doctor", "audit", "variants-json", "size", "check"])
    parser.add_argument("paths", nargs="*", help="project folder (default: .), or the wheels to audit")
    parser.add_argument("-o", "--out-dir", default="dist", help="output folder (default: dist)")
    parser.add_argument("--json", action="store_true", help="audit, size: print the result as JSON")
    parser.add_argument(
        "-C", "--config-setting", action="append", default=[], metavar="KEY=VALUE",
        help="a [tool.cudawheel] key, as pip's -C passes it",
    )
    parser.add_argument(
        "--cuda", action="append", type=int, default=[], metavar="MAJOR",
        help="wheel: build for this CUDA major (repeat for several)",
    )
    parser.add_argument(
        "--python", action="append", default=[], metavar="PY",
        help="wheel: build for this Python interpreter (a path; repeat for several)",
    )
    args = parser.parse_intermixed_args(argv)
    if args.cuda and args.command != "wheel":
        parser.error("--cuda goes with the wheel command")
    if args.python and args.command != "wheel":
        parser.error("--python goes with the wheel command")
    if args.command == "variants-json":
        if len(args.paths) != 1:
            parser.error("variants-json: name one folder of wheels")
        return _variants_json(args.paths[0])
    if args.command == "size":
        if len(args.paths) != 1:
            parser.error("size: name one folder of wheels")
        return _size(args.paths[0], args.json)
    if args.command == "check":
        if len(args.paths) != 1:
            parser.error("check: name one installed package or one wheel")
        return _check(args.paths[0])
    if args.command == "audit":
        if not args.paths:
            parser.error("audit: name at least one wheel")
        return _audit(args.paths, args.json)
    if len(args.paths) > 1:
        parser.error(f"{args.command}: one project folder at most")
    settings = {}
    for item in args.config_setting:
        key, sep, value = item.partition("=")
        if not sep:
            parser.error(f"-C {item!r}: expected KEY=VALUE")
        settings[key.strip()] = value
    if args.command == "doctor":
        return _doctor(args.paths[0] if args.paths else ".", settings)
    out_dir = os.path.abspath(args.out_dir)
    # A relative interpreter path names a file from here, not from the project (a bare name: PATH).
    args.python = [os.path.abspath(p) if os.sep in p else p for p in args.python]
    os.chdir(args.paths[0] if args.paths else ".")
    if args.python:
        return _for_pythons(out_dir, args.python, args.cuda, settings)
    if args.cuda or args.command == "wheel":
        return _matrix(out_dir, args.cuda, settings)
    if args.command == "requires":
        for req in get_requires_for_build_wheel(settings):
            print(req)
        return 0
    name = build_sdist(out_dir, settings)
    print(os.path.join(out_dir, name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
