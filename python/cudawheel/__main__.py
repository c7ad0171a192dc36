"""`python -m cudawheel wheel|sdist|requires [PROJECT] [-o OUT] [-C KEY=VALUE ...]`

Runs the backend's hooks directly on a project, without a frontend (no build isolation: the
toolkit must already be findable).
"""

from __future__ import annotations

import argparse
import os
import sys

from . import build_sdist, build_wheel, get_requires_for_build_wheel


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cudawheel", description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["wheel", "sdist", "requires"])
    parser.add_argument("project", nargs="?", default=".", help="project folder (default: .)")
    parser.add_argument("-o", "--out-dir", default="dist", help="output folder (default: dist)")
    parser.add_argument(
        "-C", "--config-setting", action="append", default=[], metavar="KEY=VALUE",
        help="a [tool.cudawheel] key, as pip's -C passes it",
    )
    args = parser.parse_args(argv)
    settings = {}
    for item in args.config_setting:
        key, sep, value = item.partition("=")
        if not sep:
            parser.error(f"-C {item!r}: expected KEY=VALUE")
        settings[key] = value
    out_dir = os.path.abspath(args.out_dir)
    os.chdir(args.project)
    if args.command == "requires":
        for req in get_requires_for_build_wheel(settings):
            print(req)
        return 0
    name = (build_wheel if args.command == "wheel" else build_sdist)(out_dir, settings)
    print(os.path.join(out_dir, name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
