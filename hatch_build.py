"""Hatchling build hook: compiles judge's comparison core (`judge/_core.py` lists it) with
mypyc, for wheels and editable installs alike, and records the sources it was built from.

Where it cannot (no C compiler or Python headers, `JUDGE_PURE_PYTHON=1`, a failed compile) the
package is built as Python source: the same results, slower. `JUDGE_REQUIRE_COMPILED=1` makes
a failed compile fail the build instead (CI sets it).
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
# compiles it and copies the extensions into the source tree (`--inplace`).
_COMPILE = """
import sys
from mypyc.build import mypycify
from setuptools import Distribution

config, target, temp, group, *paths = sys.argv[1:]
ext = mypycify(["--config-file", config, *paths], opt_level="3", target_dir=target,
               group_name=group)
dist = Distribution({"name": group, "ext_modules": ext, "script_name": "hatch_build.py"})
build = dist.get_command_obj("build_ext")
build.inplace, build.build_temp, build.build_lib = True, temp, target
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


class CoreBuildHook(BuildHookInterface):  # type: ignore[type-arg]
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel":
            return
        root = Path(self.root)
        core = _load_core(root)
        built = _compiled_files(root, core)
        for path in built:
            path.unlink()
        why = _cannot_compile()
        if why is not None:
            self.app.display_warning(f"judge: the comparison core stays Python source ({why})")
            return
        try:
            _compile(root, core)
        except (OSError, subprocess.CalledProcessError) as exc:
            for path in _compiled_files(root, core):
                path.unlink()
            output = (getattr(exc, "stdout", "") or "") + (getattr(exc, "stderr", "") or "")
            if os.environ.get("JUDGE_REQUIRE_COMPILED") == "1":
                raise RuntimeError(f"judge: compiling the core failed: {exc}\n{output}") from exc
            self.app.display_warning(f"judge: compiling the core failed, it stays Python ({exc})")
            return
        hashes = core.source_hashes(root / "judge")
        (root / "judge" / core.MANIFEST).write_text(json.dumps(hashes, indent=1) + "\n")
        build_data["pure_python"] = False
        build_data["infer_tag"] = True
        if version == "standard":
            for path in _compiled_files(root, core):
                build_data["force_include"][str(path)] = path.relative_to(root).as_posix()
        self.app.display_info("judge: the comparison core is compiled (mypyc)")


def _load_core(root: Path) -> ModuleType:
    """`judge/_core.py`, read by path (the package's dependencies are not installed yet)."""
    spec = importlib.util.spec_from_file_location("_judge_core", root / "judge" / "_core.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _compiled_files(root: Path, core: ModuleType) -> list[Path]:
    """What a build leaves in the source tree: the extensions, the shared library, the
    manifest."""
    suffixes = (".so", ".pyd")
    found = [p for p in root.glob(f"{core.GROUP}__mypyc.*") if p.suffix in suffixes]
    for module in core.MODULES:
        source = core.source_of(module, root / "judge")
        found += [p for p in source.parent.glob(f"{source.stem}.*") if p.suffix in suffixes]
    manifest = root / "judge" / core.MANIFEST
    return found + [manifest] if manifest.exists() else found


def _cannot_compile() -> str | None:
    if os.environ.get("JUDGE_PURE_PYTHON") == "1":
        return "JUDGE_PURE_PYTHON=1"
    if not Path(sysconfig.get_paths()["include"], "Python.h").exists():
        return "no Python headers"
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(compiler) is None:
        return f"no C compiler ({compiler})"
    return None


def _compile(root: Path, core: ModuleType) -> None:
    paths = [core.source_of(m, root / "judge").relative_to(root).as_posix() for m in core.MODULES]
    with tempfile.TemporaryDirectory() as temp:
        config = Path(temp, "mypy.ini")
        config.write_text(_MYPY.format(cache=Path(temp, "mypy_cache")))
        subprocess.run(
            [sys.executable, "-c", _COMPILE, str(config), f"{temp}/c", f"{temp}/o", core.GROUP,
             *paths],
            cwd=root,
            check=True,
            capture_output=True,
            text=True,
        )
