"""What cudawheel's memory ledger would have said of a hand-chosen `-jN` build that finished in a
memory cgroup: the recorded peaks (a wrapped build's build-dir/memory/peaks) of each N compiles
that its build log lists one after another, added up as the ledger adds them.

    python3 scripts/bench/llama_windows.py --log own-j8-build.log --peaks wheel-wrapped-peaks \
        --jobs 6,7,8 --limit 3G

The build log is ninja's (`-v`, one `[k/M] ... -o OBJECT` line per step, in the order the steps
ended): N steps in a row stand for N compiles running together, an approximation. Where those
sums pass the limit while the build was never killed, the peaks did not coincide, and the
ledger (which admits a compile only while the running compiles' peaks and its own fit under
the limit) held the wrapped build below the parallelism that fit. scripts/bench/bench_llama.py
prints this for each `own-jN` build that finished beside a wrapped one.
"""

from __future__ import annotations

import argparse
import re
import statistics
from pathlib import Path

from memcgroup import parse_size


def recorded(peaks: str) -> dict[str, tuple[str, int]]:
    """The peaks file's kind (`nvcc`, `other`) and bytes per object (`<kind> <KiB>[ <profile>]\\t<object>`,
    the last line of one wins)."""
    out = {}
    for line in peaks.splitlines():
        fields, _, key = line.partition("\t")
        f = fields.split(" ")
        if key and len(f) >= 2:
            out[key] = (f[0], int(f[1]) * 1024)
    return out


def windows(log: str, peaks: str, jobs: int) -> list[int]:
    """The recorded peaks of each `jobs` steps in a row of the build log, added up (bytes)."""
    known = recorded(peaks)
    objects = re.findall(r"^\s*\[\d+/\d+\] .* -o (\S+\.o)(?:\s|$)", log, re.M)
    values = [known.get(o, ("", 0))[1] for o in objects]
    return [sum(values[i:i + jobs]) for i in range(max(len(values) - jobs + 1, 1))]


def said(log: str, peaks: str, jobs: int, limit: int) -> str:
    sums = windows(log, peaks, jobs)
    over = sum(s > limit for s in sums)
    return (f"{jobs} compiles in a row: their recorded peaks add up to at most {max(sums) / (1 << 30):.2f} GiB"
            f" (median {statistics.median(sums) / (1 << 30):.2f}), over the {limit / (1 << 30):.1f} GiB limit"
            f" in {over} of {len(sums)} windows ({over / len(sums):.0%})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--log", type=Path, required=True, help="the hand-chosen build's log (ninja -v)")
    ap.add_argument("--peaks", type=Path, required=True, help="a wrapped build's recorded peaks")
    ap.add_argument("--jobs", default="8", help="N, or a list: 6,7,8")
    ap.add_argument("--limit", type=parse_size, default=3 << 30)
    args = ap.parse_args()
    log, peaks = args.log.read_text(errors="replace"), args.peaks.read_text()
    for n in args.jobs.split(","):
        print(said(log, peaks, int(n), args.limit))


if __name__ == "__main__":
    main()
