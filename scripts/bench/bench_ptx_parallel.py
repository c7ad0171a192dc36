"""Whether nvcc gives the same PTX and cubins for llama.cpp's flash-attention tile instances when
its compiles run one at a time and when they run all at once.

    python3 scripts/bench/bench_ptx_parallel.py --sdist llama_cpp_python-0.3.36.tar.gz \
        --log WORK/wheels/wrapped/build.log --cuda-home CUDA_ROOT --cublas-include DIR --runs 2

Each `template-instances/fattn-tile-instance-*.cu` file is compiled with the very nvcc command a
wrapped llama build ran (read from its kept build log, as bench_llama_archs.py does), for
`sm_90` SASS and PTX, with `-frandom-seed=<object>` and without address randomisation (`setarch
-R`, as cudawheel runs its compiles). Each run compiles every file once: `one at a time` runs
them one after another, `all at once` starts them together. Each object's PTX and cubins are
extracted with cuobjdump and hashed; the table gives, per file, how many distinct PTX texts each
way gave over the runs, and how many distinct cubins all runs gave.
"""

from __future__ import annotations

import functools
import hashlib
import platform
import shutil
import subprocess
import tarfile
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench_llama_archs import command, logged_build_args


@functools.cache
def fixed_addresses() -> list[str]:
    """`setarch -R` where the kernel allows it, as cudawheel's own compiles run (asked once)."""
    setarch = ["setarch", platform.machine(), "-R"]
    return setarch if subprocess.run([*setarch, "true"], capture_output=True).returncode == 0 else []


def compile_one(cmd: list[str], obj: Path) -> None:
    obj.parent.mkdir(parents=True, exist_ok=True)
    fixed = fixed_addresses()
    seed = f"-frandom-seed={obj.name}"
    gencode = "-gencode=arch=compute_90,code=[sm_90,compute_90]"
    subprocess.run([*fixed, *cmd, gencode, seed, "-o", str(obj)], check=True, capture_output=True)


def digests(cuobjdump: Path, obj: Path) -> tuple[str, str]:
    """(the PTX's sha256, the cubins' sha256) of an object, from cuobjdump's extracted files."""
    with tempfile.TemporaryDirectory() as tmp:
        for what in ("-xptx", "-xelf"):
            subprocess.run([str(cuobjdump), what, "all", str(obj)], cwd=tmp, check=True, capture_output=True)
        files = sorted(Path(tmp).iterdir())

        def h(ext: str) -> str:
            return hashlib.sha256(b"".join(p.read_bytes() for p in files if p.suffix == ext)).hexdigest()[:12]

        return h(".ptx"), h(".cubin")


def main() -> None:
    ap = logged_build_args(__doc__)
    ap.add_argument("--runs", type=int, default=2)
    args = ap.parse_args()
    log = args.log.read_text()
    work = Path(tempfile.mkdtemp(prefix="ptx-parallel-"))
    with tarfile.open(args.sdist) as t:
        t.extractall(work, filter="data")
    src = next(work.iterdir())
    inst = src / "vendor/llama.cpp/ggml/src/ggml-cuda/template-instances"
    files = sorted(p.name for p in inst.glob("fattn-tile-instance-*.cu"))
    cmds = {f: command(log, f"template-instances/{f}", src, args.cuda_home, args.cublas_include) for f in files}
    cuobjdump = args.cuda_home / "bin" / "cuobjdump"
    seen: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for run in range(args.runs):
        for way, width in (("one at a time", 1), ("all at once", len(files))):
            out = work / f"r{run}-{width}"
            with ThreadPoolExecutor(width) as pool:
                list(pool.map(compile_one, [cmds[f] for f in files], [out / f"{f}.o" for f in files]))
            for f in files:
                seen.setdefault((f, way), []).append(digests(cuobjdump, out / f"{f}.o"))
            print(f"run {run + 1}, {way}: {len(files)} compiled", flush=True)
    print(f"\n{len(files)} files, {args.runs} runs each way; nvcc {args.cuda_home}\n")
    print("| file | distinct PTX, one at a time | distinct PTX, all at once | distinct cubins, all runs |")
    print("| --- | --- | --- | --- |")
    for f in files:
        one, many = seen[(f, "one at a time")], seen[(f, "all at once")]
        cubins = {c for _, c in one + many}
        name = f.removeprefix("fattn-tile-instance-").removesuffix(".cu")
        print(f"| {name} | {len({p for p, _ in one})} | {len({p for p, _ in many})} | {len(cubins)} |")
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
