"""`build-dir/compile_commands.json`: every build lists its compiles (nvcc and the host compiler,
not the links) in the JSON compilation database format, so clangd and other tools see the
commands that ran. Read back after a build of examples/saxpy: every source is listed, a host
compile entry runs again from its directory, the nvcc entry names its source, nothing names the
build environment's links (gone after the build), and a rebuild that reuses every step keeps
the entries."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from conftest import clean_env, copy_example, run


def test_compile_commands_list_every_compile_and_run_again(toolkit_python, tmp_path):
    project = copy_example("saxpy", tmp_path)
    db_path = project / "build" / "cudawheel" / "compile_commands.json"

    def build(out):
        return run([toolkit_python, "-m", "cudawheel", "wheel", project, "-o", tmp_path / out, "-C", "archs=80"],
                   env=clean_env())

    build("w1")
    entries = json.loads(db_path.read_text())
    assert all(set(e) == {"directory", "arguments", "file", "output"} for e in entries), entries
    shim = project / "build" / "cudawheel" / "import-check" / "saxpy._core.c"
    assert sorted(Path(e["file"]) for e in entries) == sorted(
        [project / "csrc" / "module.c", project / "csrc" / "saxpy.cu", shim])
    for e in entries:
        assert Path(e["directory"]) == project, e
        assert Path(e["file"]).is_file() and Path(e["output"]).is_file(), e
        # The links into the build environment are removed after the build: never named.
        assert not [a for a in e["arguments"] if "cudawheel/env/" in a], e
        assert Path(e["arguments"][0]).is_file(), e

    by_file = {Path(e["file"]).name: e for e in entries}
    nvcc = by_file["saxpy.cu"]
    assert Path(nvcc["arguments"][0]).name == "nvcc"
    assert "csrc/saxpy.cu" in nvcc["arguments"] and "-gencode" in nvcc["arguments"], nvcc

    # A host compile entry, run again as it stands from its directory, compiles.
    host = by_file["module.c"]
    obj = Path(host["directory"]) / host["output"]
    obj.unlink()
    proc = run(host["arguments"], cwd=host["directory"], env=clean_env(), check=False)
    assert proc.returncode == 0, shlex.join(host["arguments"]) + "\n" + proc.stderr
    assert obj.is_file()

    # A rebuild that reuses every step keeps the entries.
    build("w2")
    assert json.loads(db_path.read_text()) == entries
