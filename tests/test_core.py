"""The comparison core compiled with mypyc: which copy runs, that a stale one never does, that
both give the same results, and the build hook that makes it (wheels, pure builds, failures)."""

from __future__ import annotations

import ast
import importlib
import json
import os
import shutil
import subprocess
import sys
import zipfile
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path
from typing import Any

import pytest

from judge import _core

REPO = Path(__file__).resolve().parent.parent
DATASETS = sorted((REPO.parent / "shared" / "datasets").glob("*.jsonl"))
INPUTS = [REPO / "examples" / "cases.jsonl", REPO / "examples" / "refunds" / "cases.jsonl"]
COMPILED = tuple(suffix + _core.INERT for suffix in EXTENSION_SUFFIXES)
REQUIRED = os.environ.get("JUDGE_REQUIRE_COMPILED") == "1"  # CI's install must compile it


def loaded_from(code: str, env: dict[str, str], cwd: Path = REPO) -> list[str]:
    """The `__file__` of each core module, as a fresh interpreter running `code` first loads it."""
    probe = f"{code}\nimport importlib\n" + "\n".join(
        f"print(importlib.import_module({m!r}).__file__)" for m in _core.MODULES
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=cwd
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


def need_compiled() -> None:
    """Skip where the install did not compile the core; fail instead where it must have."""
    if _core.state() != "compiled":
        assert not REQUIRED, _core.describe()
        pytest.skip(f"the comparison core is not compiled here: {_core.describe()}")


def test_the_core_runs_compiled_exactly_where_the_build_compiled_it() -> None:
    state = _core.state()
    files = [importlib.import_module(m).__file__ or "" for m in _core.MODULES]
    if state == "compiled":
        assert all(f.endswith(COMPILED) for f in files), files
    else:
        assert files == [str(_core.source_of(m)) for m in _core.MODULES]
    assert not REQUIRED or state == "compiled", _core.describe()


def test_each_core_module_comes_after_the_core_modules_it_imports() -> None:
    """The compiled finder loads the modules before one first (a compiled module would load
    them natively, with a made-up `__file__`): so each must come after those it imports."""
    for place, module in enumerate(_core.MODULES):
        tree = ast.parse(_core.source_of(module).read_text(encoding="utf-8"))
        imported = {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        later = imported & set(_core.MODULES[place:])
        assert not later, f"{module} imports {sorted(later)}, listed after it in MODULES"


def test_judge_core_source_reads_every_module_from_its_source() -> None:
    env = {**os.environ, "JUDGE_CORE": "source"}
    files = loaded_from("import judge", env)
    assert files == [str(_core.source_of(m)) for m in _core.MODULES]
    version = subprocess.run(
        [sys.executable, "-m", "judge", "--version"], capture_output=True, text=True, env=env
    )
    assert "comparison core: Python source, as JUDGE_CORE=source asks" in version.stdout


def copy_core(package: Path) -> None:
    for module in _core.MODULES:
        target = _core.source_of(module, package)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(_core.source_of(module), target)


def fake_build(package: Path) -> dict[str, str]:
    """Empty files where a build puts them, and their manifest entries."""
    files = {}
    for name in (*_core.MODULES, f"{_core.GROUP}__mypyc"):
        parts = name.split(".")[1:] or [name]
        files[name] = "/".join(parts) + EXTENSION_SUFFIXES[0] + _core.INERT
        (package / files[name]).write_bytes(b"")
    return files


def test_the_state_follows_the_sources_the_build_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("JUDGE_CORE", raising=False)
    package = tmp_path / "judge"
    copy_core(package)
    assert _core.state(package) == "source"  # nothing was compiled
    files = fake_build(package)
    manifest = package / _core.MANIFEST
    manifest.write_text(json.dumps({"sources": _core.source_hashes(package), "files": files}))
    assert _core.state(package) == "compiled"
    edited = _core.source_of("judge.checks._values", package)
    edited.write_text(edited.read_text() + "# edited after the build\n")
    assert _core.state(package) == "stale"
    assert "reinstall" in _core.describe(package)
    edited.write_text(_core.source_of("judge.checks._values").read_text())
    assert _core.state(package) == "compiled"
    (package / files[f"{_core.GROUP}__mypyc"]).unlink()  # not whole: the library is gone
    assert _core.state(package) == "source"
    other = {**files, "judge.checks._plain": "checks/_plain.cpython-399-other.so.core"}
    (package / other["judge.checks._plain"]).write_bytes(b"")
    manifest.write_text(json.dumps({"sources": _core.source_hashes(package), "files": other}))
    assert _core.state(package) == "source"  # built for another interpreter
    manifest.write_text("{not json")
    assert _core.state(package) == "source"
    monkeypatch.setenv("JUDGE_CORE", "source")
    assert _core.state(package) == "forced"


def judge_out(args: list[str], env: dict[str, str], cwd: Path = REPO) -> bytes:
    proc = subprocess.run(
        [sys.executable, "-m", "judge", *args], capture_output=True, env=env, cwd=cwd
    )
    assert proc.returncode in (0, 1), proc.stderr.decode()
    return proc.stdout + proc.stderr


def judge_check(
    path: Path, out: Path, env: dict[str, str], *options: str, cwd: Path = REPO
) -> bytes:
    """`judge check`'s result lines and summary."""
    said = judge_out(["check", str(path), "-o", str(out), "--no-progress", *options], env, cwd)
    return out.read_bytes() + said


@pytest.mark.parametrize(
    "options",
    [
        pytest.param((), id="defaults"),
        pytest.param(("--match", "unordered", "--args-match", "exact"), id="unordered-exact"),
        pytest.param(("--match", "strict", "--jobs", "2"), id="strict-two-jobs"),
    ],
)
def test_the_compiled_and_the_source_core_give_the_same_results(
    tmp_path: Path, options: tuple[str, ...]
) -> None:
    """On the examples and every shared dataset, result lines and summary byte for byte."""
    need_compiled()
    env = {k: v for k, v in os.environ.items() if k != "JUDGE_CORE"}
    for path in [*INPUTS, *DATASETS]:
        built = judge_check(path, tmp_path / "built.jsonl", env, *options)
        source = judge_check(
            path, tmp_path / "source.jsonl", {**env, "JUDGE_CORE": "source"}, *options
        )
        assert built == source, path.name
        assert built.count(b"\n") > 2


def test_the_published_schemas_are_the_same_from_either_core() -> None:
    """They read docstrings (`FailureKind`'s), which compiled classes lose."""
    need_compiled()
    env = {k: v for k, v in os.environ.items() if k != "JUDGE_CORE"}
    for name in ("case", "result", "run", "calibration"):
        built = judge_out(["schema", name], env)
        assert built == judge_out(["schema", name], {**env, "JUDGE_CORE": "source"}), name
        assert b"mypyc" not in built


# The build hook, run as hatchling runs it, on a copy of the tree.

hatch_build = pytest.importorskip("hatch_build", reason="hatchling is a dev dependency")


def tree_copy(tmp_path: Path) -> Path:
    """The project's files as a fresh clone has them (tracked and not ignored)."""
    root = tmp_path / "tree"
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"], cwd=REPO, capture_output=True, text=True
    )
    assert listed.returncode == 0, listed.stderr
    for name in listed.stdout.splitlines():
        source = REPO / name
        if source.is_file():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, root / name)
    return root


