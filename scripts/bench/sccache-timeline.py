#!/usr/bin/env python3
"""Reads an sccache client debug log (SCCACHE_LOG=debug SCCACHE_LOG_MILLIS=1, e.g. from the GPU
check's DIST_SCCACHE_LOG) and prints where each step's time went, per step whose name matches
PATTERN: when sccache got it (seconds since the log's first line), then, from there, when its
input was hashed (preprocessing included), when it asked the scheduler for a build server, when
the job was sent, and when the compile came back.

    python3 scripts/bench/sccache-timeline.py sccache.log [PATTERN]
"""

import re
import sys
from datetime import datetime

LINE = re.compile(r"^\[(\S+Z) +\w+ +[\w:]+\] \[([^\]]+)\]: (.*)$")
MARKS = [("get_cached_or_compile", "begin"), ("generate_hash_key took", "hashed"),
         ("Requesting allocation", "alloc"), ("Running job", "run"), ("Compiled in", "done"),
         ("Compiling locally", "local")]
NAN = float("nan")


def main() -> None:
    pattern = re.compile(sys.argv[2] if len(sys.argv) > 2 else ".")
    t0 = None
    steps: dict[str, dict[str, float]] = {}
    for line in open(sys.argv[1], errors="replace"):
        m = LINE.match(line.rstrip())
        if not m:
            continue
        t = datetime.fromisoformat(m.group(1).replace("Z", "+00:00")).timestamp()
        t0 = t if t0 is None else t0
        name, what = m.group(2), m.group(3)
        for text, key in MARKS:
            if what.startswith(text):
                steps.setdefault(name, {}).setdefault(key, t - t0)
    rows = []
    print("| step | got at s | hashed +s | asked +s | sent +s | back +s | ran here |")
    print("|---|---|---|---|---|---|---|")
    for name, s in sorted(steps.items(), key=lambda kv: kv[1].get("begin", 0)):
        if not pattern.search(name) or "begin" not in s:
            continue
        b = s["begin"]
        gaps = [s.get(k, NAN) - b for k in ("hashed", "alloc", "run", "done")]
        rows.append(gaps)
        rel = [f"{g:.2f}" for g in gaps]
        print(f"| {name} | {b:.2f} | {' | '.join(rel)} | {'yes' if 'local' in s else ''} |")
    import statistics
    cols = [[r[i] for r in rows if r[i] == r[i]] for i in range(4)]
    if all(cols):
        print("median: " + ", ".join(f"{n} +{statistics.median(c):.2f} s" for n, c in zip(
            ("hashed", "asked", "sent", "back"), cols)) + f" ({len(rows)} steps)")


if __name__ == "__main__":
    main()
