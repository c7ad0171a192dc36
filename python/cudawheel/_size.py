"""`python -m cudawheel size DIR`: what a release folder costs on PyPI.

Per wheel: its file size and the bytes of GPU code (the `.nv_fatbin` sections of its ELF
members). Per project (distribution name): the total of its files. Where several wheels of one
project and platform carry byte-identical GPU code (one wheel per CPython version, the layout
a Python-independent library wheel avoids), the bytes such a split would save: every copy but one.
Pure Python, no backend call: the totals are the files' sizes as `os.path.getsize` reports them.
"""

from __future__ import annotations

import hashlib
import os
import struct
import zipfile
from collections import defaultdict

PYPI_FILE_LIMIT = 100_000_000
PYPI_PROJECT_LIMIT = 10_000_000_000


def fatbin_section(elf: bytes) -> bytes | None:
    """The `.nv_fatbin` section of a 64-bit little-endian ELF file, else None."""
    if len(elf) < 64 or elf[:4] != b"\x7fELF" or elf[4] != 2 or elf[5] != 1:
        return None
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
    if shoff == 0 or shentsize < 64 or shstrndx >= shnum or shoff + shnum * shentsize > len(elf):
        return None

    def header(i):
        name, kind, _flags, _addr, offset, size = struct.unpack_from("<IIQQQQ", elf, shoff + i * shentsize)
        return name, kind, offset, size

    _, _, str_off, str_size = header(shstrndx)
    names = elf[str_off:str_off + str_size]
    for i in range(shnum):
        name, kind, offset, size = header(i)
        end = names.find(b"\0", name)
        if names[name:end] == b".nv_fatbin" and kind != 8:  # 8 = SHT_NOBITS
            return elf[offset:offset + size]
    return None


def inspect_wheel(path: str) -> dict:
    """{"wheel", "bytes", "name", "version", "platforms", "variant", "gpu": {member: (bytes, sha256)}}"""
    base = os.path.basename(path)
    parts = base[:-4].split("-")
    info = {"wheel": path, "bytes": os.path.getsize(path), "name": parts[0], "version": parts[1] if len(parts) > 1 else "",
            "platforms": (), "variant": None, "gpu": {}}
    with zipfile.ZipFile(path) as z:
        for item in z.infolist():
            n = item.filename
            if n.endswith(".dist-info/WHEEL"):
                tags = [line.split(":", 1)[1].strip() for line in z.read(n).decode().splitlines()
                        if line.startswith("Tag:")]
                info["platforms"] = tuple(sorted({t.split("-")[-1] for t in tags}))
                info["pythons"] = tuple(sorted({"-".join(t.split("-")[:2]) for t in tags}))
            elif n.endswith(".dist-info/variant.json"):
                info["variant"] = hashlib.sha256(z.read(n)).hexdigest()
            elif n.endswith(".so") or ".so." in n:
                section = fatbin_section(z.read(n))
                if section:
                    info["gpu"][n] = (len(section), hashlib.sha256(section).hexdigest())
    return info


def report(folder: str) -> dict:
    """Wheels, per-project totals and the split estimate of every `*.whl` in `folder`."""
    wheels = [inspect_wheel(os.path.join(folder, f)) for f in sorted(os.listdir(folder)) if f.endswith(".whl")]
    projects: dict[str, dict] = {}
    for w in wheels:
        p = projects.setdefault(w["name"], {"project": w["name"], "wheels": 0, "bytes": 0, "gpu_bytes": 0,
                                            "duplicated_gpu_bytes": 0})
        p["wheels"] += 1
        p["bytes"] += w["bytes"]
        p["gpu_bytes"] += sum(n for n, _ in w["gpu"].values())
    # GPU code byte-identical across wheels of one project, version, platform and variant: the
    # copies a library wheel would replace (all but one).
    groups: dict[tuple, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for w in wheels:
        key = (w["name"], w["version"], w["platforms"], w["variant"])
        for size, digest in w["gpu"].values():
            groups[key][digest].append(size)
    for (name, *_), digests in groups.items():
        projects[name]["duplicated_gpu_bytes"] += sum(s[0] * (len(s) - 1) for s in digests.values())
    return {
        "wheels": [{"wheel": os.path.basename(w["wheel"]), "bytes": w["bytes"],
                    "gpu_bytes": sum(n for n, _ in w["gpu"].values())} for w in wheels],
        "projects": list(projects.values()),
        "total_bytes": sum(w["bytes"] for w in wheels),
    }


def _human(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 1_000_000 else f"{n / 1e3:.1f} kB"


def print_report(rep: dict) -> int:
    """Prints the report; returns 1 when a file is above PyPI's default limit, else 0."""
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