def tree_files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if "__pycache__" not in p.parts}


def build_wheel(root: Path, tmp_path: Path, **env: str) -> Path:
    out = tmp_path / "wheels"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            ".",
            "--no-deps",
            "--no-build-isolation",
            "--quiet",
            "-w",
            str(out),
        ],
        cwd=root,
        capture_output=True,
        text=True,
        env={**os.environ, **env},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (wheel,) = out.glob("*.whl")
    return wheel


def test_a_wheel_built_with_a_compiler_holds_the_compiled_core(tmp_path: Path) -> None:
    why = hatch_build._cannot_compile()
    if why is not None and not REQUIRED:
        pytest.skip(f"the core cannot be compiled here: {why}")
    root = tree_copy(tmp_path)
    before = tree_files(root)
    wheel = build_wheel(root, tmp_path, JUDGE_REQUIRE_COMPILED="1")
    assert tree_files(root) == before  # a standard build leaves the tree alone
    assert "-cp3" in wheel.name and not wheel.name.endswith("-none-any.whl"), wheel.name
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        archive.extractall(tmp_path / "site")
    assert "judge/_core.json" in names and any(n.startswith("judge/rubrics/") for n in names)
    assert not [n for n in names if n.endswith((".so", ".pyd"))]  # nothing the importer loads
    for module in _core.MODULES:
        stem = "/".join(module.split("."))
        assert any(n.startswith(stem + ".") and n.endswith(COMPILED) for n in names)
        assert stem + ".py" in names
    assert any(n.startswith(f"judge/{_core.GROUP}__mypyc.") for n in names)
    # Installed (unpacked on the path ahead of this checkout), it runs compiled and the same.
    site = tmp_path / "site"
    env = {**os.environ, "PYTHONPATH": str(site)}
    env.pop("JUDGE_CORE", None)
    files = loaded_from("import judge", env, cwd=tmp_path)
    assert all(f.startswith(str(site)) and f.endswith(COMPILED) for f in files), files
    here = judge_check(INPUTS[0], tmp_path / "here.jsonl", {**os.environ, "JUDGE_CORE": "source"})
    assert judge_check(INPUTS[0], tmp_path / "wheel.jsonl", env, cwd=tmp_path) == here
    # A source edited after the build: every module reads from its source, and says so.
    edited = _core.source_of("judge.checks._plain", site / "judge")
    edited.write_text(edited.read_text() + "# edited\n")
    assert loaded_from("import judge", env, cwd=tmp_path) == [
        str(_core.source_of(m, site / "judge")) for m in _core.MODULES
    ]
    assert b"reinstall" in judge_out(["--version"], env, cwd=tmp_path)
    # Without the manifest (as in a commit from before the compiled core) the files are inert.
    (site / "judge" / _core.MANIFEST).unlink()
    edited.write_text(_core.source_of("judge.checks._plain").read_text())
    assert loaded_from("import judge", env, cwd=tmp_path) == [
        str(_core.source_of(m, site / "judge")) for m in _core.MODULES
    ]


