"""What llama-cpp-python's CUDA library grows to with more archs, from a sample of its files.

    python3 scripts/bench/bench_llama_archs.py --sdist llama_cpp_python-0.3.36.tar.gz \
        --log WORK/wheels/wrapped/build.log --cuda-home CUDA_ROOT --cublas-include DIR \
        --archs 75,80,86,89,90,100,120 --base 90 --library-bytes 62700000 --wheel-bytes 48730290

A build for the default arch list takes several times one arch's (beyond one GPU-machine call),
so this compiles a few of ggml-cuda's files, each with the very nvcc command the wrapped
one-arch build ran (read from its kept build log: flags, defines, `-compress-mode=size`), once
per arch as SASS only (`code=sm_XY`) and once as PTX only for the base arch and for the newest
(the default list's PTX), and reads each object's `.nv_fatbin` section. Per file it prints the
one-arch fatbin (the base's SASS and PTX, as the build made it), the default list's (every
arch's SASS and the newest's PTX), their ratio, and the fatbin's share of the object's loaded
bytes. The projection applies the median ratio to the fatbin share of the one-arch library
(`--library-bytes`) and adds the growth, uncompressed (the fatbins are already compressed by
nvcc), to the one-arch wheel (`--wheel-bytes`).

The build log's paths are rewritten to a fresh unpack of the sdist and to --cuda-home; the
sample needs cuBLAS's headers (--cublas-include: nvidia-cublas's `include`), and builds without
NCCL (`-DGGML_USE_NCCL` dropped: the sample files do not use it). Runs the compiles two at a
time (`--jobs`).
"""

from __future__ import annotations

import argparse
import re
import shlex
import statistics
import subprocess
import tarfile
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from elftools.elf.elffile import ELFFile

SAMPLE = ["template-instances/mmq-instance-q4_0.cu", "template-instances/fattn-vec-instance-f16-f16.cu",
          "mmvq.cu"]


def command(log: str, file: str, src: Path, cuda: Path, cublas: Path) -> list[str]:
    """The nvcc command the logged build ran for ggml-cuda/`file`, on this machine's paths."""
    line = next(ln for ln in log.splitlines() if f"ggml-cuda/{file} -o" in ln)
    args = shlex.split(re.sub(r"^\s*\[\d+/\d+\]\s*", "", line))
    args = args[args.index(next(a for a in args if a.endswith("/bin/nvcc"))):]
    old_src = next(a for a in args if a.endswith(f"ggml-cuda/{file}")).split("/vendor/")[0]
    out, skip = [], 0
    for a in args:
        if skip:
            skip -= 1
            continue
        if a in ("-MF", "-MT", "-o"):
            skip = 1
            continue
        if a in ("-MD", "-DGGML_USE_NCCL") or a.startswith("--generate-code"):
            continue
        a = a.replace(f"{old_src}/build/cudawheel/toolkit", str(cuda)).replace(old_src, str(src))
        out.append("-ccbin=g++" if a.startswith("-ccbin=") else a)
    out[0] = str(cuda / "bin" / "nvcc")
    return [*out, "-isystem", str(cublas)]


def fatbin(obj: Path) -> tuple[int, int]:
    """(the `.nv_fatbin` section's bytes, the other loaded sections' bytes) of an object."""
    with obj.open("rb") as f:
        elf = ELFFile(f)
        fat = elf.get_section_by_name(".nv_fatbin")
        other = sum(s.data_size for s in elf.iter_sections() if s["sh_flags"] & 2 and s.name != ".nv_fatbin")
        return (fat.data_size if fat else 0), other


def logged_build_args(doc: str) -> argparse.ArgumentParser:
    """The options of a bench that recompiles ggml-cuda's files with a logged build's commands."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sdist", type=Path, required=True)
    ap.add_argument("--log", type=Path, required=True, help="a wrapped llama build's build.log (one arch)")
    ap.add_argument("--cuda-home", type=Path, required=True)
    ap.add_argument("--cublas-include", type=Path, required=True)
    return ap


def main() -> None:
    ap = logged_build_args(__doc__)
    ap.add_argument("--archs", default="75,80,86,89,90,100,120")
    ap.add_argument("--base", default="90", help="the arch of the logged build")
    ap.add_argument("--files", default=",".join(SAMPLE))
    ap.add_argument("--library-bytes", type=float, required=True, help="the one-arch libggml-cuda.so")
    ap.add_argument("--wheel-bytes", type=float, required=True, help="the one-arch wheel")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    archs, files, log = args.archs.split(","), args.files.split(","), args.log.read_text(errors="replace")
    work = Path(tempfile.mkdtemp(prefix="llama-archs-"))
    with tarfile.open(args.sdist) as t:
        t.extractall(work, filter="data")
    src = next(work.iterdir())
    (src / "build").mkdir(exist_ok=True)
    codes = {f"sm{a}": f"arch=compute_{a},code=sm_{a}" for a in archs}
    codes |= {f"ptx{a}": f"arch=compute_{a},code=compute_{a}" for a in {args.base, archs[-1]}}

    def one(job: tuple[str, str]) -> tuple[str, str, tuple[int, int]]:
        file, tag = job
        obj = work / "out" / tag / (Path(file).name + ".o")
        obj.parent.mkdir(parents=True, exist_ok=True)
        cmd = command(log, file, src, args.cuda_home, args.cublas_include)
        subprocess.run([*cmd, f"--generate-code={codes[tag]}", "-o", str(obj)], cwd=src / "build", check=True)
        return file, tag, fatbin(obj)

    with ThreadPoolExecutor(args.jobs) as pool:
        got = list(pool.map(one, [(f, t) for f in files for t in codes]))
    size = {(f, t): b for f, t, b in got}
    print(f"| file | one arch ({args.base}: SASS+PTX) | default ({', '.join(archs)} SASS, {archs[-1]} PTX)"
          " | ratio | fatbin share of the one-arch object |")
    print("| --- | --- | --- | --- | --- |")
    ratios, shares = [], []
    for f in files:
        one_arch = size[(f, f"sm{args.base}")][0] + size[(f, f"ptx{args.base}")][0]
        default = sum(size[(f, f"sm{a}")][0] for a in archs) + size[(f, f"ptx{archs[-1]}")][0]
        other = size[(f, f"sm{args.base}")][1]
        ratios.append(default / one_arch)
        shares.append(one_arch / (one_arch + other))
        print(f"| `{f}` | {one_arch:,} | {default:,} | {ratios[-1]:.2f} | {shares[-1]:.2f} |")
    r, s = statistics.median(ratios), statistics.median(shares)
    grow = args.library_bytes * s * (r - 1)
    print(f"\nprojection (median ratio {r:.2f}, fatbin share {s:.2f}): libggml-cuda.so "
          f"{(args.library_bytes + grow) / 1e6:.0f} MB, the wheel {(args.wheel_bytes + grow) / 1e6:.0f} MB")


if __name__ == "__main__":
    main()
