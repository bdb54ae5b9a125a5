"""judge's comparison core, and which copy of it runs.

The build compiles these modules with mypyc where it can (`hatch_build.py`: a C compiler and
mypy at build time), for `pip install` and `pip install -e` alike. Its extensions are stored
under names no importer loads (`_plain.cpython-311-x86_64-linux-gnu.so.core`, and mypyc's
shared library, beside them in this package), with a manifest (`_core.json`) of the sources they
were built from. Only `choose()`, called by `judge/__init__`, loads them, and only while every
source still has the recorded hash and every file is there for this interpreter: all of them
or none, since compiled modules call each other directly. Otherwise (an edited source in an
editable install, an older commit checked out, a pure build, `JUDGE_CORE=source`) the sources
are imported as usual, and the compiled files are inert.

Standard library only: the build hook loads this file by path, before anything is installed.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import sys
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from collections.abc import Sequence
    from importlib.machinery import ModuleSpec
    from types import ModuleType

MODULES = (
    "judge.cases._json",
    "judge.checks._dates",
    "judge.checks._numbers",
    "judge.cases._lean",
    "judge.checks._values",
    "judge.checks._credit",
    "judge.checks._arguments",
    "judge.checks._structure",
    "judge.checks._no_reference",
    "judge.checks._places",
    "judge.checks._origins",
    "judge.checks._pairing",
    "judge.checks._summary",
    "judge.checks._plain",
    "judge.checks._chunk",
)
"""What the build compiles: the hot path of `judge check`, each module after those it imports
(`_Compiled` loads them in this order). Not msgspec or pydantic classes
(compiled, msgspec's structs decode 3x slower), nor what users pickle, copy or subclass (a
compiled frozen dataclass can do none of it: `ArgumentRule` is in `checks/_rules.py`), nor
what the published schemas read docstrings from (`FailureKind`: mypyc drops them)."""
GROUP = "judge_core"
"""mypyc's shared library for them is the module `judge_core__mypyc`."""
MANIFEST = "_core.json"
"""`{"sources": {module: sha256}, "files": {module: path in the package}}`."""
INERT = ".core"
"""Appended to each compiled file's own name, so that only `choose()` loads it."""
PACKAGE = Path(__file__).resolve().parent

State = Literal["compiled", "source", "stale", "forced"]


def source_of(module: str, package: Path = PACKAGE) -> Path:
    """The source file of one of `MODULES` under the `judge` package at `package`."""
    return package.joinpath(*module.split(".")[1:]).with_suffix(".py")


def source_hashes(package: Path = PACKAGE) -> dict[str, str]:
    """SHA-256 of each module's source, as the build records them."""
    return {m: hashlib.sha256(source_of(m, package).read_bytes()).hexdigest() for m in MODULES}


def _manifest(package: Path) -> dict[str, dict[str, str]] | None:
    try:
        found = json.loads((package / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(found, dict) or not all(
        isinstance(found.get(key), dict) for key in ("sources", "files")
    ):
        return None
    return found


def _usable(files: dict[str, str], package: Path) -> bool:
    """Every module and the shared library, built for this interpreter, present."""
    names = {*MODULES, f"{GROUP}__mypyc"}
    if set(files) != names:
        return False
    suffixes = tuple(suffix + INERT for suffix in EXTENSION_SUFFIXES)
    return all(
        isinstance(p, str) and p.endswith(suffixes) and (package / p).is_file()
        for p in files.values()
    )


def state(package: Path = PACKAGE) -> State:
    """`compiled`: a build compiled the core from these very sources, for this interpreter;
    `stale`: from sources changed since; `source`: nothing was compiled (or not for this
    interpreter, or not whole); `forced`: JUDGE_CORE=source."""
    return _read(package)[0]


def _read(package: Path) -> tuple[State, dict[str, dict[str, str]] | None]:
    """The state, and the manifest where it is `compiled`."""
    if os.environ.get("JUDGE_CORE") == "source":
        return "forced", None
    built = _manifest(package)
    if built is None or not _usable(built["files"], package):
        return "source", None
    return ("compiled", built) if built["sources"] == source_hashes(package) else ("stale", None)


_chosen: State | None = None
"""What `choose()` found for this package, as the process imported it."""


def describe(package: Path = PACKAGE) -> str:
    """The core's state in words, for `judge --version` and the benchmark: for this package,
    what `choose()` found (the sources are not hashed again)."""
    found = _chosen if package == PACKAGE and _chosen is not None else state(package)
    return {
        "compiled": "compiled with mypyc",
        "source": "Python source, not compiled at install",
        "stale": "Python source: the compiled copy is older than the sources, reinstall",
        "forced": "Python source, as JUDGE_CORE=source asks",
    }[found]


class _Compiled:
    """Finds the core's modules as their compiled files (a meta path finder; `importlib.abc`
    itself costs 15 ms to import)."""

    def __init__(self, files: dict[str, Path]) -> None:
        self.files = files

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        found = self.files.get(fullname)
        if found is None:
            return None
        # A compiled module loads the compiled siblings it imports natively, their `__file__`
        # made up from the group's place: those it may import (the modules before it) are
        # imported first, each through this finder, from its own file (the shared library,
        # not one of them, has none before it).
        place = MODULES.index(fullname) if fullname in MODULES else 0
        for earlier in MODULES[:place]:
            if earlier not in sys.modules:
                importlib.import_module(earlier)
        from importlib.machinery import ExtensionFileLoader
        from importlib.util import spec_from_file_location

        loader = ExtensionFileLoader(fullname, str(found))
        return spec_from_file_location(fullname, found, loader=loader)


def choose(package: Path = PACKAGE) -> State:
    """Load the core's modules from their compiled files where the build's are current; else
    leave them to the usual import of their sources."""
    global _chosen
    found, built = _read(package)
    if built is not None and not any(isinstance(f, _Compiled) for f in sys.meta_path):
        files = {name: package / p for name, p in built["files"].items()}
        sys.meta_path.insert(0, _Compiled(files))
    if package == PACKAGE:
        _chosen = found
    return found
