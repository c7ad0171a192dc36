"""A memory cgroup with a limit, to run a build under real memory pressure: what a container
(`docker --memory`) or a CI job with a memory limit gives it. Used by scripts/bench/bench_memory.py
(`--cgroup-limit`) and tests/test_memory_pressure.py.

    with MemoryCgroup(1 << 30) as cg:
        subprocess.run(cmd, preexec_fn=cg.join)
        cg.peak(), cg.oom_kills()

Needs root and a writable memory controller (cgroup v1's `memory` hierarchy, or v2 where the
parent cgroup delegates `memory`); `MemoryCgroup.unavailable()` says why not, else None.
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

V1 = Path("/sys/fs/cgroup/memory")
V2 = Path("/sys/fs/cgroup")


def _v2_parent() -> Path | None:
    """The v2 cgroup this process is in, when it delegates the memory controller to children;
    else the root cgroup when it does (a machine whose processes sit in a leaf cgroup of their
    own, as the GPU machine's do: root may put a child process into a sibling cgroup)."""
    try:
        line = next(ln for ln in Path("/proc/self/cgroup").read_text().splitlines() if ln.startswith("0::"))
    except (OSError, StopIteration):
        return None
    for parent in (V2 / line[3:].lstrip("/"), V2):
        try:
            if "memory" in (parent / "cgroup.subtree_control").read_text().split():
                return parent
        except OSError:
            pass
    return None


def parse_size(text: str) -> int:
    """A size as `--cgroup-limit` takes it: bytes, or `3G`, `512M`, `64K` (also `3GiB`, `3GB`)."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.upper().rstrip("IB")
    return int(float(text[:-1]) * units[text[-1]]) if text[-1] in units else int(text)


class MemoryCgroup:
    def __init__(self, limit: int):
        self.limit = limit
        self.v1 = (V1 / "memory.limit_in_bytes").exists()
        base = V1 if self.v1 else _v2_parent()
        if base is None:
            raise RuntimeError(self.unavailable() or "no memory cgroup")
        self.dir = base / f"cudawheel-{uuid.uuid4().hex[:8]}"

    @staticmethod
    def unavailable() -> str | None:
        if os.geteuid() != 0:
            return "creating a memory cgroup needs root"
        if (V1 / "memory.limit_in_bytes").exists():
            return None if os.access(V1, os.W_OK) else f"{V1} is not writable"
        if _v2_parent() is None:
            return "no writable memory controller (cgroup v1 `memory`, or v2 with `memory` delegated)"
        return None

    def _file(self, v1: str, v2: str) -> Path:
        return self.dir / (v1 if self.v1 else v2)

    def __enter__(self) -> MemoryCgroup:
        self.dir.mkdir()
        self._file("memory.limit_in_bytes", "memory.max").write_text(str(self.limit))
        if not self.v1:
            # No swap: the limit is the memory the build has, as in a container.
            try:
                (self.dir / "memory.swap.max").write_text("0")
            except OSError:
                pass
        return self

    def join(self) -> None:
        """For `preexec_fn`: the child process (and what it starts) runs in the cgroup."""
        self.procs.write_text(str(os.getpid()))

    @property
    def procs(self) -> Path:
        """The file a process writes its pid to, to move into the cgroup (what `join` does; a
        program started from a thread writes it itself: `preexec_fn` is unsafe with threads)."""
        return self.dir / "cgroup.procs"

    def cpu_seconds(self) -> float | None:
        """The CPU time the cgroup's processes used (cgroup v2's `cpu.stat`; None under v1)."""
        try:
            text = (self.dir / "cpu.stat").read_text()
        except OSError:
            return None
        usec = next((int(ln.split()[1]) for ln in text.splitlines() if ln.startswith("usage_usec ")), None)
        return usec / 1e6 if usec is not None else None

    def peak(self) -> int:
        """The most memory the cgroup used (bytes), page cache included."""
        try:
            return int(self._file("memory.max_usage_in_bytes", "memory.peak").read_text())
        except (OSError, ValueError):
            return 0

    def oom_kills(self) -> int:
        """Processes the out-of-memory killer killed in the cgroup."""
        text = self._file("memory.oom_control", "memory.events").read_text()
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value)
        return 0

    def __exit__(self, *exc) -> None:
        for _ in range(50):
            try:
                self.dir.rmdir()
                return
            except OSError:
                time.sleep(0.1)  # its last processes are still exiting
