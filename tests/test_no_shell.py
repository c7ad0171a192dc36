"""No command goes through a shell. Flags with spaces, quotes, `$`, backquotes and `;`
from pyproject.toml, and a host compiler path with the same from the environment, reach the
compilers as single arguments: the sources compare each define with the exact string written
in the source (static_assert), nothing gets expanded or executed, and `-C verbose=true` shows
every command shell-quoted so that splitting it as a shell would gives the argument vector.

nvcc itself is the exception cudawheel cannot fix: it runs its internal steps through /bin/sh
with each argument in double quotes, so `$`, backquotes and backslashes in an nvcc argument
would be expanded or executed there. cudawheel refuses those before nvcc runs (last test)."""

from __future__ import annotations

import shlex
from pathlib import Path

from test_errors import fails

from conftest import Wheel, clean_env, run

SAME = "constexpr bool same(const char *a, const char *b) { return *a == *b && (*a == 0 || same(a + 1, b + 1)); }\n"


def c_string(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def toml_string(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def project(root: Path, sources: dict[str, str], defines: dict[str, str]) -> Path:
    (root / "csrc").mkdir(parents=True)
    (root / "demo").mkdir()
    (root / "demo" / "__init__.py").write_text("")
    checks = SAME + "".join(f'static_assert(same({name}, {c_string(v)}), "{name} arrived changed");\n'
                            for name, v in defines.items())
    for name, body in sources.items():
        (root / "csrc" / name).write_text(checks + body)
    globs = ", ".join(sorted({f'"csrc/*{Path(n).suffix}"' for n in sources}))
    define_list = ", ".join(toml_string(f"{name}={c_string(v)}") for name, v in defines.items())
    (root / "pyproject.toml").write_text(f"""
[project]
name = "demo"
version = "1.0"

[tool.cudawheel]
archs = ["90"]

[[tool.cudawheel.extension]]
name = "demo._k"
sources = [{globs}]
defines = [{define_list}]
""")
    return root


def host_compiler(tmp_path: Path, folder: str) -> Path:
    tools = tmp_path / folder
    tools.mkdir()
    gxx = tools / "g++"
    gxx.symlink_to("/usr/bin/g++")
    return gxx


def shown_argv(stderr: str, must_contain: str) -> list[str]:
    """The argument vector of the verbose `cudawheel: $ ...` line that mentions `must_contain`."""
    for line in stderr.splitlines():
        if line.startswith("cudawheel: $ ") and must_contain in line:
            return shlex.split(line[len("cudawheel: $ "):])
    raise AssertionError(f"no command with {must_contain!r} in:\n{stderr}")


def test_host_compiler_gets_shell_characters_verbatim(toolkit_python, tmp_path):
    pwned = tmp_path / "pwned"
    msg = f"a  b $HOME; `touch {pwned}` $(touch {pwned}) 'q' \\ \"dq\" | & * ~ #"
    proj = project(tmp_path / "proj $X `y` 'z'", {"h.cpp": "int h() { return 2; }\n"}, {"MSG": msg, "EMPTY": ""})
    # A host compiler in a folder whose name has a space, `$`, a backquote and quotes, named by
    # CUDAHOSTCXX (shell-split like CMake's CXX, so the path is quoted there).
    gxx = host_compiler(tmp_path, "my tools $CC `w` 'x'")
    proc = run([toolkit_python, "-m", "cudawheel", "wheel", proj, "-o", tmp_path / "out", "-C", "verbose=true"],
               env=clean_env(CUDAHOSTCXX=shlex.quote(str(gxx))))
    wheel = Wheel(Path(proc.stdout.strip()))
    assert any(n.startswith("demo/_k") for n in wheel.names), wheel.names
    assert not pwned.exists(), "a define was executed by a shell"
    argv = shown_argv(proc.stderr, "csrc/h.cpp")
    assert argv[0] == str(gxx)
    assert f"-DMSG={c_string(msg)}" in argv and '-DEMPTY=""' in argv
    # Run in the project folder, naming its files relatively: its odd name reaches no
    # compiler at all.
    assert "csrc/h.cpp" in argv and not [a for a in argv[1:] if str(proj) in a], argv
    link = shown_argv(proc.stderr, "-shared")
    assert link[0] == str(gxx) and "build/cudawheel/obj/demo._k/csrc__h.cpp.o" in link, link


def test_nvcc_gets_spaces_and_quotes_verbatim(toolkit_python, tmp_path):
    msg = "a  b 'q' ; | & * ~ # ü (no double quote: it needs a backslash in C)"
    proj = project(tmp_path / "proj 'p' ü", {"k.cu": "__global__ void k(int *p) { *p = 1; }\n"}, {"MSG": msg})
    gxx = host_compiler(tmp_path, "my tools 'x'")
    proc = run([toolkit_python, "-m", "cudawheel", "wheel", proj, "-o", tmp_path / "out", "-C", "verbose=true"],
               env=clean_env(CUDAHOSTCXX=shlex.quote(str(gxx))))
    Wheel(Path(proc.stdout.strip()))
    argv = shown_argv(proc.stderr, "csrc/k.cu")
    assert Path(argv[0]).name == "nvcc" and argv[argv.index("-ccbin") + 1] == str(gxx)
    assert f"-DMSG={c_string(msg)}" in argv


def test_nvcc_shell_characters_are_refused_before_nvcc_runs(toolkit_python, tmp_path):
    pwned = tmp_path / "pwned"
    proj = project(tmp_path / "proj", {"k.cu": "__global__ void k(int *p) { *p = 1; }\n"},
                   {"MSG": f"`touch {pwned}` $HOME"})
    err = fails(toolkit_python, proj)
    assert not pwned.exists()
    assert "nvcc csrc/k.cu: the argument '-DMSG=\"`touch" in err
    assert "which nvcc would hand to /bin/sh unescaped" in err
    assert "hint: keep `$`, backquotes and backslashes out of what reaches nvcc" in err
