"""The comparison core compiled with mypyc: which copy runs, that a stale one never does, that
both give the same results, and the build hook that makes it (wheels, pure builds, failures)."""

from __future__ import annotations

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
COMPILED_SUFFIXES = (".so", ".pyd")


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


def test_the_core_runs_compiled_exactly_where_the_build_compiled_it() -> None:
    state = _core.state()
    files = [importlib.import_module(m).__file__ or "" for m in _core.MODULES]
    if state == "compiled":
        assert all(f.endswith(COMPILED_SUFFIXES) for f in files), files
    else:
        assert all(f.endswith(".py") for f in files), files
    if os.environ.get("JUDGE_REQUIRE_COMPILED") == "1":  # CI's install compiles it
        assert state == "compiled", _core.describe()


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


def test_the_state_follows_the_sources_the_build_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("JUDGE_CORE", raising=False)
    package = tmp_path / "judge"
    copy_core(package)
    assert _core.state(package) == "source"  # nothing was compiled
    (package / _core.MANIFEST).write_text(json.dumps(_core.source_hashes(package)))
    assert _core.state(package) == "source"  # recorded, but not built for this interpreter
    for module in _core.MODULES:
        _core.source_of(module, package).with_suffix(EXTENSION_SUFFIXES[0]).write_bytes(b"")
    assert _core.state(package) == "compiled"
    edited = _core.source_of("judge.checks._values", package)
    edited.write_text(edited.read_text() + "# edited after the build\n")
    assert _core.state(package) == "stale"
    assert "reinstall" in _core.describe(package)
    edited.write_text(_core.source_of("judge.checks._values").read_text())
    assert _core.state(package) == "compiled"
    (package / _core.MANIFEST).write_text("{not json")
    assert _core.state(package) == "source"
    monkeypatch.setenv("JUDGE_CORE", "source")
    assert _core.state(package) == "forced"


def judge_check(
    path: Path, out: Path, env: dict[str, str], *options: str, cwd: Path = REPO
) -> bytes:
    """`judge check`'s result lines and summary."""
    proc = subprocess.run(
        [sys.executable, "-m", "judge", "check", str(path), "-o", str(out), "--no-progress",
         *options],
        capture_output=True,
        env=env,
        cwd=cwd,
    )
    assert proc.returncode in (0, 1), proc.stderr.decode()
    return out.read_bytes() + proc.stderr


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
    """On the examples and every shared dataset, result lines and summary byte for byte (with
    the build's core, compiled in CI, against `JUDGE_CORE=source`)."""
    env = {k: v for k, v in os.environ.items() if k != "JUDGE_CORE"}
    for path in [*INPUTS, *DATASETS]:
        built = judge_check(path, tmp_path / "built.jsonl", env, *options)
        source = judge_check(path, tmp_path / "source.jsonl", {**env, "JUDGE_CORE": "source"},
                             *options)
        assert built == source, path.name
        assert built.count(b"\n") > 2


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


def build_wheel(root: Path, tmp_path: Path, **env: str) -> Path:
    out = tmp_path / "wheels"
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", ".", "--no-deps", "--no-build-isolation",
         "--quiet", "-w", str(out)],
        cwd=root,
        capture_output=True,
        text=True,
        env={**os.environ, **env},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (wheel,) = out.glob("*.whl")
    return wheel


def test_a_wheel_built_with_a_compiler_holds_the_compiled_core(tmp_path: Path) -> None:
    root = tree_copy(tmp_path)
    wheel = build_wheel(root, tmp_path, JUDGE_REQUIRE_COMPILED="1")
    assert "-cp3" in wheel.name and not wheel.name.endswith("-none-any.whl"), wheel.name
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        archive.extractall(tmp_path / "site")
    assert "judge/_core.json" in names and any(n.startswith("judge/rubrics/") for n in names)
    for module in _core.MODULES:
        stem = "/".join(module.split("."))
        assert any(n.startswith(stem + ".") and n.endswith(COMPILED_SUFFIXES) for n in names)
        assert stem + ".py" in names
    assert any(n.startswith(_core.GROUP + "__mypyc.") for n in names)
    # Installed (unpacked on the path ahead of this checkout), it runs compiled and the same.
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site")}
    env.pop("JUDGE_CORE", None)
    files = loaded_from("import judge", env, cwd=tmp_path)
    assert all(f.startswith(str(tmp_path / "site")) and f.endswith(COMPILED_SUFFIXES)
               for f in files), files
    here = judge_check(INPUTS[0], tmp_path / "here.jsonl", {**os.environ, "JUDGE_CORE": "source"})
    assert judge_check(INPUTS[0], tmp_path / "wheel.jsonl", env, cwd=tmp_path) == here


def test_judge_pure_python_builds_a_wheel_without_compiling(tmp_path: Path) -> None:
    root = tree_copy(tmp_path)
    wheel = build_wheel(root, tmp_path, JUDGE_PURE_PYTHON="1")
    assert wheel.name.endswith("-py3-none-any.whl"), wheel.name
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    assert not [n for n in names if n.endswith(COMPILED_SUFFIXES)]
    assert "judge/_core.json" not in names and "judge/checks/_plain.py" in names
    assert not list(root.rglob("*.so"))


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
    return data, app


def test_a_failed_compile_builds_python_and_leaves_nothing_compiled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "tree"
    copy_core(root / "judge")
    shutil.copyfile(REPO / "judge" / "_core.py", root / "judge" / "_core.py")
    # Left by an earlier build: removed, so they cannot shadow the sources.
    stale = [root / "judge" / "checks" / "_plain.cpython-311-x86_64-linux-gnu.so",
             root / f"{_core.GROUP}__mypyc.cpython-311-x86_64-linux-gnu.so",
             root / "judge" / _core.MANIFEST]
    for path in stale:
        path.write_bytes(b"old build")
    monkeypatch.delenv("JUDGE_PURE_PYTHON", raising=False)
    monkeypatch.delenv("JUDGE_REQUIRE_COMPILED", raising=False)

    def broken(root: Path, core: Any) -> None:
        (root / "judge" / "checks" / "_values.cpython-311-x86_64-linux-gnu.so").write_bytes(b"x")
        raise subprocess.CalledProcessError(1, ["mypyc"], "", "error: something mypyc refused")

    monkeypatch.setattr(hatch_build, "_compile", broken)
    data, app = run_hook(root)
    assert data == {"force_include": {}, "artifacts": []}  # a pure build
    assert not [p for p in root.rglob("*") if p.suffix == ".so" or p.name == _core.MANIFEST]
    assert app.warnings and "compiling the core failed" in app.warnings[0]
    monkeypatch.setenv("JUDGE_REQUIRE_COMPILED", "1")
    with pytest.raises(RuntimeError, match="something mypyc refused"):
        run_hook(root)
    monkeypatch.setenv("JUDGE_PURE_PYTHON", "1")
    data, app = run_hook(root, "editable")
    assert data == {"force_include": {}, "artifacts": []}
    assert app.warnings == ["judge: the comparison core stays Python source (JUDGE_PURE_PYTHON=1)"]
