"""Hatchling build hook: compiles judge's comparison core (`judge/_core.py` lists it) with
mypyc, for wheels and editable installs alike, and records the sources it was built from.

The extensions are built in a temporary folder and stored with an inert name (`_core.INERT`):
in the wheel for a standard build (the source tree is left alone), in the source tree for an
editable one. Where it cannot compile (no C compiler or Python headers, `JUDGE_PURE_PYTHON=1`,
a failed compile) the package is built as Python source: the same results, slower.
`JUDGE_REQUIRE_COMPILED=1` makes that fail the build instead (CI sets it).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

# Run by a fresh interpreter in the project root: mypyc writes C under `target`, setuptools
# compiles it into `out` (as `judge/checks/_plain.<ext>`, `judge_core__mypyc.<ext>`).
_COMPILE = """
import sys
from mypyc.build import mypycify
from setuptools import Distribution

config, target, temp, out, group, *paths = sys.argv[1:]
ext = mypycify(["--config-file", config, *paths], opt_level="3", target_dir=target,
               group_name=group)
dist = Distribution({"name": group, "ext_modules": ext, "script_name": "hatch_build.py"})
build = dist.get_command_obj("build_ext")
build.build_temp, build.build_lib = temp, out
dist.run_command("build_ext")
"""
# Only the core's own modules are read, and the libraries it calls into (installed for the
# build: pyproject.toml); what else they import reads as `Any`, whatever else is installed.
_MYPY = """[mypy]
ignore_missing_imports = True
follow_imports = skip
cache_dir = {cache}
[mypy-jsonschema_rs.*,msgspec.*,orjson.*]
follow_imports = normal
"""
_EXTENSIONS = (".so", ".pyd")


class CoreBuildHook(BuildHookInterface):  # type: ignore[type-arg]
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel":
            return
        root = Path(self.root)
        core = _load_core(root)
        editable = version == "editable"
        if editable:  # what an earlier build left in the tree must not outlive this one
            _clean(root, core)
        why = _cannot_compile()
        required = os.environ.get("JUDGE_REQUIRE_COMPILED") == "1"
        asked_pure = os.environ.get("JUDGE_PURE_PYTHON") == "1"
        if why is not None and required and not asked_pure:
            raise RuntimeError(f"judge: the comparison core cannot be compiled: {why}")
        if why is not None:
            self.app.display_warning(f"judge: the comparison core stays Python source ({why})")
            return
        # The sources' hashes before they are read: one edited during the build reads as stale.
        hashes = core.source_hashes(root / "judge")
        self._out = Path(tempfile.mkdtemp(prefix="judge-core-"))
        try:
            files = _compile(root, core, self._out)
        except (OSError, subprocess.CalledProcessError) as exc:
            output = (getattr(exc, "stdout", "") or "") + (getattr(exc, "stderr", "") or "")
            if required:
                raise RuntimeError(f"judge: compiling the core failed: {exc}\n{output}") from exc
            self.app.display_warning(f"judge: compiling the core failed, it stays Python ({exc})")
            return
        manifest = {"sources": hashes, "files": {name: p for name, (_, p) in files.items()}}
        staged = self._out / core.MANIFEST
        staged.write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
        placed = {str(built): f"judge/{p}" for built, p in files.values()}
        placed[str(staged)] = f"judge/{core.MANIFEST}"
        if editable:
            for built, target in placed.items():
                shutil.copyfile(built, root / target)
        else:
            build_data["force_include"].update(placed)
        build_data["pure_python"] = False
        build_data["infer_tag"] = True
        self.app.display_info("judge: the comparison core is compiled (mypyc)")

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        out = getattr(self, "_out", None)
        if out is not None:
            shutil.rmtree(out, ignore_errors=True)


def _load_core(root: Path) -> ModuleType:
    """`judge/_core.py`, read by path (the package's dependencies are not installed yet)."""
    spec = importlib.util.spec_from_file_location("_judge_core", root / "judge" / "_core.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _clean(root: Path, core: ModuleType) -> None:
    """Remove every compiled file an earlier build left in the tree: the manifest first (so the
    core reads as not compiled at once), then the inert files, then any extension under
    `judge/` or mypyc's library at the root (which the import system would load)."""
    (root / "judge" / core.MANIFEST).unlink(missing_ok=True)
    found = [p for p in (root / "judge").rglob(f"*{core.INERT}") if p.is_file()]
    found += [p for p in (root / "judge").rglob("*") if p.suffix in _EXTENSIONS]
    found += [p for p in root.glob(f"{core.GROUP}__mypyc.*") if p.suffix in _EXTENSIONS]
    for path in found:
        path.unlink(missing_ok=True)


def _cannot_compile() -> str | None:
    """Why the core cannot be compiled here, or None."""
    if os.environ.get("JUDGE_PURE_PYTHON") == "1":
        return "JUDGE_PURE_PYTHON=1"
    if not Path(sysconfig.get_paths()["include"], "Python.h").exists():
        return "no Python headers"
    if os.name == "nt":
        return None  # MSVC is found by setuptools itself; a failure falls back
    compiler = (os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(compiler) is None:
        return f"no C compiler ({compiler})"
    return None


def _compile(root: Path, core: ModuleType, out: Path) -> dict[str, tuple[Path, str]]:
    """Compile the core into `out`; per module (and mypyc's library), the built file and its
    inert path in the package."""
    paths = [core.source_of(m, root / "judge").relative_to(root).as_posix() for m in core.MODULES]
    with tempfile.TemporaryDirectory() as temp:
        config = Path(temp, "mypy.ini")
        config.write_text(_MYPY.format(cache=Path(temp, "mypy_cache")))
        subprocess.run(
            [
                sys.executable,
                "-c",
                _COMPILE,
                str(config),
                f"{temp}/c",
                f"{temp}/o",
                str(out),
                core.GROUP,
                *paths,
            ],
            cwd=root,
            check=True,
            capture_output=True,
            text=True,
        )
    files: dict[str, tuple[Path, str]] = {}
    for name in (*core.MODULES, f"{core.GROUP}__mypyc"):
        parts = name.split(".")
        folder = out.joinpath(*parts[:-1])
        built = [p for p in folder.glob(f"{parts[-1]}.*") if p.suffix in _EXTENSIONS]
        if len(built) != 1:
            raise OSError(f"the build made {len(built)} extensions for {name}, not 1")
        inside = "/".join([*parts[1:-1], built[0].name]) if len(parts) > 1 else built[0].name
        files[name] = (built[0], inside + core.INERT)
    return files
