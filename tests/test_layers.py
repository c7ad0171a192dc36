"""The structure ARCHITECTURE.md promises, checked from the code's own `crate::` references:
no import circle, no stage importing a later stage, no stage importing a composer."""
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CHECK = REPO / "scripts" / "dev" / "check-layers.py"


def run(src: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(CHECK), str(src)], capture_output=True, text=True)


def tree_with_maps(tmp_path: Path, edited: str, old: str, new: str) -> Path:
    """A copy of src/ beside copies of clippy.toml and ARCHITECTURE.md, `old` replaced by `new`
    in the one named `edited`."""
    src = tmp_path / "src"
    shutil.copytree(REPO / "src", src)
    for doc in ("clippy.toml", "ARCHITECTURE.md"):
        text = (REPO / doc).read_text()
        (tmp_path / doc).write_text(text.replace(old, new) if doc == edited else text)
    return src


def test_src_keeps_its_layers():
    r = run(REPO / "src")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "no circle" in r.stdout


def test_a_backward_import_and_a_circle_are_found(tmp_path):
    # Control: the same tree with an early stage reaching a later one fails, naming both files.
    src = tmp_path / "src"
    shutil.copytree(REPO / "src", src)
    f = src / "config" / "interpreter.rs"
    f.write_text("#[allow(unused_imports)]\nuse crate::package::metadata::DistName;\n" + f.read_text())
    r = run(src)
    assert r.returncode == 1
    assert "stage imports a later stage: config/interpreter.rs -> package/metadata.rs" in r.stdout
    assert "circle:" in r.stdout


def test_a_circle_through_super_is_found(tmp_path):
    # Control: two sibling files naming each other only through `super::` form a circle.
    src = tmp_path / "src"
    shutil.copytree(REPO / "src", src)
    for name, other in (("log", "link"), ("link", "log")):
        f = src / "compile" / f"{name}.rs"
        f.write_text(f"#[allow(unused_imports)]\nuse super::{other}::*;\n" + f.read_text())
    r = run(src)
    assert r.returncode == 1
    assert "circle: compile/link.rs -> compile/log.rs -> compile/link.rs" in r.stdout or \
        "circle: compile/log.rs -> compile/link.rs -> compile/log.rs" in r.stdout, r.stdout


def test_a_long_function_is_found(tmp_path):
    # Control: a function of 130 lines is named with its file and line.
    src = tmp_path / "src"
    shutil.copytree(REPO / "src", src)
    body = "".join(f"    let _x{i} = {i};\n" for i in range(128))
    f = src / "ui.rs"
    f.write_text(f.read_text() + f"\npub(crate) fn too_long() {{\n{body}}}\n")
    r = run(src)
    assert r.returncode == 1
    assert "function over 120 lines: ui.rs:" in r.stdout and "too_long (130)" in r.stdout, r.stdout


def test_a_spawn_outside_the_listed_files_is_found(tmp_path):
    # Control: a `Command::new` in a file SPAWNERS does not list is named; the maps name each
    # listed spawner (a folder or file that clippy.toml or ARCHITECTURE.md forgets is found too).
    src = tree_with_maps(tmp_path, "clippy.toml", "compile/wrapped.rs", "compile/wrapper.rs")
    f = src / "ui.rs"
    f.write_text(f.read_text() + "\n#[allow(dead_code)]\nfn spawn() { let _ = std::process::Command::new(\"true\"); }\n")
    r = run(src)
    assert r.returncode == 1
    assert "spawns a process outside SPAWNERS: ui.rs" in r.stdout, r.stdout
    assert "clippy.toml does not name the spawner compile/wrapped.rs" in r.stdout, r.stdout


def test_a_file_the_map_forgets_and_a_path_it_invents_are_found(tmp_path):
    # Control: a new source file ARCHITECTURE.md does not name, and a feature-index path that
    # does not exist, are both named; the unchanged map passes (test_src_keeps_its_layers).
    src = tree_with_maps(tmp_path, "ARCHITECTURE.md", "`src/audit/built_archs.rs` →", "`src/audit/built_arch.rs` →")
    (src / "audit" / "new_rule.rs").write_text("//! A rule nobody mapped.\n")
    r = run(src)
    assert r.returncode == 1
    assert "ARCHITECTURE.md does not name src/audit/new_rule.rs" in r.stdout, r.stdout
    assert "ARCHITECTURE.md names src/audit/built_arch.rs, which does not exist" in r.stdout, r.stdout
