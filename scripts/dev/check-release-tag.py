#!/usr/bin/env python3
"""Checks one release wheel of the backend against `auditwheel show` (scripts/release.sh runs it).

The wheel's most compatible platform tag (the lowest manylinux_2_N among the file name's
compressed tag set, e.g. `manylinux2014_x86_64.manylinux_2_17_x86_64` -> manylinux_2_17_x86_64)
must be exactly the tag auditwheel derives from the symbols and libraries the extension uses,
and N must not exceed MAX_MINOR. Prints one line per wheel; exits 1 on disagreement.

Usage: python3 scripts/dev/check-release-tag.py WHEEL MAX_MINOR
(run with the Python that has auditwheel installed).
"""

import json
import re
import subprocess
import sys
from pathlib import Path

LEGACY = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}


def platform_tags(wheel: Path) -> list[str]:
    """The platform tags of a wheel file name (name-version[-build]-python-abi-platform.whl)."""
    return wheel.name[: -len(".whl")].split("-")[-1].split(".")


def glibc_of(tag: str) -> tuple[int, int, str]:
    """(major, minor, arch) of a manylinux tag; raises ValueError for any other tag."""
    m = re.fullmatch(r"manylinux_(\d+)_(\d+)_(\w+)", tag)
    if m:
        return int(m.group(1)), int(m.group(2)), m.group(3)
    legacy, _, arch = tag.partition("_")
    if legacy in LEGACY:
        return (*LEGACY[legacy], arch)
    raise ValueError(f"{tag} is not a manylinux tag")


def main() -> int:
    wheel, max_minor = Path(sys.argv[1]), int(sys.argv[2])
    try:
        major, minor, arch = min(glibc_of(t) for t in platform_tags(wheel))
    except ValueError as e:
        print(f"{wheel.name}: {e}: a release wheel must be manylinux", file=sys.stderr)
        return 1
    claimed = f"manylinux_{major}_{minor}_{arch}"
    proc = subprocess.run([sys.executable, "-m", "auditwheel", "show", "--json", str(wheel)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        print(f"{wheel.name}: auditwheel show failed:\n{proc.stdout}{proc.stderr}", file=sys.stderr)
        return 1
    found = json.loads(proc.stdout)["overall_tag"]
    if found != claimed:
        print(f"{wheel.name}: tagged {claimed}, but auditwheel show finds {found}", file=sys.stderr)
        return 1
    if (major, minor) > (2, max_minor):
        print(f"{wheel.name}: {claimed} is newer than manylinux_2_{max_minor}", file=sys.stderr)
        return 1
    print(f"{wheel.name}: auditwheel show agrees ({found})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
