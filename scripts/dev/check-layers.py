#!/usr/bin/env python3
"""Checks the structure of src/ from its `crate::` references (ARCHITECTURE.md's rules):

1. the file-level import graph has no circle (edges: every `crate::` and `super::` path,
   resolved to the file of its longest module prefix, and a folder's mod.rs naming its
   children; a file naming an item of its own folder's mod.rs is containment, not an import,
   but `super::sibling::x` is an import of the sibling);
2. no stage imports a later stage (config -> plan -> toolchain -> libraries -> bindings ->
   build -> audit -> package); the shared helpers (hint, ui, inspect) import no stage;
3. only the composers (pep517, pipeline, wrap, commands, cli, resolve, doctor, bridge) and error.rs
   import several stages' entry points freely, and no stage imports a composer or error.rs.

4. no function (tests included) is longer than 120 lines.

5. processes are spawned (`Command::new`) only in the files SPAWNERS lists, and clippy.toml's
   comment and ARCHITECTURE.md's rule name each of them (a folder entry covers its files).
6. ARCHITECTURE.md's map is whole and true: every file under src/ (but lib.rs) is named in it
   (its path, or its name in backticks on a line that names its folder), and every `src/...`
   path it names (src/, tests/, docs/; the feature index's included) exists.

Prints each problem and exits 1, or prints a one-line summary. Run from anywhere:
`python3 scripts/dev/check-layers.py [SRC]` (default: this checkout's src/).
"""
import re
import sys
from pathlib import Path

SRC = Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else Path(__file__).resolve().parents[2] / "src"
STAGES = ["config", "plan", "toolchain", "libraries", "bindings", "compile", "audit", "package"]
SHARED = {"hint", "ui", "inspect"}
# The only files (or folders) that may spawn processes; clippy.toml and ARCHITECTURE.md say so.
SPAWNERS = [
    "compile/job.rs", "compile/wrapped.rs", "compile/gate.rs", "toolchain/", "bindings/probe.rs",
    "package/repair/tools.rs", "cli/interpreters.rs",
]
COMPOSERS = {
    "pep517", "pipeline", "wrap", "commands", "cli", "resolve", "doctor", "bridge", "lib", "fuzz_entry", "error",
}


def module_of(path: Path) -> list[str]:
    rel = path.relative_to(SRC).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "mod":
        parts = parts[:-1]
    return parts


def file_for(parts: list[str]) -> Path | None:
    """The file defining the longest prefix of a crate path."""
    for n in range(len(parts), 0, -1):
        base = SRC.joinpath(*parts[:n])
        for cand in (base.with_suffix(".rs"), base / "mod.rs"):
            if cand.is_file():
                return cand
    return None


def absolute_super(path: Path, text: str) -> str:
    """`super::x` (and `super::super::x`) rewritten as the `crate::` path it names, so sibling
    imports (`use super::tool::Origin` in config/error.rs) are edges like any other."""
    here = module_of(path)[:-1]  # `super` of a::b (a/b.rs or a/b/mod.rs) is a

    def repl(m: re.Match) -> str:
        up = m.group(0).count("super::") - 1
        base = here[: len(here) - up] if up else here
        return "crate::" + "".join(f"{p}::" for p in base)

    return re.sub(r"\bsuper::(?:super::)*", repl, text)


def ancestors(path: Path) -> set[Path]:
    """The mod.rs files of the folders holding `path`: a child naming its own folder's items
    is containment, not an import."""
    folder = module_of(path)[:-1]
    return {SRC / "lib.rs"} | {SRC.joinpath(*folder[:n]) / "mod.rs" for n in range(1, len(folder) + 1)}


def references(path: Path) -> set[Path]:
    return {t for t in _references(path) if t not in ancestors(path)}


def _references(path: Path) -> set[Path]:
    text = path.read_text()
    # Test modules may reach anywhere; only the code counts.
    text = text.split("#[cfg(test)]\nmod tests")[0]
    text = re.sub(r"//[^\n]*", "", text)
    text = absolute_super(path, text)
    out = set()
    for m in re.finditer(r"crate::((?:[a-z_][a-z0-9_]*::)*[a-z_][a-z0-9_]*)", text):
        target = file_for(m.group(1).split("::"))
        if target and target != path:
            out.add(target)
    # `use crate::x::{a, b::c}` groups
    for m in re.finditer(r"crate::((?:[a-z_0-9]+::)*)\{([^}]*)\}", text):
        prefix = [p for p in m.group(1).split("::") if p]
        for item in m.group(2).split(","):
            item = item.strip().split(" as ")[0]
            if not item or item == "self":
                continue
            target = file_for(prefix + item.split("::"))
            if target and target != path:
                out.add(target)
    # A folder's mod.rs (or lib.rs) naming its children: `tool::parse`, `pub use tool::{...}`.
    if path.name in ("mod.rs", "lib.rs"):
        here = module_of(path)
        for child in {m.group(1) for m in re.finditer(r"\b([a-z_][a-z0-9_]*)::", text)}:
            target = file_for(here + [child])
            if target and target != path and module_of(target)[: len(here) + 1] == here + [child]:
                out.add(target)
    return out


