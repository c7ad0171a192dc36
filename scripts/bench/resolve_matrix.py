#!/usr/bin/env python3
"""Repeated isolated-build resolutions of a torch example, per frontend; prints a table.

What is measured is the part of an isolated `pip wheel` that can fail before anything is
compiled: pip installs `[build-system] requires` into a fresh environment, asks the backend's
`get_requires_for_build_wheel`, then installs what it returns. Doing that for real installs
torch (GBs) and compiles; here pip runs its real isolated-build code (its own ordering of the
requirements, its own subprocess and resolver) with `PIP_DRY_RUN=1`, which pip's build
environment passes on to both of its inner `pip install` runs: each resolves completely and
installs nothing. The project is the example with its `[build-system]` pointed at a small
in-tree backend that answers `get_requires_for_build_wheel` with the real cudawheel's answer
(imported from the backend wheel, run inside pip's isolated environment, where no torch is
installed, as in a real build of the example) and writes an empty wheel. `--requires` replaces
that answer with a fixed list (the control: cudawheel's previous list).

Per frontend, N runs, each with a cold pip cache (a fresh folder) or the warm one (the
`--cache` folder); run i uses the i-th `--seeds` value as PYTHONHASHSEED (pip 23.1 and 23.2
order build requirements by string hash). A run counts as resolved when torch and nvcc are
resolved and nvcc is within the minor of the CUDA runtime (the release torch pins). uv is asked
with `uv pip install --dry-run` of the backend's answer (its resolver does not depend on the
order). Standard library only.

    python3 scripts/bench/resolve_matrix.py --wheelhouse wheelhouse -n 10
    python3 scripts/bench/resolve_matrix.py --wheelhouse wheelhouse -n 6 --pips 23.2.1 \\
        --caches warm --requires '["torch>=2.11", "cuda-toolkit[cccl,cudart,nvcc]>=13,<14"]'
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import venv
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

BACKEND = '''\
"""A stand-in backend: cudawheel's build requirements (or RESOLVE_MATRIX_REQUIRES), an empty wheel."""
import json, os, sys, zipfile

def _requires(config_settings=None):
    fixed = os.environ.get("RESOLVE_MATRIX_REQUIRES")
    if fixed:
        reqs = json.loads(fixed)
    else:
        sys.path.insert(0, os.environ["RESOLVE_MATRIX_BACKEND"])
        import cudawheel
        reqs = cudawheel.get_requires_for_build_wheel(config_settings)
    with open(os.environ["RESOLVE_MATRIX_LOG"], "a") as f:
        f.write(json.dumps(reqs) + "\\n")
    return reqs

get_requires_for_build_wheel = _requires

def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    name = "resolve_probe-0-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w") as z:
        di = "resolve_probe-0.dist-info/"
        z.writestr(di + "METADATA", "Metadata-Version: 2.1\\nName: resolve-probe\\nVersion: 0\\n")
        z.writestr(di + "WHEEL", "Wheel-Version: 1.0\\nGenerator: probe\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n")
        z.writestr(di + "RECORD", "")
    return name