def test_judge_pure_python_builds_a_wheel_without_compiling(tmp_path: Path) -> None:
    root = tree_copy(tmp_path)
    wheel = build_wheel(root, tmp_path, JUDGE_PURE_PYTHON="1", JUDGE_REQUIRE_COMPILED="1")
    assert wheel.name.endswith("-py3-none-any.whl"), wheel.name
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    assert not [n for n in names if n.endswith((".so", ".pyd", _core.INERT))]
    assert "judge/_core.json" not in names and "judge/checks/_plain.py" in names


class App:
    """What the hook says to hatchling's user interface."""

    def __init__(self) -> None:
        self.warnings: list[str] = []
        self.infos: list[str] = []

    def display_warning(self, message: str) -> None:
        self.warnings.append(message)

    def display_info(self, message: str) -> None:
        self.infos.append(message)


def run_hook(root: Path, version: str = "standard") -> tuple[dict[str, Any], App]:
    app = App()
    hook = hatch_build.CoreBuildHook(str(root), {}, None, None, str(root), "wheel", app)
    data: dict[str, Any] = {"force_include": {}, "artifacts": []}
    hook.initialize(version, data)
    hook.finalize(version, data, "")
    return data, app


def test_a_build_that_cannot_compile_builds_python_and_leaves_nothing_compiled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "tree"
    copy_core(root / "judge")
    shutil.copyfile(REPO / "judge" / "_core.py", root / "judge" / "_core.py")
    monkeypatch.delenv("JUDGE_PURE_PYTHON", raising=False)
    monkeypatch.delenv("JUDGE_REQUIRE_COMPILED", raising=False)

    def left_by_an_earlier_build() -> list[Path]:
        found = [
            root / "judge" / "checks" / "_plain.cpython-311-x86_64-linux-gnu.so",
            root / "judge" / "checks" / "_gone.cpython-311-x86_64-linux-gnu.so",
            root / f"{_core.GROUP}__mypyc.cpython-311-x86_64-linux-gnu.so",
            root / "judge" / _core.MANIFEST,
        ]
        found += [root / "judge" / p for p in fake_build(root / "judge").values()]
        for path in found:
            path.write_bytes(b"old build")
        return found

    def broken(root: Path, core: Any, out: Path) -> None:
        raise subprocess.CalledProcessError(1, ["mypyc"], "", "error: something mypyc refused")

    monkeypatch.setattr(hatch_build, "_compile", broken)
    old = left_by_an_earlier_build()
    data, app = run_hook(root, "editable")
    assert data == {"force_include": {}, "artifacts": []}  # a pure build
    assert not [p for p in old if p.exists()]  # an editable build clears the tree
    assert app.warnings and "compiling the core failed" in app.warnings[0]
    old = left_by_an_earlier_build()
    data, app = run_hook(root)
    assert all(p.exists() for p in old)  # a standard build leaves the tree alone
    monkeypatch.setenv("JUDGE_REQUIRE_COMPILED", "1")
    with pytest.raises(RuntimeError, match="something mypyc refused"):
        run_hook(root)
    monkeypatch.setattr(hatch_build, "_cannot_compile", lambda: "no C compiler (cc)")
    with pytest.raises(RuntimeError, match="cannot be compiled: no C compiler"):
        run_hook(root)
    monkeypatch.undo()  # the real check again: asked for Python, the requirement gives way
    monkeypatch.setenv("JUDGE_PURE_PYTHON", "1")
    monkeypatch.setenv("JUDGE_REQUIRE_COMPILED", "1")
    data, app = run_hook(root, "editable")
    assert data == {"force_include": {}, "artifacts": []}
    assert app.warnings == ["judge: the comparison core stays Python source (JUDGE_PURE_PYTHON=1)"]