MAX_FN_LINES = 120


def long_functions(path: Path) -> list[str]:
    """`fn` items longer than MAX_FN_LINES, counted from the `fn` line to its closing brace."""
    lines = path.read_text().split("\n")
    out, i = [], 0
    head = re.compile(r"\s*(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?fn\s+(\w+)")
    while i < len(lines):
        m = head.match(lines[i])
        if not m or lines[i].rstrip().endswith(";"):
            i += 1
            continue
        depth, j, opened = 0, i, False
        while j < len(lines):
            for ch in lines[j]:
                if ch == "{":
                    depth, opened = depth + 1, True
                elif ch == "}":
                    depth -= 1
            if opened and depth == 0:
                break
            j += 1
        if j - i + 1 > MAX_FN_LINES:
            where = f"{path.relative_to(SRC)}:{i + 1} {m.group(6)} ({j - i + 1})"
            out.append(f"function over {MAX_FN_LINES} lines: {where}")
        i = j + 1 if opened else i + 1
    return out


def spawn_problems(files: list[Path]) -> list[str]:
    """Rule 5: `Command::new` outside SPAWNERS, and a spawner the maps do not name."""
    out = []
    for f in files:
        rel = str(f.relative_to(SRC))
        if "Command::new" in f.read_text() and not any(rel == s or rel.startswith(s) for s in SPAWNERS if s):
            out.append(f"spawns a process outside SPAWNERS: {rel}")
    root = SRC.parent
    for doc in ("clippy.toml", "ARCHITECTURE.md"):
        path = root / doc
        if not path.is_file():
            continue
        text = path.read_text()
        for s in SPAWNERS:
            if s not in text:
                out.append(f"{doc} does not name the spawner {s}")
    return out


def map_problems(files: list[Path]) -> list[str]:
    """Rule 6: a file ARCHITECTURE.md does not name, and a path it names that is not there."""
    doc = SRC.parent / "ARCHITECTURE.md"
    if not doc.is_file():
        return []
    lines = doc.read_text().splitlines()
    text = "\n".join(lines)
    out = []
    for f in files + sorted(SRC.rglob("*.py")):
        rel = f"src/{f.relative_to(SRC)}"
        if rel == "src/lib.rs" or rel in text:
            continue
        folder = f"src/{f.parent.relative_to(SRC)}/"
        if not any(f"`{f.name}`" in line and folder in line for line in lines):
            out.append(f"ARCHITECTURE.md does not name {rel}")
    for named in sorted(set(re.findall(r"\b(?:src|tests|docs)/[\w/.-]+\.(?:rs|py|md)\b", text))):
        top = SRC.parent / named.split("/")[0]
        if top.is_dir() and not (SRC.parent / named).is_file():
            out.append(f"ARCHITECTURE.md names {named}, which does not exist")
    return out


def stage(path: Path) -> str:
    return module_of(path)[0] if module_of(path) else "lib"


def main() -> int:
    files = sorted(SRC.rglob("*.rs"))
    graph = {f: references(f) for f in files}
    problems = []
    for f, targets in graph.items():
        s = stage(f)
        for t in targets:
            ts = stage(t)
            if s == ts:
                continue
            where = f"{f.relative_to(SRC)} -> {t.relative_to(SRC)}"
            if s in SHARED and ts not in SHARED:
                problems.append(f"shared helper imports a stage: {where}")
            elif s in STAGES and ts in COMPOSERS:
                problems.append(f"stage imports a composer: {where}")
            elif s in STAGES and ts in STAGES and STAGES.index(ts) > STAGES.index(s):
                problems.append(f"stage imports a later stage: {where}")
    # Circles (Tarjan-free: DFS with colours).
    colour = {f: 0 for f in files}
    stack: list[Path] = []

    def visit(f: Path) -> None:
        colour[f] = 1
        stack.append(f)
        for t in sorted(graph[f]):
            if colour.get(t) == 1:
                cyc = stack[stack.index(t):] + [t]
                problems.append("circle: " + " -> ".join(str(c.relative_to(SRC)) for c in cyc))
            elif colour.get(t) == 0:
                visit(t)
        stack.pop()
        colour[f] = 2

    for f in files:
        if colour[f] == 0:
            visit(f)
    for f in files:
        problems.extend(long_functions(f))
    problems.extend(spawn_problems(files))
    problems.extend(map_problems(files))
    for p in problems:
        print(p)
    if problems:
        return 1
    edges = sum(len(t) for t in graph.values())
    print(
        f"ok: {len(files)} files, {edges} imports, no circle, no stage imports a later stage,"
        f" no function over {MAX_FN_LINES} lines"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