'''

WATCHED = ("torch", "nvidia-cuda-nvcc", "nvidia-cuda-runtime", "nvidia-cuda-cccl", "cuda-toolkit")


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def make_project(example: Path, dest: Path) -> Path:
    """The example with its `[build-system]` pointed at the stand-in backend."""
    project = dest / "project"
    shutil.copytree(example, project, ignore=shutil.ignore_patterns("build", "dist", "*.egg-info"))
    text = (project / "pyproject.toml").read_text()
    table = re.search(r"(?ms)^\[build-system\]\n.*?(?=^\[)", text)
    assert table, f"no [build-system] table in {example}/pyproject.toml"
    requires = re.search(r"(?m)^requires\s*=.*$", table.group(0)).group(0)
    new = f'[build-system]\n{requires}\nbuild-backend = "_resolve_probe"\nbackend-path = ["_probe"]\n\n'
    (project / "pyproject.toml").write_text(text.replace(table.group(0), new))
    (project / "_probe").mkdir()
    (project / "_probe/_resolve_probe.py").write_text(BACKEND)
    return project


def unpack_backend(wheelhouse: Path, dest: Path) -> Path:
    (whl,) = sorted(wheelhouse.glob("cudawheel-*.whl"))[-1:]
    out = dest / "backend"
    with zipfile.ZipFile(whl) as z:
        z.extractall(out)
    return out


def pip_venv(version: str, root: Path, cache: Path) -> Path:
    path = root / f"pip-{version}"
    py = path / "bin" / "python"
    if not py.exists():
        venv.EnvBuilder(with_pip=True, clear=True).create(path)
        spec = "pip" if version == "newest" else f"pip=={version}"
        subprocess.run([py, "-m", "pip", "install", "-q", "-U", spec], check=True,
                       env={**os.environ, "PIP_CACHE_DIR": str(cache)})
    return py


def installs(report: Path) -> dict[str, str]:
    try:
        data = json.loads(report.read_text())
    except (OSError, ValueError):
        return {}
    return {i["metadata"]["name"].lower(): i["metadata"]["version"] for i in data.get("install", [])}


def same_minor(got: dict[str, str]) -> bool:
    """nvcc is resolved, within the minor of the CUDA runtime torch's toolkit release pins."""
    nvcc, runtime = got.get("nvidia-cuda-nvcc"), got.get("nvidia-cuda-runtime")
    return bool(nvcc and runtime) and nvcc.split(".")[:2] == runtime.split(".")[:2]


def pip_run(py: Path, project: Path, seed: str, cache: Path, work: Path, env_extra: dict) -> dict:
    """One isolated `pip wheel --no-deps` of the project, every install a dry run."""
    report = work / "report.json"
    reqlog = work / "requires.jsonl"
    for f in (report, reqlog):
        f.unlink(missing_ok=True)
    env = {**os.environ, **env_extra, "PYTHONHASHSEED": seed, "PIP_CACHE_DIR": str(cache),
           "PIP_DRY_RUN": "1", "PIP_REPORT": str(report), "RESOLVE_MATRIX_LOG": str(reqlog),
           "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    t0 = time.monotonic()
    proc = subprocess.run([py, "-m", "pip", "wheel", "--no-deps", "-w", work / "out", project],
                          env=env, capture_output=True, text=True)
    out = proc.stdout + proc.stderr
    got = installs(report)
    asked = reqlog.read_text().splitlines() if reqlog.exists() else []
    ok = proc.returncode == 0 and bool(asked) and "torch" in got
    why = "" if ok else ("ResolutionImpossible" if "ResolutionImpossible" in out else out.strip()[-300:])
    if ok and not same_minor(got):
        ok, why = False, "nvcc outside the CUDA runtime's minor"
    return {"ok": ok, "seconds": time.monotonic() - t0, "why": why, "asked": asked[-1:],
            "nvcc": got.get("nvidia-cuda-nvcc"), "torch": got.get("torch"),
            "runtime": got.get("nvidia-cuda-runtime")}


def uv_run(project: Path, cache: Path, work: Path, env_extra: dict, backend: Path, fixed: str | None) -> dict:
    """uv: the same two phases, each `uv pip install --dry-run` into a fresh venv."""
    uv = shutil.which("uv") or str(Path(sys.executable).parent / "uv")
    env = {**os.environ, **env_extra, "UV_CACHE_DIR": str(cache), "UV_PYTHON_DOWNLOADS": "never"}
    target = work / "uv-venv"
    subprocess.run([uv, "venv", "-q", "--clear", "-p", sys.executable, target], check=True, env=env)
    if fixed:
        reqs = json.loads(fixed)
    else:
        code = ("import json, sys; sys.path.insert(0, sys.argv[1]); import cudawheel, os; "
                "os.chdir(sys.argv[2]); print(json.dumps(cudawheel.get_requires_for_build_wheel()))")
        reqs = json.loads(subprocess.run([target / "bin/python", "-c", code, backend, project], check=True,
                                         env=env, capture_output=True, text=True).stdout.splitlines()[-1])
    t0 = time.monotonic()
    proc = subprocess.run([uv, "pip", "install", "--dry-run", "-p", target / "bin/python", *reqs],
                          env=env, capture_output=True, text=True)
    out = proc.stdout + proc.stderr
    got = {m.group(1).lower(): m.group(2) for m in re.finditer(r"\+ ([\w.-]+)==(\S+)", out)}
    ok = proc.returncode == 0 and "torch" in got and same_minor(got)
    return {"ok": ok, "seconds": time.monotonic() - t0, "why": "" if ok else out.strip()[-300:],
            "asked": [json.dumps(reqs)], "nvcc": got.get("nvidia-cuda-nvcc"), "torch": got.get("torch"),
            "runtime": got.get("nvidia-cuda-runtime")}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--wheelhouse", type=Path, required=True, help="folder with the cudawheel wheel")
    ap.add_argument("--example", default="tiny_conv")
    ap.add_argument("-n", type=int, default=10, help="runs per row")
    ap.add_argument("--pips", default="23.0.1,23.2.1,24.3.1,newest,uv")
    ap.add_argument("--seeds", default="1,2,3,4,5,6,7,8,9,10",
                    help="PYTHONHASHSEEDs, one per run in turn (pip 23.1/23.2 order build requirements by hash)")
    ap.add_argument("--caches", default="cold,warm")
    ap.add_argument("--cache", type=Path, default=Path(os.environ.get("PIP_CACHE_DIR", ".cache/pip")))
    ap.add_argument("--uv-cache", type=Path, default=Path(os.environ.get("UV_CACHE_DIR", ".cache/uv")))
    ap.add_argument("--requires", help="a JSON list answered instead of cudawheel's (the control)")
    ap.add_argument("--work", type=Path, help="folder for venvs (kept between calls)")
    ap.add_argument("--json", type=Path, help="also write every run here")
    args = ap.parse_args()

    work = args.work or Path(tempfile.mkdtemp(prefix="resolve-matrix-"))
    work.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="run-", dir=work))
    project = make_project(REPO / "examples" / args.example, scratch)
    backend = unpack_backend(args.wheelhouse, scratch)
    env_extra = {"PIP_FIND_LINKS": str(args.wheelhouse.resolve()), "RESOLVE_MATRIX_BACKEND": str(backend)}
    if args.requires:
        env_extra["RESOLVE_MATRIX_REQUIRES"] = args.requires
    seeds = args.seeds.split(",")
    rows = []
    for frontend in args.pips.split(","):
        for cache_kind in args.caches.split(","):
            results = []
            for i in range(args.n):
                seed = seeds[i % len(seeds)]
                cold = Path(tempfile.mkdtemp(prefix="cache-", dir=work))
                if frontend == "uv":
                    cache = cold if cache_kind == "cold" else args.uv_cache
                    r = uv_run(project, cache, scratch, env_extra, backend, args.requires)
                    seed = "-"
                else:
                    py = pip_venv(frontend, work, args.cache)
                    cache = cold if cache_kind == "cold" else args.cache
                    r = pip_run(py, project, seed, cache, scratch, env_extra)
                shutil.rmtree(cold, ignore_errors=True)
                r["seed"] = seed
                log(f"{frontend} seed={seed} {cache_kind} #{i + 1}: {'ok' if r['ok'] else 'FAIL'} "
                    f"{r['seconds']:.0f}s torch={r['torch']} nvcc={r['nvcc']} runtime={r['runtime']} {r['why']}")
                results.append(r)
            rows.append({"frontend": frontend, "cache": cache_kind, "runs": results})
    asked = next((r["asked"][0] for row in rows for r in row["runs"] if r["asked"]), "?")
    print(f"requirements asked (get_requires_for_build_wheel): {asked}")
    print(f"{'frontend':<10} {'cache':<5} {'ok':>6} {'median s':>8}  {'failed seeds':<12}  "
          "resolved (torch / nvcc / runtime)")
    for row in rows:
        runs = row["runs"]
        ok = sum(r["ok"] for r in runs)
        secs = sorted(r["seconds"] for r in runs)[len(runs) // 2]
        failed = ",".join(str(r["seed"]) for r in runs if not r["ok"]) or "-"
        seen = sorted({f"{r['torch']} / {r['nvcc']} / {r['runtime']}" for r in runs if r["ok"]})
        print(f"{row['frontend']:<10} {row['cache']:<5} {ok:>3}/{len(runs):<2} {secs:>8.0f}  {failed:<12}  "
              f"{'; '.join(seen) or '-'}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0 if all(r["ok"] for row in rows for r in row["runs"]) else 1


if __name__ == "__main__":
    sys.exit(main())
